"""Anonymous share views in parallel never starve the owner: each request holds at most one
database connection, and the pool has one for every worker thread."""

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app import db
from app.config import Settings
from tests.conftest import LiveServer, owner_client
from tests.helpers import make_attempt, make_campaign

VIEWERS = 64


def seed(api: httpx.Client) -> tuple[dict, dict, str]:
    campaign = make_campaign(api, name="Shared under load", target=120.0)
    attempt = {}
    for index in range(5):
        attempt = make_attempt(api, campaign["id"], title=f"Hypothesis {index}")
        api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 80.0 + index})
        api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": f"note {index}"})
    token = api.post(f"/api/campaigns/{campaign['id']}/shares").json()["token"]
    return campaign, attempt, token


def test_64_parallel_share_views_leave_the_owner_working(
    server: LiveServer, api: httpx.Client
) -> None:
    campaign, attempt, token = seed(api)
    start = threading.Barrier(VIEWERS + 1)
    statuses: list[int] = []
    lock = threading.Lock()

    def view(suffix: str) -> None:
        # Each viewer its own connection, all asking at once.
        with httpx.Client(base_url=server.url, timeout=60) as client:
            start.wait()
            for _ in range(3):
                status = client.get(f"/s/{token}{suffix}").status_code
                with lock:
                    statuses.append(status)

    viewers = [
        threading.Thread(target=view, args=(("", ".md", ".json", "")[i % 4],))
        for i in range(VIEWERS)
    ]
    for thread in viewers:
        thread.start()
    start.wait()
    owner_answers: list[int] = []
    with (
        owner_client(server.url) as owner,
        httpx.Client(
            base_url=server.url, timeout=60, headers={"Accept": "text/html"}
        ) as owner_page,
    ):
        owner_page.get("/login", params={"token": api.headers["Authorization"].split()[1]})
        while any(t.is_alive() for t in viewers) or len(owner_answers) < 6:
            owner_answers += [
                owner.get(f"/api/campaigns/{campaign['id']}").status_code,
                owner.post(
                    f"/api/attempts/{attempt['id']}/notes", json={"body": "under load"}
                ).status_code,
                owner_page.get(f"/campaigns/{campaign['id']}").status_code,
            ]
    for thread in viewers:
        thread.join(timeout=60)
    assert statuses == [200] * (VIEWERS * 3), sorted(set(statuses))
    assert set(owner_answers) <= {200, 201}, owner_answers
    notes = api.get(f"/api/attempts/{attempt['id']}/notes").json()
    assert sum(n["body"] == "under load" for n in notes) == owner_answers.count(201)


@pytest.fixture
def one_connection(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> Iterator[LiveServer]:
    """A dashboard with a pool of one connection and one worker thread: a request that
    asks for a second connection while it holds one waits forever (here: 3 s, then 500)."""
    monkeypatch.setattr(db, "REQUEST_THREADS", 1)
    monkeypatch.setattr(db, "POOL_OVERFLOW", 0)
    monkeypatch.setattr(db, "POOL_TIMEOUT_S", 3.0)
    live = LiveServer(settings).start()
    try:
        yield live
    finally:
        live.stop()


def test_every_view_of_a_share_holds_one_connection(
    one_connection: LiveServer, tmp_path: Path
) -> None:
    with (
        owner_client(one_connection.url) as api,
        httpx.Client(base_url=one_connection.url, timeout=30) as anonymous,
    ):
        campaign, attempt, token = seed(api)
        for suffix in ("", ".md", ".json"):
            response = anonymous.get(f"/s/{token}{suffix}")
            assert response.status_code == 200, (suffix, response.text[:300])
        assert anonymous.get("/s/not-a-token").status_code == 404
        for path in (f"/api/campaigns/{campaign['id']}", f"/api/attempts/{attempt['id']}"):
            assert api.get(path).status_code == 200, path
        listed = api.get(f"/api/campaigns/{campaign['id']}/shares").json()
        assert listed[0]["last_opened_at"] is not None


def test_a_cached_share_view_changes_with_the_campaign(
    api: httpx.Client, anonymous: httpx.Client, browser: httpx.Client
) -> None:
    campaign, attempt, token = seed(api)
    first = {suffix: anonymous.get(f"/s/{token}{suffix}").text for suffix in ("", ".md", ".json")}
    assert all("A later note" not in text for text in first.values())
    # The same rendering again while nothing changed...
    assert anonymous.get(f"/s/{token}").text == first[""]
    # ...and the next change at once, in every format.
    api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": "A later note"})
    for suffix in ("", ".md", ".json"):
        assert "A later note" in anonymous.get(f"/s/{token}{suffix}").text, suffix
    api.patch(f"/api/campaigns/{campaign['id']}", json={"name": "Renamed campaign"})
    assert "Renamed campaign" in anonymous.get(f"/s/{token}.md").text
    # The owner's own view of the link (a logout button) is not what strangers get.
    assert 'action="/logout"' in browser.get(f"/s/{token}").text
    assert 'action="/logout"' not in anonymous.get(f"/s/{token}").text
    # Revoked: gone, however fresh the cached page.
    api.delete(f"/api/shares/{token}")
    assert anonymous.get(f"/s/{token}").status_code == 404
