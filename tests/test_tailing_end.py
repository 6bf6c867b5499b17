"""How a log ends decides `crashed` where its lines cannot: after an error, no process left
writing the log is a crash; one still writing it is a server still up. Against the real sshd,
with a writer process of the test's own that holds the log open, then exits."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import Settings
from app.diagnosis import diagnose_bytes
from app.ingest import WRITER_GONE, WRITER_LEFT, crashed_by_the_end
from app.tailing import follower
from app.tailing.events import Writer
from tests.conftest import LiveServer, running
from tests.helpers import LogWriter, attempt_of, make_attempt, make_campaign, stored_log, wait_for
from tests.sshd import Sshd
from tests.test_tailing_file import counted_sources

STARTING = b"[2026-02-27 13:21:27 TP0] Load weight begin. avail mem=78.21 GB\n"
# A warning-shaped failure: before a hang it is no crash, before the end of the process it is.
WARN = b"gpu-box:2841:2990 [0] NCCL WARN Connect to 10.0.0.2<45678> failed : Connection refused\n"
READY = b"[2026-02-27 13:22:00] The server is fired up and ready to roll!\n"
# An error-severity line, then the process went on logging: the log does not tell (None).
WENT_ON = b"ERROR 01-31 02:38:15 [worker.py:597] failed to reach the metrics endpoint\n" + b"".join(
    b"INFO 01-31 02:38:%02d [engine.py:88] step %d done\n" % (16 + n, n) for n in range(8)
)


def diagnosed(api: httpx.Client, attempt_id: int, reason: str) -> dict[str, Any]:
    return wait_for(
        lambda: (
            (a := attempt_of(api, attempt_id))["diagnosis"]
            and a["diagnosis"].get("crashed_reason") == reason
            and a
        ),
        timeout=60,
        what=f"crashed_reason {reason!r}",
    )


def follow_to_the_end(api: httpx.Client, source: str, log: Path, failure: bytes = WARN) -> int:
    campaign = make_campaign(api)
    with LogWriter(log) as server:
        server.write(STARTING)
        attempt = make_attempt(api, campaign["id"], source=source)
        # One burst: seen alone, the error line would read as a crash, and a crash the engine
        # declared stands until it is seen serving on (test_tailing_file's withdrawal).
        server.write(failure)
        wait_for(lambda: stored_log(api, attempt["id"]) == STARTING + failure, what="the error")
        up = diagnosed(api, attempt["id"], WRITER_LEFT)
        assert up["status"] == "running" and up["diagnosis"]["crashed"] is False
        assert up["diagnosis"]["root_cause"] == failure.decode().splitlines()[0]
        server.exit()
        ended = diagnosed(api, attempt["id"], WRITER_GONE)
    assert ended["diagnosis"]["crashed"] is True
    assert wait_for(lambda: attempt_of(api, attempt["id"])["status"] == "crashed", what="crashed")
    return int(attempt["id"])


def test_over_ssh_a_warning_then_the_writer_gone_is_a_crash(
    ssh_api: httpx.Client, sshd: Sshd, tmp_path: Path
) -> None:
    follow_to_the_end(
        ssh_api, f"ssh://{sshd.alias}{tmp_path / 'server.log'}", tmp_path / "server.log"
    )


@pytest.fixture
def quick_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    """file:// runs the follower in this process: its looks come sooner."""
    monkeypatch.setattr(follower, "WRITER_QUIET_S", 0.5)
    monkeypatch.setattr(follower, "WRITER_LOOK_EVERY_S", 0.2)
    monkeypatch.setattr(follower, "WRITER_LOOK_MAX_S", 0.8)


@pytest.mark.parametrize("failure", [WARN, WENT_ON], ids=["warning", "error-then-more"])
def test_a_local_file_ends_the_same_way(
    quick_looks: None, api: httpx.Client, browser: httpx.Client, tmp_path: Path, failure: bytes
) -> None:
    log = tmp_path / "server.log"
    attempt_id = follow_to_the_end(api, f"file://{log}", log, failure)
    page = browser.get(f"/attempts/{attempt_id}").text
    assert f'crashed <span class="crashed-reason">({WRITER_GONE})</span>' in page


def test_a_healthy_log_whose_writer_is_gone_is_no_crash(
    quick_looks: None, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing failed: a server stopped on purpose ends its log too."""
    log = tmp_path / "server.log"
    with running(settings) as (server, api), LogWriter(log) as writer:
        sources = counted_sources(server, monkeypatch)
        writer.write(STARTING)
        writer.write(READY)
        campaign = make_campaign(api)
        attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
        wait_for(lambda: sources and Writer(True) in sources[0].handled, what="a writer seen")
        assert attempt_of(api, attempt["id"])["status"] == "ready"
        writer.exit()
        wait_for(lambda: Writer(False) in sources[0].handled, what="the writer gone, handled")
        stopped = attempt_of(api, attempt["id"])
    assert stopped["status"] == "ready" and stopped["diagnosis"]["crashed"] is False
    assert stopped["diagnosis"].get("crashed_reason") not in (WRITER_GONE, WRITER_LEFT)


@pytest.fixture
def no_proc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """A host without /proc (not Linux): whether a writer is left cannot be told."""
    monkeypatch.setattr(follower, "PROC", str(tmp_path / "no-proc"))
    yield


@pytest.mark.parametrize(
    ("failure", "said", "shown"),
    [
        (WARN, False, "no crash, stalled on a failure"),
        (WENT_ON, None, "crashed or not, the log does not tell"),
    ],
    ids=["warning", "error-then-more"],
)
def test_where_nothing_can_tell_the_log_s_own_word_stays(
    quick_looks: None, no_proc: None, server: LiveServer, api: httpx.Client,
    browser: httpx.Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    failure: bytes, said: bool | None, shown: str,
) -> None:  # fmt: skip
    log = tmp_path / "server.log"
    log.write_bytes(STARTING + failure)  # written and closed: gone, but nobody can tell
    sources = counted_sources(server, monkeypatch)
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: sources and sources[0].count(Writer) >= 1, what="the writer look")
    handled = list(sources[0].handled)
    assert Writer(None) in handled and Writer(False) not in handled
    body = attempt_of(api, attempt["id"])
    assert body["status"] == "running" and body["diagnosis"]["crashed"] is said
    reason = body["diagnosis"]["crashed_reason"]
    assert reason and reason not in (WRITER_GONE, WRITER_LEFT)  # the engine's own
    page = browser.get(f"/attempts/{attempt['id']}").text
    assert f'{shown} <span class="crashed-reason">({reason})</span>' in page


FATAL = b"[2026-02-27 13:21:30 TP0] ERROR: engine core failed to start: CUDA driver too old\n"


@pytest.mark.parametrize(
    ("log", "writer_open", "decided"),
    [
        (STARTING + WARN, False, (True, WRITER_GONE)),
        (STARTING + WARN, True, (False, WRITER_LEFT)),
        (STARTING + WARN, None, None),  # nothing can tell: the log's own word
        (WENT_ON, False, (True, WRITER_GONE)),  # the engine's None
        (WENT_ON, True, (False, WRITER_LEFT)),
        (WENT_ON, None, None),  # null stays, with the engine's reason
        (STARTING + FATAL, True, None),  # the log says crashed: a writer left does not undo it
        (STARTING + READY, False, None),  # no failure: a server stopped on purpose
    ],
    ids=[
        "warning-writer-gone",
        "warning-writer-left",
        "warning-unknown",
        "unknown-writer-gone",
        "unknown-writer-left",
        "unknown-unknown",
        "fatal",
        "healthy",
    ],
)
def test_the_writer_decides_only_where_the_log_cannot(
    log: bytes, writer_open: bool | None, decided: tuple[bool, str] | None
) -> None:
    assert crashed_by_the_end(diagnose_bytes(log), writer_open) == decided
