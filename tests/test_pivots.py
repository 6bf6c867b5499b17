"""What a pivot may have unblocked: the attempts waiting on it and the earlier ones the stack
stood in the way of, offered for a retest in one action; each retest linked to its original."""

import random
from pathlib import Path

import httpx
import pytest

from app import demo_logs
from tests.helpers import (
    UI_WAIT_MS,
    attempt_of,
    csrf_of,
    make_attempt,
    make_campaign,
    wait_for,
)

SHOTS = Path("test-artifacts/pivots")


def crashed(api: httpx.Client, campaign_id: int, title: str, lines: list[str], tmp: Path) -> dict:
    log = tmp / f"{title}.log"
    log.write_text("\n".join(demo_logs.startup({}, ready=False) + lines) + "\n")
    attempt = make_attempt(api, campaign_id, title=title, source=f"file://{log}")
    return wait_for(
        lambda: (a := attempt_of(api, attempt["id"]))["status"] == "crashed" and a,
        what=f"{title} crashed",
    )


def test_a_pivot_offers_what_the_stack_blocked_and_retests_them_in_one_action(
    api: httpx.Client, browser: httpx.Client, tmp_path: Path
) -> None:
    campaign = make_campaign(api, baseline=89.5)
    fusion = crashed(api, campaign["id"], "FlashInfer allreduce fusion",
                     demo_logs.crash_flashinfer_fusion(), tmp_path)  # fmt: skip
    symm = crashed(api, campaign["id"], "Torch symmetric memory",
                   demo_logs.crash_torch_symm_mem(), tmp_path)  # fmt: skip
    oom = crashed(api, campaign["id"], "NCCL reduced channels",
                  demo_logs.crash_nccl_channels(), tmp_path)  # fmt: skip
    assert {a["diagnosis"]["error_class"] for a in (fusion, symm)} == {"unsupported_arch"}
    assert oom["diagnosis"]["error_class"] != "unsupported_arch"
    api.patch(
        f"/api/attempts/{symm['id']}", json={"status": "eliminated", "verdict": "KeyError: 12"}
    )
    pivot = make_attempt(api, campaign["id"], title="CUDA 13 upgrade")
    waiting = make_attempt(api, campaign["id"], title="EAGLE-3 on CUDA 13")
    api.patch(f"/api/attempts/{waiting['id']}", json={"blocked_by": pivot["id"]})
    for value in (92.4, 92.8, 92.6):
        api.post(f"/api/attempts/{pivot['id']}/measurements", json={"value": value})
    adopted = api.patch(f"/api/attempts/{pivot['id']}",
                        json={"status": "adopted", "set_baseline": True})  # fmt: skip
    assert adopted.is_success, adopted.text

    offered = api.get(f"/api/attempts/{pivot['id']}/unblocks")
    assert offered.status_code == 200
    # Crashed or eliminated on the stack, and the one waiting on it; not the OOM.
    assert [a["id"] for a in offered.json()] == [fusion["id"], symm["id"], waiting["id"]]

    stray = api.post(f"/api/attempts/{pivot['id']}/retest-unblocked", json={"ids": [oom["id"]]})
    assert stray.status_code == 422 and f"#{oom['id']}" in stray.json()["detail"]
    made = api.post(f"/api/attempts/{pivot['id']}/retest-unblocked",
                    json={"ids": [fusion["id"], symm["id"]]})  # fmt: skip
    assert made.status_code == 201, made.text
    retests = made.json()
    assert [r["retest_of"] for r in retests] == [fusion["id"], symm["id"]]
    assert retests[0]["title"] == f"Retest after #{pivot['id']}: FlashInfer allreduce fusion"
    # Retested after the pivot: no longer offered; the one still waiting is.
    again = api.get(f"/api/attempts/{pivot['id']}/unblocks").json()
    assert [a["id"] for a in again] == [waiting["id"]]
    rest = api.post(f"/api/attempts/{pivot['id']}/retest-unblocked")
    assert [r["retest_of"] for r in rest.json()] == [waiting["id"]]
    assert api.get(f"/api/attempts/{pivot['id']}/unblocks").json() == []
    assert api.get("/api/attempts/999999/unblocks").status_code == 404

    # Each retest's result beside its original: symmetric memory crashes again the same way.
    log = tmp_path / "retest-symm.log"
    log.write_text("\n".join(demo_logs.startup({}, ready=False)
                             + demo_logs.crash_torch_symm_mem()) + "\n")  # fmt: skip
    api.patch(f"/api/attempts/{retests[1]['id']}", json={"source": f"file://{log}"})
    wait_for(lambda: attempt_of(api, retests[1]["id"])["status"] == "crashed", what="again")
    shown = browser.get(f"/attempts/{symm['id']}").text
    assert f"#{retests[1]['id']}</a> → crashed again, same root cause" in shown
    assert f"#{retests[0]['id']}</a> → proposed" in browser.get(f"/attempts/{fusion['id']}").text


@pytest.mark.browser
def test_the_adopted_attempts_page_offers_them_pre_ticked_in_chromium(
    api: httpx.Client,
    open_page,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    campaign = make_campaign(api, baseline=89.5)
    fusion = crashed(api, campaign["id"], "FlashInfer allreduce fusion",
                     demo_logs.crash_flashinfer_fusion(), tmp_path)  # fmt: skip
    symm = crashed(api, campaign["id"], "Torch symmetric memory",
                   demo_logs.crash_torch_symm_mem(), tmp_path)  # fmt: skip
    pivot = make_attempt(api, campaign["id"], title="CUDA 13 upgrade")
    api.post(f"/api/attempts/{pivot['id']}/measurements", json={"value": 92.6})
    api.patch(f"/api/attempts/{pivot['id']}", json={"status": "adopted", "set_baseline": True})
    page = open_page(f"/attempts/{pivot['id']}")
    form = page.locator(f"#retest-unblocked-form-{pivot['id']}")
    boxes = form.locator("input[name=ids]")
    assert boxes.count() == 2 and all(boxes.nth(i).is_checked() for i in range(2))
    assert "Retest these 2" in form.inner_text() and "KeyError: 12" in form.inner_text()
    page.screenshot(path=str(SHOTS / "01-offer.png"), full_page=True)
    boxes.nth(1).uncheck()  # untickable: only fusion this time
    form.locator("button").click()
    page.wait_for_url(f"**/campaigns/{campaign['id']}", timeout=UI_WAIT_MS)
    retests = [a for a in api.get(f"/api/campaigns/{campaign['id']}").json()["attempts"]
               if a["retest_of"]]  # fmt: skip
    assert [r["retest_of"] for r in retests] == [fusion["id"]]
    left = api.get(f"/api/attempts/{pivot['id']}/unblocks").json()
    assert [a["id"] for a in left] == [symm["id"]]


def test_the_owners_stack_mark_puts_any_failure_in_the_offer_and_a_cards_eliminate_keeps_it(
    api: httpx.Client, browser: httpx.Client, tmp_path: Path
) -> None:
    campaign = make_campaign(api, baseline=89.5)
    channels = crashed(api, campaign["id"], "NCCL reduced channels",
                       demo_logs.crash_nccl_channels(), tmp_path)  # fmt: skip
    assert channels["diagnosis"]["error_class"] not in ("unsupported_arch", "import_or_version")
    assert channels["stack_blocked"] is False
    # The attempt page's status form carries the mark.
    marked = browser.post(
        f"/attempts/{channels['id']}/status",
        data={"csrf_token": csrf_of(browser.get(f"/attempts/{channels['id']}").text),
              "status": "eliminated",
              "verdict": "the driver's P2P bug", "stack_mark": "shown", "stack_blocked": "on"},
    )  # fmt: skip
    assert marked.status_code in (200, 303), marked.text
    assert attempt_of(api, channels["id"])["stack_blocked"] is True
    assert "blocked by the stack" in browser.get(f"/campaigns/{campaign['id']}").text
    # A card's Eliminate has no such box: it leaves the mark as it is.
    browser.post(
        f"/attempts/{channels['id']}/status",
        data={"csrf_token": csrf_of(browser.get(f"/attempts/{channels['id']}").text),
              "status": "eliminated", "verdict": "again", "return_to": "campaign"},
    )  # fmt: skip
    assert attempt_of(api, channels["id"])["stack_blocked"] is True

    pivot = make_attempt(api, campaign["id"], title="Driver 580")
    api.post(f"/api/attempts/{pivot['id']}/measurements", json={"value": 90.1})
    api.patch(f"/api/attempts/{pivot['id']}", json={"status": "adopted"})
    assert [a["id"] for a in api.get(f"/api/attempts/{pivot['id']}/unblocks").json()] == [
        channels["id"]
    ]
    # Unmarked through the API: no longer offered.
    api.patch(f"/api/attempts/{channels['id']}", json={"stack_blocked": False})
    assert api.get(f"/api/attempts/{pivot['id']}/unblocks").json() == []


@pytest.mark.browser
def test_the_campaign_page_shows_the_offer_live_right_after_adoption(
    api: httpx.Client,
    open_page,
    server,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    campaign = make_campaign(api, baseline=89.5)
    fusion = crashed(api, campaign["id"], "FlashInfer allreduce fusion",
                     demo_logs.crash_flashinfer_fusion(), tmp_path)  # fmt: skip
    symm = crashed(api, campaign["id"], "Torch symmetric memory",
                   demo_logs.crash_torch_symm_mem(), tmp_path)  # fmt: skip
    pivot = make_attempt(api, campaign["id"], title="CUDA 13 upgrade")
    api.post(f"/api/attempts/{pivot['id']}/measurements", json={"value": 92.6})
    page = open_page(f"/campaigns/{campaign['id']}")
    page.wait_for_selector("#live-status.on", timeout=UI_WAIT_MS)
    assert page.locator("#pivot-offer-form").count() == 0

    # Adopted elsewhere (the API, another tab): the banner arrives without a reload.
    api.patch(f"/api/attempts/{pivot['id']}", json={"status": "adopted", "set_baseline": True})
    banner = page.locator("#pivot-offer-form")
    banner.wait_for(timeout=UI_WAIT_MS)
    assert "Retest these 2" in banner.inner_text() and "KeyError: 12" in banner.inner_text()
    boxes = banner.locator("input[name=ids]")
    assert [boxes.nth(i).get_attribute("value") for i in range(boxes.count())] == [
        str(fusion["id"]),
        str(symm["id"]),
    ]
    assert all(boxes.nth(i).is_checked() for i in range(2))
    page.screenshot(path=str(SHOTS / "02-campaign-banner.png"), full_page=True)
    boxes.nth(1).uncheck()
    banner.locator("button").click()
    # One retest made: the banner now offers the one left.
    page.locator("#pivot-offer-form button", has_text="Retest these 1").wait_for(timeout=UI_WAIT_MS)
    retests = [a for a in api.get(f"/api/campaigns/{campaign['id']}").json()["attempts"]
               if a["retest_of"]]  # fmt: skip
    assert [r["retest_of"] for r in retests] == [fusion["id"]]
    # Retesting the last one takes the banner away.
    api.post(f"/api/attempts/{pivot['id']}/retest-unblocked")
    page.locator("#pivot-offer-form").wait_for(state="detached", timeout=UI_WAIT_MS)


def test_adopting_a_flag_on_the_same_stack_offers_no_stack_failure_a_new_stack_does(
    api: httpx.Client, tmp_path: Path
) -> None:
    rng = random.Random(3)

    def measured(campaign_id: int, title: str, stack: str, value: float) -> dict:
        log = tmp_path / f"{title}.log"
        lines = demo_logs.startup({}, ready=True, stack=stack)
        for run in range(3):
            lines += demo_logs.benchmark(run, value + run * 0.1, rng)
        log.write_text("\n".join(lines) + "\n")
        attempt = make_attempt(api, campaign_id, title=title, source=f"file://{log}")
        return wait_for(
            lambda: (a := attempt_of(api, attempt["id"]))["stats"]["n"] == 3
            and a["environment"] and a,
            what=f"{title} measured",
        )  # fmt: skip

    def adopt(attempt: dict) -> None:
        done = api.patch(f"/api/attempts/{attempt['id']}",
                         json={"status": "adopted", "set_baseline": True})  # fmt: skip
        assert done.status_code == 200, done.text

    campaign = make_campaign(api, baseline=82.0)
    adopt(measured(campaign["id"], "Baseline", "cuda12.8", 82.0))
    fusion = crashed(api, campaign["id"], "FlashInfer allreduce fusion",
                     demo_logs.crash_flashinfer_fusion(), tmp_path)  # fmt: skip
    flag = measured(campaign["id"], "CUDA graph max batch 128", "cuda12.8", 89.5)
    adopt(flag)
    assert attempt_of(api, flag["id"])["env_diff"]["changed"] == {}
    assert api.get(f"/api/attempts/{flag['id']}/unblocks").json() == []
    pivot = measured(campaign["id"], "CUDA 13 upgrade", "cuda13", 92.6)
    adopt(pivot)
    assert "CUDA 12.8 → 13.0" in attempt_of(api, pivot["id"])["env_diff"]["summary"]
    offered = api.get(f"/api/attempts/{pivot['id']}/unblocks").json()
    assert [a["id"] for a in offered] == [fusion["id"]]
