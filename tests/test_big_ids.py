"""Ids and offsets past what the database columns hold (2^31 for PostgreSQL's INTEGER ids,
2^63 for BIGINT offsets, and far beyond) in paths, queries and bodies: 404 or 422, never a
500, on SQLite and PostgreSQL."""

import json

import httpx
import pytest

from app.repo import MAX_ID
from tests.helpers import attempt_of, csrf_of, make_attempt, make_campaign
from tests.sse import SSEReader

pytestmark = pytest.mark.both_databases

HUGE = [MAX_ID + 1, 2**63 - 1, 2**63, 2**64, 10**30, -(2**63) - 1]


@pytest.fixture
def seeded(api: httpx.Client, browser: httpx.Client) -> tuple[int, int, str]:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    return campaign["id"], attempt["id"], csrf_of(browser.get("/").text)


def test_huge_ids_anywhere_are_404_or_422(
    api: httpx.Client, browser: httpx.Client, seeded: tuple[int, int, str]
) -> None:
    campaign_id, attempt_id, csrf = seeded
    answers: list[tuple[int, str, str, int]] = []
    for n in HUGE:
        api_calls: list[tuple[str, str, dict | None]] = [
            ("GET", f"/api/campaigns/{n}", None),
            ("PATCH", f"/api/campaigns/{n}", {"name": "x"}),
            ("POST", f"/api/campaigns/{n}/attempts", {"title": "x"}),
            ("GET", f"/api/campaigns/{n}/notes", None),
            ("POST", f"/api/campaigns/{n}/notes", {"body": "x"}),
            ("GET", f"/api/campaigns/{n}/shares", None),
            ("POST", f"/api/campaigns/{n}/shares", None),
            ("GET", f"/api/campaigns/{n}/events", None),
            ("GET", f"/api/campaigns/{campaign_id}/events?after={n}", None),
            ("GET", f"/api/campaigns/{campaign_id}/events?view=attempt&attempt={n}", None),
            ("DELETE", f"/api/campaigns/{n}", None),
            ("GET", f"/api/attempts/{n}", None),
            ("DELETE", f"/api/attempts/{n}", None),
            ("PATCH", f"/api/attempts/{n}", {"verdict": "x"}),
            ("POST", f"/api/attempts/{n}/measurements", {"value": 1}),
            ("GET", f"/api/attempts/{n}/notes", None),
            ("POST", f"/api/attempts/{n}/notes", {"body": "x"}),
            ("GET", f"/api/attempts/{n}/log", None),
            ("POST", f"/api/attempts/{n}/trust-host-key", None),
            ("PATCH", f"/api/notes/{n}", {"body": "x"}),
            ("DELETE", f"/api/notes/{n}", None),
            ("POST", f"/api/campaigns/{campaign_id}/attempts", {"title": "x", "retest_of": n}),
            ("POST", f"/api/campaigns/{campaign_id}/attempts", {"title": "x", "blocked_by": n}),
            ("PATCH", f"/api/attempts/{attempt_id}", {"blocked_by": n}),
        ]
        if n > 2**63 - 1 or n < 0:  # offsets are BIGINT: 2^63 - 1 is a fine (empty) offset
            api_calls += [
                ("GET", f"/api/attempts/{attempt_id}/log?offset={n}", None),
                ("GET", f"/api/attempts/{attempt_id}/log?limit={n}", None),
            ]
        for method, path, body in api_calls:
            status = api.request(method, path, json=body).status_code
            answers.append((n, method, path, status))
        form = {"csrf_token": csrf}
        page_calls: list[tuple[str, str, dict | None]] = [
            ("GET", f"/campaigns/{n}", None),
            ("GET", f"/attempts/{n}", None),
            ("POST", f"/campaigns/{n}/attempts", {**form, "title": "x"}),
            ("POST", f"/campaigns/{n}/notes", {**form, "body": "x"}),
            ("POST", f"/campaigns/{n}/shares", form),
            ("POST", f"/campaigns/{campaign_id}/attempts", {**form, "title": "x", "retest_of": n}),
            ("POST", f"/shares/{n}/revoke", form),
            ("POST", f"/campaigns/{n}/edit", {**form, "name": "x"}),
            ("POST", f"/campaigns/{n}/delete", form),
            ("POST", f"/attempts/{n}/edit", {**form, "title": "x"}),
            ("POST", f"/attempts/{n}/delete", form),
            ("POST", f"/attempts/{n}/status", {**form, "status": "eliminated", "verdict": "x"}),
            ("POST", f"/attempts/{n}/measurements", {**form, "value": "1"}),
            ("POST", f"/attempts/{n}/notes", {**form, "body": "x"}),
            ("POST", f"/notes/{n}/edit", {**form, "body": "x"}),
            ("POST", f"/notes/{n}/delete", form),
        ]
        for method, path, body in page_calls:
            status = browser.request(method, path, data=body).status_code
            answers.append((n, method, path, status))
    wrong = [answer for answer in answers if answer[3] not in (404, 422)]
    assert wrong == []
    # Nothing was created on the way.
    assert [a["id"] for a in api.get(f"/api/campaigns/{campaign_id}").json()["attempts"]] == [
        attempt_id
    ]
    assert attempt_of(api, attempt_id)["blocked_by"] is None


def test_the_largest_offset_reads_nothing(api: httpx.Client, seeded: tuple[int, int, str]) -> None:
    _, attempt_id, _ = seeded
    for query in ("offset=9223372036854775807", "offset=9223372036854775807&limit=5", "limit=0"):
        response = api.get(f"/api/attempts/{attempt_id}/log?{query}")
        assert response.status_code == 200 and response.content == b"", query


def test_a_huge_last_event_id_resumes_from_now(
    api: httpx.Client, seeded: tuple[int, int, str]
) -> None:
    campaign_id, attempt_id, _ = seeded
    reader = SSEReader(
        api, f"/api/campaigns/{campaign_id}/events", headers={"Last-Event-ID": str(2**64)}
    )
    try:
        assert reader.status == 200
        api.patch(f"/api/attempts/{attempt_id}", json={"verdict": "seen live"})
        message = reader.until(lambda m: m.event == "attempt")
        assert json.loads(message.data)["verdict"] == "seen live"
    finally:
        reader.close()
