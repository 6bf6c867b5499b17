"""What each phase of a run's driver works through (RunContext): the run's row read again when
its attempt changes, the host program asked with an unreachable host retried, and the checks
for a shutdown, a lost lease or a stop asked for; the exceptions that end a phase."""

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from app.models import Run
from app.runner.answers import Job, StatusAnswer
from app.runner.hosts import HostLink
from app.runner.records import LeaseLost, Records, Snapshot
from app.runner.wake import Wake
from app.tailing.sources import HostUnavailable

T = TypeVar("T")

# The database is read again when the run's attempt changes (what the tail of its log found,
# a stop asked for: the app's commit hook wakes the driver), at most every LOOK_GAP_S while
# a busy log commits again and again, and every CHANGE_FALLBACK_S all the same: a change
# made through another dashboard on the database does not pass through this one's hook.
CHANGE_FALLBACK_S = 2.0
LOOK_GAP_S = 0.05
# A benchmark's end: the host program waits for it and answers at once (its `wait`); this
# long at most, so that a stop asked for meanwhile is heard.
BENCH_WAIT_S = 0.5
CATCH_UP_S = 5.0  # for the tail to read the last lines of a crashed server's log
GIVE_UP_S = 600.0  # a host unreachable this long: the run fails as infrastructure


class Shutdown(Exception):
    """The dashboard stops: leave the run as it is, to be picked up at the next start."""


class Stopped(Exception):
    """The owner asked to stop the run."""


class HostRebooted(Exception):
    """The host's boot id is not the one the run was launched under."""


class Finished(Exception):
    """The run reached its end inside a phase (recorded there)."""


class RunContext:
    """One run's records, host link and wake-ups, shared by its driver's phases."""

    def __init__(
        self,
        run_id: int,
        records: Records,
        host: HostLink,
        shutdown: threading.Event,
        gpu_release_s: float,
    ) -> None:
        self.run_id = run_id
        self.records = records
        self.host = host
        self.shutdown = shutdown
        self.gpu_release_s = gpu_release_s  # how long a stop waits for GPU memory back
        self.wake = Wake()
        self._seen = 0  # the wake count as of the driver's last read of the database
        self._read_at = -LOOK_GAP_S
        self.lease_lost = threading.Event()  # set by the manager: another dashboard drives it

    def pause(self, seconds: float) -> bool:
        """Until something concerning the run happened since the driver last read it, or
        `seconds`; whether something did."""
        count = self.wake.wait(self._seen, seconds)
        woken, self._seen = count != self._seen, count
        self.check_shutdown()
        return woken

    def pause_for_change(self) -> bool:
        """Until something concerning the run happened, or CHANGE_FALLBACK_S (a change made
        through another dashboard); whether something did."""
        return self.pause(CHANGE_FALLBACK_S)

    def read_due(self) -> bool:
        """Whether the run is to be read again now: something concerning it happened since
        the last read, or CHANGE_FALLBACK_S passed since."""
        woken = self.wake.count() != self._seen
        return woken or time.monotonic() >= self._read_at + CHANGE_FALLBACK_S

    def check_shutdown(self) -> None:
        if self.shutdown.is_set():
            raise Shutdown
        if self.lease_lost.is_set():
            raise LeaseLost(self.run_id)

    def snapshot(self) -> Snapshot:
        """The run as the database has it now."""
        self._seen = self.wake.count()  # before the read: a change after it wakes the next wait
        snapshot = self.records.load(self.run_id)
        self._read_at = time.monotonic()
        if snapshot is None:  # the attempt was deleted: nothing to record any more
            raise Shutdown
        return snapshot

    def changed_snapshot(self, timeout_s: float) -> Snapshot | None:
        """The run read again once something concerning it happened, or CHANGE_FALLBACK_S
        after the last read, at most once every LOOK_GAP_S; None when `timeout_s` passed
        first. One read where a 50 ms poll made twenty a second, most of them idle."""
        now = time.monotonic()
        fallback = self._read_at + CHANGE_FALLBACK_S
        woken = self.pause(min(timeout_s, fallback - now))
        now = time.monotonic()
        if not woken and now < fallback:
            return None
        gap = self._read_at + LOOK_GAP_S - now
        if gap > 0 and self.shutdown.wait(gap):  # a busy log: one read per LOOK_GAP_S
            raise Shutdown
        return self.snapshot()

    def load_run(self) -> Run:
        return self.snapshot().run

    def check_stop(self) -> None:
        self.check_shutdown()
        if self.load_run().stop_requested:
            raise Stopped

    def ask(self, call: Callable[[], T], *, stoppable: bool = False) -> T:
        """One call of the host program (`call`, a command of self.host); an unreachable
        host is retried (the run waits, saying why) until GIVE_UP_S, then the run fails as
        infrastructure; at once where waiting cannot help (no host has that name).
        `stoppable`: nothing is launched yet, so a stop asked for meanwhile ends the wait."""
        first_failure = None
        delay = 0.5
        while True:
            try:
                answer = call()
                if first_failure is not None:
                    self.records.update(self.run_id, reason=None)
                return answer
            except HostUnavailable as error:
                now = time.monotonic()
                first_failure = first_failure or now
                if error.lasting or now - first_failure > GIVE_UP_S:
                    raise
                self.records.update(
                    self.run_id,
                    reason=f"{self.host.host}: {error.state}: {error}; retrying",
                )
                if stoppable:
                    self.pause(delay)  # a stop asked for wakes the driver
                    self.check_stop()
                elif self.shutdown.wait(delay):
                    raise Shutdown from None
                delay = min(delay * 2, 10.0)

    def status(
        self, run: Run, *names: str, output: bool = False, health: bool = False,
        wait_for: str | None = None,
    ) -> StatusAnswer:  # fmt: skip
        """The jobs' state now or, `wait_for` a job's name, once it ended (or BENCH_WAIT_S)."""
        run_dir, asked = run_dir_of(run), list(names) or ["server"]
        health_url = run.health_url if health else None
        if wait_for is None:
            ask = partial(self.host.status, run_dir, asked)
        else:
            ask = partial(self.host.wait, run_dir, wait_for, BENCH_WAIT_S, asked)
        looked = self.ask(partial(ask, output=output, health_url=health_url))
        server = looked["jobs"].get("server")
        if server and server.get("rebooted"):
            raise HostRebooted
        return looked

    def caught_up(self, job: Job | None) -> dict[str, Any]:
        """The diagnosis once the tail has read the log to its end (bounded): each commit
        of the tail wakes the driver."""
        size = (job.get("log_size") if job else None) or 0
        deadline = time.monotonic() + CATCH_UP_S
        snapshot = self.snapshot()
        while snapshot.tail_offset < size:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            snapshot = self.changed_snapshot(left) or self.snapshot()
        return snapshot.diagnosis


def run_dir_of(run: Run) -> str:
    """The run's directory on the host, known once it is launched."""
    assert run.run_dir is not None, run
    return run.run_dir
