"""The campaign half of the JSON API contract, and who may call it."""

import json

import httpx
import pytest

from tests.conftest import OWNER_TOKEN
from tests.helpers import make_attempt, make_campaign


@pytest.mark.both_databases
def test_create_list_and_read_a_campaign(api: httpx.Client) -> None:
    created = make_campaign(api, target=120, description="Beat 82 tok/s with EAGLE-3")
    assert created["metric"] == "tok/s"
    assert created["baseline"] == 82.0
    assert created["target"] == 120
    assert created["attempts"] == []
    assert [b["value"] for b in created["baseline_history"]] == [82.0]

    listed = api.get("/api/campaigns").json()
    assert [c["id"] for c in listed] == [created["id"]]
    assert listed[0]["attempt_count"] == 0

    make_attempt(api, created["id"])
    detail = api.get(f"/api/campaigns/{created['id']}").json()
    assert [a["title"] for a in detail["attempts"]] == ["Torch symmetric memory"]
    assert api.get("/api/campaigns").json()[0]["attempt_count"] == 1


def test_any_metric_and_direction(api: httpx.Client) -> None:
    latency = make_campaign(api, name="TTFT", metric="ms", baseline=250, higher_is_better=False)
    attempt = make_attempt(api, latency["id"], title="Chunked prefill")
    for value in (200, 199, 201):
        faster = api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": value})
    body = faster.json()
    assert body["delta_pct"] == pytest.approx(-20.0)
    # Lower is better here: an interval wholly below zero is the better call.
    assert body["stats"]["delta_ci95_pct"][1] < 0
    assert body["stats"]["call"] == "better" and body["improved"] is True


@pytest.mark.both_databases
def test_campaigns_are_newest_first_and_separate(api: httpx.Client) -> None:
    first = make_campaign(api, name="first")
    second = make_campaign(api, name="second")
    make_attempt(api, first["id"], title="only in first")
    assert [c["name"] for c in api.get("/api/campaigns").json()] == ["second", "first"]
    assert api.get(f"/api/campaigns/{second['id']}").json()["attempts"] == []


@pytest.mark.both_databases
def test_patch_moves_the_baseline_and_keeps_its_history(api: httpx.Client) -> None:
    campaign = make_campaign(api)
    patched = api.patch(f"/api/campaigns/{campaign['id']}", json={"baseline": 89.5, "target": 100})
    assert patched.status_code == 200
    body = patched.json()
    assert body["baseline"] == 89.5 and body["target"] == 100
    assert [b["value"] for b in body["baseline_history"]] == [82.0, 89.5]


def test_patch_removes_the_target_with_null_and_keeps_what_it_does_not_name(
    api: httpx.Client,
) -> None:
    campaign = make_campaign(api, target=120)
    renamed = api.patch(f"/api/campaigns/{campaign['id']}", json={"name": "renamed"}).json()
    assert renamed["target"] == 120
    cleared = api.patch(f"/api/campaigns/{campaign['id']}", json={"target": None})
    assert cleared.status_code == 200 and cleared.json()["target"] is None
    assert cleared.json()["name"] == "renamed" and cleared.json()["baseline"] == 82.0


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 201},
        {"name": "ok", "baseline": "fast"},
        {"name": "ok", "noise_pct": -1},
        {"name": "ok", "unknown_field": 1},
        {"name": 12},
        {"name": "nul\u0000name"},
        {"name": "ok", "description": "a\u0000b"},
        {"name": "ok", "baseline": True},
        {"name": "ok", "baseline": -82},
        {"name": "ok", "baseline": 82, "target": 80},
        {"name": "ok", "higher_is_better": False, "baseline": 20, "target": 30},
        [],
    ],
)
def test_malformed_campaigns_are_422(api: httpx.Client, body: object) -> None:
    response = api.post("/api/campaigns", json=body)
    assert response.status_code == 422
    assert "detail" in response.json()


def test_non_json_and_invalid_utf8_bodies_are_422(api: httpx.Client) -> None:
    for content in (b"not json", b'{"name": "\xff\xfe"}', b"\x00" * 10):
        response = api.post(
            "/api/campaigns", content=content, headers={"Content-Type": "application/json"}
        )
        # FastAPI answers 400 for a body it cannot decode, 422 for one it can but rejects.
        assert response.status_code in (400, 422), content
        assert "detail" in response.json()
    non_finite = api.post(
        "/api/campaigns",
        content=b'{"name": "x", "baseline": NaN}',
        headers={"Content-Type": "application/json"},
    )
    assert non_finite.status_code == 422


@pytest.mark.parametrize(
    "method,path",
    [
        ("GET", "/api/campaigns/999"),
        ("PATCH", "/api/campaigns/999"),
        ("POST", "/api/campaigns/999/attempts"),
        ("POST", "/api/campaigns/999/notes"),
        ("GET", "/api/campaigns/999/notes"),
    ],
)
def test_unknown_campaign_is_404(api: httpx.Client, method: str, path: str) -> None:
    body = {"title": "t", "body": "b"} if method == "POST" else {}
    if path.endswith("notes") and method == "POST":
        body = {"body": "b"}
    elif method == "POST":
        body = {"title": "t"}
    response = api.request(method, path, json=body if method != "GET" else None)
    assert response.status_code == 404
    assert "999" in response.json()["detail"]


ENDPOINTS = [
    ("POST", "/api/campaigns", {"name": "x"}),
    ("GET", "/api/campaigns", None),
    ("GET", "/api/campaigns/1", None),
    ("PATCH", "/api/campaigns/1", {"target": 1}),
    ("POST", "/api/campaigns/1/attempts", {"title": "x"}),
    ("POST", "/api/campaigns/1/notes", {"body": "x"}),
    ("GET", "/api/campaigns/1/notes", None),
    ("GET", "/api/attempts/1", None),
    ("PATCH", "/api/attempts/1", {"status": "running"}),
    ("POST", "/api/attempts/1/measurements", {"value": 1}),
    ("POST", "/api/attempts/1/notes", {"body": "x"}),
    ("GET", "/api/attempts/1/notes", None),
    ("PATCH", "/api/notes/1", {"body": "x"}),
    ("DELETE", "/api/notes/1", None),
]


BAD_AUTHORIZATIONS = [
    None,
    "Bearer wrong-token",
    f"Basic {OWNER_TOKEN}",
    "Bearer",
    f"Bearer {OWNER_TOKEN}x",
    f"Bearer {OWNER_TOKEN[:-1]}",
]


@pytest.mark.parametrize("method,path,body", ENDPOINTS)
def test_every_endpoint_refuses_without_the_owner_token(
    api: httpx.Client, anonymous: httpx.Client, method: str, path: str, body: object
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": "n"})
    for authorization in BAD_AUTHORIZATIONS:
        headers = {"Authorization": authorization} if authorization else {}
        response = anonymous.request(method, path, json=body, headers=headers)
        assert response.status_code == 401, authorization
        assert response.headers["www-authenticate"] == "Bearer"
        api.get("/api/campaigns")  # the right token: the next wrong one costs the first delay
    # Nothing changed behind the refusal.
    after = api.get(f"/api/campaigns/{campaign['id']}").json()
    assert after["target"] is None and len(after["attempts"]) == 1
    assert len(api.get(f"/api/campaigns/{campaign['id']}/notes").json()) == 1


def test_openapi_documents_the_contract(anonymous: httpx.Client) -> None:
    schema = anonymous.get("/openapi.json").json()
    for path in (
        "/api/campaigns",
        "/api/campaigns/{campaign_id}",
        "/api/campaigns/{campaign_id}/attempts",
        "/api/attempts/{attempt_id}",
        "/api/attempts/{attempt_id}/measurements",
        "/api/attempts/{attempt_id}/notes",
        "/api/campaigns/{campaign_id}/notes",
    ):
        assert path in schema["paths"], path
    assert anonymous.get("/docs").status_code == 200


def test_log_settings_of_a_campaign(api: httpx.Client) -> None:
    campaign = make_campaign(
        api, metric_label="Request throughput", ready_pattern=r"listening on :\d+"
    )
    assert campaign["metric_label"] == "Request throughput"
    assert campaign["ready_pattern"] == r"listening on :\d+"
    bad = api.post("/api/campaigns", json={"name": "x", "ready_pattern": "(unclosed"})
    assert bad.status_code == 422
    patched = api.patch(
        f"/api/campaigns/{campaign['id']}", json={"metric_label": "Output token throughput"}
    )
    assert patched.json()["metric_label"] == "Output token throughput"


def test_a_campaigns_benchmark_pattern_is_checked_set_and_cleared(api: httpx.Client) -> None:
    pattern = r"Request throughput \(req/s\):\s+(?P<value>[\d.]+)"
    campaign = make_campaign(api, bench_pattern=pattern)
    assert campaign["bench_pattern"] == pattern
    assert make_campaign(api)["bench_pattern"] is None
    url = f"/api/campaigns/{campaign['id']}"
    for bad, said in (
        (r"req/s: ([\d.]+", "is not a regex: missing ), unterminated subpattern"),
        (r"req/s: [\d.]+", "has no group: put ( ) around the figure"),
        ("x" * 501, "at most 500 characters"),
    ):
        for response in (
            api.post("/api/campaigns", json={"name": "x", "bench_pattern": bad}),
            api.patch(url, json={"bench_pattern": bad}),
        ):
            assert response.status_code == 422, response.text
            assert said in json.dumps(response.json()["detail"]), response.text
    assert api.get(url).json()["bench_pattern"] == pattern  # refused: unchanged
    assert api.patch(url, json={"name": "renamed"}).json()["bench_pattern"] == pattern
    assert api.patch(url, json={"bench_pattern": r"tok/s ([\d.]+)"}).json()["bench_pattern"] == (
        r"tok/s ([\d.]+)"
    )
    assert api.patch(url, json={"bench_pattern": ""}).json()["bench_pattern"] is None
    api.patch(url, json={"bench_pattern": pattern})
    assert api.patch(url, json={"bench_pattern": None}).json()["bench_pattern"] is None
