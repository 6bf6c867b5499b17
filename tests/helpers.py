"""Small builders shared by the tests."""

import re
from typing import Any

import httpx


def make_campaign(api: httpx.Client, **fields: Any) -> dict[str, Any]:
    body = {"name": "EAGLE-3 on 8x RTX PRO 6000", "baseline": 82.0, **fields}
    response = api.post("/api/campaigns", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def make_attempt(api: httpx.Client, campaign_id: int, **fields: Any) -> dict[str, Any]:
    body = {"title": "Torch symmetric memory", **fields}
    response = api.post(f"/api/campaigns/{campaign_id}/attempts", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def patch(api: httpx.Client, attempt_id: int, **fields: Any) -> httpx.Response:
    return api.patch(f"/api/attempts/{attempt_id}", json=fields)


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([0-9a-f]+)"', html)
    assert match, "page has no CSRF field"
    return match.group(1)
