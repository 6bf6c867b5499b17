"""Two dashboards on one database (PostgreSQL, or one SQLite file: a second `serve` in another
terminal): events cross instances, each log is followed once, each launched run is driven by
one of them (and by the other once that one is killed)."""

import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.db import TAIL_LOCK_SPACE, libpq_dsn
from app.tailer import RESCAN_S
from tests.cli import Served, free_port, interrupt, launch, wait_until_serving
from tests.conftest import (
    OWNER_TOKEN,
    PG_URL_ENV,
    LiveServer,
    owner_client,
    pg_database,
)
from tests.helpers import attempt_of, make_attempt, make_campaign, stored_log, tail_of, wait_for
from tests.runner_helpers import (
    bench_command,
    port_listening,
    served_env,
    server_command,
    session_processes,
)
from tests.sse import SSEReader
from tests.sshd import Sshd

pytestmark = pytest.mark.both_databases


@pytest.fixture
def pg_settings(tmp_path: Path) -> Iterator[Settings]:
    if not os.environ.get(PG_URL_ENV):
        pytest.skip(f"{PG_URL_ENV} names no PostgreSQL server")
    with pg_database() as url:  # empty: the two dashboards prepare it under the lock
        yield Settings(_env_file=None, token=OWNER_TOKEN, database_url=url)  # type: ignore[call-arg]


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
            # pg_locks is the whole server's: another database's attempt 1 is not this one.
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
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


@pytest.fixture
def served_pair(
    pg_settings: Settings, sshd: Sshd, tmp_path: Path
) -> Iterator[list[tuple[Served, str]]]:
    """Two `campaign-dash serve` processes on one PostgreSQL database and one GPU host
    (the test sshd): processes of their own, so that one can be killed with SIGKILL."""
    env = served_env(sshd, pg_settings.database_url, tmp_path / "runs")
    pair: list[tuple[Served, str]] = []
    try:
        for _ in range(2):
            port = free_port()
            pair.append((launch(env, tmp_path, port), f"http://127.0.0.1:{port}"))
            wait_until_serving(pair[-1][0], port)
        yield pair
    finally:
        for served, _ in pair:
            if served.returncode is None:
                interrupt(served)


def _run(url: str, attempt_id: int) -> dict[str, Any]:
    with owner_client(url) as api:
        run: dict[str, Any] = attempt_of(api, attempt_id)["run"]
    return run


def test_a_launched_run_is_driven_by_one_dashboard_and_taken_over_when_it_is_killed(
    served_pair: list[tuple[Served, str]], sshd: Sshd
) -> None:
    urls = {served.pid: url for served, url in served_pair}
    by_pid = {served.pid: served for served, _ in served_pair}
    server_port = free_port()
    with owner_client(served_pair[0][1]) as api:
        campaign = make_campaign(api)
        # About 3 s a benchmark run: long enough for each dashboard to look (every 5 s)
        # while the other drives it.
        bench = bench_command(server_port, "--num-prompts", "4", "--pause", "0.8")
        launch_spec = {"host": sshd.alias, "command": server_command(server_port),
                       "bench": bench, "repeat": 3, "warmup": 1}  # fmt: skip
        body = {"title": "Torch symmetric memory", "launch": launch_spec}
        response = api.post(f"/api/campaigns/{campaign['id']}/attempts", json=body)
        assert response.status_code == 201, response.text
        attempt_id = response.json()["id"]

    def driver_seen_by_both() -> str | None:
        seen = {_run(url, attempt_id)["driven_by"] for url in urls.values()}
        if None in seen:
            return None  # not claimed yet (the two looks are moments apart)
        assert len(seen) == 1, seen
        return seen.pop()

    driver = wait_for(driver_seen_by_both, what="a dashboard driving the run")
    host, _, pid = driver.rpartition(":")
    assert host == socket.gethostname() and int(pid) in by_pid
    holder = by_pid.pop(int(pid))
    [other] = by_pid.values()
    # Both alive through two benchmark runs (over 5 s, a rescan of each): never two drivers.
    while _run(urls[other.pid], attempt_id)["bench_done"] < 3:
        assert driver_seen_by_both() == driver
    holder.send_signal(signal.SIGKILL)  # no shutdown, no release of its lease
    holder.wait()
    taken_over = f"{socket.gethostname()}:{other.pid}"
    # The kill released nothing, but this machine's other dashboard need not wait out the
    # lease: it sees the holder's process gone at its next look, which may come before this.
    assert _run(urls[other.pid], attempt_id)["driven_by"] in (driver, taken_over)
    wait_for(
        lambda: _run(urls[other.pid], attempt_id)["driven_by"] in (taken_over, None),
        timeout=15,
        what="the other dashboard taking the run over",
    )
    final = wait_for(
        lambda: (r := _run(urls[other.pid], attempt_id))["state"] in ("done", "failed") and r,
        timeout=60,
        what="the run completed by the other dashboard",
    )
    assert (final["state"], final["outcome"]) == ("done", "measured"), final
    assert [r["index"] for r in final["bench_runs"]] == [1, 2, 3, 4]  # none lost, none twice
    assert final["driven_by"] is None  # ended: nobody's
    with owner_client(urls[other.pid]) as api:
        assert attempt_of(api, attempt_id)["metric"]["n"] == 3
    wait_for(lambda: not session_processes(final["pgid"]), timeout=10, what="an empty session")
    assert not port_listening(server_port)


@pytest.fixture
def one_database(database_url: str, tmp_path: Path) -> Iterator[tuple[LiveServer, Settings]]:
    """A dashboard, and the settings a second one on the same database (SQLite file too)
    takes."""
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, token=OWNER_TOKEN, runs_root=str(tmp_path / "runs"),
        database_url=database_url,
    )  # fmt: skip
    first = LiveServer(settings).start()
    try:
        yield first, settings
    finally:
        first.stop()


def test_two_dashboards_on_one_database_follow_a_log_once(
    one_database: tuple[LiveServer, Settings], tmp_path: Path
) -> None:
    first, settings = one_database
    api_a = owner_client(first.url)
    campaign = make_campaign(api_a)
    log = tmp_path / "shared.log"
    log.write_bytes(b"line 0\n")
    attempt = make_attempt(api_a, campaign["id"], source=f"file://{log}")
    wait_for(lambda: stored_log(api_a, attempt["id"]) == log.read_bytes(), what="followed")
    # The second dashboard starts following every open attempt at once, as the first does.
    second = LiveServer(settings).start()
    try:
        api_b = owner_client(second.url)
        for n in range(1, 6):
            with log.open("ab") as out:
                out.write(b"line %d\n" % n)
            size = log.stat().st_size
            wait_for(
                lambda size=size: tail_of(api_b, attempt["id"]).get("bytes_read") == size,
                what="read",
            )
            assert stored_log(api_b, attempt["id"]) == log.read_bytes(), "stored once"
            assert tail_of(api_b, attempt["id"])["stored_bytes"] == size
        # Whichever follows it goes away: the other takes over.
        first.stop()
        with log.open("ab") as out:
            out.write(b"line 6\n")
        wait_for(
            lambda: stored_log(api_b, attempt["id"]) == log.read_bytes(),
            timeout=30,
            what="taken over",
        )
    finally:
        second.stop()


def test_two_dashboards_on_one_database_hear_each_others_changes_at_once(
    one_database: tuple[LiveServer, Settings], tmp_path: Path
) -> None:
    # A page open on a second `serve` of one SQLite file heard of the first one's log lines
    # and notes only at its next heartbeat (15 s): SQLite has no NOTIFY to wake it.
    first, settings = one_database
    second = LiveServer(settings).start()
    try:
        api_a, api_b = owner_client(first.url), owner_client(second.url)
        campaign = make_campaign(api_a)
        heartbeat = settings.heartbeat_seconds
        for listen, write in ((api_b, api_a), (api_a, api_b)):
            reader = SSEReader(listen, f"/api/campaigns/{campaign['id']}/events")
            try:
                reader.next(skip=())  # its hello: it is listening
                note = write.post(f"/api/campaigns/{campaign['id']}/notes", json={"body": "hi"})
                assert note.status_code == 201
                heard = reader.until(lambda m: m.event == "note", timeout=heartbeat / 3)
                assert json.loads(heard.data)["id"] == note.json()["id"]
            finally:
                reader.close()
    finally:
        second.stop()


def test_two_dashboards_on_one_database_drive_a_launch_once(
    one_database: tuple[LiveServer, Settings],
) -> None:
    first, settings = one_database
    api_a = owner_client(first.url)
    campaign = make_campaign(api_a)
    port = free_port()
    body = {"title": "launched once", "launch": {
        "host": "local", "command": server_command(port, "--start-delay", "1"),
        "bench": bench_command(port, "--num-prompts", "4", "--pause", "0.2"),
        "repeat": 2, "warmup": 1}}  # fmt: skip
    created = api_a.post(f"/api/campaigns/{campaign['id']}/attempts", json=body)
    assert created.status_code == 201, created.text
    attempt_id = created.json()["id"]
    # Started while the run is under way: it finds the run unfinished, as after a restart.
    second = LiveServer(settings).start()
    try:
        final = wait_for(
            lambda: (
                (a := attempt_of(api_a, attempt_id))["run"]["state"] in ("done", "failed") and a
            ),
            timeout=60,
            what="the run's end",
        )
        run = final["run"]
        assert (run["state"], run["outcome"]) == ("done", "measured"), run
        assert [r["index"] for r in run["bench_runs"]] == [1, 2, 3]
        assert final["metric"]["n"] == 2
    finally:
        second.stop()
