"""The owner's sessions: a `token reset` from another terminal reaches a running dashboard,
each login gets a cookie of its own, and logout (CSRF-checked) ends it."""

import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.auth import SESSION_COOKIE
from tests.cli import clean_env, free_port, run_cli, serving
from tests.helpers import csrf_of
from tests.sse import SSEReader


def login(url: str, link: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=10, headers={"Accept": "text/html"})
    response = client.get(link.removeprefix(url))
    assert response.status_code == 303, response.text
    assert client.cookies.get(SESSION_COOKIE)
    return client


def login_link(printed: str) -> str:
    links = re.findall(r"Log in: (\S+)", printed)
    assert links, printed
    return links[-1]


def test_token_reset_reaches_the_running_dashboard_within_a_second(tmp_path: Path) -> None:
    env = clean_env()
    env["CAMPAIGN_DASH_DATABASE_URL"] = f"sqlite:///{tmp_path / 'campaign-dash.db'}"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving(env, tmp_path, port) as process:
        old_link = login_link(process.printed())
        old_session = login(url, old_link)
        assert old_session.get("/").status_code == 200

        # No --port: the link is the running dashboard's own.
        reset = run_cli("token", "reset", env=env, cwd=tmp_path)
        assert reset.returncode == 0, reset.stderr
        reset_at = time.monotonic()
        new_link = login_link(reset.stdout)
        assert new_link.startswith(f"{url}/login?token="), new_link
        new_token = new_link.partition("token=")[2]

        with httpx.Client(base_url=url, timeout=10) as client:
            while True:
                answer = client.get(
                    "/api/campaigns", headers={"Authorization": f"Bearer {new_token}"}
                )
                if answer.status_code == 200 or time.monotonic() - reset_at > 1.0:
                    break
                time.sleep(0.02)
            assert answer.status_code == 200, "the new token works within a second"
            old_token = old_link.partition("token=")[2]
            refused = client.get("/api/campaigns", headers={"Authorization": f"Bearer {old_token}"})
            assert refused.status_code == 401
        assert old_session.get("/").status_code == 401, "the old cookie no longer opens a page"
        assert login(url, new_link).get("/").status_code == 200
        old_session.close()


def test_each_login_is_its_own_session_and_logout_ends_only_it(
    browser: httpx.Client, server: object
) -> None:
    from tests.conftest import OWNER_TOKEN

    other = httpx.Client(base_url=browser.base_url, timeout=10, headers={"Accept": "text/html"})
    assert other.get("/login", params={"token": OWNER_TOKEN}).status_code == 303
    first_cookie = browser.cookies.get(SESSION_COOKIE)
    assert first_cookie and first_cookie != other.cookies.get(SESSION_COOKIE)

    page = browser.get("/")
    # Without the page's CSRF token a logout is refused and the session lives on.
    forged = browser.post("/logout", data={})
    assert forged.status_code == 403
    assert browser.get("/").status_code == 200
    # The CSRF token of another session does not work either.
    assert (
        browser.post("/logout", data={"csrf_token": csrf_of(other.get("/").text)}).status_code
        == 403
    )

    done = browser.post("/logout", data={"csrf_token": csrf_of(page.text)})
    assert done.status_code == 303
    # The cookie is gone from the browser and dead on the server, even if replayed.
    replay = httpx.Client(base_url=browser.base_url, timeout=10, headers={"Accept": "text/html"})
    replay.cookies.set(SESSION_COOKIE, first_cookie)
    assert replay.get("/").status_code == 401
    assert other.get("/").status_code == 200, "the other browser stays logged in"
    replay.close()
    other.close()


def test_open_live_streams_end_with_the_session(tmp_path: Path) -> None:
    """A page left open is no window into the campaign once its session is over: after a
    token reset from another terminal, and after a logout, its stream says reload."""
    env = clean_env()
    env["CAMPAIGN_DASH_DATABASE_URL"] = f"sqlite:///{tmp_path / 'campaign-dash.db'}"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving(env, tmp_path, port) as process:
        link = login_link(process.printed())
        token = link.partition("token=")[2]
        owner = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"})
        campaign = owner.post("/api/campaigns", json={"name": "open tab"}).json()
        events = f"/api/campaigns/{campaign['id']}/events?view=campaign"

        by_logout = login(url, link)
        other_tab = SSEReader(by_logout, events)
        assert other_tab.next(skip=()).event == "hello"
        page = by_logout.get(f"/campaigns/{campaign['id']}")
        assert by_logout.post("/logout", data={"csrf_token": csrf_of(page.text)}).status_code == 303
        assert other_tab.until(lambda m: m.event == "reload", timeout=5).event == "reload"
        other_tab.close()

        by_reset = login(url, link)
        tab = SSEReader(by_reset, events)
        assert tab.next(skip=()).event == "hello"
        assert run_cli("token", "reset", env=env, cwd=tmp_path).returncode == 0
        assert tab.until(lambda m: m.event == "reload", timeout=5).event == "reload"
        tab.close()
        owner.close()


@pytest.mark.both_databases
def test_a_login_while_the_sessions_are_read_again_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app import migrate, repo
    from app.auth import OwnerAuth
    from app.db import make_engine

    url = f"sqlite:///{tmp_path / 'auth.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    auth = OwnerAuth(engine, "a-configured-owner-token-" + "x" * 20)
    auth.refresh()
    before = auth.open_session()
    cookies: dict[str, str] = {}
    read = repo.list_owner_sessions

    def read_then_another_request_logs_in_and_out(session: Any) -> list[str]:
        rows = read(session)
        cookies["new"] = auth.open_session()  # committed after this read
        auth.end_session(before)
        return list(rows)

    monkeypatch.setattr(repo, "list_owner_sessions", read_then_another_request_logs_in_and_out)
    auth.refresh()  # its read is older than that login and that logout
    monkeypatch.undo()
    assert auth.session_ok(cookies["new"]) and not auth.session_ok(before)
    auth.refresh()
    assert auth.session_ok(cookies["new"]) and not auth.session_ok(before)
    engine.dispose()


def test_a_later_start_says_where_the_dashboard_is(tmp_path: Path) -> None:
    env = clean_env()
    env["CAMPAIGN_DASH_DATABASE_URL"] = f"sqlite:///{tmp_path / 'campaign-dash.db'}"
    port = free_port()
    with serving(env, tmp_path, port) as first:
        assert login_link(first.printed())
    with serving(env, tmp_path, port) as again:  # the token was shown once: the address stays
        said = again.printed()
    assert f"Dashboard: http://127.0.0.1:{port}/ (log in with the link printed at" in said, said


def test_a_start_with_the_token_in_the_environment_says_where_the_dashboard_is(
    tmp_path: Path,
) -> None:
    env = {**clean_env(), "CAMPAIGN_DASH_TOKEN": "walk-the-token-1"}
    env["CAMPAIGN_DASH_DATABASE_URL"] = f"sqlite:///{tmp_path / 'campaign-dash.db'}"
    port = free_port()
    with serving(env, tmp_path, port) as started:
        said = started.printed()
    assert f"Dashboard: http://127.0.0.1:{port}/ (log in with CAMPAIGN_DASH_TOKEN)" in said, said
    assert "walk-the-token-1" not in said
