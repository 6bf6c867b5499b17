"""Attempts through the JSON API: lifecycle, measurements and noise, pivots, notes."""

from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import select

from app.db import session_scope
from app.models import Measurement
from tests.helpers import attempt_of, make_attempt, make_campaign, patch, tail_of, wait_for


@pytest.fixture
def campaign(api: httpx.Client) -> dict:
    return make_campaign(api)


@pytest.mark.both_databases
def test_create_and_read_an_attempt(api: httpx.Client, campaign: dict) -> None:
    attempt = make_attempt(
        api,
        campaign["id"],
        hypothesis="Faster than NCCL Ring for small allreduces",
        command="python -m sglang.launch_server --tp 8 --enable-torch-symm-mem",
        flags="--enable-torch-symm-mem --disable-custom-all-reduce",
    )
    read = api.get(f"/api/attempts/{attempt['id']}").json()
    assert read == attempt
    assert read["status"] == "proposed" and read["lane"] == "tested"
    assert read["metric_value"] is None and read["delta_pct"] is None
    assert read["diagnosis"] is None and read["tail"] is None
    # `flags` is read from the command now; what was typed is kept, laid over it.
    assert read["flags"]["typed"] == "--enable-torch-symm-mem --disable-custom-all-reduce"
    assert read["flags"]["command"] == {
        "tp_size": "8", "enable_torch_symm_mem": True,
        "disable_custom_all_reduce": True,
    }  # fmt: skip
    assert read["flag_diff"] is None  # the campaign's first attempt is its baseline


def test_attaching_a_source_starts_the_attempt(api: httpx.Client, campaign: dict) -> None:
    source = "ssh://root@gpu-box/data/eagle3/logs/torch_symm_mem_test.log"
    attempt = make_attempt(api, campaign["id"], source=source)
    assert attempt["status"] == "running" and attempt["started_at"] is not None
    later = make_attempt(api, campaign["id"], title="later")
    attached = patch(api, later["id"], source="file:///var/log/sglang.log").json()
    assert attached["status"] == "running" and attached["source"] == "file:///var/log/sglang.log"


@pytest.mark.parametrize(
    "source", ["http://gpu-box/log", "/data/log", "ssh:/host/x", "file://relative", "ftp://x/y"]
)
def test_a_source_that_is_not_ssh_or_file_is_422(
    api: httpx.Client, campaign: dict, source: str
) -> None:
    response = api.post(
        f"/api/campaigns/{campaign['id']}/attempts", json={"title": "t", "source": source}
    )
    assert response.status_code == 422


def walk(api: httpx.Client, attempt_id: int, *statuses: str) -> dict:
    body: dict = {}
    for status in statuses:
        # (eliminating needs its reason)
        said = {"verdict": "a dead end"} if status == "eliminated" else {}
        response = patch(api, attempt_id, status=status, **said)
        assert response.status_code == 200, (status, response.text)
        body = response.json()
    return body


def test_the_whole_lifecycle_to_adopted(api: httpx.Client, campaign: dict) -> None:
    attempt = make_attempt(api, campaign["id"])
    walk(api, attempt["id"], "running", "ready")
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 90.2})
    body = walk(api, attempt["id"], "adopted")
    assert body["status"] == "adopted" and body["lane"] == "adopted"
    assert body["closed_at"] is not None


def test_crash_then_eliminate_with_a_verdict(
    api: httpx.Client, campaign: dict, tmp_path: Path
) -> None:
    attempt = make_attempt(api, campaign["id"], source=f"file://{tmp_path}/x.log")
    walk(api, attempt["id"], "ready", "crashed")
    body = patch(
        api, attempt["id"], status="eliminated", verdict="KeyError: 12: no SM120 in the arch table"
    ).json()
    assert body["lane"] == "eliminated"
    assert body["verdict"] == "KeyError: 12: no SM120 in the arch table"


REFUSED = [
    ([], "adopted", "only a measured attempt"),
    ([], "crashed", "cannot go from proposed to crashed"),
    ([], "ready", "cannot go from proposed to ready"),
    (["running"], "adopted", "only a measured attempt"),
    (["running"], "proposed", "cannot go from running to proposed"),
    (["running", "crashed"], "ready", "crashed attempt can only be eliminated"),
    (["running", "crashed"], "adopted", "only a measured attempt"),
    (["eliminated"], "running", "a verdict is final"),
    (["eliminated"], "adopted", "a verdict is final"),
    (["eliminated"], "eliminated", "a verdict is final"),
    (["running", "measured*", "adopted"], "eliminated", "a verdict is final"),
    (["running", "measured*"], "crashed", "cannot go from measured to crashed"),
    (["running"], "measured", "no measurement yet"),
]


@pytest.mark.parametrize("path,target,reason", REFUSED)
def test_impossible_transitions_are_409_with_a_reason(
    api: httpx.Client, campaign: dict, path: list[str], target: str, reason: str
) -> None:
    attempt = make_attempt(api, campaign["id"])
    for status in path:
        if status == "measured*":
            api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 80})
            continue
        assert walk(api, attempt["id"], status)
    before = api.get(f"/api/attempts/{attempt['id']}").json()
    response = patch(api, attempt["id"], status=target, verdict="should not stick")
    assert response.status_code == 409
    assert reason in response.json()["detail"]
    assert api.get(f"/api/attempts/{attempt['id']}").json() == before


def test_attempts_blocking_each_other_in_a_circle_are_refused(
    api: httpx.Client, campaign: dict
) -> None:
    first, second, third = (make_attempt(api, campaign["id"], title=t) for t in "abc")
    assert patch(api, first["id"], blocked_by=second["id"]).status_code == 200
    assert patch(api, second["id"], blocked_by=third["id"]).status_code == 200
    closing = patch(api, third["id"], blocked_by=first["id"])
    assert closing.status_code == 422 and "wait forever" in closing.text, closing.text
    assert api.get(f"/api/attempts/{third['id']}").json()["blocked_by"] is None
    assert patch(api, first["id"], blocked_by=third["id"]).status_code == 200  # no circle


def test_any_attempt_can_be_blocked_and_unblocked(api: httpx.Client, campaign: dict) -> None:
    cuda13 = make_attempt(api, campaign["id"], title="CUDA 13 upgrade")
    fusion = make_attempt(api, campaign["id"], title="FlashInfer allreduce fusion")
    walk(api, fusion["id"], "running", "crashed", "eliminated")
    blocked = patch(api, fusion["id"], status="blocked", blocked_by=cuda13["id"]).json()
    assert blocked["status"] == "blocked" and blocked["blocked_by"] == cuda13["id"]
    assert blocked["lane"] == "tested"
    assert walk(api, fusion["id"], "running")["status"] == "running"


@pytest.mark.parametrize(
    "body",
    [
        {"status": "exploded"},
        {"metric_value": "fast"},
        {"metric_value": True},
        {"metric_value": -1},
        {"title": "a\u0000b"},
        {"verdict": 12},
        {"source": "http://x/y"},
        {"set_baseline": True, "status": "eliminated"},
        {"nonsense": 1},
    ],
)
def test_malformed_patches_are_422(api: httpx.Client, campaign: dict, body: dict) -> None:
    attempt = make_attempt(api, campaign["id"])
    assert api.patch(f"/api/attempts/{attempt['id']}", json=body).status_code == 422


@pytest.mark.parametrize("value", [True, False, -0.5, "fast", None])
def test_a_measurement_is_a_non_negative_number(
    api: httpx.Client, campaign: dict, value: object
) -> None:
    attempt = make_attempt(api, campaign["id"])
    answer = api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": value})
    assert answer.status_code == 422
    assert api.get(f"/api/attempts/{attempt['id']}").json()["metric"] is None


def test_unknown_attempts_and_notes_are_404(api: httpx.Client) -> None:
    assert api.get("/api/attempts/4242").status_code == 404
    assert patch(api, 4242, status="running").status_code == 404
    assert api.post("/api/attempts/4242/measurements", json={"value": 1}).status_code == 404
    assert api.post("/api/attempts/4242/notes", json={"body": "x"}).status_code == 404
    assert api.get("/api/attempts/4242/notes").status_code == 404
    assert api.patch("/api/notes/4242", json={"body": "x"}).status_code == 404
    assert api.delete("/api/notes/4242").status_code == 404
    assert api.get("/api/attempts/not-a-number").status_code == 422


@pytest.mark.both_databases
def test_links_must_stay_inside_the_campaign(api: httpx.Client, campaign: dict) -> None:
    other = make_campaign(api, name="other")
    elsewhere = make_attempt(api, other["id"])
    for link in ("retest_of", "blocked_by"):
        response = api.post(
            f"/api/campaigns/{campaign['id']}/attempts", json={"title": "t", link: elsewhere["id"]}
        )
        assert response.status_code == 422
        assert link in response.json()["detail"]
    mine = make_attempt(api, campaign["id"])
    assert patch(api, mine["id"], blocked_by=mine["id"]).status_code == 422


@pytest.mark.both_databases
def test_measurements_give_mean_spread_and_count(
    api: httpx.Client, campaign: dict, tmp_path: Path
) -> None:
    attempt = make_attempt(api, campaign["id"], source=f"file://{tmp_path}/x.log")
    for value in (84.0, 86.0, 85.0):
        response = api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": value})
        assert response.status_code == 201
    body = response.json()
    assert body["status"] == "measured"
    assert body["metric_value"] == pytest.approx(85.0)
    assert body["metric"]["n"] == 3
    assert body["metric"]["spread"] == pytest.approx(1.0)
    assert body["metric"]["samples"] == [84.0, 86.0, 85.0]
    assert body["delta_pct"] == pytest.approx((85 - 82) / 82 * 100)
    assert body["delta_within_noise"] is False and body["improved"] is True


def test_a_delta_inside_the_noise_is_the_same_and_one_run_or_a_wide_spread_is_no_call(
    api: httpx.Client, campaign: dict
) -> None:
    # One run has no interval: +0.6 % is neither a win nor noise yet.
    steady = make_attempt(api, campaign["id"], title="tiny change")
    body = api.post(f"/api/attempts/{steady['id']}/measurements", json={"value": 82.5}).json()
    assert body["stats"]["call"] == "inconclusive" and body["stats"]["ci95"] is None
    assert body["delta_within_noise"] is False and body["improved"] is False
    # Three tight runs: +0.6 % [+0.46, +0.76] lies inside the 1 % noise band.
    for value in (82.45, 82.55):
        body = api.post(f"/api/attempts/{steady['id']}/measurements", json={"value": value}).json()
    assert body["stats"]["call"] == "same" and body["delta_within_noise"] is True
    low, high = body["stats"]["delta_ci95_pct"]
    assert low == pytest.approx(0.458, abs=0.001) and high == pytest.approx(0.761, abs=0.001)

    noisy = make_attempt(api, campaign["id"], title="noisy runs")
    for value in (80.0, 90.0):
        body = api.post(f"/api/attempts/{noisy['id']}/measurements", json={"value": value}).json()
    # Mean 85 is +3.7 %, but two runs 10 apart: the interval spans -74 % to +81 %.
    assert body["delta_pct"] == pytest.approx(3.66, abs=0.01)
    assert body["stats"]["call"] == "inconclusive"
    assert body["delta_within_noise"] is False and body["improved"] is False

    slower = make_attempt(api, campaign["id"], title="EAGLE-3")
    for value in (54, 54.5, 53.8):
        body = api.post(f"/api/attempts/{slower['id']}/measurements", json={"value": value}).json()
    assert body["delta_pct"] == pytest.approx(-34.1, abs=0.1)
    assert body["stats"]["call"] == "worse"
    assert body["improved"] is False and body["delta_within_noise"] is False


def test_patching_metric_value_replaces_the_runs(api: httpx.Client, campaign: dict) -> None:
    attempt = make_attempt(api, campaign["id"])
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 10})
    body = patch(api, attempt["id"], metric_value=38.0).json()
    assert body["metric_value"] == 38.0 and body["metric"]["n"] == 1
    assert body["status"] == "measured"
    # Runs measured are never thrown away by one typed figure
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 39})
    refused = patch(api, attempt["id"], metric_value=102.8)
    assert refused.status_code == 409 and "2 measured runs" in refused.text, refused.text
    assert attempt_of(api, attempt["id"])["metric"]["n"] == 2


def test_eliminating_needs_a_verdict_however_it_is_asked(api: httpx.Client, campaign: dict) -> None:
    attempt = make_attempt(api, campaign["id"])
    for body in ({}, {"verdict": ""}, {"verdict": "  \n "}):
        response = patch(api, attempt["id"], status="eliminated", **body)
        assert response.status_code == 422 and "needs a verdict" in response.text
    assert attempt_of(api, attempt["id"])["status"] == "proposed"
    walk(api, attempt["id"], "eliminated")
    # Its reason stays: asked again, or edited, but never wiped.
    assert patch(api, attempt["id"], status="eliminated").status_code == 200
    assert patch(api, attempt["id"], verdict="").status_code == 422
    assert attempt_of(api, attempt["id"])["verdict"] == "a dead end"


def test_closed_attempts_take_no_measurements(api: httpx.Client, campaign: dict) -> None:
    attempt = make_attempt(api, campaign["id"])
    walk(api, attempt["id"], "eliminated")
    response = api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 1})
    assert response.status_code == 409
    assert patch(api, attempt["id"], metric_value=3).status_code == 409
    for bad in ({"value": "x"}, {}, {"value": None}):
        assert api.post(f"/api/attempts/{attempt['id']}/measurements", json=bad).status_code == 422


@pytest.mark.both_databases
def test_a_pivot_moves_the_baseline_for_later_attempts_only(
    api: httpx.Client, tmp_path: Path
) -> None:
    """The seeds' CUDA 13 upgrade: 89.5 -> 92.6 tok/s, then retests judged against 92.6."""
    campaign = make_campaign(api, baseline=89.5)
    before = make_attempt(api, campaign["id"], title="NCCL Tree", source=f"file://{tmp_path}/a.log")
    api.post(f"/api/attempts/{before['id']}/measurements", json={"value": 91.0})

    cuda13 = make_attempt(
        api, campaign["id"], title="CUDA 13 upgrade", source=f"file://{tmp_path}/b"
    )
    api.post(f"/api/attempts/{cuda13['id']}/measurements", json={"value": 92.6})
    adopted = patch(api, cuda13["id"], status="adopted", set_baseline=True, verdict="pivot").json()
    assert adopted["delta_pct"] == pytest.approx((92.6 - 89.5) / 89.5 * 100)
    assert adopted["baseline"] == 89.5

    detail = api.get(f"/api/campaigns/{campaign['id']}").json()
    assert detail["baseline"] == 92.6
    assert [(b["value"], b["attempt_id"]) for b in detail["baseline_history"]] == [
        (89.5, None),
        (92.6, cuda13["id"]),
    ]

    retest = make_attempt(
        api, campaign["id"], title="FlashInfer fusion, retest", retest_of=before["id"]
    )
    for value in (92.65, 92.7, 92.75):
        body = api.post(f"/api/attempts/{retest['id']}/measurements", json={"value": value}).json()
    assert body["baseline"] == 92.6 and body["retest_of"] == before["id"]
    assert body["delta_pct"] == pytest.approx(0.108, abs=0.001)
    # One run of the baseline attempt has no spread to compare with: its value, as typed.
    assert body["stats"]["baseline"] == {"value": 92.6, "n": 1, "attempt_id": cuda13["id"]}
    assert body["stats"]["call"] == "same" and body["delta_within_noise"] is True

    # The earlier attempt is still judged against the baseline of its time.
    earlier = api.get(f"/api/attempts/{before['id']}").json()
    assert earlier["baseline"] == 89.5
    assert earlier["delta_pct"] == pytest.approx((91 - 89.5) / 89.5 * 100)


def test_adopting_without_set_baseline_keeps_it(api: httpx.Client, campaign: dict) -> None:
    attempt = make_attempt(api, campaign["id"])
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 85})
    patch(api, attempt["id"], status="adopted")
    assert api.get(f"/api/campaigns/{campaign['id']}").json()["baseline"] == 82.0


def test_notes_on_attempts_and_campaigns(api: httpx.Client, campaign: dict) -> None:
    attempt = make_attempt(api, campaign["id"])
    created = api.post(
        f"/api/attempts/{attempt['id']}/notes",
        json={"body": "Dead end: **needs NVLink** for the fast path"},
    )
    assert created.status_code == 201
    note = created.json()
    assert note["attempt_id"] == attempt["id"] and note["campaign_id"] == campaign["id"]
    assert "<strong>needs NVLink</strong>" in note["html"]

    on_campaign = api.post(
        f"/api/campaigns/{campaign['id']}/notes", json={"body": "PCIe only: no NVLink"}
    ).json()
    assert on_campaign["attempt_id"] is None
    all_notes = api.get(f"/api/campaigns/{campaign['id']}/notes").json()
    assert [n["id"] for n in all_notes] == [note["id"], on_campaign["id"]]
    assert [n["id"] for n in api.get(f"/api/attempts/{attempt['id']}/notes").json()] == [note["id"]]

    edited = api.patch(f"/api/notes/{note['id']}", json={"body": "Needs NVLink."}).json()
    assert edited["body"] == "Needs NVLink." and edited["updated_at"] >= note["updated_at"]
    assert api.delete(f"/api/notes/{note['id']}").status_code == 204
    assert api.get(f"/api/attempts/{attempt['id']}/notes").json() == []
    assert api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": "  "}).status_code == 422


def test_note_markdown_is_sanitized(api: httpx.Client, campaign: dict) -> None:
    hostile = (
        "<script>alert(1)</script> <img src=x onerror=alert(2)> "
        "[click](javascript:alert(3)) [ok](https://example.org)"
    )
    html = api.post(f"/api/campaigns/{campaign['id']}/notes", json={"body": hostile}).json()["html"]
    assert (
        "<script" not in html
        and "<img" not in html
        and "onerror=alert" not in html.replace("&lt;img src=x onerror=alert(2)&gt;", "")
    )
    # The javascript: link stays as inert text; no href ever carries it.
    assert 'href="javascript' not in html
    assert '<a href="https://example.org"' in html
    assert "&lt;script&gt;" in html


def test_a_baseline_measured_days_before_is_said_beside_the_call(
    api: httpx.Client, app_under_test: Any
) -> None:
    campaign = make_campaign(api, baseline=None)
    baseline = make_attempt(api, campaign["id"], title="baseline")
    for value in (89.3, 89.7, 89.5):
        api.post(f"/api/attempts/{baseline['id']}/measurements", json={"value": value})
    patch(api, baseline["id"], status="adopted", set_baseline=True)
    # As if measured three days ago: the machine may have changed since.
    engine = app_under_test.app.state.engine
    with session_scope(engine) as session:
        for row in session.exec(
            select(Measurement).where(Measurement.attempt_id == baseline["id"])
        ):
            row.created_at = row.created_at - timedelta(days=3)
            session.add(row)
    tried = make_attempt(api, campaign["id"], title="tried")
    for value in (92.4, 92.8, 92.6):
        body = api.post(f"/api/attempts/{tried['id']}/measurements", json={"value": value}).json()
    assert body["stats"]["warnings"] == [
        "the baseline's runs are 3 days older: re-measure it to compare like with like"
    ]
    assert body["stats"]["call"] == "better"  # said beside the call, which stands


def test_a_baseline_adopted_from_a_mean_carries_no_float_noise(
    api: httpx.Client, tmp_path: Path
) -> None:
    campaign = make_campaign(api, baseline=89.5)
    cuda13 = make_attempt(
        api, campaign["id"], title="CUDA 13 upgrade", source=f"file://{tmp_path}/b"
    )
    for value in (92.5, 92.7, 92.6):  # their float mean is 92.60000000000001
        api.post(f"/api/attempts/{cuda13['id']}/measurements", json={"value": value})
    patch(api, cuda13["id"], status="adopted", set_baseline=True, verdict="pivot")
    detail = api.get(f"/api/campaigns/{campaign['id']}").json()
    assert detail["baseline"] == 92.6 and detail["baseline_history"][-1]["value"] == 92.6


def test_a_file_source_on_localhost_is_this_machine_and_another_host_is_told_to_use_ssh(
    api: httpx.Client, campaign: dict, tmp_path: Path
) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(b"INFO: Application startup complete.\n")
    made = make_attempt(api, campaign["id"], source=f"file://localhost{log}")
    assert made["source"] == f"file://localhost{log}" and made["status"] == "running"
    wait_for(lambda: tail_of(api, made["id"]).get("stored_bytes") == log.stat().st_size,
             what="the log read")  # fmt: skip
    refused = api.post(
        f"/api/campaigns/{campaign['id']}/attempts",
        json={"title": "t", "source": "file://gpu-box/data/run.log"},
    )
    assert refused.status_code == 422 and "ssh://gpu-box/abs/path" in refused.text, refused.text


def test_a_note_s_image_is_a_link_named_by_its_alt_text_never_loaded(
    api: httpx.Client, campaign: dict
) -> None:
    body = (
        "![tracking pixel](http://evil.example.com/pixel.png?u=alice) "
        "![x](javascript:alert(1)) ![](https://example.org/graph.png)"
    )
    html = api.post(f"/api/campaigns/{campaign['id']}/notes", json={"body": body}).json()["html"]
    assert "<img" not in html and 'href="javascript' not in html
    assert (
        '<a href="http://evil.example.com/pixel.png?u=alice" rel="noopener noreferrer nofollow">'
        "image: tracking pixel</a>"
    ) in html
    assert ">image: image</a>" in html  # no alt text: still shown, as an image
    assert "![x](javascript:alert(1))" in html  # what the page will not link reads as typed
