"""A campaign of 1,000 attempts in Debian's Chromium, at a desktop's width and a phone's:
filter, search, the fold of dead ends, the chart, and never a sideways scroll.

Screenshots go to test-artifacts/ (CAMPAIGN_DASH_SHOTS to put them elsewhere)."""

import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import OWNER_TOKEN, LiveServer
from tests.helpers import make_attempt, make_campaign, seed_long_campaign
from tests.test_campaign_page import cards

pytestmark = pytest.mark.browser
SHOTS = Path(os.environ.get("CAMPAIGN_DASH_SHOTS", "test-artifacts"))
WIDTHS = [(1280, 900), (390, 844)]
IN_PLAY = {"proposed", "running", "ready", "measured", "crashed", "blocked"}


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def assert_no_sideways_scroll(page: Any) -> None:
    widths = page.evaluate(
        "[document.documentElement.scrollWidth, window.innerWidth, document.body.scrollWidth]"
    )
    assert widths[0] <= widths[1] and widths[2] <= widths[1], widths


def shown_ids(page: Any) -> set[int]:
    return set(
        page.evaluate(
            "Array.from(document.querySelectorAll('#timeline article.card'))"
            ".filter(c => !c.hidden).map(c => Number(c.id.slice(8)))"
        )
    )


def boxes(page: Any, selector: str) -> list[dict[str, float]]:
    return page.evaluate(
        f"Array.from(document.querySelectorAll({selector!r})).map(e => {{"
        " const r = e.getBoundingClientRect();"
        " return {x: r.x, y: r.y, w: r.width, h: r.height}; })"
    )


def apart(first: dict[str, float], second: dict[str, float]) -> bool:
    return (
        first["x"] + first["w"] <= second["x"]
        or second["x"] + second["w"] <= first["x"]
        or first["y"] + first["h"] <= second["y"]
        or second["y"] + second["h"] <= first["y"]
    )


@pytest.mark.parametrize(("width", "height"), WIDTHS, ids=["desktop", "phone"])
def test_a_1000_attempt_campaign_filters_folds_searches_and_charts(
    width: int, height: int, open_page: Any, server: LiveServer
) -> None:
    made = seed_long_campaign(server.app.state.engine, 1000)
    url = f"/campaigns/{made['campaign_id']}"
    page = open_page(url)
    page.set_viewport_size({"width": width, "height": height})
    page.wait_for_selector("#timeline")
    page.evaluate("window.__marker = 'no reload'")
    assert_no_sideways_scroll(page)
    shot(page, f"campaign-1000-{width}-top")

    # The newest work first, the new-attempt form before the timeline and on the first
    # screen of a desktop.
    in_play = [i for i in made["ids"] if made["status"][i] in IN_PLAY]
    first = page.locator("[data-lane-list=tested] article.card").first
    assert first.get_attribute("id") == f"attempt-{max(in_play)}"
    form, timeline = page.locator("#new-attempt").bounding_box(), page.locator("#timeline")
    assert form is not None and form["y"] < height * (0.8 if width > 1000 else 1.2)
    timeline_box = timeline.bounding_box()
    assert timeline_box is not None
    if width > 1000:
        assert timeline_box["y"] < height, "the newest work starts below the first screen"
    else:
        assert form["y"] < timeline_box["y"]

    # The dead ends: folded; opened, one compact row each.
    eliminated = [i for i in made["ids"] if made["status"][i] == "eliminated"]
    row = page.locator(f"#attempt-{max(eliminated)}")
    assert not row.is_visible()
    page.click("#eliminated-fold > summary")
    assert row.is_visible()
    assert page.locator("[data-lane-list=eliminated] article.card").count() == len(eliminated)
    assert page.locator("[data-count-of=eliminated]").inner_text() == str(len(eliminated))
    row_box = row.bounding_box()
    assert row_box is not None and row_box["height"] < (60 if width > 1000 else 130), row_box
    row.scroll_into_view_if_needed()
    assert_no_sideways_scroll(page)
    shot(page, f"campaign-1000-{width}-fold")
    page.evaluate("window.scrollTo(0, 0)")

    # Filter by status: exactly the crashed ones, said as a count.
    crashed = {i for i, s in made["status"].items() if s == "crashed"}
    page.select_option("#filters select[name=status]", "crashed")
    assert shown_ids(page) == crashed
    assert page.locator("[data-filter-count]").inner_text() == f"{len(crashed)} of 1000 match"

    # Search by text, in any case; the same attempts as the server's own filter finds.
    page.select_option("#filters select[name=status]", "")
    page.fill("#filters input[name=q]", "keyerror: 2")
    expected = {i for i, cause in made["cause"].items() if "KeyError: 2" in cause}
    assert shown_ids(page) == expected and expected
    served = page.context.request.get(f"{server.url}{url}?q=keyerror%3A+2").text()
    assert {i for i, (_, hidden) in cards(served).items() if not hidden} == expected
    assert page.locator("#eliminated-fold").evaluate("d => d.open")
    page.press("#filters input[name=q]", "Enter")
    page.wait_for_url(f"**{url}?q=keyerror%3A+2")
    assert page.evaluate("window.__marker") == "no reload"
    assert_no_sideways_scroll(page)
    shot(page, f"campaign-1000-{width}-search")
    page.fill("#filters input[name=q]", "")
    assert len(shown_ids(page)) == 1000

    # The chart: every measured attempt a point, labels apart and legible, inside it.
    svg = page.locator("#chart svg")
    assert svg.locator("circle.point").count() == len(made["measured"])
    frame = svg.bounding_box()
    assert frame is not None and frame["width"] <= width
    for selector in ("#chart text.tick", "#chart text.x-label"):
        labels = boxes(page, selector)
        assert 2 <= len(labels) <= 10, (selector, labels)
        for index, label in enumerate(labels):
            assert label["h"] >= 10, label  # a scaled-down drawing shrank them to 4 px
            assert frame["x"] <= label["x"]
            assert label["x"] + label["w"] <= frame["x"] + frame["width"]
            assert all(apart(label, other) for other in labels[index + 1 :]), labels
    page.locator("#chart").screenshot(path=str(SHOTS / f"campaign-1000-{width}-chart.png"))


def test_the_attempt_and_share_pages_fit_a_phone(
    open_page: Any, server: LiveServer, api: httpx.Client
) -> None:
    made = seed_long_campaign(server.app.state.engine, 1000)
    crashed = min(i for i, s in made["status"].items() if s == "crashed")
    token = api.post(f"/api/campaigns/{made['campaign_id']}/shares").json()["token"]
    for path, name in ((f"/attempts/{crashed}", "attempt"), (f"/s/{token}", "share")):
        page = open_page(path, logged_in=name == "attempt")
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_selector("main")
        assert_no_sideways_scroll(page)
        shot(page, f"{name}-390")


def test_notes_with_long_words_and_wide_tables_fit_a_phone(
    open_page: Any, server: LiveServer, api: httpx.Client
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    body = (
        "Long: " + "x" * 300 + "\n\nhttps://example.com/" + "z" * 200
        + "\n\n| flag | value |\n|---|---|\n| --" + "w" * 150 + " | on |\n"
    )  # fmt: skip
    for path in (f"/api/attempts/{attempt['id']}/notes", f"/api/campaigns/{campaign['id']}/notes"):
        assert api.post(path, json={"body": body}).status_code == 201
    token = api.post(f"/api/campaigns/{campaign['id']}/shares").json()["token"]
    pages = ((f"/attempts/{attempt['id']}", True), (f"/campaigns/{campaign['id']}", True),
             (f"/s/{token}", False))  # fmt: skip
    for path, logged_in in pages:
        page = open_page(path, logged_in=logged_in)
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_selector(".note-body table")
        assert_no_sideways_scroll(page)


def test_names_and_titles_without_spaces_fit_a_phone(
    open_page: Any, server: LiveServer, api: httpx.Client
) -> None:
    # As long as the forms take, and no space to break at (a pasted path, a model name).
    campaign = make_campaign(api, name="N" * 200, description="D" * 600, metric="M" * 40)
    command = "python -m sglang.launch_server --" + "f" * 300 + " --model-path /" + "p" * 300
    attempt = make_attempt(api, campaign["id"], title="T" * 200, hypothesis="H" * 500,
                           command=command)  # fmt: skip
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 90})
    verdict = {"status": "eliminated", "verdict": "V" * 500}
    assert api.patch(f"/api/attempts/{attempt['id']}", json=verdict).status_code == 200
    other = make_attempt(api, campaign["id"], title="U" * 200, command=command + " --x")
    api.post(f"/api/attempts/{other['id']}/measurements", json={"value": 95})
    token = api.post(f"/api/campaigns/{campaign['id']}/shares").json()["token"]
    pages = (("/", True), (f"/campaigns/{campaign['id']}", True),
             (f"/attempts/{attempt['id']}", True), (f"/attempts/{other['id']}", True),
             (f"/s/{token}", False))  # fmt: skip
    for path, logged_in in pages:
        page = open_page(path, logged_in=logged_in)
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_selector("main")
        assert_no_sideways_scroll(page)


def test_without_script_the_fold_opens_and_the_filter_is_a_form(
    chromium: Any, server: LiveServer
) -> None:
    made = seed_long_campaign(server.app.state.engine, 300)
    url = f"/campaigns/{made['campaign_id']}"
    context = chromium.new_context(
        java_script_enabled=False, viewport={"width": 390, "height": 844}
    )
    try:
        page = context.new_page()
        page.goto(f"{server.url}/login?token={OWNER_TOKEN}&next={url}")
        # The badge says the page is not live, not that it is getting there.
        assert page.locator("#live-status").inner_text() == "not live: JavaScript is off"
        eliminated = max(i for i, s in made["status"].items() if s == "eliminated")
        assert not page.locator(f"#attempt-{eliminated}").is_visible()
        page.click("#eliminated-fold > summary")
        assert page.locator(f"#attempt-{eliminated}").is_visible()
        page.select_option("#filters select[name=status]", "crashed")
        page.click("#filters button")
        page.wait_for_url(f"**{url}?status=crashed&q=")
        crashed = {i for i, s in made["status"].items() if s == "crashed"}
        visible = page.locator("#timeline article.card:visible")
        assert {
            int(str(visible.nth(n).get_attribute("id"))[8:]) for n in range(visible.count())
        } == crashed
        assert_no_sideways_scroll(page)
    finally:
        context.close()


def test_live_updates_keep_the_filter_and_the_fold(
    open_page: Any, server: LiveServer, api: httpx.Client
) -> None:
    made = seed_long_campaign(server.app.state.engine, 1000)
    page = open_page(f"/campaigns/{made['campaign_id']}")
    page.wait_for_selector("#live-status.on", timeout=20_000)
    page.evaluate("window.__marker = 'no reload'")
    page.click("#eliminated-fold > summary")
    page.select_option("#filters select[name=status]", "running")
    running = {i for i, s in made["status"].items() if s == "running"}
    assert shown_ids(page) == running
    chosen = max(running)

    # A note: that card alone is swapped in, and still shown under the filter.
    api.post(f"/api/attempts/{chosen}/notes", json={"body": "watching the warm-up"})
    page.locator(f"#attempt-{chosen} .badge", has_text="1 note").wait_for(timeout=20_000)
    assert shown_ids(page) == running

    # A verdict: the timeline comes anew; the dead end is filed in the fold, which stays
    # open, and the filter still hides what is not running.
    api.patch(f"/api/attempts/{chosen}", json={"status": "eliminated", "verdict": "no gain"})
    page.locator(f"[data-lane-list=eliminated] #attempt-{chosen}").wait_for(
        state="attached", timeout=20_000
    )
    page.wait_for_function(
        f"document.querySelector('#attempt-{chosen}').hidden === true", timeout=10_000
    )
    assert shown_ids(page) == running - {chosen}
    assert page.locator("[data-filter-count]").inner_text() == f"{len(running) - 1} of 1000 match"
    assert page.locator("#eliminated-fold").evaluate("d => d.open")
    assert page.evaluate("window.__marker") == "no reload"


def test_a_lane_whose_cards_the_filter_hides_says_so(
    open_page: Any, server: LiveServer, api: httpx.Client
) -> None:
    # A search that matched nothing left "In play 2" and "Adopted 1" over empty space:
    # nothing said the cards were there, only filtered out.
    campaign = make_campaign(api)
    adopted = make_attempt(api, campaign["id"], title="Baseline")
    api.post(f"/api/attempts/{adopted['id']}/measurements", json={"value": 82.0})
    verdict = {"status": "adopted", "verdict": "the reference"}
    assert api.patch(f"/api/attempts/{adopted['id']}", json=verdict).status_code == 200
    for title in ("NCCL Tree", "Torch symmetric memory"):
        make_attempt(api, campaign["id"], title=title)
    dead_end = make_attempt(api, campaign["id"], title="FlashInfer fusion")
    dropped = {"status": "eliminated", "verdict": "no SM120 kernel"}
    assert api.patch(f"/api/attempts/{dead_end['id']}", json=dropped).status_code == 200
    url = f"/campaigns/{campaign['id']}"
    filtered_out = "#timeline .lane .filtered-out"
    for path in (f"{url}?q=no+such+thing", url):  # the server's filter, then the page's
        page = open_page(path)
        if path == url:
            assert page.locator(filtered_out).evaluate_all("ps => ps.map(p => p.offsetParent)") == [
                None, None
            ]  # fmt: skip
            totals = page.locator("#timeline [data-count-of]").all_text_contents()[:3]
            assert totals == ["2", "1", "1"]  # no filter: each lane's cards
            page.fill("#filters input[name=q]", "no such thing")
        for lane in ("In play", "Adopted"):
            said = page.locator(f'#timeline .lane[aria-label="{lane}"] .filtered-out')
            said.wait_for(state="visible", timeout=5_000)
            assert "match" in said.inner_text()
        # each lane's count says how many of its cards the filter shows
        counts = page.locator("#timeline [data-count-of]")
        assert counts.all_text_contents()[:3] == ["0 of 2", "0 of 1", "0 of 1"]
        # the dead ends' fold too: its message, not an empty table's header
        if not page.locator("#eliminated-fold").evaluate("d => d.open"):
            page.locator("#eliminated-fold > summary").click()
        said = page.locator("#eliminated-fold > .filtered-out")
        said.wait_for(state="visible", timeout=5_000)
        assert "match" in said.inner_text()
        assert not page.locator("#eliminated-fold .fold-head").is_visible()
        page.fill("#filters input[name=q]", "nccl")
        page.locator('#timeline .lane[aria-label="In play"] .filtered-out').wait_for(
            state="hidden", timeout=5_000
        )
        assert counts.all_text_contents()[:3] == ["1 of 2", "0 of 1", "0 of 1"]
        assert page.locator('#timeline .lane[aria-label="Adopted"] .filtered-out').is_visible()
