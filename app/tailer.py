"""Which attempts are being followed: one AttemptTail per attempt with a source that is not
closed; started with the app, looked at again after every change (in the tailer's own
thread: no request waits for a tail to end), stopped on close or detach."""

import logging
import threading
import time
from collections.abc import Callable, Iterable

from sqlalchemy import Engine

from app import lifecycle, repo
from app.changes import record
from app.db import session_scope
from app.ingest import AttemptTail
from app.pauses import Pauses
from app.tailing.protocol import LogSource

log = logging.getLogger(__name__)
RESCAN_S = 10.0
MIN_RESCAN_GAP_S = 1.0


class Tailer:
    def __init__(
        self,
        engine: Engine,
        *,
        stall_after_s: float,
        log_cap_bytes: int = 512 << 20,
        source_factory: Callable[[str], LogSource],
        pauses: Pauses | None = None,
    ) -> None:
        self.engine = engine
        # The tails paused by a full disk: what the pages and the API lay over the stored state.
        self.pauses = pauses or Pauses()
        self.stall_after_s = stall_after_s
        self.log_cap_bytes = log_cap_bytes
        self.source_factory = source_factory
        self._tails: dict[int, tuple[str, AttemptTail]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._wake_up = threading.Event()
        # Asked for by commits and requests, done by the worker thread (guarded by _lock).
        self._due: set[int] = set()
        self._restarts: set[int] = set()
        self._rescan_asked = False
        self._worker: threading.Thread | None = None

    def start(self) -> None:
        """Resume every attempt that was being followed when the dashboard stopped, then
        look again now and then: attempts another instance created or stopped following
        (several dashboards on one PostgreSQL) are picked up too."""
        self.resync()
        self._worker = threading.Thread(target=self._work, name="tail-sync", daemon=True)
        self._worker.start()

    def resync(self) -> None:
        with session_scope(self.engine) as session:
            ids = repo.followed_attempt_ids(session, statuses=lifecycle.FOLLOWED)
        with self._lock:
            # Those followed here too: another dashboard on the database may have closed them.
            followed_here = set(self._tails)
        for attempt_id in sorted(set(ids) | followed_here):
            self.sync(attempt_id)

    def look_at(self, attempt_ids: Iterable[int]) -> None:
        """Soon, follow or stop these attempts as they now are (never waits: called after
        commit, on the committing thread)."""
        with self._lock:
            self._due.update(attempt_ids)
        self._wake_up.set()

    def restart(self, attempt_id: int) -> None:
        """Soon, follow the attempt afresh (a host key was trusted); never waits."""
        with self._lock:
            self._restarts.add(attempt_id)
        self._wake_up.set()

    def wake(self) -> None:
        """Look at every attempt again soon: another dashboard on the database changed
        something."""
        with self._lock:
            self._rescan_asked = True
        self._wake_up.set()

    def _work(self) -> None:
        last_rescan = time.monotonic()
        while not self._stopping.is_set():
            with self._lock:
                rescan_asked = self._rescan_asked
            # A busy campaign elsewhere asks for a rescan on every commit: one a second.
            since = time.monotonic() - last_rescan
            wait = max(0.0, (MIN_RESCAN_GAP_S if rescan_asked else RESCAN_S) - since)
            self._wake_up.wait(wait)
            self._wake_up.clear()
            if self._stopping.is_set():
                return
            with self._lock:
                restarts, self._restarts = self._restarts, set()
                due, self._due = self._due - restarts, set()
                since = time.monotonic() - last_rescan
                rescan = since >= RESCAN_S or (self._rescan_asked and since >= MIN_RESCAN_GAP_S)
                if rescan:
                    self._rescan_asked = False
            try:
                for attempt_id in sorted(restarts):
                    self._restart_now(attempt_id)
                for attempt_id in sorted(due):
                    self.sync(attempt_id)
                if rescan:
                    last_rescan = time.monotonic()
                    self.resync()
            except Exception:  # the database may be briefly away; try again later
                log.exception("looking at the attempts to follow failed")
                with self._lock:
                    self._due |= due
                    self._restarts |= restarts

    def sync(self, attempt_id: int) -> None:
        """Follow the attempt if it should be followed, stop if it should not. Waits for a
        tail to end: the tailer's own threads only."""
        with session_scope(self.engine) as session:
            attempt = repo.get_attempt(session, attempt_id=attempt_id)
            source = attempt.source if attempt and lifecycle.is_followed(attempt) else None
        with self._lock:
            current = self._tails.get(attempt_id)
            if current and current[0] == source and current[1].thread.is_alive():
                return
            old = self._tails.pop(attempt_id, None)
        if old:
            # Never two readers of one attempt: the old one ends before a new one starts.
            old[1].stop()
        if source is None:
            if old:
                self._mark_stopped(attempt_id)
            return
        tail = AttemptTail(
            self.engine,
            attempt_id,
            self.source_factory(source),
            stall_after_s=self.stall_after_s,
            log_cap_bytes=self.log_cap_bytes,
            pauses=self.pauses,
        )
        with self._lock:
            if attempt_id in self._tails or self._stopping.is_set():
                return
            self._tails[attempt_id] = (source, tail)
        tail.start()

    def _mark_stopped(self, attempt_id: int) -> None:
        """Closed or detached: the page says the log is no longer followed, instead of the
        last state it had ('connected')."""
        with session_scope(self.engine) as session:
            tail = repo.tail_state(session, attempt_id=attempt_id)
            attempt = repo.get_attempt(session, attempt_id=attempt_id)
            if tail is None or attempt is None or tail.state == "stopped":
                return
            tail.state, tail.last_error, tail.host_key = "stopped", None, None
            tail.known_host_key = None
            session.add(tail)
            record(session, attempt.campaign_id, "attempt", attempt_id=attempt_id)

    def _restart_now(self, attempt_id: int) -> None:
        with self._lock:
            old = self._tails.pop(attempt_id, None)
        if old:
            old[1].stop()
        self.sync(attempt_id)

    def stop_all(self) -> None:
        self._stopping.set()
        self._wake_up.set()
        if self._worker is not None:
            self._worker.join(15)  # it may be waiting for a tail to end
        with self._lock:
            tails = [tail for _, tail in self._tails.values()]
            self._tails.clear()
        for tail in tails:
            tail.stop_event.set()
        for tail in tails:
            tail.stop()
