"""Ids are never reused (PRODUCT.md): a note saying "see #7", a pasted link, a stale page's
form and a stream's Last-Event-ID keep meaning what they meant, even after the newest of
each kind is deleted. SQLite hands the highest rowid out again unless the table is
AUTOINCREMENT; PostgreSQL's sequences never do."""

from typing import Any

import httpx
import pytest

from tests.helpers import make_attempt, make_campaign

pytestmark = pytest.mark.both_databases


def _note(api: httpx.Client, attempt_id: int) -> dict[str, Any]:
    response = api.post(f"/api/attempts/{attempt_id}/notes", json={"body": "see #7"})
    assert response.status_code == 201, response.text
    return response.json()


def test_deleting_the_newest_attempt_campaign_and_note_frees_no_id(
    backend: str, api: httpx.Client
) -> None:
    kept = make_campaign(api, name="kept")
    first = make_attempt(api, kept["id"], title="first")
    newest = make_attempt(api, kept["id"], title="newest")
    note = _note(api, first["id"])
    doomed = make_campaign(api, name="doomed")

    assert api.delete(f"/api/notes/{note['id']}").status_code == 204
    assert api.delete(f"/api/attempts/{newest['id']}").status_code == 204
    assert api.delete(f"/api/campaigns/{doomed['id']}").status_code == 204

    assert make_campaign(api, name="again")["id"] > doomed["id"]
    assert make_attempt(api, kept["id"], title="again")["id"] > newest["id"]
    assert _note(api, first["id"])["id"] > note["id"]
