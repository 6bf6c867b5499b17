"""Small builders shared by the tests."""

import asyncio
import gzip
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import httpx

CORPUS_CASES = Path(__file__).parent / "corpus" / "cases"
# A corpus log over this size is kept gzipped (`ID.log.gz`): the working tree then stays small
# enough to travel to a GPU machine whole.
LARGEST_PLAIN_LOG = 16 * 1024


def corpus_log(case_id: str) -> bytes:
    """A corpus case's log as it was labelled, whichever way it is stored."""
    plain = CORPUS_CASES / f"{case_id}.log"
    if plain.is_file():
        return plain.read_bytes()
    return gzip.decompress((CORPUS_CASES / f"{case_id}.log.gz").read_bytes())


def corpus_case_ids() -> list[str]:
    """Every case that has a log, in file-name order."""
    names = (path.name for path in CORPUS_CASES.iterdir())
    return sorted(name.split(".")[0] for name in names if name.endswith((".log", ".log.gz")))


def make_campaign(api: httpx.Client, **fields: Any) -> dict[str, Any]:
    body = {"name": "EAGLE-3 on 8x RTX PRO 6000", "baseline": 82.0, **fields}
    response = api.post("/api/campaigns", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def make_attempt(api: httpx.Client, campaign_id: int, **fields: Any) -> dict[str, Any]:
    body = {"title": "Torch symmetric memory", **fields}
    response = api.post(f"/api/campaigns/{campaign_id}/attempts", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def name_baseline_configuration(api: httpx.Client, attempt: dict[str, Any]) -> dict[str, Any]:
    """The owner says the campaign's typed baseline was measured with this attempt's flags."""
    response = api.patch(f"/api/attempts/{attempt['id']}", json={"baseline_configuration": True})
    assert response.status_code == 200, response.text
    return attempt


def patch(api: httpx.Client, attempt_id: int, **fields: Any) -> httpx.Response:
    return api.patch(f"/api/attempts/{attempt_id}", json=fields)


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([0-9a-f]+)"', html)
    assert match, "page has no CSRF field"
    return match.group(1)


T = TypeVar("T")


def run_apart(coroutine: Coroutine[Any, Any, T], *, timeout: float = 60.0) -> T:
    """Run a coroutine to its end on an event loop of its own thread: a browser test's
    Playwright keeps its loop running in this worker's main thread for the session, and
    asyncio.run refuses to start beside it."""
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(asyncio.run(coroutine))
        except BaseException as exc:  # handed to the test's thread
            failure.append(exc)

    worker = threading.Thread(target=run, name="run-apart")
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), f"the coroutine still ran after {timeout} s"
    if failure:
        raise failure[0]
    return outcome[0]


def wait_for(probe: Callable[[], T | None], *, timeout: float = 30.0, what: str = "") -> T:
    """Poll until `probe` returns something truthy; a bounded loop that fails loudly."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what or probe}: last {last!r}")


def wait_for_value(
    probe: Callable[[], T], expected: T, *, timeout: float = 30.0, what: str
) -> None:
    """Poll until `probe` returns `expected`; on timeout, the failure shows what it returned."""
    deadline = time.monotonic() + timeout
    last = probe()
    while last != expected and time.monotonic() < deadline:
        time.sleep(0.05)
        last = probe()
    assert last == expected, f"timed out after {timeout} s waiting for {what}"


def wait_for_readers(app: Any, count: int, *, what: str) -> None:
    """Until `count` live streams have joined their broadcasters: a reader that joins after
    a change catches it up from the database, in a batch of its own."""
    hub = app.state.live
    wait_for(
        lambda: sum(len(b.subscribers) for b in list(hub.broadcasters.values())) >= count,
        what=what,
    )


def attempt_of(api: httpx.Client, attempt_id: int) -> dict[str, Any]:
    response = api.get(f"/api/attempts/{attempt_id}")
    assert response.status_code == 200, response.text
    return response.json()


def stored_log(api: httpx.Client, attempt_id: int) -> bytes:
    response = api.get(f"/api/attempts/{attempt_id}/log")
    assert response.status_code == 200
    return response.content


def tail_of(api: httpx.Client, attempt_id: int) -> dict[str, Any]:
    """The attempt's tail state; empty until the tailer has started on it."""
    return attempt_of(api, attempt_id)["tail"] or {}


def tail_state(api: httpx.Client, attempt_id: int) -> str | None:
    return tail_of(api, attempt_id).get("state")


def copytruncate_and_regrow(log: Path, regrown: bytes) -> None:
    """logrotate's copytruncate, then the server writes at once: one look of the follower
    may find the file as long as before, or longer, with other bytes."""
    shutil.copyfile(log, log.with_suffix(".log.1"))
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        os.truncate(log, 0)
        os.write(fd, regrown)
    finally:
        os.close(fd)


def quiet_lines(tag: str, count: int) -> bytes:
    """`count` lines, of one length whatever the tag (up to 12 characters)."""
    return b"".join(b"[%-12s] line %04d of a quiet log\n" % (tag.encode(), n) for n in range(count))


# Each write comes as its length on a line of its own, then its bytes: appended in one write.
_WRITER_SCRIPT = """
import sys
log = open(sys.argv[1], "ab")
print("open", flush=True)
for size in sys.stdin.buffer:
    log.write(sys.stdin.buffer.read(int(size)))
    log.flush()
    print("written", flush=True)
"""


class LogWriter:
    """A process of the test's own holding a log open for writing, as a server does, until
    it exits: each `write` is lines it appends at once (a reader never sees part of them);
    `exit` ends it."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WRITER_SCRIPT, str(path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip
        assert self._said() == b"open\n"

    def _said(self) -> bytes:
        assert self.process.stdout is not None
        return self.process.stdout.readline()

    def write(self, lines: bytes) -> None:
        assert self.process.stdin is not None and lines.endswith(b"\n")
        self.process.stdin.write(b"%d\n" % len(lines) + lines)
        self.process.stdin.flush()
        assert self._said() == b"written\n"

    def exit(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(10)

    def __enter__(self) -> "LogWriter":
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def seed_long_campaign(engine: Any, attempts: int) -> dict[str, Any]:
    """A campaign of `attempts` written straight into the dashboard's database (a thousand
    through the API would take minutes): most eliminated, some crashed with one of 40 root
    causes, three runs per measured attempt, two adoptions. Returns ids and what was made."""
    from app.db import session_scope
    from app.models import Attempt, BaselineChange, Campaign, Measurement, Status

    made: dict[str, Any] = {"ids": [], "status": {}, "cause": {}, "measured": set()}
    with session_scope(engine) as session:
        campaign = Campaign(name="EAGLE-3 on 8x RTX PRO 6000", baseline=82.0, target=120.0)
        session.add(campaign)
        session.flush()
        session.add(BaselineChange(campaign_id=campaign.id, value=82.0))
        for index in range(attempts):
            slot = index % 10
            status = (
                Status.eliminated if slot < 6 else Status.crashed if slot == 6
                else Status.measured if slot in (7, 8) else Status.running
            )  # fmt: skip
            if index in (attempts // 3, attempts // 2):
                status = Status.adopted
            crashed = status in (Status.crashed, Status.eliminated) and index % 2 == 0
            cause = f"KeyError: {index % 40}" if crashed else None
            attempt = Attempt(
                campaign_id=campaign.id, title=f"Try {index}: NCCL tree, chunk {index * 64}",
                hypothesis=f"hypothesis {index}", flags=f"--chunk {index}", status=status,
                verdict=f"dead end {index}" if status == Status.eliminated else None,
                diagnosis={"root_cause": cause, "error_class": "other", "crashed": True}
                if cause else None,
                fingerprint=f"print-{index % 40}" if cause else None,
            )  # fmt: skip
            session.add(attempt)
            session.flush()
            assert attempt.id is not None
            made["ids"].append(attempt.id)
            made["status"][attempt.id] = status.value
            if cause:
                made["cause"][attempt.id] = cause
            if status in (Status.measured, Status.adopted, Status.eliminated) and not crashed:
                made["measured"].add(attempt.id)
                for run in range(3):
                    value = 80.0 + index % 23 + run * 0.3 + (status == Status.adopted) * 20
                    session.add(Measurement(attempt_id=attempt.id, value=value))
        made["campaign_id"] = campaign.id
    return made


# How long a browser test waits for what a person would see (a page, a live update). Under
# the 15 s heartbeat on purpose: an update that came only when a heartbeat woke the stream
# was lost on its way, and must fail. (Under load a live update took 0.1-0.8 s here.)
UI_WAIT_MS = 10_000


def stored_attempt(session: Any, *, campaign: str, title: str) -> tuple[int, int]:
    """A campaign of one attempt written straight into the database: its ids, flushed."""
    from app.models import Attempt, Campaign

    made = Campaign(name=campaign)
    session.add(made)
    session.flush()
    assert made.id is not None
    attempt = Attempt(campaign_id=made.id, title=title)
    session.add(attempt)
    session.flush()
    assert attempt.id is not None
    return made.id, attempt.id
