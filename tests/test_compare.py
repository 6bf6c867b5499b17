"""Attempts side by side: the API in the order asked, the page's columns with what differs
from the first marked, each run's figure on one axis, at desktop width and on a phone, and
ticking attempts on the campaign page."""

import re
from pathlib import Path

import httpx
import pytest

from tests.helpers import UI_WAIT_MS, make_attempt, make_campaign
from tests.test_story import crash

SHOTS = Path("test-artifacts/compare")
BASE = "python -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 --tp 8"


def seeded(api: httpx.Client) -> tuple[dict, list[dict]]:
    """The seeds' pivot: CUDA 13 adopted as the baseline, fusion measured against it, and
    a symmetric-memory attempt not measured."""
    campaign = make_campaign(api, name="EAGLE-3", baseline=89.5)
    cuda13 = make_attempt(api, campaign["id"], title="CUDA 13 upgrade",
                          command=f"{BASE} --cuda-graph-max-bs 128")  # fmt: skip
    for value in (92.4, 92.8, 92.6):
        api.post(f"/api/attempts/{cuda13['id']}/measurements", json={"value": value})
    api.patch(f"/api/attempts/{cuda13['id']}", json={"status": "adopted", "set_baseline": True})
    fusion = make_attempt(
        api, campaign["id"], title="FlashInfer allreduce fusion",
        command=f"{BASE} --cuda-graph-max-bs 128 --enable-flashinfer-allreduce-fusion",
    )  # fmt: skip
    for value in (92.5, 92.9, 92.7, 92.7):
        api.post(f"/api/attempts/{fusion['id']}/measurements", json={"value": value})
    symm = make_attempt(
        api, campaign["id"], title="Torch symmetric memory",
        command=f"{BASE} --cuda-graph-max-bs 80 --enable-torch-symm-mem",
    )  # fmt: skip
    return campaign, [cuda13, fusion, symm]


def test_the_api_gives_each_attempt_in_the_order_asked(api: httpx.Client) -> None:
    _, (cuda13, fusion, symm) = seeded(api)
    answer = api.get("/api/compare", params={"ids": f"{fusion['id']},{cuda13['id']},{symm['id']}"})
    assert answer.status_code == 200, answer.text
    attempts = answer.json()["attempts"]
    assert [a["id"] for a in attempts] == [fusion["id"], cuda13["id"], symm["id"]]
    alone = api.get(f"/api/attempts/{fusion['id']}").json()
    assert attempts[0]["stats"] == alone["stats"]
    # Fusion against the CUDA 13 baseline's own three runs: Welch, the same within 1 %.
    assert attempts[0]["stats"]["baseline"] == {
        "value": pytest.approx(92.6), "n": 3, "attempt_id": cuda13["id"]
    }  # fmt: skip
    assert attempts[0]["stats"]["call"] == "same"
    repeated = api.get(f"/api/compare?ids={cuda13['id']}&ids={fusion['id']}")
    assert [a["id"] for a in repeated.json()["attempts"]] == [cuda13["id"], fusion["id"]]


@pytest.mark.parametrize(
    "ids,status",
    [("1", 422), ("1,2,3,4,5,6,7,8,9", 422), ("1,x", 422), ("", 422), ("1,999999", 404)],
)
def test_the_api_refuses_fewer_than_two_more_than_eight_or_unknown_ids(
    api: httpx.Client, ids: str, status: int
) -> None:
    campaign = make_campaign(api)
    make_attempt(api, campaign["id"])
    answer = api.get("/api/compare", params={"ids": ids})
    assert answer.status_code == status, answer.text
    assert answer.json()["detail"]


def test_anonymous_visitors_get_nothing(anonymous: httpx.Client) -> None:
    assert anonymous.get("/api/compare?ids=1,2").status_code == 401
    assert anonymous.get("/compare?ids=1,2", headers={"Accept": "text/html"}).status_code == 401


@pytest.mark.browser
def test_the_compare_page_at_desktop_and_on_a_phone(api: httpx.Client, open_page) -> None:  # type: ignore[no-untyped-def]
    SHOTS.mkdir(parents=True, exist_ok=True)
    _, (cuda13, fusion, symm) = seeded(api)
    page = open_page(f"/compare?ids={cuda13['id']},{fusion['id']},{symm['id']}")
    table = page.locator(".compare-table")
    assert table.is_visible()
    headers = table.locator("thead th").all_inner_texts()[1:]
    assert [h.split(" ")[0] for h in headers] == [f"#{cuda13['id']}", f"#{fusion['id']}",
                                                  f"#{symm['id']}"]  # fmt: skip
    calls = table.locator("td.metric").all_inner_texts()
    assert "same (n=4)" in calls[1] and "not measured" in calls[2]
    # What differs from the first column is marked, cell by cell.
    fusion_row = table.locator("tr.flag", has_text="--enable-flashinfer-allreduce-fusion")
    assert fusion_row.locator("td.differs").count() == 1
    graphs_row = table.locator("tr.flag", has_text="--cuda-graph-max-bs")
    assert graphs_row.locator("td").all_inner_texts() == ["128", "128", "80"]
    assert graphs_row.locator("td.differs").count() == 1
    assert "more flags the same in every column" in table.inner_text()
    # Each run on one axis: 3 + 4 dots, a mean and an interval for each measured one.
    assert page.locator(".strip circle.run").count() == 7
    assert page.locator(".strip line.ci").count() == 2
    page.screenshot(path=str(SHOTS / "01-desktop.png"), full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    assert not table.is_visible()
    cards = page.locator(".compare-list > li")
    assert cards.count() == 3 and cards.nth(1).is_visible()
    box = cards.nth(1).bounding_box()
    assert box is not None and box["width"] <= 390
    # a long flag's name does not squeeze the values into a sliver that breaks mid-word
    values = cards.nth(1).locator("dd")
    narrowest = min(values.nth(i).bounding_box()["width"] for i in range(values.count()))  # type: ignore[index]
    assert narrowest >= 0.45 * box["width"], (narrowest, box["width"])
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page scrolls sideways on a phone: {width} px"
    page.screenshot(path=str(SHOTS / "02-phone.png"), full_page=True)


@pytest.mark.browser
def test_attempts_ticked_on_the_campaign_page_stay_ticked_through_a_live_update(
    api: httpx.Client,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    campaign, (cuda13, fusion, _) = seeded(api)
    page = open_page(f"/campaigns/{campaign['id']}")
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    page.locator(f"#attempt-{cuda13['id']} input[form=compare-form]").check()
    page.locator(f"#attempt-{fusion['id']} input[form=compare-form]").check()
    # A live update redraws the fusion card: the tick stays.
    api.patch(f"/api/attempts/{fusion['id']}", json={"verdict": "matches the baseline"})
    page.locator(f"#attempt-{fusion['id']}", has_text="matches the baseline").wait_for(
        timeout=UI_WAIT_MS
    )
    assert page.locator(f"#attempt-{fusion['id']} input[form=compare-form]").is_checked()
    page.locator("#compare-form button").click()
    page.wait_for_url("**/compare?*", timeout=UI_WAIT_MS)
    # The earliest first: the one the others are marked against.
    headers = page.locator(".compare-table thead th").all_inner_texts()[1:]
    assert [h.split(" ")[0] for h in headers] == [f"#{cuda13['id']}", f"#{fusion['id']}"]


@pytest.mark.browser
def test_the_cards_call_and_the_charts_intervals_in_chromium(
    api: httpx.Client,
    open_page,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    campaign, (cuda13, fusion, symm) = seeded(api)
    once = make_attempt(api, campaign["id"], title="Measured once")
    api.post(f"/api/attempts/{once['id']}/measurements", json={"value": 93.5})
    crash(api, symm, tmp_path)
    page = open_page(f"/campaigns/{campaign['id']}")
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    said = page.locator(f"#attempt-{cuda13['id']} .metric .delta").inner_text()
    assert said == "+3.5 % [+2.9, +4.0] better (n=3)"
    fusion_said = page.locator(f"#attempt-{fusion['id']} .metric .delta")
    assert "same (n=4)" in fusion_said.inner_text()
    assert "call-same" in (fusion_said.get_attribute("class") or "")
    assert (
        page.locator(f"#attempt-{once['id']} .metric .delta")
        .inner_text()
        .endswith("inconclusive (n=1)")
    )
    chart = page.locator("#chart")
    assert chart.locator("line.ci").count() == 2  # the two measured more than once
    assert chart.locator("circle.point.unclear").count() == 1
    assert chart.locator("text.marker.crashed").count() == 1
    assert "hollow not yet clear" in chart.inner_text()
    page.screenshot(path=str(SHOTS / "03-campaign-calls.png"), full_page=True)
    # Live: a second run draws the one-run point's interval.
    api.post(f"/api/attempts/{once['id']}/measurements", json={"value": 93.7})
    page.wait_for_function(
        "() => document.querySelectorAll('#chart line.ci').length === 3", timeout=UI_WAIT_MS
    )


def test_compare_with_nothing_ticked_says_how_many_to_tick(api: httpx.Client) -> None:
    campaign = make_campaign(api)
    make_attempt(api, campaign["id"])
    for params in ({"by": "id"}, {"ids": "", "by": "id"}):
        page = api.get("/compare", params=params)
        assert page.status_code == 422
        assert "compare 2 to 8 attempts (got 0)" in page.text and "Field required" not in page.text


def test_environment_variables_and_short_flags_are_named_as_typed(
    api: httpx.Client, browser: httpx.Client
) -> None:
    campaign = make_campaign(api)
    ids = [
        make_attempt(api, campaign["id"], title=title, command=command)["id"]
        for title, command in (
            ("Tree", f"CUDA_VISIBLE_DEVICES=0,1 NCCL_ALGO=Tree {BASE} -O 3"),
            ("Ring", f"CUDA_VISIBLE_DEVICES=2,3 NCCL_ALGO=Ring {BASE} -O 2"),
        )
    ]
    page = browser.get(f"/compare?ids={ids[0]},{ids[1]}").text
    names = re.findall(r'<tr class="flag"><th scope="row"><code>([^<]*)</code>', page)
    assert sorted(names) == ["-O", "CUDA_VISIBLE_DEVICES", "NCCL_ALGO"], names
