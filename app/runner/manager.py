"""The app's runner: one driver thread per unfinished run, started when a launch is asked
for and, at the dashboard's start, for every run it left unfinished (found again).

The app's after-commit hook only calls `look()` and `changed()` (it must not query): a
dispatcher thread then reads which runs are unfinished, starts a driver for each new one
whose lease it can claim (app/runner/lease.py: dashboards on one database never drive a
run both) and renews the leases of its own; `changed()` wakes the drivers of the attempts
a commit changed (what their log said, a stop asked for), and a run's end the others (a
queue that moved)."""

import logging
import threading

from sqlalchemy import Engine

from app.config import Settings
from app.runner.driver import RunDriver
from app.runner.hosts import HostLink, HostPrograms
from app.runner.lease import instance_id
from app.runner.records import Records
from app.tailing.factory import LogSources

log = logging.getLogger(__name__)
# Runs another dashboard on the same database asked for, or let go; and the renewal of
# this one's leases, well inside their LEASE_S.
RESCAN_S = 5.0


class RunManager:
    def __init__(self, engine: Engine, settings: Settings, sources: LogSources) -> None:
        self.settings = settings
        self.sources = sources
        self.instance = instance_id()
        self.records = Records(engine, self.instance)
        # Shared by the runs: a host's next run finds its program already started.
        self.programs = HostPrograms(sources)
        self._drivers: dict[int, RunDriver] = {}
        self._lock = threading.Lock()
        # The drivers by attempt, for the commit hook: its lock is never held across a
        # query, as `_lock` is while a run is claimed.
        self._by_attempt: dict[int, RunDriver] = {}
        self._by_attempt_lock = threading.Lock()
        self._shutdown = threading.Event()
        self._look = threading.Event()
        self._dispatcher = threading.Thread(target=self._dispatch, name="runs", daemon=True)

    def start(self) -> None:
        """Follow every run the last dashboard left unfinished to its end."""
        self._sync()
        self._dispatcher.start()

    def look(self) -> None:
        self._look.set()

    def changed(self, attempt_ids: frozenset[int]) -> None:
        """These attempts changed (after a commit, on the committing thread): their runs'
        drivers wake. Never waits, never queries."""
        with self._by_attempt_lock:
            drivers = [self._by_attempt[i] for i in attempt_ids if i in self._by_attempt]
        for driver in drivers:
            driver.changed()

    def _dispatch(self) -> None:
        while not self._shutdown.is_set():
            self._look.wait(RESCAN_S)
            self._look.clear()
            if self._shutdown.is_set():
                return
            try:
                self._sync()
            except Exception:  # the database may be briefly away: look again later
                log.exception("looking at the runs failed")

    def _sync(self) -> None:
        self._renew()
        for run_id in self.records.unfinished():
            self._ensure(run_id)

    def _renew(self) -> None:
        with self._lock:
            driving = {i: d for i, d in self._drivers.items() if d.thread.is_alive()}
        held = self.records.renew(list(driving))
        for run_id, driver in driving.items():
            if run_id not in held:
                # Taken over while this dashboard could not renew (the database away
                # longer than the lease): its driver leaves the run to the new holder.
                log.warning("run %s: its lease was taken by another dashboard", run_id)
                driver.lease_lost.set()
                driver.wake.set()

    def _ensure(self, run_id: int) -> None:
        with self._lock:
            driver = self._drivers.get(run_id)
            if driver is not None and driver.thread.is_alive():
                return  # its attempt's changes wake it (`changed`), or its own fallback
            if self._shutdown.is_set() or not self.records.claim(run_id):
                return  # another dashboard drives it
            snapshot = self.records.load(run_id)
            if snapshot is None:
                return
            driver = RunDriver(
                run_id,
                snapshot.run.attempt_id,
                self.records,
                HostLink(self.sources, snapshot.run.host, self.programs),
                self._shutdown,
                on_exit=self._ended,
                runs_root=self.settings.runs_root,
                gpu_release_s=self.settings.gpu_release_seconds,
            )
            self._drivers[run_id] = driver
        with self._by_attempt_lock:
            self._by_attempt[snapshot.run.attempt_id] = driver
        driver.start()

    def _ended(self, run_id: int) -> None:
        # Left unfinished (the dashboard stops): another dashboard may take it at once.
        try:
            self.records.release([run_id])
        except Exception:  # the database away: the lease expires instead
            log.exception("releasing the lease of run %s failed", run_id)
        # A run queued behind this one on its host looks again now.
        with self._lock:
            ended = self._drivers.pop(run_id, None)
            waiting = list(self._drivers.values())
        with self._by_attempt_lock:
            if ended is not None and self._by_attempt.get(ended.attempt_id) is ended:
                del self._by_attempt[ended.attempt_id]
        for driver in waiting:
            driver.wake.set()

    def stop_all(self, timeout_s: float = 5.0) -> None:
        """The dashboard stops; the servers do not: the next start, or another dashboard on
        the database, picks their runs up (each driver lets its lease go as it ends)."""
        self._shutdown.set()
        self._look.set()
        with self._lock:
            drivers = list(self._drivers.values())
        for driver in drivers:
            driver.wake.set()
        for driver in drivers:
            driver.thread.join(timeout_s)
        if self._dispatcher.is_alive():
            self._dispatcher.join(timeout_s)
        self.programs.close_all()
