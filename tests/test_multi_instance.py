"""Two dashboards on one PostgreSQL database: events cross instances, each log is followed once."""

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import Settings
from app.db import libpq_dsn
from app.ingest import TAIL_LOCK_SPACE
from app.tailer import RESCAN_S
from tests.conftest import (
    OWNER_TOKEN,
    PG_URL_ENV,
    LiveServer,
    _create_pg_database,
    _drop_pg_database,
    owner_client,
)
from tests.helpers import make_attempt, make_campaign, stored_log, wait_for
from tests.sse import SSEReader


@pytest.fixture
def pg_settings(tmp_path: Path) -> Iterator[Settings]:
    admin = os.environ.get(PG_URL_ENV)
    if not admin:
        pytest.skip(f"{PG_URL_ENV} names no PostgreSQL server")
    url, name = _create_pg_database(admin)
    try:
        yield Settings(  # type: ignore[call-arg]
            _env_file=None, token=OWNER_TOKEN,
            database_url=url.replace("postgresql://", "postgresql+psycopg://", 1),
        )  # fmt: skip
    finally:
        _drop_pg_database(admin, name)


@pytest.fixture
def dashboards(pg_settings: Settings) -> Iterator[tuple[LiveServer, LiveServer]]:
    """Two dashboards on one PostgreSQL database."""
    first = LiveServer(pg_settings).start()
    second = LiveServer(pg_settings).start()
    try:
        yield first, second
    finally:
        first.stop()
        second.stop()


def test_events_cross_instances_and_a_log_is_followed_once(
    dashboards: tuple[LiveServer, LiveServer], tmp_path: Path
) -> None:
    first, second = dashboards
    api_a, api_b = owner_client(first.url), owner_client(second.url)
    campaign = make_campaign(api_a)
    listening_on_b = SSEReader(api_b, f"/api/campaigns/{campaign['id']}/events")
    log = tmp_path / "shared.log"
    log.write_bytes(b"line 1\n")
    attempt = make_attempt(api_a, campaign["id"], source=f"file://{log}")
    heard = listening_on_b.until(lambda m: m.event == "attempt")
    assert json.loads(heard.data)["id"] == attempt["id"]
    wait_for(lambda: stored_log(api_b, attempt["id"]) == log.read_bytes(), what="followed")
    with log.open("ab") as out:
        out.write(b"line 2\n")
    wait_for(lambda: stored_log(api_a, attempt["id"]) == log.read_bytes(), what="once")
    # Whichever instance follows it goes away: the other takes over.
    first.stop()
    with log.open("ab") as out:
        out.write(b"line 3\n")
    wait_for(
        lambda: stored_log(api_b, attempt["id"]) == log.read_bytes(),
        timeout=30,
        what="taken over",
    )
    listening_on_b.close()


def follower_lock_held(settings: Settings, attempt_id: int) -> bool:
    """Whether a dashboard holds the advisory lock of the attempt's tail (it follows it)."""
    import psycopg

    with psycopg.connect(libpq_dsn(settings.database_url)) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND classid = %s AND objid = %s AND objsubid = 2",
            (TAIL_LOCK_SPACE, attempt_id),
        ).fetchone()
    return bool(row and row[0])


def test_closing_on_one_dashboard_stops_the_other_following(
    dashboards: tuple[LiveServer, LiveServer], pg_settings: Settings, tmp_path: Path
) -> None:
    first, second = dashboards
    api_a, api_b = owner_client(first.url), owner_client(second.url)
    campaign = make_campaign(api_a)
    log = tmp_path / "closed.log"
    log.write_bytes(b"before close\n")
    # Created through the first dashboard, which follows it at once.
    attempt = make_attempt(api_a, campaign["id"], source=f"file://{log}")
    wait_for(lambda: stored_log(api_b, attempt["id"]) == b"before close\n", what="followed")
    assert follower_lock_held(pg_settings, attempt["id"])  # the probe below can say yes
    closed = api_b.patch(
        f"/api/attempts/{attempt['id']}", json={"status": "eliminated", "verdict": "x"}
    )
    assert closed.status_code == 200
    # The close reaches the first dashboard as a notification: it looks again at once,
    # well before its 10 s rescan. A dashboard holds the attempt's lock while it follows
    # the log: once none holds it, nobody reads it.
    wait_for(
        lambda: not follower_lock_held(pg_settings, attempt["id"]),
        timeout=RESCAN_S / 2,
        what="no dashboard following the closed attempt",
    )
    # An open attempt on the same log: when it has the new line, a reader of the closed
    # one would have had it too.
    witness = make_attempt(api_a, campaign["id"], title="witness", source=f"file://{log}")
    wait_for(lambda: stored_log(api_a, witness["id"]) == b"before close\n", what="witness")
    with log.open("ab") as out:
        out.write(b"after close\n")
    wait_for(lambda: stored_log(api_b, witness["id"]) == log.read_bytes(), what="witness read on")
    assert stored_log(api_a, attempt["id"]) == b"before close\n"
    assert api_a.get(f"/api/attempts/{attempt['id']}").json()["tail"]["state"] == "stopped"
    assert not follower_lock_held(pg_settings, attempt["id"])
