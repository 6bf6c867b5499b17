"""What a person sees in Debian's Chromium: live updates without reloading, and no XSS.

Each test sets a JS marker first; it surviving proves the page was never reloaded.
"""

import re
from pathlib import Path

import httpx
import pytest

from tests.conftest import LiveServer
from tests.helpers import UI_WAIT_MS, make_attempt, make_campaign, wait_for_readers
from tests.sse import SSEReader

pytestmark = pytest.mark.browser
DATA = Path(__file__).parent / "data"


def mark(page) -> None:  # type: ignore[no-untyped-def]
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    page.evaluate("window.__marker = 'no reload'")


def still_marked(page) -> bool:  # type: ignore[no-untyped-def]
    return page.evaluate("window.__marker") == "no reload"


def test_campaign_page_follows_attempts_notes_and_crashes_live(
    api: httpx.Client,
    open_page,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    campaign = make_campaign(api)
    log = tmp_path / "torch_symm_mem_test.log"
    log.write_bytes(b"")
    first = make_attempt(
        api, campaign["id"], title="Torch symmetric memory", source=f"file://{log}"
    )
    page = open_page(f"/campaigns/{campaign['id']}")
    second = open_page(f"/campaigns/{campaign['id']}")
    mark(page)
    mark(second)

    # A crash appended to the log: the card turns crashed and shows the root cause.
    log.write_bytes((DATA / "seed_torch_symm_mem.log").read_bytes())
    card = page.locator(f"#attempt-{first['id']}")
    card.locator(".chip.status-crashed").wait_for(timeout=UI_WAIT_MS)
    assert "KeyError: 12" in card.inner_text()
    assert "unsupported_arch" in card.inner_text()

    # A note posted through the API appears.
    api.post(f"/api/campaigns/{campaign['id']}/notes", json={"body": "PCIe only: **no NVLink**"})
    page.locator("#notes strong", has_text="no NVLink").wait_for(timeout=UI_WAIT_MS)

    # A status change moves the card to the eliminated lane: a row of the dead ends' fold.
    api.patch(
        f"/api/attempts/{first['id']}", json={"status": "eliminated", "verdict": "arch table"}
    )
    dead_end = f"#eliminated-fold #attempt-{first['id']}.lane-eliminated"
    page.locator(dead_end).wait_for(state="attached", timeout=UI_WAIT_MS)
    # Open while dead ends are few: they are part of the story.
    assert page.locator("#eliminated-fold").evaluate("e => e.open")
    assert "arch table" in page.locator(dead_end).inner_text()

    # A new attempt appears in the tested lane.
    make_attempt(api, campaign["id"], title="CUDA 13 upgrade")
    page.locator(".card .title", has_text="CUDA 13 upgrade").wait_for(timeout=UI_WAIT_MS)

    # The second page saw all of it too.
    second.locator(dead_end).wait_for(state="attached", timeout=UI_WAIT_MS)
    second.locator(".card .title", has_text="CUDA 13 upgrade").wait_for(timeout=UI_WAIT_MS)
    second.locator("#notes strong", has_text="no NVLink").wait_for(timeout=UI_WAIT_MS)
    assert still_marked(page) and still_marked(second)
    page.screenshot(path="test-artifacts/campaign-live.png", full_page=True)


def test_attempt_page_tail_grows_live(api: httpx.Client, open_page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    campaign = make_campaign(api)
    log = tmp_path / "server.log"
    log.write_bytes(b"[2026-02-27 13:21:27 TP0] Load weight begin.\n")
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    page = open_page(f"/attempts/{attempt['id']}")
    page.locator(f"#log-{attempt['id']}", has_text="Load weight begin.").wait_for(
        timeout=UI_WAIT_MS
    )
    mark(page)
    with log.open("ab") as out:
        out.write(b"[2026-02-27 13:22:00] The server is fired up and ready to roll!\n")
    page.locator(f"#log-{attempt['id']}", has_text="fired up and ready to roll").wait_for(
        timeout=10_000
    )
    page.locator(".chip.status-ready").first.wait_for(timeout=UI_WAIT_MS)
    api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": "ready in *33 s*"})
    page.locator(f"#notes-list-attempt-{attempt['id']} em", has_text="33 s").wait_for(
        timeout=10_000
    )
    assert still_marked(page)


def test_a_crash_arriving_live_takes_the_measurement_form_away(
    api: httpx.Client,
    open_page,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    # The status turned "crashed" live but the "Add a measurement" form stayed: a run typed
    # into it was refused, its figure gone, where a reload said it takes no more runs.
    campaign = make_campaign(api)
    log = tmp_path / "server.log"
    log.write_bytes(b"[2026-02-27 13:21:27 TP0] Load weight begin.\n")
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    page = open_page(f"/attempts/{attempt['id']}")
    mark(page)
    field = page.locator("#measure-form input[name=value]")
    field.fill("91.5")  # typed, not sent yet: a line arriving meanwhile keeps it
    with log.open("ab") as out:
        out.write(b"[2026-02-27 13:22:00] The server is fired up and ready to roll!\n")
    page.locator(".chip.status-ready").first.wait_for(timeout=UI_WAIT_MS)
    assert field.input_value() == "91.5"
    with log.open("ab") as out:
        out.write((DATA / "seed_torch_symm_mem.log").read_bytes())
    page.locator(".chip.status-crashed").first.wait_for(timeout=UI_WAIT_MS)
    page.locator("#measure-form", has_text="takes no more runs").wait_for(timeout=UI_WAIT_MS)
    assert field.count() == 0 and still_marked(page)


def test_hostile_log_lines_and_notes_stay_text(
    api: httpx.Client, open_page, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    hostile = (
        "<script>alert('x1')</script> <img src=x onerror=\"alert('x2')\"> "
        "[click](javascript:alert('x3')) <a href=\"javascript:alert('x4')\">a</a>"
    )
    campaign = make_campaign(api, name=hostile[:150])
    log = tmp_path / "hostile.log"
    log.write_bytes(hostile.encode() + b"\nRuntimeError: " + hostile.encode() + b"\n")
    attempt = make_attempt(api, campaign["id"], title=hostile[:150], source=f"file://{log}")
    page = open_page(f"/attempts/{attempt['id']}")
    page.locator(f"#log-{attempt['id']}", has_text="<script>").wait_for(timeout=UI_WAIT_MS)
    mark(page)
    api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": hostile})
    page.locator(f"#notes-list-attempt-{attempt['id']} .note").wait_for(timeout=UI_WAIT_MS)
    with log.open("ab") as out:
        out.write(b"<img src=y onerror=\"alert('x5')\">\n")
    page.locator(f"#log-{attempt['id']}", has_text="alert('x5')").wait_for(timeout=UI_WAIT_MS)
    campaign_page = open_page(f"/campaigns/{campaign['id']}")
    campaign_page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    for shown in (page, campaign_page):
        assert shown.locator("script:not([src])").count() == 0
        assert shown.locator("img").count() == 0
        assert shown.locator("a[href^='javascript']").count() == 0
        assert shown.dialogs == []
    assert still_marked(page)


def test_a_failing_stream_shows_offline_then_recovers(
    api: httpx.Client,
    open_page,
    server,  # type: ignore[no-untyped-def]
) -> None:

    campaign = make_campaign(api)
    page = open_page(f"/campaigns/{campaign['id']}")
    mark(page)
    # The server goes away and a proxy in front answers 502: EventSource gives up, and the
    # page has to retry by itself (with backoff and jitter) and say it is offline.
    page.context.route("**/events?*", lambda route: route.fulfill(status=502, body="bad gateway"))
    server.stop()
    page.wait_for_selector("#live-status.off", timeout=15_000)
    assert "offline" in page.inner_text("#live-status")
    replacement = LiveServer(server.settings, port=server.port).start()
    try:
        page.context.unroute("**/events?*")
        page.wait_for_selector("#live-status.on", timeout=60_000)
        make_attempt(api, campaign["id"], title="after the outage")
        page.locator(".card .title", has_text="after the outage").wait_for(timeout=UI_WAIT_MS)
        assert still_marked(page)
    finally:
        replacement.stop()


def test_the_badge_says_connecting_until_the_stream_answers(api: httpx.Client, open_page) -> None:  # type: ignore[no-untyped-def]
    campaign = make_campaign(api)
    page = open_page(f"/campaigns/{campaign['id']}")
    mark(page)
    held: list[object] = []  # the stream's request, left unanswered: still connecting
    page.context.route("**/events?*", lambda route: held.append(route))
    with page.expect_request(lambda request: "/events?" in request.url):
        page.reload()
    # (it said "offline, retrying" in red before the first try had even been answered)
    assert page.inner_text("#live-status") == "connecting"
    for route in held:
        route.abort()  # type: ignore[attr-defined]
    page.wait_for_selector("#live-status.off", timeout=UI_WAIT_MS)
    assert "offline" in page.inner_text("#live-status")


def test_a_share_link_in_a_fresh_context_updates_live(api: httpx.Client, open_page) -> None:  # type: ignore[no-untyped-def]
    campaign = make_campaign(api, name="Shared EAGLE-3 story")
    attempt = make_attempt(api, campaign["id"], title="EAGLE-3 speculative decoding")
    token = api.post(f"/api/campaigns/{campaign['id']}/shares", json={}).json()["token"]
    page = open_page(f"/s/{token}", logged_in=False)  # no cookies: a teammate in chat
    assert "Shared EAGLE-3 story" in page.inner_text("h1")
    mark(page)
    assert page.locator("form").count() == 0
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 54})
    api.patch(
        f"/api/attempts/{attempt['id']}", json={"status": "eliminated", "verdict": "122 allreduces"}
    )
    page.locator(f"#attempt-{attempt['id']}.lane-eliminated").wait_for(timeout=UI_WAIT_MS)
    assert "-34.1 %" in page.inner_text(f"#attempt-{attempt['id']}")
    assert still_marked(page)
    page.screenshot(path="test-artifacts/share-live.png", full_page=True)


def test_offline_without_the_cdn_the_pages_stay_live(
    api: httpx.Client,
    open_page,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """An air-gapped lab: htmx never loads, the page keeps its stream and swaps by itself."""
    campaign = make_campaign(api)
    log = tmp_path / "offline.log"
    log.write_bytes(b"[2026-02-27 13:21:27 TP0] Load weight begin.\n")
    attempt = make_attempt(api, campaign["id"], title="Baseline", source=f"file://{log}")
    page = open_page(f"/campaigns/{campaign['id']}", cdn=False)
    detail = open_page(f"/attempts/{attempt['id']}", cdn=False)
    assert page.evaluate("typeof window.htmx") == "undefined"
    mark(page)
    mark(detail)

    with log.open("ab") as out:
        out.write(b"<img src=x onerror=alert(1)> The server is fired up and ready to roll!\n")
    detail.locator(f"#log-{attempt['id']}", has_text="ready to roll").wait_for(timeout=UI_WAIT_MS)
    assert detail.locator("img").count() == 0 and detail.dialogs == []

    make_attempt(api, campaign["id"], title="EAGLE-3 speculative decoding")
    page.locator(".card .title", has_text="EAGLE-3 speculative decoding").wait_for(
        timeout=UI_WAIT_MS
    )
    api.patch(
        f"/api/attempts/{attempt['id']}", json={"status": "eliminated", "verdict": "dead end"}
    )
    page.locator(f"#eliminated-fold #attempt-{attempt['id']}.lane-eliminated").wait_for(
        state="attached", timeout=10_000
    )
    api.post(f"/api/campaigns/{campaign['id']}/notes", json={"body": "<b>x</b> **PCIe only**"})
    page.locator("#notes strong", has_text="PCIe only").wait_for(timeout=UI_WAIT_MS)
    assert page.locator("#notes b").count() == 0  # sanitized on the server, swapped as is

    assert still_marked(page) and still_marked(detail)


@pytest.mark.parametrize("shared", [False, True], ids=["campaign page", "share page"])
def test_changes_in_quick_succession_all_reach_the_page(
    api: httpx.Client,
    anonymous: httpx.Client,
    server: LiveServer,
    open_page,
    shared: bool,  # type: ignore[no-untyped-def]
) -> None:
    """A swap replaces its element; the next message for the same element can come a
    moment later (a crash's log, then its status): the page applies every message a reader
    of the same stream gets, in order. (htmx's SSE extension listened on the element itself
    and registered the new one only after its settle delay: a message in between was lost,
    and the page kept showing the change before.)"""
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], title="quick succession")
    card = f"attempt-{attempt['id']}"
    if shared:
        token = api.post(f"/api/campaigns/{campaign['id']}/shares", json={}).json()["token"]
        page = open_page(f"/s/{token}", logged_in=False)
        reader = SSEReader(anonymous, f"/s/{token}/events")
    else:
        page = open_page(f"/campaigns/{campaign['id']}")
        reader = SSEReader(api, f"/api/campaigns/{campaign['id']}/events?view=campaign")
    # Both in the same broadcaster's batches: one that joined late would catch up alone.
    wait_for_readers(server.app, 2, what="the page's stream and the reader's joined")
    mark(page)
    page.evaluate(
        """card => { window.__verdicts = [];
          new MutationObserver(records => records.forEach(r => r.addedNodes.forEach(node => {
            const swapped = node.id === card ? node : node.querySelector?.("#" + card);
            const text = swapped?.querySelector(".verdict")?.textContent || "";
            const verdict = text.match(/verdict \\d+\\./);
            if (verdict) { window.__verdicts.push(verdict[0]); }
          }))).observe(document.body, {childList: true, subtree: true}); }""",
        card,
    )
    for n in range(1, 31):
        response = api.patch(f"/api/attempts/{attempt['id']}", json={"verdict": f"verdict {n}."})
        assert response.status_code == 200, response.text
    sent: list[str] = []
    while "verdict 30." not in sent:
        message = reader.next(timeout=UI_WAIT_MS / 1000)
        sent += re.findall(r"verdict \d+\.", message.data)[:1]
    reader.close()
    page.locator(f"#{card}", has_text="verdict 30.").wait_for(timeout=UI_WAIT_MS)
    assert page.evaluate("window.__verdicts") == sent
    assert still_marked(page)
