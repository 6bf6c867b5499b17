"""The app's runner: one driver thread per unfinished run, started when a launch is asked
for and, at the dashboard's start, for every run it left unfinished (found again).

The app's after-commit hook only calls `look()` (it must not query): a dispatcher thread
then reads which runs are unfinished, starts a driver for each new one and wakes the rest
(a stop asked for, a queue that moved)."""

import logging
import threading

from sqlalchemy import Engine

from app.config import Settings
from app.runner.driver import RunDriver
from app.runner.hosts import HostLink, HostPrograms
from app.runner.records import Records
from app.tailing.factory import LogSources

log = logging.getLogger(__name__)
RESCAN_S = 5.0  # runs another dashboard on the same database asked for


class RunManager:
    def __init__(self, engine: Engine, settings: Settings, sources: LogSources) -> None:
        self.settings = settings
        self.sources = sources
        self.records = Records(engine)
        # Shared by the runs: a host's next run finds its program already started.
        self.programs = HostPrograms(sources)
        self._drivers: dict[int, RunDriver] = {}
        self._lock = threading.Lock()
        self._shutdown = threading.Event()
        self._look = threading.Event()
        self._dispatcher = threading.Thread(target=self._dispatch, name="runs", daemon=True)

    def start(self) -> None:
        """Follow every run the last dashboard left unfinished to its end."""
        self._sync()
        self._dispatcher.start()

    def look(self) -> None:
        self._look.set()

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
        for run_id in self.records.unfinished():
            self._ensure(run_id)

    def _ensure(self, run_id: int) -> None:
        with self._lock:
            driver = self._drivers.get(run_id)
            if driver is not None and driver.thread.is_alive():
                driver.wake.set()
                return
            snapshot = self.records.load(run_id)
            if snapshot is None or self._shutdown.is_set():
                return
            driver = RunDriver(
                run_id,
                self.records,
                HostLink(self.sources, snapshot.run.host, self.programs),
                self._shutdown,
                on_exit=self._ended,
                runs_root=self.settings.runs_root,
                gpu_release_s=self.settings.gpu_release_seconds,
            )
            self._drivers[run_id] = driver
        driver.start()

    def _ended(self, run_id: int) -> None:
        # A run queued behind this one on its host looks again now.
        with self._lock:
            self._drivers.pop(run_id, None)
            waiting = list(self._drivers.values())
        for driver in waiting:
            driver.wake.set()

    def stop_all(self, timeout_s: float = 5.0) -> None:
        """The dashboard stops; the servers do not: the next start picks their runs up."""
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
