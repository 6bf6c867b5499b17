"""file:// sources through the whole pipeline: source, ingest, database, API."""

import contextlib
import hashlib
import html
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url

from app.config import Settings
from app.diagnosis import diagnose_bytes
from app.tailing import follower
from app.tailing.events import Event, Idle, State
from app.tailing.protocol import LogSource
from tests.conftest import OWNER_TOKEN, REPO, LiveServer
from tests.helpers import (
    attempt_of,
    copytruncate_and_regrow,
    csrf_of,
    make_attempt,
    make_campaign,
    quiet_lines,
    stored_log,
    tail_of,
    tail_state,
    wait_for,
    wait_for_value,
)

DATA = Path(__file__).parent / "data"


def readers_of(path: Path) -> int:
    """Descriptors this process (the in-process dashboard) holds open on `path`."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/self/fd/{fd}") == str(path)
    return count


def test_a_log_is_stored_diagnosed_and_moves_the_attempt(api: httpx.Client, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    assert attempt["status"] == "running"
    with log.open("ab") as out:
        out.write(b"[2026-02-27 13:21:27 TP0] Load weight begin. avail mem=93.41 GB\n")
        out.flush()
        wait_for(lambda: tail_of(api, attempt["id"]).get("stored_bytes", 0) > 0, what="bytes")
        out.write(b"[2026-02-27 13:22:00] The server is fired up and ready to roll!\n")
        out.flush()
        wait_for(lambda: attempt_of(api, attempt["id"])["status"] == "ready", what="ready")
        out.write(b"Output token throughput (tok/s):         81.90\n")
        out.write(b"Output token throughput (tok/s):         82.30\n")
        out.flush()
        body = wait_for(
            lambda: (a := attempt_of(api, attempt["id"]))["metric"] and a["metric"]["n"] == 2 and a,
            what="two measurements from the log",
        )
    assert body["status"] == "measured" and body["metric_value"] == 82.1
    assert stored_log(api, attempt["id"]) == log.read_bytes()
    assert body["diagnosis"]["ready"] is True
    assert body["tail"]["state"] == "connected" and body["tail"]["bytes_read"] == log.stat().st_size


def test_the_seed_crash_is_found_by_the_tailer(api: httpx.Client, tmp_path: Path) -> None:
    log = tmp_path / "torch_symm_mem_test.log"
    log.write_bytes((DATA / "seed_torch_symm_mem.log").read_bytes())
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    body = wait_for(
        lambda: (a := attempt_of(api, attempt["id"]))["status"] == "crashed" and a, what="crash"
    )
    assert body["diagnosis"]["root_cause"] == "KeyError: 12"
    assert body["diagnosis"]["error_class"] == "unsupported_arch"
    retest = make_attempt(api, campaign["id"], source=f"file://{log}", retest_of=attempt["id"])
    again = wait_for(
        lambda: (a := attempt_of(api, retest["id"]))["status"] == "crashed" and a, what="retest"
    )
    assert again["same_root_cause_as"] == [attempt["id"]]


def test_a_missing_file_is_waited_for(api: httpx.Client, tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(
        lambda: (attempt_of(api, attempt["id"])["tail"] or {}).get("state") == "file not found yet",
        what="file not found yet",
    )
    log.write_bytes(b"finally here\n")
    wait_for(lambda: stored_log(api, attempt["id"]) == b"finally here\n", what="content")


def test_a_writer_that_reopens_late_after_a_rename_loses_no_line(
    api: httpx.Client, tmp_path: Path
) -> None:
    """logrotate's `create` with a logger that reopens on a signal, seconds later (or one
    caught between its open and its write, as under load in CI): the old file is followed
    while a process still holds it open for writing, then the new one."""
    log = tmp_path / "server.log"
    log.write_bytes(b"before the rotation\n")
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: stored_log(api, attempt["id"]) == b"before the rotation\n", what="first")
    with log.open("ab") as still_open:  # the logger's file, held across the rename
        os.rename(log, tmp_path / "server.log.1")
        log.write_bytes(b"in the new file\n")
        time.sleep(1.0)  # the signal comes late: three grace periods go by
        still_open.write(b"written late to the old file\n")
    expected = b"before the rotation\nwritten late to the old file\nin the new file\n"
    wait_for_value(lambda: stored_log(api, attempt["id"]), expected, what="every line once")


def test_rename_and_create_rotation_keeps_every_byte_once(
    api: httpx.Client, tmp_path: Path
) -> None:
    """logrotate's default: rename the file, the server's logger creates a new one. The
    follower switches names once the old file has stopped growing and no writer holds it
    (ROTATION_GRACE_S and a look at /proc): a file rotated away again before it switched to
    it would be skipped, so the rotations here come further apart than a switch takes on a
    loaded machine (at 0.6 s apart, two of CI's runs here lost a file; at 1.5 s, one run of a
    suite at a load of 6 to 11 on two cores did)."""
    log = tmp_path / "rotating.log"
    log.write_bytes(b"")
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: attempt_of(api, attempt["id"])["tail"], what="tail started")
    written: list[bytes] = []
    done = threading.Event()

    def writer() -> None:
        number = 0
        while not done.is_set():
            line = b"line %06d of the server log\n" % number
            with log.open("ab") as out:  # a logger that reopens its file by name
                out.write(line)
            written.append(line)
            number += 1
            time.sleep(0.001)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for rotation in range(6):
            time.sleep(2.5)
            os.rename(log, tmp_path / f"rotating.log.{rotation}")
        time.sleep(0.3)
    finally:
        done.set()
        thread.join()
    expected = b"".join(written)
    wait_for(lambda: stored_log(api, attempt["id"]) == expected, timeout=60, what="every byte once")
    body = attempt_of(api, attempt["id"])
    assert body["tail"]["stored_bytes"] == len(expected)


def test_copytruncate_rotation_never_repeats_a_line(api: httpx.Client, tmp_path: Path) -> None:
    log = tmp_path / "copytruncate.log"
    log.write_bytes(b"")
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: attempt_of(api, attempt["id"])["tail"], what="tail started")
    expected = []
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        for rotation in range(10):
            for number in range(200):
                line = b"rotation %02d line %04d\n" % (rotation, number)
                os.write(fd, line)
                expected.append(line)
                if number % 50 == 0:
                    time.sleep(0.005)
            # logrotate's copytruncate: copy, then truncate in place while the writer goes on.
            # What the tailer has not read by then is only in the copy: wait for the last
            # line. (Not for bytes read == size: each rotation writes as many bytes as the
            # last, so a tailer yet to see the truncation already matched.)
            wait_for(
                lambda last=line: stored_log(api, attempt["id"]).endswith(last),
                what="caught up before the copy",
            )
            (tmp_path / f"copytruncate.log.{rotation}").write_bytes(log.read_bytes())
            os.truncate(log, 0)
        os.write(fd, b"after the last rotation\n")
        expected.append(b"after the last rotation\n")
    finally:
        os.close(fd)
    wait_for(
        lambda: stored_log(api, attempt["id"]).endswith(b"after the last rotation\n"),
        timeout=60,
        what="the last line",
    )
    stored = stored_log(api, attempt["id"]).splitlines(keepends=True)
    assert stored == expected
    digest = hashlib.sha256(b"".join(expected)).hexdigest()
    assert hashlib.sha256(b"".join(stored)).hexdigest() == digest


def test_closing_the_attempt_stops_following(api: httpx.Client, tmp_path: Path) -> None:
    log = tmp_path / "closed.log"
    log.write_bytes(b"before close\n")
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: stored_log(api, attempt["id"]) == b"before close\n", what="first bytes")
    closed = api.patch(
        f"/api/attempts/{attempt['id']}", json={"status": "eliminated", "verdict": "x"}
    )
    assert closed.status_code == 200
    # The page must not go on claiming "connected" for a log nobody follows.
    wait_for(lambda: tail_state(api, attempt["id"]) == "stopped", what="stopped")
    # A second attempt on the same file stays open: when it has the line, a reader of the
    # closed one would have had it too.
    witness = make_attempt(api, campaign["id"], title="witness", source=f"file://{log}")
    wait_for(lambda: stored_log(api, witness["id"]) == b"before close\n", what="witness")
    with log.open("ab") as out:
        out.write(b"after close\n")
    wait_for(lambda: stored_log(api, witness["id"]) == log.read_bytes(), what="witness read on")
    assert stored_log(api, attempt["id"]) == b"before close\n"
    assert readers_of(log) == 1  # the witness's, none left for the closed attempt
    assert diagnose_bytes(b"before close\n").crashed is False


def test_past_the_cap_the_middle_is_dropped_and_the_crash_kept(
    settings: Settings, tmp_path: Path
) -> None:
    from tests.conftest import running

    with running(settings.model_copy(update={"log_cap_mib": 4.0})) as (_, api):
        log = tmp_path / "big.log"
        line = b"[2026-02-27 13:21:27 TP0] Decode batch. gen throughput (token/s): 81.50\n"
        body = b"[2026-02-27 13:00:00] The server is fired up and ready to roll!\n"
        body += line * 220_000  # about 16 MiB
        body += (DATA / "seed_torch_symm_mem.log").read_bytes()
        # The engine is dead; its front end still answers health checks.
        health = b'[2026-02-27 13:22:00] INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 503\n'
        body += health * 3_000
        log.write_bytes(body)
        campaign = make_campaign(api)
        attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
        state = wait_for(
            lambda: (
                (a := attempt_of(api, attempt["id"]))["tail"]
                and a["tail"]["stored_bytes"] == len(body)
                and a
            ),
            timeout=60,
            what="all read",
        )
        stored = stored_log(api, attempt["id"])
        # The cap holds to within a stored chunk (1 MiB).
        assert len(stored) < 5.5 * (1 << 20)
        assert stored.startswith(b"[2026-02-27 13:00:00] The server is fired up")
        assert b"KeyError: 12" in stored and b"bytes of the middle dropped past the cap" in stored
        assert stored.endswith(health)
        assert state["diagnosis"]["root_cause"] == "KeyError: 12"


def test_a_silent_starting_server_is_flagged_stalled(settings: Settings, tmp_path: Path) -> None:
    from tests.conftest import running

    with running(settings.model_copy(update={"stall_seconds": 1.0})) as (_, api):
        log = tmp_path / "quiet.log"
        log.write_bytes(b"[2026-02-27 13:21:27 TP0] Load weight begin.\n")
        campaign = make_campaign(api)
        attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
        wait_for(lambda: tail_state(api, attempt["id"]) == "stalled", what="stall")
        with log.open("ab") as out:
            out.write(b"[2026-02-27 13:29:00 TP0] Load weight end.\n")
        wait_for(lambda: tail_state(api, attempt["id"]) == "connected", what="on")


def test_the_attempt_page_shows_the_escaped_tail_with_the_root_cause_marked(
    api: httpx.Client, browser: httpx.Client, tmp_path: Path
) -> None:
    log = tmp_path / "page.log"
    log.write_bytes(
        b"\x1b[32m<script>alert('log')</script>\x1b[0m\n"
        + (DATA / "seed_torch_symm_mem.log").read_bytes()
    )
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: attempt_of(api, attempt["id"])["status"] == "crashed", what="crash")
    page = browser.get(f"/attempts/{attempt['id']}").text
    assert f'id="tail-{attempt["id"]}"' in page
    assert (
        "&lt;script&gt;alert(&#39;log&#39;)&lt;/script&gt;" in page and "<script>alert" not in page
    )
    assert "\x1b" not in page
    assert '<span class="line root" id="root-cause">KeyError: 12' in page
    assert 'href="#root-cause"' in page


def test_a_crash_waits_for_the_child_s_error_on_the_card_then_names_it(
    api: httpx.Client, browser: httpx.Client, tmp_path: Path
) -> None:
    """The seed's log as it grows: the launcher's sigquit line arrives before the scheduler's
    traceback; until then the card says what it waits for, never the wrapper."""
    seed = (DATA / "seed_torch_symm_mem.log").read_bytes()
    child = seed.index(b"[2026-02-27 13:21:41 TP3] Scheduler hit an exception")
    log = tmp_path / "torch_symm_mem_test.log"
    log.write_bytes(seed[:child])
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    waiting = "waiting for the failing process&#39;s error"

    def card() -> str:
        page = browser.get(f"/campaigns/{campaign['id']}").text
        found = re.search(rf'<article [^>]*id="attempt-{attempt["id"]}".*?</article>', page, re.S)
        assert found, page
        return found.group(0)

    body = wait_for(
        lambda: (
            (a := attempt_of(api, attempt["id"]))["diagnosis"] and a["diagnosis"]["pending"] and a
        ),
        what="the sigquit line read",
    )
    assert body["status"] == "crashed" and body["diagnosis"]["root_cause"] is None
    assert body["diagnosis"]["fingerprint"] is None and body["diagnosis"]["candidates"] == []
    assert waiting in card() and "sigquit" not in card()
    assert waiting in browser.get(f"/attempts/{attempt['id']}").text
    with log.open("ab") as out:
        out.write(seed[child:])
    wait_for(
        lambda: attempt_of(api, attempt["id"])["diagnosis"]["root_cause"] == "KeyError: 12",
        what="the child's KeyError",
    )
    shown = card()
    assert "<code>KeyError: 12</code>" in shown and "unsupported_arch" in shown
    assert waiting not in shown


def test_a_campaign_teaches_readiness_and_its_metric(api: httpx.Client, tmp_path: Path) -> None:
    campaign = make_campaign(
        api, metric="req/s", metric_label="Request throughput", ready_pattern=r"accepting on :\d+"
    )
    log = tmp_path / "llama.log"
    log.write_bytes(b"llama server: model loaded, accepting on :8080\n")
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: attempt_of(api, attempt["id"])["status"] == "ready", what="custom ready")
    with log.open("ab") as out:
        out.write(b"Request throughput (req/s):              3.75\n")
    body = wait_for(
        lambda: (a := attempt_of(api, attempt["id"]))["metric_value"] == 3.75 and a, what="metric"
    )
    assert body["status"] == "measured"


def test_old_live_events_are_pruned(
    api: httpx.Client,
    server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    from sqlalchemy import text

    import app.ingest

    monkeypatch.setattr(app.ingest, "PRUNE_EVERY", 1)
    monkeypatch.setattr(app.ingest, "KEEP_EVENTS", 5)
    log = tmp_path / "chatty.log"
    log.write_bytes(b"")
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    for number in range(20):
        with log.open("ab") as out:
            out.write(b"line %d\n" % number)
        wait_for(lambda: stored_log(api, attempt["id"]) == log.read_bytes(), what="stored")
    with server.app.state.engine.connect() as connection:
        kept = connection.execute(text("SELECT count(*) FROM event")).scalar()
    assert kept is not None and kept <= 8


def test_a_failed_request_the_engine_serves_past_is_no_crash(
    api: httpx.Client, tmp_path: Path
) -> None:
    log = tmp_path / "serving.log"
    log.write_bytes(
        b"[2026-02-27 13:00:00] The server is fired up and ready to roll!\n"
        # (no handler's word around it: under Uvicorn's "Exception in ASGI application" it
        # would be a request's from the first)
        b"Traceback (most recent call last):\n"
        b'  File "/usr/lib/python3/dist-packages/uvicorn/protocols/http/h11_impl.py", line 403\n'
        b"json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"
    )
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    # As the log stands, the request's error is the last word: it reads as a crash...
    wait_for(lambda: attempt_of(api, attempt["id"])["status"] == "crashed", what="crashed")
    with log.open("ab") as out:
        for second in range(5):
            out.write(
                b"[2026-02-27 13:00:%02d TP0] Decode batch. #running-req: 1, "
                b"gen throughput (token/s): 81.50\n" % (31 + second)
            )
    # ...until the engine is seen serving on: the crash is withdrawn.
    state = wait_for(
        lambda: (a := attempt_of(api, attempt["id"]))["status"] == "ready" and a, what="ready"
    )
    assert state["diagnosis"]["crashed"] is False and state["diagnosis"]["root_cause"] is None


@pytest.mark.parametrize("regrowth", ["equal-size", "larger"])
def test_copytruncate_after_an_idle_period_regrown_at_once_loses_nothing(
    api: httpx.Client, tmp_path: Path, regrowth: str
) -> None:
    log = tmp_path / "quiet.log"
    before = quiet_lines("before", 100)
    log.write_bytes(before)
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: stored_log(api, attempt["id"]) == before, what="the first content")
    # Quiet for a while: the follower looks at its slow pace.
    time.sleep(follower.ACTIVE_FOR_S + 0.5)
    after = quiet_lines("after", 100 if regrowth == "equal-size" else 150)
    copytruncate_and_regrow(log, after)
    assert (log.stat().st_size == len(before)) == (regrowth == "equal-size")
    wait_for(
        lambda: stored_log(api, attempt["id"]) == before + after, what="the regrown content, all"
    )


def test_a_copytruncate_while_the_dashboard_was_down_is_seen_at_restart(
    settings: Settings, tmp_path: Path
) -> None:
    """The fingerprint travels with the stored offset: equal size, other content, read
    from 0 by the restarted dashboard."""
    from tests.conftest import running

    log = tmp_path / "server.log"
    before = quiet_lines("before", 80)
    log.write_bytes(before)
    with running(settings) as (_, api):
        campaign = make_campaign(api)
        attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
        wait_for(lambda: stored_log(api, attempt["id"]) == before, what="the first content")
    after = quiet_lines("after", 80)
    copytruncate_and_regrow(log, after)
    assert log.stat().st_size == len(before)
    with running(settings) as (_, api):
        wait_for(lambda: stored_log(api, attempt["id"]) == before + after, what="read from 0")


def test_copytruncate_rotation_detected_at_every_rotation_whatever_the_load(
    api: httpx.Client, tmp_path: Path
) -> None:
    """The CI failure (rotation 08 lost under load), made certain: each rotation writes the
    next content of the same size before the follower can look."""
    log = tmp_path / "copytruncate.log"
    log.write_bytes(quiet_lines("rotation 00", 50))
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    expected = log.read_bytes()
    for rotation in range(1, 6):
        wait_for(
            lambda done=expected: stored_log(api, attempt["id"]) == done,
            what=f"rotation {rotation}",
        )
        content = quiet_lines(f"rotation {rotation:02d}", 50)
        copytruncate_and_regrow(log, content)
        expected += content
    wait_for(lambda: stored_log(api, attempt["id"]) == expected, what="the last rotation")


def test_unfollowable_and_own_files_are_refused_when_set(tmp_path: Path) -> None:
    """A directory, a FIFO, a device, /proc and /sys, the dashboard's own database (and its
    journal files) and secrets: 422 with the reason, from the API and the form, and
    nothing created."""
    from tests.conftest import running

    database = tmp_path / "dash.db"
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None, database_url=f"sqlite:///{database}", token=OWNER_TOKEN,
        trusted_hosts_file=tmp_path / "trusted.known_hosts",
    )  # fmt: skip
    (tmp_path / "trusted.known_hosts").write_text("[gpu]:22 ssh-ed25519 AAAA\n")
    (tmp_path / "logs").mkdir()
    os.mkfifo(tmp_path / "pipe.log")
    (tmp_path / "db-link.log").symlink_to(database)
    refused = {
        f"{tmp_path / 'logs'}": "is a directory",
        f"{tmp_path / 'pipe.log'}": "named pipe",
        "/dev/null": "is a device",
        "/proc/self/environ": "kernel pseudo-file",
        "/sys/kernel/notes": "kernel pseudo-file",
        f"{database}": "the dashboard's own files",
        f"{database}-wal": "the dashboard's own files",
        f"{database}-journal": "the dashboard's own files",  # not there: refused all the same
        f"{tmp_path / 'logs' / '..' / 'dash.db-shm'}": "the dashboard's own files",
        f"{tmp_path / 'db-link.log'}": "the dashboard's own files",
        f"{tmp_path / 'trusted.known_hosts'}": "the dashboard's own files",
        f"{REPO / '.env'}": "the dashboard's own files",
    }
    with running(settings) as (_, api), contextlib.chdir(REPO):
        os.link(database, tmp_path / "db-hardlink.log")
        refused[f"{tmp_path / 'db-hardlink.log'}"] = "the dashboard's own files"
        campaign = make_campaign(api)
        open_attempt = make_attempt(api, campaign["id"])
        owner = httpx.Client(base_url=api.base_url, headers={"Accept": "text/html"})
        assert owner.get("/login", params={"token": OWNER_TOKEN}).status_code == 303
        csrf = csrf_of(owner.get(f"/campaigns/{campaign['id']}").text)
        for path, says in refused.items():
            created = api.post(
                f"/api/campaigns/{campaign['id']}/attempts",
                json={"title": "bad", "source": f"file://{path}"},
            )
            assert created.status_code == 422 and says in created.json()["detail"], path
            patched = api.patch(
                f"/api/attempts/{open_attempt['id']}", json={"source": f"file://{path}"}
            )
            assert patched.status_code == 422 and says in patched.json()["detail"], path
            form = owner.post(
                f"/campaigns/{campaign['id']}/attempts",
                data={"csrf_token": csrf, "title": "bad", "source": f"file://{path}"},
            )
            # Beside the field, with what was typed kept.
            beside = re.search(
                r'<input name="source"[^>]*value="([^"]*)" aria-invalid="true">'
                r'<span class="field-error"[^>]*data-field="source">([^<]*)</span>',
                form.text,
            )
            assert form.status_code == 422 and beside, (path, form.status_code)
            assert html.unescape(beside[1]) == f"file://{path}"
            assert says in html.unescape(beside[2]), path
        body = api.get(f"/api/campaigns/{campaign['id']}").json()
        assert [a["id"] for a in body["attempts"]] == [open_attempt["id"]]
        assert attempt_of(api, open_attempt["id"])["source"] is None
        # The owner choosing any other file is fine, there or not yet.
        for path in (tmp_path / "server.log", tmp_path / "not-yet.log"):
            if path.name == "server.log":
                path.write_bytes(b"ok\n")
            assert make_attempt(api, campaign["id"], source=f"file://{path}")["status"] == "running"


def test_a_log_that_later_becomes_unfollowable_says_so(settings: Settings, tmp_path: Path) -> None:
    """Checked again at every open: a log replaced by a directory, a link that comes to
    point at the dashboard's database. A clear state, and not a byte of the database."""
    from tests.conftest import running

    database = Path(make_url(settings.database_url).database or tmp_path / "x.db")
    with running(settings) as (_, api):
        campaign = make_campaign(api)
        log = tmp_path / "server.log"
        log.write_bytes(b"first\n")
        becomes_folder = make_attempt(api, campaign["id"], source=f"file://{log}")
        wait_for(lambda: stored_log(api, becomes_folder["id"]) == b"first\n", what="followed")
        log.rename(tmp_path / "server.log.1")
        log.mkdir()
        tail = wait_for(
            lambda: (
                (t := tail_of(api, becomes_folder["id"])).get("state") == "not a log file" and t
            ),
            what="refused as a directory",
        )
        assert "is a directory" in tail["last_error"]
        if not database.is_file():
            return  # PostgreSQL: no database file to point at
        link = tmp_path / "later.log"
        points_at_db = make_attempt(api, campaign["id"], source=f"file://{link}")
        wait_for(lambda: tail_state(api, points_at_db["id"]) == "file not found yet", what="wait")
        link.symlink_to(database)
        tail = wait_for(
            lambda: (t := tail_of(api, points_at_db["id"])).get("state") == "not a log file" and t,
            what="refused as the database",
        )
        assert "the dashboard's own files" in tail["last_error"]
        assert stored_log(api, points_at_db["id"]) == b""


class CountingSource:
    """The real source, counting what the tail has handled (it asked for the next one)."""

    def __init__(self, source: LogSource) -> None:
        self.source = source
        self.handled: list[Event] = []

    def follow(self, offset: int, identity: str | None, stop: threading.Event) -> Iterator[Event]:
        for event in self.source.follow(offset, identity, stop):
            yield event
            self.handled.append(event)

    def count(self, kind: type, state: str | None = None) -> int:
        return sum(
            isinstance(e, kind) and (state is None or getattr(e, "state", None) == state)
            for e in list(self.handled)
        )


def counted_sources(server: LiveServer, monkeypatch: pytest.MonkeyPatch) -> list[CountingSource]:
    tailer = server.app.state.tailer
    make = tailer.source_factory
    sources: list[CountingSource] = []

    def counting(url: str) -> CountingSource:
        sources.append(CountingSource(make(url)))
        return sources[-1]

    monkeypatch.setattr(tailer, "source_factory", counting)
    return sources


def live_events_of(server: LiveServer, attempt_id: int) -> int:
    from sqlalchemy import text

    with server.app.state.engine.connect() as connection:
        count = connection.execute(
            text("SELECT count(*) FROM event WHERE attempt_id = :id"), {"id": attempt_id}
        ).scalar()
    return int(count or 0)


def test_a_missing_file_is_one_live_event_not_one_a_report(
    api: httpx.Client, server: LiveServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = counted_sources(server, monkeypatch)
    log = tmp_path / "later.log"
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: tail_state(api, attempt["id"]) == "file not found yet", what="waiting")
    events = live_events_of(server, attempt["id"])
    # Ten more reports of the missing file (two a second), each handled by the tail.
    reports = sources[0].count(State, "file not found yet")
    wait_for(
        lambda: sources[0].count(State, "file not found yet") >= reports + 10,
        what="ten more reports handled",
    )
    assert live_events_of(server, attempt["id"]) == events
    log.write_bytes(b"here\n")
    wait_for(lambda: stored_log(api, attempt["id"]) == b"here\n", what="the file, at last")
    assert live_events_of(server, attempt["id"]) > events


def test_a_silent_ready_server_writes_no_event_a_heartbeat(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the stall delay a ready server may be quiet: its heartbeats change nothing."""
    from tests.conftest import running

    with running(settings.model_copy(update={"stall_seconds": 1.0})) as (server, api):
        sources = counted_sources(server, monkeypatch)
        log = tmp_path / "ready.log"
        log.write_bytes(b"[2026-02-27 13:22:00] The server is fired up and ready to roll!\n")
        campaign = make_campaign(api)
        attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
        wait_for(lambda: attempt_of(api, attempt["id"])["status"] == "ready", what="ready")
        wait_for(lambda: sources[0].count(Idle) >= 1, what="caught up")
        events = live_events_of(server, attempt["id"])
        beats = sources[0].count(Idle)
        wait_for(lambda: sources[0].count(Idle) >= beats + 5, what="five heartbeats handled")
        assert live_events_of(server, attempt["id"]) == events
        assert tail_state(api, attempt["id"]) == "connected"


def test_another_source_is_read_on_its_own_not_after_the_old_log(
    api: httpx.Client, tmp_path: Path
) -> None:
    wrong, right = tmp_path / "wrong.log", tmp_path / "right.log"
    wrong.write_bytes(
        b"[2026-02-27 13:22:00] The server is fired up and ready to roll!\n"
        b"Output token throughput (tok/s):         81.90\n"
    )
    crash = (DATA / "seed_torch_symm_mem.log").read_bytes()
    right.write_bytes(crash)
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{wrong}")
    wait_for(
        lambda: (a := attempt_of(api, attempt["id"]))["metric"] and a["metric"]["n"] == 1,
        what="the wrong log's figure",
    )
    typed = api.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": 80.0})
    assert typed.status_code == 201
    moved = api.patch(f"/api/attempts/{attempt['id']}", json={"source": f"file://{right}"})
    assert moved.status_code == 200

    def read_anew() -> dict | None:
        body = attempt_of(api, attempt["id"])
        done = (body["tail"] or {}).get("bytes_read") == len(crash) and body["diagnosis"]
        return body if done and body["diagnosis"]["root_cause"] else None

    body = wait_for(read_anew, what="the new log read")
    assert stored_log(api, attempt["id"]) == crash  # the new log alone
    assert body["diagnosis"]["root_cause"] == "KeyError: 12"
    assert body["metric"]["n"] == 1 and body["metric_value"] == 80.0  # the typed figure stays
    # The other way round: a crash's log replaced by a healthy one is no crash any more
    healthy = tmp_path / "healthy.log"
    healthy.write_bytes(
        b"[2026-02-27 13:22:00] The server is fired up and ready to roll!\n"
        b"Output token throughput (tok/s):         111.50\n"
    )
    crashed = make_attempt(api, campaign["id"], source=f"file://{right}")
    wait_for(lambda: attempt_of(api, crashed["id"])["status"] == "crashed", what="the crash")
    moved = api.patch(f"/api/attempts/{crashed['id']}", json={"source": f"file://{healthy}"})
    assert moved.status_code == 200 and moved.json()["status"] == "running", moved.text
    again = wait_for(
        lambda: (a := attempt_of(api, crashed["id"]))["status"] == "measured" and a,
        what="the healthy log measured",
    )
    assert again["metric_value"] == 111.5 and again["diagnosis"]["crashed"] is False


def test_a_binary_file_is_refused_as_not_a_text_log_not_stored(
    api: httpx.Client, tmp_path: Path
) -> None:
    import gzip

    packed = tmp_path / "server.log.1.gz"
    packed.write_bytes(gzip.compress((DATA / "seed_torch_symm_mem.log").read_bytes()))
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{packed}")
    tail = wait_for(
        lambda: (t := tail_of(api, attempt["id"])).get("state") == "not a log file" and t,
        what="the binary file refused",
    )
    assert "not a text log" in tail["last_error"]
    assert tail.get("stored_bytes", 0) == 0 and stored_log(api, attempt["id"]) == b""
    assert attempt_of(api, attempt["id"])["diagnosis"] is None
