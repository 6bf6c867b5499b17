"""The database's disk fills up: writes are refused with 507, the tail pauses with what waits,
and storing resumes, byte for byte, once space returns. A real tmpfs, a real uvicorn."""

import base64
import errno
import json
import logging
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from app.config import Settings
from app.db import make_engine, session_scope
from app.errors import StorageFull
from app.pauses import Pauses
from tests.conftest import OWNER_TOKEN, LiveServer, Templates, running
from tests.helpers import (
    attempt_of,
    csrf_of,
    make_attempt,
    make_campaign,
    stored_log,
    tail_of,
    wait_for,
    wait_for_readers,
)
from tests.sse import SSEReader

DISK_SIZE = "20m"
# What PostgreSQL raises when a relation cannot grow: the same SQLSTATE, raised on purpose.
PG_DISK_FULL = (
    "DO $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' "
    "USING ERRCODE = 'disk_full'; END $$"
)


@contextmanager
def small_disk(mount_point: Path) -> Iterator[Path]:
    """A tmpfs of its own: filling it fills no one else's disk."""
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=True)


def fill(disk: Path) -> Path:
    """A filler file that takes every byte left on the disk."""
    filler = disk / "filler"
    block = b"\0" * (1 << 16)
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(block)
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
    # What a 64 KiB write could not take, a byte at a time.
    with filler.open("ab", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 512)
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
    return filler


def log_lines(megabytes: float) -> bytes:
    """Lines that do not compress (the stored log is zlib'd: a repeated line would fit)."""
    lines, size = [], 0
    while size < megabytes * (1 << 20):
        line = b"INFO token batch " + base64.b64encode(os.urandom(96)) + b"\n"
        lines.append(line)
        size += len(line)
    return b"".join(lines)


@pytest.mark.both_databases
def test_either_database_out_of_space_is_one_domain_error(database_url: str) -> None:
    """SQLite's SQLITE_FULL and PostgreSQL's disk_full (SQLSTATE 53100), each raised by the
    database itself, come out of a unit of work as StorageFull (507, or a paused tail)."""
    engine = make_engine(database_url)
    try:
        with pytest.raises(StorageFull, match="disk is full"), session_scope(engine) as session:
            if engine.dialect.name == "sqlite":
                # No room past the pages the file has now: what a full disk does to SQLite.
                pages = session.execute(text("PRAGMA page_count")).scalar_one()
                session.execute(text(f"PRAGMA max_page_count = {pages}"))
                session.execute(text("CREATE TABLE filler (data BLOB)"))
                session.execute(text("INSERT INTO filler VALUES (zeroblob(1 << 20))"))
            else:
                session.execute(text(PG_DISK_FULL))
    finally:
        engine.dispose()


@pytest.mark.serial
def test_a_full_disk_refuses_writes_pauses_the_tail_and_resumes(
    tmp_path: Path, templates: Templates, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="app.ingest")
    with small_disk(tmp_path / "disk") as disk:
        database = disk / "campaign-dash.db"
        templates.sqlite_copy(database)
        settings = Settings(database_url=f"sqlite:///{database}", token=OWNER_TOKEN, _env_file=None)  # type: ignore[call-arg]
        log = tmp_path / "server.log"
        log.write_bytes(b"[2026-02-27 13:21:27 TP0] Load weight begin.\n")
        with (
            running(settings) as (live, api),
            httpx.Client(base_url=live.url, headers={"Accept": "text/html"}, timeout=30) as browser,
        ):
            assert browser.get("/login", params={"token": OWNER_TOKEN}).status_code == 303
            csrf = csrf_of(browser.get("/").text)
            campaign = make_campaign(api)
            attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
            wait_for(lambda: stored_log(api, attempt["id"]) == log.read_bytes(), what="first line")
            filler = fill(disk)

            refused = api.post("/api/campaigns", json={"name": "no room", "baseline": 1.0})
            assert refused.status_code == 507, refused.text
            assert "disk is full" in refused.json()["detail"]
            refused = api.post(f"/api/campaigns/{campaign['id']}/attempts", json={"title": "t"})
            assert refused.status_code == 507, refused.text
            page = browser.post("/campaigns", data={"csrf_token": csrf, "name": "no room"})
            assert page.status_code == 507, page.text
            assert page.headers["content-type"].startswith("text/html")
            assert "disk is full" in page.text
            # The quiet file's note (whether a writer still holds it), refused by the full
            # disk, is dropped: it must not hold the log's next bytes behind it.
            wait_for(lambda: "notes dropped" in caplog.text, timeout=20, what="a note dropped")

            with log.open("ab") as out:
                out.write(log_lines(2))
            paused = wait_for(
                lambda: (t := tail_of(api, attempt["id"]))["state"] == "disk full" and t,
                timeout=10,
                what="the tail paused",
            )
            waiting = int(paused["last_error"].split("disk full: ")[1].split(" bytes")[0])
            assert 0 < waiting <= log.stat().st_size - paused["bytes_read"]
            assert paused["bytes_read"] < log.stat().st_size  # the offset did not move on
            assert (
                f"Paused: disk full: {waiting} bytes"
                in browser.get(f"/attempts/{attempt['id']}").text
            )
            assert (
                f"paused: disk full: {waiting} bytes"
                in browser.get(f"/campaigns/{campaign['id']}").text
            )

            filler.unlink()
            wait_for(
                lambda: stored_log(api, attempt["id"]) == log.read_bytes(),
                timeout=15,
                what="every byte stored once space returned",
            )
            resumed = wait_for(
                lambda: (t := tail_of(api, attempt["id"]))["state"] == "connected" and t,
                what="the tail connected again",
            )
            assert resumed["last_error"] is None
            assert resumed["bytes_read"] == resumed["stored_bytes"] == log.stat().st_size
            # The batch the full disk refused was fed to the diagnosis once, when stored.
            assert attempt_of(api, attempt["id"])["diagnosis"]["bytes_read"] == log.stat().st_size
            assert "disk full" not in browser.get(f"/campaigns/{campaign['id']}").text
            assert api.post("/api/campaigns", json={"name": "room again"}).status_code == 201


def test_a_pause_held_only_in_memory_reaches_the_open_pages_and_streams_and_so_does_its_end(
    api: httpx.Client, server: LiveServer, tmp_path: Path
) -> None:
    # With no room even to store the pause, no event row could tell the open pages: they
    # showed the tail connected and caught up until reloaded.
    log = tmp_path / "server.log"
    log.write_bytes(b"[2026-02-27 13:21:27 TP0] Load weight begin.\n")
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: stored_log(api, attempt["id"]) == log.read_bytes(), what="first line")
    base = f"/api/campaigns/{campaign['id']}/events"
    readers = {
        "json": SSEReader(api, base),
        "campaign": SSEReader(api, f"{base}?view=campaign"),
        "attempt": SSEReader(api, f"{base}?view=attempt&attempt={attempt['id']}"),
    }
    wait_for_readers(server.app, 3, what="the three streams joined")
    pauses: Pauses = server.app.state.pauses
    pauses.hold(campaign["id"], attempt["id"], 2_097_152)  # what the tailer does, unstored
    shown = {
        "json": lambda m: (
            m.event == "attempt"
            and json.loads(m.data)["tail"]["state"] == "disk full"
            and "disk full: 2097152 bytes" in json.loads(m.data)["tail"]["last_error"]
        ),
        "campaign": lambda m: "paused: disk full: 2097152 bytes" in m.data,
        "attempt": lambda m: "Paused: disk full: 2097152 bytes" in m.data,
    }
    for name, reader in readers.items():
        paused = reader.until(shown[name])
        assert paused.id is None, f"{name}: an unstored change moved the reader's cursor"
    pauses.end(campaign["id"], attempt["id"])
    for name, reader in readers.items():
        if name == "json":
            reader.until(lambda m: m.event == "attempt"
                         and json.loads(m.data)["tail"]["state"] != "disk full")  # fmt: skip
        else:
            reader.until(lambda m: m.event != "heartbeat" and "isk full" not in m.data
                         and str(attempt["id"]) in m.data)  # fmt: skip
        reader.close()
