"""The follower itself, driven as a generator: what happens between two looks is certain."""

import ast
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.tailing import follower, wire
from app.tailing.ssh_source import FOLLOWER_PROGRAM
from tests.helpers import LogWriter

Event = tuple[Any, ...]


def until(events: Iterator[Event], kind: str, *, limit: int = 10_000) -> list[Event]:
    """The events up to and including the first of `kind` (the follower is then suspended
    right there: nothing is read until the next `next()`)."""
    seen = []
    for _ in range(limit):
        event = next(events)
        seen.append(event)
        if event[0] == kind:
            return seen
    raise AssertionError(f"no {kind!r} event in {limit}: {seen[-5:]}")


def data_of(events: list[Event]) -> bytes:
    return b"".join(event[2] for event in events if event[0] == "D")


def lines(rotation: int, count: int) -> bytes:
    return b"".join(b"rotation %02d line %04d of the log\n" % (rotation, n) for n in range(count))


def copytruncate(log: Path, copy: Path) -> None:
    """logrotate's copytruncate: the copy, then the file cut to 0 in place (same inode)."""
    shutil.copyfile(log, copy)
    os.truncate(log, 0)


@pytest.mark.parametrize(
    ("first", "regrown"),
    [(200, 200), (200, 260), (3, 3), (3, 5)],
    ids=["equal-size", "larger", "short-equal-size", "short-larger"],
)
def test_copytruncate_regrown_before_the_next_look_is_read_from_0(
    tmp_path: Path, first: int, regrown: int
) -> None:
    """Cut and written again between two looks: no size check can see it, the content's
    fingerprint does (short files: fewer bytes than FINGERPRINT_BYTES fingerprinted)."""
    log = tmp_path / "server.log"
    old, new = lines(0, first), lines(1, regrown)
    log.write_bytes(old)
    events = follower.follow(str(log), 0, "-")
    opened = until(events, "H")
    assert data_of(opened) == old
    identity = next(e for e in opened if e[0] == "I")[1]
    assert identity.startswith(f"{log.stat().st_dev}:{log.stat().st_ino}:")
    copytruncate(log, tmp_path / "server.log.1")
    with log.open("ab") as out:
        out.write(new)
    after = until(events, "H")
    truncated = [e for e in after if e[0] == "T"]
    assert len(truncated) == 1 and truncated[0][1] != identity
    assert next(e[1] for e in after if e[0] == "D") == 0
    assert data_of(after) == new
    events.close()


def test_bytes_read_at_the_old_offset_of_a_replaced_file_are_not_taken(tmp_path: Path) -> None:
    """Regrown larger: a read at the old offset returns the new content's tail. Those bytes
    are dropped and the new content read from its start, once."""
    log = tmp_path / "server.log"
    log.write_bytes(lines(0, 100))
    events = follower.follow(str(log), 0, "-")
    until(events, "H")
    copytruncate(log, tmp_path / "server.log.1")
    log.write_bytes(lines(1, 300))  # same inode: write_bytes truncates and writes
    after = until(events, "H")
    kinds = [e[0] for e in after]
    assert kinds.index("T") < kinds.index("D")
    assert data_of(after) == lines(1, 300)
    events.close()


def test_a_resumed_follower_sees_the_content_replaced_while_it_was_away(tmp_path: Path) -> None:
    """The identity stored with the offset carries the fingerprint: a dashboard restarted
    after a copytruncate and an equal-size regrowth reads the new content from 0."""
    log = tmp_path / "server.log"
    log.write_bytes(lines(0, 200))
    events = follower.follow(str(log), 0, "-")
    seen = until(events, "H")
    events.close()
    identity = [e for e in seen if e[0] == "I"][-1][1]
    offset = len(data_of(seen))

    unchanged = follower.follow(str(log), offset, identity)
    resumed = until(unchanged, "H")
    unchanged.close()
    assert [e[0] for e in resumed] == ["I", "H"]  # nothing again, nothing truncated

    copytruncate(log, tmp_path / "server.log.1")
    log.write_bytes(lines(1, 200))
    replaced = follower.follow(str(log), offset, identity)
    after = until(replaced, "H")
    replaced.close()
    assert after[0][0] == "T" and data_of(after) == lines(1, 200)


def test_an_identity_stored_before_fingerprints_still_resumes(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(lines(0, 50))
    st = log.stat()
    events = follower.follow(str(log), 100, f"{st.st_dev}:{st.st_ino}")
    resumed = until(events, "H")
    events.close()
    assert [e[0] for e in resumed[:2]] == ["I", "D"] and resumed[1][1] == 100
    assert resumed[0][1].count(":") == 3  # now with its fingerprint


def test_a_short_file_fingerprint_grows_and_is_reported(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"")
    events = follower.follow(str(log), 0, "-")
    first = until(events, "H")
    assert first[0][0] == "I" and first[0][1].endswith(":0:00000000")
    with log.open("ab") as out:
        out.write(b"x" * 100)
    grown = until(events, "H")
    reported = [e for e in grown if e[0] == "I"]
    assert len(reported) == 1 and ":100:" in reported[0][1]
    with log.open("ab") as out:
        out.write(b"y" * 5000)
    capped = [e for e in until(events, "H") if e[0] == "I"]
    assert len(capped) == 1 and f":{follower.FINGERPRINT_BYTES}:" in capped[0][1]
    with log.open("ab") as out:
        out.write(b"z" * 100)
    assert not [e for e in until(events, "H") if e[0] == "I"]  # past 1 KiB it stays
    events.close()


def first_event(path: str) -> Event:
    """The first event, from a thread: a follower that blocks (a FIFO) fails, not hangs."""
    result: list[Event] = []
    thread = threading.Thread(target=lambda: result.append(next(follower.follow(path, 0, "-"))))
    thread.daemon = True
    thread.start()
    thread.join(10)
    assert result, f"the follower blocked on {path}"
    return result[0]


def test_directories_fifos_devices_and_pseudo_files_are_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "folder").mkdir()
    for path, says in [
        (tmp_path / "folder", "is a directory"),
        (tmp_path / "pipe", "named pipe (FIFO)"),
        (Path("/dev/null"), "is a device"),
        (Path("/proc/self/status"), "kernel pseudo-file (/proc)"),
        (Path("/sys/kernel/mm/transparent_hugepage/enabled"), "kernel pseudo-file (/sys)"),
    ]:
        if not path.exists():
            continue
        event = first_event(str(path))
        assert event[0] == "N" and says in event[1], (path, event)
    link = tmp_path / "status.log"
    link.symlink_to("/proc/self/status")
    assert first_event(str(link))[0] == "N"


def test_a_log_that_becomes_a_directory_is_refused_then_followed_again(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"before\n")
    events = follower.follow(str(log), 0, "-")
    until(events, "H")
    log.rename(tmp_path / "server.log.1")
    log.mkdir()
    refused = until(events, "N")
    assert "is a directory" in refused[-1][1]
    log.rmdir()
    log.write_bytes(b"after\n")
    back = until(events, "D")
    assert back[-1][1:] == (0, b"after\n") and any(e[0] == "R" for e in back)
    events.close()


def _imports(tree: ast.Module) -> set[str]:
    """Top modules imported, except under `if __name__ != "__main__":` (not run on a host)."""
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            node.body = []  # before the walk below reaches what it holds
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    return imported


def test_the_program_sent_to_a_host_is_python_3_6_and_runs_on_its_own(tmp_path: Path) -> None:
    """It runs on the remote host's python3, which may be an old GPU box's 3.6, with
    nothing installed: standard library only, no import of the app."""
    program = FOLLOWER_PROGRAM.decode()
    tree = ast.parse(program, feature_version=(3, 6))
    assert _imports(tree) <= {"os", "stat", "sys", "time", "zlib", "typing"}, _imports(tree)
    log = tmp_path / "server.log"
    log.write_bytes(b"first line\nsecond line\n")
    # -I: isolated, so no `app` package from the working directory or the environment.
    process = subprocess.Popen(
        [sys.executable, "-I", "-", str(log), "6", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
    )  # fmt: skip
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(FOLLOWER_PROGRAM)
        process.stdin.close()
        frames = _frames_of(process, "D")
    finally:
        process.kill()
        process.wait()
    assert frames[0][0] == "I" and frames[0][2] == log.stat().st_size
    assert ("D", 6, b"line\nsecond line\n") in frames


def test_a_quiet_file_says_whether_a_process_still_holds_it_open_for_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked only after the file was quiet a while, said again after each burst of data and
    when the answer changes; a process reading the file is no writer."""
    monkeypatch.setattr(follower, "WRITER_QUIET_S", 0.3)
    monkeypatch.setattr(follower, "WRITER_LOOK_EVERY_S", 0.1)
    monkeypatch.setattr(follower, "WRITER_LOOK_MAX_S", 0.4)
    log = tmp_path / "server.log"
    log.write_bytes(b"starting\n")
    with LogWriter(log) as server, log.open("rb"):  # this test reads it too
        events = follower.follow(str(log), 0, "-")
        assert until(events, "O")[-1] == ("O", True)
        server.write(b"NCCL WARN Connect to 10.0.0.2<45678> failed\n")
        after = until(events, "O")
        assert data_of(after).endswith(b"failed\n") and after[-1] == ("O", True)
        started = time.monotonic()
        server.exit()
        gone = until(events, "O")
        assert gone[-1] == ("O", False) and not any(e[0] == "O" for e in gone[:-1])
        assert time.monotonic() - started < 5
        events.close()


def test_the_writer_look_sees_flags_not_just_open_files(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"x\n")
    assert follower.writer_open(log.stat()) is False
    with log.open("rb"):
        assert follower.writer_open(log.stat()) is False
    with log.open("r+b"):  # O_RDWR writes too
        assert follower.writer_open(log.stat()) is True
    # No /proc to look in (not Linux): nothing can tell.
    assert follower.writer_open(log.stat(), proc=str(tmp_path / "no-proc")) is None


def _frames_of(process: "subprocess.Popen[bytes]", kind: str) -> list[wire.Frame]:
    """The program's frames up to and including the first of `kind`."""
    assert process.stdout is not None
    decoder, frames = wire.Decoder(), []
    while not any(frame[0] == kind for frame in frames):
        chunk = process.stdout.read1(1 << 16)
        assert chunk, process.stderr.read() if process.stderr else "the program ended"
        decoder.feed(chunk)
        frames += list(decoder.frames())
    # One read may bring frames written after it (a heartbeat, when the reader is slow).
    first = next(index for index, frame in enumerate(frames) if frame[0] == kind)
    return frames[: first + 1]


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root to become nobody"
)
def test_a_file_of_another_user_cannot_say_it_has_no_writer() -> None:
    """Its writer is most likely its owner, whose processes another user cannot see: the
    program, run as a host runs it, says it cannot tell. (In a folder nobody may enter:
    pytest's are private.)"""
    folder = Path(tempfile.mkdtemp(prefix="writer-look-"))
    folder.chmod(0o755)
    log = folder / "server.log"
    log.write_bytes(b"owned by root, followed by nobody\n")
    log.chmod(0o644)
    process = subprocess.Popen(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
         sys.executable, "-I", "-", str(log), "0", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=folder,
    )  # fmt: skip
    try:
        assert process.stdin is not None
        process.stdin.write(FOLLOWER_PROGRAM)
        process.stdin.close()
        frames = _frames_of(process, "O")  # after WRITER_QUIET_S: a few seconds
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(folder)
    assert frames[-1] == ("O", None)
    assert ("D", 0, b"owned by root, followed by nobody\n") in frames


@pytest.mark.serial  # it times the gaps between looks
def test_a_file_quiet_for_long_is_looked_at_less_and_less(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same answer again: the next look waits twice as long, up to WRITER_LOOK_MAX_S."""
    monkeypatch.setattr(follower, "WRITER_QUIET_S", 0.0)
    monkeypatch.setattr(follower, "WRITER_LOOK_EVERY_S", 0.05)
    monkeypatch.setattr(follower, "WRITER_LOOK_MAX_S", 0.4)
    looks: list[float] = []
    real = follower.writer_open

    def counted(st: os.stat_result, proc: str | None = None) -> bool | None:
        looks.append(time.monotonic())
        return real(st, proc)

    monkeypatch.setattr(follower, "writer_open", counted)
    log = tmp_path / "server.log"
    log.write_bytes(b"x\n")
    events = follower.follow(str(log), 0, "-")
    deadline = time.monotonic() + 10
    while len(looks) < 6 and time.monotonic() < deadline:
        next(events)
    events.close()
    gaps = [b - a for a, b in itertools.pairwise(looks[:6])]
    assert len(gaps) == 5, looks
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1 and gaps[2] >= 0.2
    assert all(0.4 <= gap < 1.0 for gap in gaps[3:]), gaps


def test_bytes_a_writer_leaves_while_the_look_for_writers_runs_are_read_before_the_switch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rotated by rename: the follower drains the old file while a writer holds it. If that
    writer appends its last bytes and closes while the look walks /proc (a loaded machine
    makes the walk long), the look answers "no writer" about a file with unread bytes: they
    are read before the follower moves to the new file."""
    monkeypatch.setattr(follower, "ROTATION_GRACE_S", 0.0)
    log = tmp_path / "server.log"
    log.write_bytes(b"before the rotation\n")
    still_open = log.open("ab", buffering=0)
    real = follower.writer_open

    def look_during_which_the_writer_finishes(st: os.stat_result, proc: str | None = None) -> Any:
        if not still_open.closed:
            still_open.write(b"written late to the old file\n")
            still_open.close()
        return real(st, proc)

    monkeypatch.setattr(follower, "writer_open", look_during_which_the_writer_finishes)
    events = follower.follow(str(log), 0, "-")
    seen = until(events, "D")
    os.rename(log, tmp_path / "server.log.1")
    log.write_bytes(b"in the new file\n")
    seen += until(events, "R")
    seen += until(events, "D")
    assert data_of(seen) == b"before the rotation\nwritten late to the old file\nin the new file\n"
