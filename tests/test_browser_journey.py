"""A new user's whole journey in Debian's Chromium, every form at its defaults, with a
screenshot at each step (test-artifacts/journey/); and live state that never goes stale."""

import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.helpers import UI_WAIT_MS, attempt_of, make_attempt, make_campaign, wait_for

pytestmark = pytest.mark.browser
DATA = Path(__file__).parent / "data"
CRASH = (DATA / "seed_torch_symm_mem.log").read_bytes()
SHOTS = Path("test-artifacts/journey")
READY = b"[2026-02-27 13:22:00] The server is fired up and ready to roll!\n"
SLOW_ANSWER_S = 1.5


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def slow_answer(route) -> None:  # type: ignore[no-untyped-def]
    """The server's answer to a POST, handed to the page a while after the server sent it."""
    if route.request.method != "POST":
        route.continue_()
        return
    answer = route.fetch()
    time.sleep(SLOW_ANSWER_S)
    route.fulfill(response=answer)


def submit(page, form: str, button: str) -> None:  # type: ignore[no-untyped-def]
    page.locator(form).get_by_role("button", name=button).click()


def test_the_whole_journey_with_the_forms_defaults(
    api: httpx.Client,
    open_page,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    page = open_page("/")
    # The measurement answers come late, as on a loaded server: a step must wait for its own
    # answer, not for a page that only looks like it (CI once chose a status that a late
    # answer then reset).
    page.route("**/measurements", slow_answer)
    # 1. A campaign: a name and a baseline, everything else as the form has it.
    page.fill("#new-campaign input[name=name]", "EAGLE-3 on 8x RTX PRO 6000")
    page.fill("#new-campaign input[name=baseline]", "abc")
    submit(page, "#new-campaign", "Create campaign")
    error = page.locator('.field-error[data-form="new-campaign"][data-field="baseline"]')
    error.wait_for(timeout=UI_WAIT_MS)
    assert "valid number" in error.inner_text()
    assert page.input_value("#new-campaign input[name=name]") == "EAGLE-3 on 8x RTX PRO 6000"
    shot(page, "01-campaign-baseline-mistyped")
    page.fill("#new-campaign input[name=baseline]", "82")
    submit(page, "#new-campaign", "Create campaign")
    page.wait_for_url("**/campaigns/*", timeout=UI_WAIT_MS)
    campaign_id = int(page.url.rsplit("/", 1)[1].split("?")[0])
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    shot(page, "02-campaign-created")

    # 2. An attempt whose log crashes while the page is open.
    log = tmp_path / "torch_symm_mem_test.log"
    log.write_bytes(b"[2026-02-27 13:21:33 TP0] Init torch distributed begin.\n")
    page.fill("#new-attempt input[name=title]", "Torch symmetric memory")
    page.fill("#new-attempt input[name=source]", f"file://{log}")
    submit(page, "#new-attempt", "Add attempt")
    card = page.locator(".card", has_text="Torch symmetric memory")
    card.wait_for(timeout=UI_WAIT_MS)
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    log.write_bytes(CRASH)
    card.locator(".chip.status-crashed").wait_for(timeout=UI_WAIT_MS)
    assert "KeyError: 12" in card.inner_text()
    shot(page, "03-attempt-crashed-live")

    # 3. Eliminate it from its page with a reason, nothing else touched.
    card.locator("a.title").click()
    page.wait_for_url("**/attempts/*", timeout=UI_WAIT_MS)
    attempt_id = int(page.url.rsplit("/", 1)[1].split("#")[0])
    assert page.input_value("select[name=status]") == "crashed"
    page.select_option("select[name=status]", "eliminated")
    page.fill("textarea[name=verdict]", "SM120 is missing from the symmetric-memory arch table")
    submit(page, "#status-form", "Save")
    page.locator("#attempt-detail .chip.status-eliminated").first.wait_for(timeout=UI_WAIT_MS)
    assert attempt_of(api, attempt_id)["status"] == "eliminated"
    shot(page, "04-eliminated")

    # 4. Retest it: the button pre-fills the new attempt.
    page.get_by_role("link", name="Retest…").click()
    page.wait_for_url("**/campaigns/*retest=*", timeout=UI_WAIT_MS)
    assert page.input_value("#new-attempt input[name=title]").startswith("Retest: ")
    assert page.input_value("#new-attempt input[name=source]") == f"file://{log}"
    assert page.input_value("#new-attempt select[name=retest_of]") == str(attempt_id)
    retest_log = tmp_path / "retest.log"
    retest_log.write_bytes(READY)
    page.fill("#new-attempt input[name=source]", f"file://{retest_log}")
    shot(page, "05-retest-prefilled")
    submit(page, "#new-attempt", "Add attempt")
    retest_card = page.locator(".card", has_text="Retest: Torch symmetric memory")
    retest_card.wait_for(timeout=UI_WAIT_MS)
    retest_card.locator(".chip.status-ready").wait_for(timeout=UI_WAIT_MS)
    retest_card.locator("a.title").click()
    page.wait_for_url("**/attempts/*", timeout=UI_WAIT_MS)
    retest_id = int(page.url.rsplit("/", 1)[1].split("#")[0])
    assert attempt_of(api, retest_id)["retest_of"] == attempt_id

    # 5. A mistyped measurement, then two real ones.
    page.fill("#measure-form input[name=value]", "fast")
    submit(page, "#measure-form", "Add run")
    error = page.locator('.field-error[data-form="measure"][data-field="value"]')
    error.wait_for(timeout=UI_WAIT_MS)
    assert page.input_value("#measure-form input[name=value]") == "fast"
    shot(page, "06-measurement-mistyped")
    for value in ("90.5", "91.5"):
        page.fill("#measure-form input[name=value]", value)
        answered = page.locator("#attempt-detail").element_handle()
        submit(page, "#measure-form", "Add run")
        # The answer replaces the whole detail, the status form in it too: wait for this run's
        # own answer (the first run's cleared input looks the same), or it lands later and
        # resets the status chosen next.
        answered.wait_for_element_state("hidden", timeout=UI_WAIT_MS)
        page.locator("#measure-form input[name=value]").and_(
            page.locator(":not([aria-invalid])")
        ).wait_for(timeout=UI_WAIT_MS)
    wait_for(lambda: (attempt_of(api, retest_id)["metric"] or {}).get("n") == 2, what="2 runs")

    # 6. Adopt it as the new baseline (the box is ticked by default).
    page.select_option("select[name=status]", "adopted")
    page.fill("textarea[name=verdict]", "CUDA 13 brings SM120 to the table")
    submit(page, "#status-form", "Save")
    page.locator("#attempt-detail .chip.status-adopted").first.wait_for(timeout=UI_WAIT_MS)
    assert api.get(f"/api/campaigns/{campaign_id}").json()["baseline"] == 91.0
    shot(page, "07-adopted")

    # 7. Share it, and open the link logged out.
    page.goto(page.url.split("/attempts/")[0] + f"/campaigns/{campaign_id}")
    submit(page, "#shares", "Create link")
    link = page.locator(".new-share a")
    link.wait_for(timeout=UI_WAIT_MS)
    url = link.get_attribute("href")
    assert url
    shot(page, "08-share-created")
    shared = open_page(urlsplit(url).path, logged_in=False)
    assert "EAGLE-3 on 8x RTX PRO 6000" in shared.inner_text("h1")
    assert shared.locator("form").count() == 0
    assert "Retest: Torch symmetric memory" in shared.inner_text("body")
    shot(shared, "09-shared-logged-out")
    assert page.dialogs == [] and shared.dialogs == []


def test_a_change_between_the_render_and_the_stream_is_not_missed(
    api: httpx.Client,
    open_page,
    server,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    """The crash lands after the page rendered and before its stream starts: certain here,
    because the stream's request waits for it. Both live pages, and the Status control."""
    campaign = make_campaign(api)
    page = open_page("/")
    pending: list[tuple[Path, int]] = []

    def crash_first(route) -> None:  # type: ignore[no-untyped-def]
        while pending:
            log, attempt_id = pending.pop()
            log.write_bytes(CRASH)
            wait_for(lambda a=attempt_id: attempt_of(api, a)["status"] == "crashed")
        route.continue_()

    page.context.route("**/events?*", crash_first)
    for n, view in enumerate(("campaign", "attempt")):
        log = tmp_path / f"server-{n}.log"
        log.write_bytes(b"[2026-02-27 13:21:33 TP0] Init torch distributed begin.\n")
        attempt = make_attempt(api, campaign["id"], title=f"race {n}", source=f"file://{log}")
        wait_for(lambda a=attempt: attempt_of(api, a["id"])["tail"], what="the tail")
        pending.append((log, attempt["id"]))
        if view == "campaign":
            page.goto(f"{server.url}/campaigns/{campaign['id']}")
            chip = page.locator(f"#attempt-{attempt['id']} .chip.status-crashed")
        else:
            page.goto(f"{server.url}/attempts/{attempt['id']}")
            chip = page.locator("#attempt-detail .chip.status-crashed").first
        chip.wait_for(timeout=UI_WAIT_MS)
        assert not pending, "the crash was committed before the stream started"
        if view == "attempt":
            wait_for(
                lambda: page.input_value("select[name=status]") == "crashed",
                what="the Status control following the log",
            )


def test_logs_complete_when_attached_show_their_crash_at_once(
    api: httpx.Client,
    open_page,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    campaign = make_campaign(api)
    page = open_page(f"/campaigns/{campaign['id']}")
    for n in range(5):
        log = tmp_path / f"complete-{n}.log"
        log.write_bytes(CRASH)
        page.fill("#new-attempt input[name=title]", f"complete {n}")
        page.fill("#new-attempt input[name=source]", f"file://{log}")
        submit(page, "#new-attempt", "Add attempt")
        card = page.locator(".card", has_text=f"complete {n}")
        card.locator(".chip.status-crashed").wait_for(timeout=UI_WAIT_MS)


def test_the_new_attempt_choices_gain_attempts_live(api: httpx.Client, open_page) -> None:  # type: ignore[no-untyped-def]
    campaign = make_campaign(api)
    first = make_attempt(api, campaign["id"], title="first")
    page = open_page(f"/campaigns/{campaign['id']}")
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    # A choice the reader made is kept when the list grows.
    page.select_option("#new-attempt select[name=blocked_by]", str(first["id"]))
    second = make_attempt(api, campaign["id"], title="second")
    for name in ("retest_of", "blocked_by"):
        page.locator(f"#new-attempt select[name={name}] option[value='{second['id']}']").wait_for(
            state="attached", timeout=10_000
        )
    assert page.input_value("#new-attempt select[name=blocked_by]") == str(first["id"])
    assert page.input_value("#new-attempt select[name=retest_of]") == ""


def test_a_share_page_misses_no_change_between_its_render_and_its_stream(
    api: httpx.Client,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], title="raced")
    token = api.post(f"/api/campaigns/{campaign['id']}/shares", json={}).json()["token"]
    changed: list[bool] = []

    def change_first(route) -> None:  # type: ignore[no-untyped-def]
        if not changed:
            answer = api.patch(
                f"/api/attempts/{attempt['id']}", json={"status": "eliminated", "verdict": "no"}
            )
            changed.append(answer.status_code == 200)
        route.continue_()

    page = open_page(f"/s/{token}", logged_in=False)
    page.context.route("**/events?*", change_first)
    page.reload()
    page.locator(f"#attempt-{attempt['id']}.lane-eliminated").wait_for(timeout=UI_WAIT_MS)
    assert changed == [True], "the change landed between the render and the stream"
