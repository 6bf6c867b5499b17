"""Share links: anyone with the link reads the story; no one can edit through it."""

import json
import re
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from app import repo, sharing
from app.db import make_engine, session_scope
from app.pages.rendering import iso_utc
from app.routes import events
from tests.conftest import InProcess
from tests.helpers import attempt_of, make_attempt, make_campaign, wait_for
from tests.sse import SSEReader

DATA = Path(__file__).parent / "data"


def share(api: httpx.Client, campaign_id: int, **body: object) -> dict:
    response = api.post(f"/api/campaigns/{campaign_id}/shares", json=body or None)
    assert response.status_code == 201, response.text
    return response.json()


def seeded_campaign(api: httpx.Client, tmp_path: Path) -> tuple[dict, dict]:
    campaign = make_campaign(api, description="Runs on root@10.1.230.174, logs in /data/eagle3/")
    log = tmp_path / "torch_symm_mem_test.log"
    log.write_bytes((DATA / "seed_torch_symm_mem.log").read_bytes())
    attempt = make_attempt(
        api, campaign["id"], title="Torch symmetric memory",
        command="ssh root@10.1.230.174 'python3 -m sglang.launch_server --model /shared/kimi'",
        source=f"file://{log}",
    )  # fmt: skip
    wait_for(lambda: attempt_of(api, attempt["id"])["status"] == "crashed", what="crash")
    api.post(
        f"/api/attempts/{attempt['id']}/notes",
        json={"body": "Dead end: `grep` on root@10.1.230.174:/data/eagle3/synth_100k/logs hit "
                      "server_args first. <script>alert(1)</script>"},
    )  # fmt: skip
    return campaign, attempt


IN_PROCESS_ADDRESS = "testclient"  # the client address Starlette's test client gives


def test_a_share_token_opens_its_campaign_only(
    app_under_test: InProcess, api: httpx.Client, anonymous: httpx.Client, tmp_path: Path
) -> None:
    campaign, attempt = seeded_campaign(api, tmp_path)
    other = make_campaign(api, name="Secret other campaign")
    link = share(api, campaign["id"])
    token = link["token"]
    assert len(token) >= 22 and link["url"].endswith(f"/s/{token}")

    page = anonymous.get(f"/s/{token}")
    assert page.status_code == 200
    assert "Torch symmetric memory" in page.text and "KeyError: 12" in page.text
    assert "Secret other campaign" not in page.text
    assert "<form" not in page.text and "csrf_token" not in page.text
    # Each attempt says when it was tried: the team reads the story in time.
    tried = iso_utc(datetime.fromisoformat(attempt_of(api, attempt["id"])["created_at"]))
    item = page.text.split(f'id="attempt-{attempt["id"]}"', 1)[1].split("</li>", 1)[0]
    assert f'<time class="muted" datetime="{tried}"' in item
    # Every link on it opens for a visitor: the header's leads back to the share itself.
    assert re.findall(r'class="brand" href="([^"]*)"', page.text) == [f"/s/{token}"]

    # The token is not a key to anything else. Each refusal costs this client a doubling
    # delay (test_login_throttle's subject): twelve in a row would sleep a minute away, so
    # each starts with the throttle's memory of the client cleared.
    auth = {"Authorization": f"Bearer {token}"}
    throttle = app_under_test.app.state.token_throttle
    for method, path, body in [
        ("GET", "/api/campaigns", None),
        ("GET", f"/api/campaigns/{campaign['id']}", None),
        ("GET", f"/api/attempts/{attempt['id']}/log", None),
        ("PATCH", f"/api/attempts/{attempt['id']}", {"status": "eliminated"}),
        ("POST", f"/api/campaigns/{campaign['id']}/notes", {"body": "x"}),
        ("POST", f"/api/campaigns/{campaign['id']}/shares", {}),
        ("DELETE", f"/api/shares/{token}", None),
        ("GET", f"/api/campaigns/{other['id']}/events", None),
    ]:
        throttle.succeeded(IN_PROCESS_ADDRESS)
        assert anonymous.request(method, path, json=body, headers=auth).status_code == 401, path
        assert len(throttle) == 1  # counted as a wrong token, from this address
    for path in (f"/campaigns/{campaign['id']}", f"/attempts/{attempt['id']}", "/"):
        throttle.succeeded(IN_PROCESS_ADDRESS)
        assert anonymous.get(path, headers={"Accept": "text/html"}).status_code == 401
    throttle.succeeded(IN_PROCESS_ADDRESS)
    assert len(throttle) == 0  # the address the refusals were counted at
    form = anonymous.post(
        f"/attempts/{attempt['id']}/notes", data={"body": "x", "csrf_token": token}
    )
    assert form.status_code == 401
    assert anonymous.get("/s/not-a-real-token").status_code == 404


def test_exports_and_redaction(api: httpx.Client, anonymous: httpx.Client, tmp_path: Path) -> None:
    campaign, _ = seeded_campaign(api, tmp_path)
    link = share(api, campaign["id"])
    html = anonymous.get(f"/s/{link['token']}").text
    markdown = anonymous.get(f"/s/{link['token']}.md")
    body = anonymous.get(f"/s/{link['token']}.json").json()
    assert markdown.headers["content-type"].startswith("text/markdown")
    for shown in (html, markdown.text, json.dumps(body)):
        assert "10.1.230.174" not in shown and "/data/eagle3" not in shown
        assert "root@" not in shown and str(tmp_path) not in shown
        assert "KeyError: 12" in shown
    assert (
        "<script>alert(1)</script>" not in html and "<script>alert(1)</script>" not in markdown.text
    )
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markdown.text
    assert body["attempts"][0]["diagnosis"]["error_class"] == "unsupported_arch"
    assert "tail" not in body["attempts"][0]
    assert '<meta property="og:title" content="EAGLE-3 on 8x RTX PRO 6000">' in html
    assert (
        'property="og:description"' in html
        and "@media print" in anonymous.get("/static/app.css").text
    )

    clear = share(api, campaign["id"], redact=False)
    assert "10.1.230.174" in anonymous.get(f"/s/{clear['token']}.md").text


def test_revoked_and_expired_links_are_gone_everywhere(
    api: httpx.Client,
    anonymous: httpx.Client,
    server,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    campaign = make_campaign(api)
    link = share(api, campaign["id"])
    token = link["token"]
    stream = SSEReader(anonymous, f"/s/{token}/events")
    assert stream.status == 200
    make_attempt(api, campaign["id"], title="live while shared")
    assert "live while shared" in stream.until(lambda m: m.event == "share-summary").data
    assert api.delete(f"/api/shares/{token}").status_code == 204
    stream.until(lambda m: m.event == "gone")
    with pytest.raises(AssertionError, match="stream ended"):
        stream.next(timeout=5)
    for suffix in ("", ".md", ".json", ".csv", "/events"):
        assert anonymous.get(f"/s/{token}{suffix}").status_code == 404
    assert api.delete(f"/api/shares/{token}").status_code == 404

    short = share(api, campaign["id"], expires_in_hours=1)
    engine = make_engine(server.settings.database_url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE sharelink SET expires_at = :past WHERE id = :id"),
                           {"past": "2020-01-01 00:00:00+00:00", "id": short["id"]})  # fmt: skip
    engine.dispose()
    for suffix in ("", ".md", ".json", ".csv", "/events"):
        assert anonymous.get(f"/s/{short['token']}{suffix}").status_code == 404


def test_tokens_are_stored_hashed_and_listed_with_last_opened(
    api: httpx.Client,
    anonymous: httpx.Client,
    server,  # type: ignore[no-untyped-def]
) -> None:
    campaign = make_campaign(api)
    link = share(api, campaign["id"])
    engine = make_engine(server.settings.database_url)
    with engine.connect() as connection:
        stored = " ".join(
            row[0] for row in connection.execute(text("SELECT token_hash FROM sharelink"))
        )
    engine.dispose()
    assert link["token"] not in stored
    listed = api.get(f"/api/campaigns/{campaign['id']}/shares").json()
    assert listed[0]["token"] is None and listed[0]["last_opened_at"] is None
    anonymous.get(f"/s/{link['token']}")
    assert api.get(f"/api/campaigns/{campaign['id']}/shares").json()[0]["last_opened_at"]
    assert (
        api.post(
            f"/api/campaigns/{campaign['id']}/shares", json={"expires_in_hours": -1}
        ).status_code
        == 422
    )
    assert api.post("/api/campaigns/999/shares", json={}).status_code == 404


def test_share_buttons_for_the_owner(
    api: httpx.Client, browser: httpx.Client, anonymous: httpx.Client
) -> None:
    from tests.helpers import csrf_of

    campaign = make_campaign(api)
    page = browser.get(f"/campaigns/{campaign['id']}").text
    assert 'id="shares"' in page
    created = browser.post(
        f"/campaigns/{campaign['id']}/shares",
        data={"csrf_token": csrf_of(page), "expires_in_hours": "24", "redact": "on"},
        headers={"HX-Request": "true"},
    )
    assert created.status_code == 200 and created.text.lstrip().startswith(
        '<section class="panel" id="shares"'
    )
    url = created.text.split('New link (shown once, copy it now): <a href="')[1].split('"')[0]
    token = url.rsplit("/", 1)[1]
    assert anonymous.get(f"/s/{token}").status_code == 200
    link_id = api.get(f"/api/campaigns/{campaign['id']}/shares").json()[0]["id"]
    revoked = browser.post(f"/shares/{link_id}/revoke", data={"csrf_token": csrf_of(page)})
    assert revoked.status_code == 303
    assert anonymous.get(f"/s/{token}").status_code == 404


def test_the_live_share_page_shows_a_renamed_attempt_in_its_head(
    api: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign = make_campaign(api, baseline=82.0)
    attempt = make_attempt(api, campaign["id"], title="NCCL Ring")
    assert api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 91.0}).is_success
    assert api.patch(f"/api/attempts/{attempt['id']}", json={"status": "adopted"}).is_success
    token = share(api, campaign["id"])["token"]
    reader = SSEReader(anonymous, f"/s/{token}/events")
    try:
        # The chart's tooltips and the best result name the attempt.
        assert api.patch(f"/api/attempts/{attempt['id']}", json={"title": "NCCL Tree"}).is_success
        head = reader.until(lambda m: m.event == "share-head")
    finally:
        reader.close()
    assert "NCCL Tree" in head.data and "NCCL Ring" not in head.data


def test_each_share_cell_says_what_it_is_on_a_phone(
    api: httpx.Client,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    # At 390 px the table's head is hidden and a link's row is a stack of cells: three dates
    # and "yes" said nothing of which was Created, Expires, Last opened or Masked.
    campaign = make_campaign(api)
    share(api, campaign["id"])
    page = open_page(f"/campaigns/{campaign['id']}")
    labels = "tr => [...tr.cells].map(td => getComputedStyle(td, '::before').content)"
    row = page.locator("#shares tbody tr")
    page.set_viewport_size({"width": 390, "height": 844})
    assert row.evaluate(labels)[:5] == ['"Link"', '"Created"', '"Expires"', '"Last opened"',
                                        '"Masked"']  # fmt: skip
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1400, "height": 900})  # the head says it there
    assert page.locator("#shares thead").is_visible()
    assert set(row.evaluate(labels)) == {"none"}


def test_a_share_page_open_when_its_link_is_revoked_says_so(
    api: httpx.Client,
    open_page,  # type: ignore[no-untyped-def]
) -> None:
    # The reader's page stopped following (the stream said "gone") but its badge read
    # "offline, retrying", as if the network were down and it would come back.
    campaign = make_campaign(api)
    link = share(api, campaign["id"])
    page = open_page(f"/s/{link['token']}", logged_in=False)
    page.wait_for_selector("#live-status.on", timeout=10_000)
    assert api.delete(f"/api/shares/{link['token']}").status_code in (200, 204)
    page.locator("#live-status", has_text="no longer shared").wait_for(timeout=10_000)
    assert "retrying" not in page.locator("#live-status").inner_text()


def test_a_link_revoked_while_its_reader_catches_up_ends_the_stream_with_gone(
    api: httpx.Client,
    anonymous: httpx.Client,
    server,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A reader behind its broadcaster first catches up from the database; a link revoked
    # in between made that render raise "no such share link" and the stream broke off
    # without "gone", so the open page never said the link was no longer shared (CI).
    campaign = make_campaign(api)
    link = share(api, campaign["id"])
    engine = server.app.state.engine
    with session_scope(engine) as session:
        behind = repo.newest_event_id(session, campaign["id"])
    make_attempt(api, campaign["id"], title="after the page was rendered")

    def revoked_right_after_the_stream_found_it(*_: object) -> int:
        with session_scope(engine) as session:
            sharing.revoke(session, sharing.find(session, link["token"]))
        return behind

    monkeypatch.setattr(events, "resume_point", revoked_right_after_the_stream_found_it)
    stream = SSEReader(anonymous, f"/s/{link['token']}/events?after={behind}")
    assert stream.status == 200
    stream.until(lambda m: m.event == "gone")
    with pytest.raises(AssertionError, match="stream ended"):
        stream.next(timeout=5)


def test_the_share_page_offers_each_export_its_reader_may_open(
    api: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign = make_campaign(api)
    token = share(api, campaign["id"])["token"]
    page = anonymous.get(f"/s/{token}").text
    for suffix in (".md", ".json", ".csv"):
        assert f'href="/s/{token}{suffix}"' in page
        assert anonymous.get(f"/s/{token}{suffix}").status_code == 200
