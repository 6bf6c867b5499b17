"""Figures at the edges of a float: refused when they are not finite, and every page, share
page and export still answers when they are huge (a mean of two 1e308 runs, 2^70 tok/s)."""

import math
import re
import threading
from pathlib import Path

import httpx
import pytest

from app.pages.chart import MAX_TICKS, build_chart
from app.schemas import AttemptOut, CampaignOut
from tests.conftest import LiveServer
from tests.helpers import attempt_of, csrf_of, make_attempt, make_campaign, wait_for
from tests.sse import SSEReader

NEXT_AFTER_2_70 = math.nextafter(2.0**70, math.inf)  # 2^70 + 2^18: one float step above


def every_view_answers(
    api: httpx.Client, browser: httpx.Client, anonymous: httpx.Client, campaign_id: int
) -> None:
    detail = api.get(f"/api/campaigns/{campaign_id}")
    assert detail.status_code == 200, detail.text
    for attempt in detail.json()["attempts"]:
        for path in (f"/api/attempts/{attempt['id']}", f"/attempts/{attempt['id']}"):
            response = browser.get(path) if not path.startswith("/api") else api.get(path)
            assert response.status_code == 200, (path, response.text[:300])
    for path in ("/", f"/campaigns/{campaign_id}"):
        assert browser.get(path).status_code == 200, path
    token = api.post(f"/api/campaigns/{campaign_id}/shares").json()["token"]
    for suffix in ("", ".md", ".json"):
        response = anonymous.get(f"/s/{token}{suffix}")
        assert response.status_code == 200, (suffix, response.text[:300])
    exported = anonymous.get(f"/s/{token}.json").json()  # strict JSON: no Infinity, no NaN
    for attempt in exported["attempts"]:
        for key in ("metric_value", "delta_pct", "baseline"):
            assert attempt[key] is None or math.isfinite(attempt[key]), (key, attempt[key])


@pytest.mark.parametrize(
    ("baseline", "runs"),
    [
        (1e308, [1e308, 1e308]),  # their sum overflows
        (1.7e308, [1.7e308, 0.0]),  # a spread near the float limit
        (2.0**70, [NEXT_AFTER_2_70, 2**70 + 1]),  # the chart's old ticks never advanced
        (1e-300, [1e300]),  # a delta too large for a percentage
        (82.0, [1e308, 1e38]),  # an interval of the change too wide for a float
    ],
)
def test_huge_figures_keep_every_page_and_export_answering(
    api: httpx.Client,
    browser: httpx.Client,
    anonymous: httpx.Client,
    baseline: float,
    runs: list[float],
) -> None:
    campaign = make_campaign(api, name="At the edge of a float", baseline=baseline)
    attempt = make_attempt(api, campaign["id"], title="Huge")
    for value in runs:
        added = api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": value})
        assert added.status_code == 201, added.text
    shown = attempt_of(api, attempt["id"])
    assert math.isfinite(shown["metric_value"]) and math.isfinite(shown["metric"]["spread"])
    assert all(math.isfinite(end) for end in shown["stats"]["delta_ci95_pct"] or ())
    every_view_answers(api, browser, anonymous, campaign["id"])
    # A huge figure is written short: 309 digits would widen the page past any screen.
    for page in (f"/campaigns/{campaign['id']}", f"/attempts/{attempt['id']}"):
        assert not re.search(r"\d[\d,.]{30,}", browser.get(page).text), page
    # Adopting it as the new baseline keeps the mean finite too.
    adopted = api.patch(
        f"/api/attempts/{attempt['id']}", json={"status": "adopted", "set_baseline": True}
    )
    assert adopted.status_code == 200, adopted.text
    assert math.isfinite(api.get(f"/api/campaigns/{campaign['id']}").json()["baseline"])
    every_view_answers(api, browser, anonymous, campaign["id"])


NOT_FINITE = ["9" * 400, "1e400", "-1e400", "NaN", "Infinity", "-Infinity"]


@pytest.mark.parametrize("literal", NOT_FINITE)
def test_the_api_refuses_figures_that_are_not_finite(api: httpx.Client, literal: str) -> None:
    def post(method: str, path: str, body: str) -> httpx.Response:
        return api.request(method, path, content=body, headers={"Content-Type": "application/json"})

    for field in ("baseline", "target"):
        refused = post("POST", "/api/campaigns", f'{{"name": "x", "{field}": {literal}}}')
        assert refused.status_code == 422, (field, refused.text)
        assert refused.json()["detail"][0]["loc"] == ["body", field]
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    for method, path, body in [
        ("PATCH", f"/api/campaigns/{campaign['id']}", f'{{"baseline": {literal}}}'),
        ("POST", f"/api/attempts/{attempt['id']}/measurements", f'{{"value": {literal}}}'),
        ("PATCH", f"/api/attempts/{attempt['id']}", f'{{"metric_value": {literal}}}'),
    ]:
        refused = post(method, path, body)
        assert refused.status_code == 422, (path, refused.text)
        # (NaN fails every bound: it is named for what it is, whatever the field's bounds)
        assert "finite number" in refused.json()["detail"][0]["msg"], refused.text
    # Nothing of it was stored.
    assert attempt_of(api, attempt["id"])["metric"] is None
    assert api.get(f"/api/campaigns/{campaign['id']}").json()["baseline"] == 82.0


@pytest.mark.parametrize("literal", ["9" * 400, "1e400", "nan", "inf"])
def test_the_forms_refuse_figures_that_are_not_finite(
    browser: httpx.Client, api: httpx.Client, literal: str
) -> None:
    csrf = csrf_of(browser.get("/").text)
    refused = browser.post(
        "/campaigns", data={"name": "x", "baseline": literal, "csrf_token": csrf}
    )
    assert refused.status_code == 422, refused.text[:300]
    assert all(c["name"] != "x" for c in api.get("/api/campaigns").json())
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    refused = browser.post(
        f"/attempts/{attempt['id']}/measurements", data={"value": literal, "csrf_token": csrf}
    )
    assert refused.status_code == 422, refused.text[:300]
    assert attempt_of(api, attempt["id"])["metric"] is None


def test_figures_in_a_log_that_are_not_finite_are_dropped(
    api: httpx.Client, browser: httpx.Client, anonymous: httpx.Client, tmp_path: Path
) -> None:
    near_limit = str(int(1.7e308))  # 309 digits: a float, but two of them overflow a sum
    log = tmp_path / "bench.log"
    log.write_text(
        f"Output token throughput (tok/s): {'9' * 400}\n"
        f"Output token throughput (tok/s): {near_limit}\n"
        f"Output token throughput (tok/s): {near_limit}.5\n"
    )
    campaign = make_campaign(api, baseline=82.0)
    attempt = make_attempt(api, campaign["id"], title="Bench", source=f"file://{log}")
    measured = wait_for(
        lambda: (a := attempt_of(api, attempt["id"]))["metric"] and a["metric"]["n"] >= 2 and a,
        what="the log's two finite figures",
    )
    assert measured["metric"]["samples"] == [1.7e308, 1.7e308]
    assert measured["metric_value"] == 1.7e308
    figures = measured["diagnosis"]["throughput"]
    assert [f["value"] for f in figures] == [1.7e308, 1.7e308]
    every_view_answers(api, browser, anonymous, campaign["id"])


def _campaign(baseline: float) -> CampaignOut:
    return CampaignOut.model_validate(
        {
            "id": 1, "name": "c", "metric": "tok/s", "higher_is_better": True,
            "baseline": baseline, "target": None, "description": "", "noise_pct": 1.0,
            "metric_label": "x", "ready_pattern": None, "bench_pattern": None,
            "created_at": "2025-01-01T00:00:00Z",
            "attempt_count": 1, "baseline_history": [],
        }
    )  # fmt: skip


def _attempt(attempt_id: int, value: float, baseline: float) -> AttemptOut:
    return AttemptOut.model_validate(
        {
            "id": attempt_id, "campaign_id": 1, "title": "t", "hypothesis": "", "command": "",
            "source": None, "status": "measured", "lane": "tested", "verdict": None,
            "retest_of": None, "blocked_by": None, "metric_value": value, "metric": None,
            "baseline": baseline, "delta_pct": 0.0, "delta_within_noise": True,
            "improved": False, "diagnosis": None, "same_root_cause_as": [], "tail": None,
            "created_at": "2025-01-01T00:00:00Z", "started_at": None, "closed_at": None,
            "updated_at": "2025-01-01T00:00:00Z",
            "stats": {"n": 1, "mean": value, "stdev": None, "cv_pct": None, "ci95": None,
                      "baseline": None, "delta_pct": None, "delta_ci95_pct": None,
                      "call": "inconclusive", "noise_pct": 1.0, "noise_from": "typed"},
        }
    )  # fmt: skip


@pytest.mark.parametrize(
    "values",
    [
        [2.0**70, NEXT_AFTER_2_70],
        [2.0**70, float(2**70 + 1)],
        [1.7e308, -1.7e308],
        [1e-300, 3e-300],
        [82.0, 82.0000001],
    ],
)
def test_the_chart_computes_a_bounded_number_of_distinct_ticks(values: list[float]) -> None:
    chart = None

    def draw() -> None:
        nonlocal chart
        chart = build_chart(_campaign(values[0]), [_attempt(1, values[1], values[0])])

    # In a thread: a chart that loops forever fails here instead of hanging the suite.
    worker = threading.Thread(target=draw, daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert chart is not None, "the chart did not finish drawing in 10 s"
    assert 1 <= len(chart.ticks) <= MAX_TICKS, chart.ticks
    labels = [label for _, label in chart.ticks]
    assert len(set(labels)) == len(labels), labels
    ys = [y for y, _ in chart.ticks] + [p.y for p in chart.points]
    assert all(math.isfinite(y) and 0 <= y <= chart.height for y in ys), ys


def test_the_share_page_of_a_2_70_campaign_renders(
    server: LiveServer, api: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign = make_campaign(api, name="Astronomical", baseline=2**70)
    attempt = make_attempt(api, campaign["id"])
    api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": NEXT_AFTER_2_70})
    token = api.post(f"/api/campaigns/{campaign['id']}/shares").json()["token"]
    page = anonymous.get(f"/s/{token}", timeout=10)
    assert page.status_code == 200
    svg = page.text[page.text.index("<svg") : page.text.index("</svg>")]
    assert 1 <= svg.count('class="tick"') <= MAX_TICKS


def test_the_live_campaign_page_follows_figures_whose_sum_overflows(api: httpx.Client) -> None:
    campaign = make_campaign(api, name="At the edge of a float", baseline=1e308)
    attempt = make_attempt(api, campaign["id"], title="Huge")
    reader = SSEReader(api, f"/api/campaigns/{campaign['id']}/events?view=campaign")
    try:
        for value in (1e308, 1e308):  # their sum overflows (PostgreSQL raises)
            added = api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": value})
            assert added.status_code == 201, added.text
        assert api.patch(f"/api/attempts/{attempt['id']}", json={"title": "Huger"}).is_success
        head = reader.until(lambda m: m.event == "campaign-head" and "Huger" in m.data)
    finally:
        reader.close()
    assert 'data-points="1"' in head.data


def test_the_charts_ticks_are_round_figures_on_the_points_scale() -> None:
    # Laid out in units of 1,024, the ticks of 1,234.5 and 1,300 tok/s were at 1,228.8,
    # 1,249.28, ... and labelled "1,229", "1,249", "1,270", "1,290": no round figure, and
    # each label a little off its line.
    chart = build_chart(
        _campaign(1234.5), [_attempt(1, 1234.5, 1234.5), _attempt(2, 1300.0, 1234.5)]
    )
    ticks = [(y, float(label.replace(",", ""))) for y, label in chart.ticks]
    assert len(ticks) >= 3 and all(value % 10 == 0 for _, value in ticks), chart.ticks
    (y1, v1), (y2, v2) = ticks[0], ticks[1]
    for point, value in zip(chart.points, (1234.5, 1300.0), strict=True):
        assert point.y == pytest.approx(y1 + (value - v1) * (y2 - y1) / (v2 - v1), abs=0.02)
