"""The story a campaign tells: what an attempt's flags are compared against, and the links
between attempts, as the owner and the team read them."""

import re
from pathlib import Path

import httpx
import pytest

from tests.helpers import (
    UI_WAIT_MS,
    attempt_of,
    make_attempt,
    make_campaign,
    name_baseline_configuration,
    wait_for,
)

CRASH = (Path(__file__).parent / "data" / "seed_torch_symm_mem.log").read_bytes()

BASE = "python -m sglang.launch_server --model-path /shared/kimi-k2.5-int4 --tp 8"
SYMM = f"{BASE} --cuda-graph-max-bs 128 --disable-custom-all-reduce --enable-torch-symm-mem"
ADOPTED = f"{BASE} --cuda-graph-max-bs 128"


def crash(api: httpx.Client, attempt: dict, tmp_path: Path) -> None:
    """As an attempt crashes: its log says so, the diagnosis marks it."""
    log = tmp_path / f"attempt-{attempt['id']}.log"
    log.write_bytes(CRASH)
    assert api.patch(f"/api/attempts/{attempt['id']}", json={"source": f"file://{log}"}).is_success
    wait_for(lambda: attempt_of(api, attempt["id"])["status"] == "crashed", what="the crash")


def seed_story(api: httpx.Client, tmp_path: Path) -> tuple[dict, dict, dict]:
    """Typed baseline 82, no baseline attempt; #1 crashes and is eliminated; #2 measures
    89.5 and is adopted as the baseline."""
    campaign = make_campaign(api, baseline=82.0)
    crashed = make_attempt(api, campaign["id"], title="Torch symmetric memory", command=SYMM)
    crash(api, crashed, tmp_path)
    eliminated = api.patch(
        f"/api/attempts/{crashed['id']}",
        json={"status": "eliminated", "verdict": "KeyError: 12: no symm-mem table for sm_120"},
    )
    assert eliminated.is_success, eliminated.text
    adopted = make_attempt(api, campaign["id"], title="CUDA graphs to 128", command=ADOPTED)
    assert api.post(f"/api/attempts/{adopted['id']}/measurements", json={"value": 89.5}).is_success
    done = api.patch(
        f"/api/attempts/{adopted['id']}", json={"status": "adopted", "set_baseline": True}
    )
    assert done.is_success, done.text
    return campaign, crashed, adopted


def test_the_adopted_step_is_never_compared_with_the_crash(
    api: httpx.Client, browser: httpx.Client, anonymous: httpx.Client, tmp_path: Path
) -> None:
    campaign, crashed, adopted = seed_story(api, tmp_path)
    read = attempt_of(api, adopted["id"])
    assert read["flag_diff"] is None  # the typed baseline has no configuration of its own
    assert read["flags"]["baseline_configuration"] is True  # it set the baseline
    assert attempt_of(api, crashed["id"])["flag_diff"] is None
    against_crash = re.compile(
        rf"against\s*(<[^>]*>\s*)*#{crashed['id']}\b|Against #{crashed['id']}"
    )
    token = api.post(f"/api/campaigns/{campaign['id']}/shares", json={}).json()["token"]
    for text in (
        browser.get(f"/campaigns/{campaign['id']}").text,
        browser.get(f"/attempts/{adopted['id']}").text,
        anonymous.get(f"/s/{token}").text,
        anonymous.get(f"/s/{token}.md").text,
    ):
        assert not against_crash.search(text)
        assert "-disable_custom_all_reduce" not in text
    assert "the baseline configuration" in browser.get(f"/attempts/{adopted['id']}").text

    # The next hypothesis is compared with the adopted configuration.
    later = make_attempt(api, campaign["id"], title="Symm mem again", command=f"{ADOPTED} --x")
    diff = attempt_of(api, later["id"])["flag_diff"]
    assert diff["baseline_attempt_id"] == adopted["id"] and diff["summary"] == "only change: +x"


def test_without_a_baseline_configuration_the_page_says_so_and_the_owner_names_one(
    api: httpx.Client, browser: httpx.Client
) -> None:
    campaign = make_campaign(api, baseline=82.0)
    first = make_attempt(api, campaign["id"], title="Baseline run", command=BASE)
    second = make_attempt(api, campaign["id"], title="Symm mem", command=f"{BASE} --x")
    assert attempt_of(api, second["id"])["flag_diff"] is None  # the first is no baseline
    page = browser.get(f"/attempts/{second['id']}").text
    assert "no baseline configuration recorded yet" in page
    assert f'action="/attempts/{second["id"]}/baseline-configuration"' in page

    name_baseline_configuration(api, first)
    diff = attempt_of(api, second["id"])["flag_diff"]
    assert diff["baseline_attempt_id"] == first["id"] and diff["summary"] == "only change: +x"
    # One configuration per baseline: naming another is refused, saying which it is.
    again = api.patch(f"/api/attempts/{second['id']}", json={"baseline_configuration": True})
    assert again.status_code == 409 and f"#{first['id']}" in again.json()["detail"]


def test_a_crashed_attempt_cannot_be_named_the_baseline_configuration(
    api: httpx.Client, tmp_path: Path
) -> None:
    campaign = make_campaign(api, baseline=82.0)
    crashed = make_attempt(api, campaign["id"], command=SYMM)
    crash(api, crashed, tmp_path)
    named = api.patch(f"/api/attempts/{crashed['id']}", json={"baseline_configuration": True})
    assert named.status_code == 422 and "crashed" in named.json()["detail"]
    later = make_attempt(api, campaign["id"], command=BASE)
    assert attempt_of(api, later["id"])["flag_diff"] is None


def test_blocked_by_and_retest_of_are_editable_and_null_clears(
    api: httpx.Client, browser: httpx.Client
) -> None:
    campaign = make_campaign(api)
    one, two, three = (make_attempt(api, campaign["id"], title=t) for t in ("a", "b", "c"))
    linked = api.patch(
        f"/api/attempts/{three['id']}", json={"blocked_by": one["id"], "retest_of": two["id"]}
    )
    assert linked.status_code == 200, linked.text
    read = attempt_of(api, three["id"])
    assert (read["blocked_by"], read["retest_of"]) == (one["id"], two["id"])
    assert api.patch(f"/api/attempts/{three['id']}", json={"retest_of": None}).is_success
    read = attempt_of(api, three["id"])
    assert (read["blocked_by"], read["retest_of"]) == (one["id"], None)
    # Refused: itself, and an attempt of another campaign.
    other = make_attempt(api, make_campaign(api)["id"])
    for body in ({"retest_of": three["id"]}, {"blocked_by": other["id"]}):
        refused = api.patch(f"/api/attempts/{three['id']}", json=body)
        assert refused.status_code == 422, body

    # The page's edit form: "#2" links, an emptied box clears.
    page = browser.get(f"/attempts/{three['id']}").text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf
    form = {"csrf_token": csrf.group(1), "title": "c", "retest_of": f"#{two['id']}"}
    saved = browser.post(f"/attempts/{three['id']}/edit", data={**form, "blocked_by": ""})
    assert saved.status_code in (200, 303), saved.text
    read = attempt_of(api, three["id"])
    assert (read["blocked_by"], read["retest_of"]) == (None, two["id"])


SHOTS = Path("test-artifacts/story")


@pytest.mark.browser
def test_the_story_in_chromium(api: httpx.Client, open_page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The seeds' campaign as the team reads it: the crash on the chart and eliminated from
    its card in one click, both baseline steps labelled, the adopted step compared with
    nothing it did not come from."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    campaign = make_campaign(api, baseline=82.0)
    crashed = make_attempt(api, campaign["id"], title="Torch symmetric memory", command=SYMM)
    crash(api, crashed, tmp_path)
    page = open_page(f"/campaigns/{campaign['id']}")
    card = page.locator(f"#attempt-{crashed['id']}")
    verdict = card.locator("form.eliminate input[name=verdict]")
    assert "KeyError: 12" in verdict.input_value()  # the root cause, ready to keep or edit
    card.locator("form.eliminate button").click()
    page.wait_for_url(f"**/campaigns/{campaign['id']}*", timeout=UI_WAIT_MS)
    page.locator(f"#attempt-{crashed['id']}.status-eliminated").wait_for(timeout=UI_WAIT_MS)
    assert "KeyError: 12" in attempt_of(api, crashed["id"])["verdict"]
    crash_marker = page.locator("#chart text.marker.crashed")
    assert crash_marker.count() == 1
    dead_ends = page.locator("#dead-ends")
    assert "1 dead end" in dead_ends.inner_text() and "KeyError: 12" in dead_ends.inner_text()
    labels = page.locator("#chart text.baseline-label")
    assert labels.all_text_contents() == ["baseline 82.0"]
    page.screenshot(path=str(SHOTS / "01-crash-eliminated.png"), full_page=True)

    adopted = make_attempt(api, campaign["id"], title="CUDA graphs to 128", command=ADOPTED)
    assert api.post(f"/api/attempts/{adopted['id']}/measurements", json={"value": 89.5}).is_success
    done = api.patch(
        f"/api/attempts/{adopted['id']}", json={"status": "adopted", "set_baseline": True}
    )
    assert done.is_success
    # Live: the new baseline is drawn at once, though no attempt has met it yet.
    page.wait_for_function(
        "() => document.querySelectorAll('#chart text.baseline-label').length === 2",
        timeout=UI_WAIT_MS,
    )
    assert labels.all_text_contents() == ["baseline 82.0", "baseline 89.5"]
    adopted_card = page.locator(f"#attempt-{adopted['id']}")
    adopted_card.wait_for(timeout=UI_WAIT_MS)
    assert f"#{crashed['id']}" not in adopted_card.inner_text()
    page.screenshot(path=str(SHOTS / "02-adopted.png"), full_page=True)

    detail = open_page(f"/attempts/{adopted['id']}")
    assert f"against #{crashed['id']}" not in detail.locator("#attempt-detail").inner_text()
    assert "the baseline configuration" in detail.locator("#attempt-detail").inner_text()
    detail.screenshot(path=str(SHOTS / "03-adopted-attempt-page.png"), full_page=True)

    token = api.post(f"/api/campaigns/{campaign['id']}/shares", json={}).json()["token"]
    shared = open_page(f"/s/{token}", logged_in=False)
    text = shared.locator("body").inner_text()
    assert f"against #{crashed['id']}" not in text and "-disable_custom_all_reduce" not in text
    assert shared.locator("#chart text.marker.crashed").count() == 1
    assert shared.locator("#chart text.baseline-label").all_text_contents() == [
        "baseline 82.0",
        "baseline 89.5",
    ]
    assert "1 dead end" in shared.locator("#dead-ends").inner_text()
    shared.screenshot(path=str(SHOTS / "04-share.png"), full_page=True)
