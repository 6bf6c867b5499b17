"""Which attempts are being followed: one AttemptTail per attempt with a source that is not
closed; started with the app, synced after every change, stopped on close or detach."""

import logging
import threading
from collections.abc import Callable

from sqlalchemy import Engine
from sqlmodel import col, select

from app.actions import record
from app.db import session_scope
from app.ingest import AttemptTail
from app.models import Attempt, Status, TailState
from app.tailing.protocol import LogSource

log = logging.getLogger(__name__)
RESCAN_S = 10.0
MIN_RESCAN_GAP_S = 1.0
FOLLOWED = (Status.running, Status.ready, Status.measured, Status.crashed, Status.blocked)


class Tailer:
    def __init__(
        self,
        engine: Engine,
        *,
        stall_after_s: float,
        log_cap_bytes: int = 512 << 20,
        source_factory: Callable[[str], LogSource],
        on_commit: Callable[[int], None] = lambda _campaign_id: None,
    ) -> None:
        self.engine = engine
        self.stall_after_s = stall_after_s
        self.log_cap_bytes = log_cap_bytes
        self.source_factory = source_factory
        self.on_commit = on_commit
        self._tails: dict[int, tuple[str, AttemptTail]] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._wake_up = threading.Event()

    def start(self) -> None:
        """Resume every attempt that was being followed when the dashboard stopped, then
        look again now and then: attempts another instance created or stopped following
        (several dashboards on one PostgreSQL) are picked up too."""
        self.resync()
        self._rescanner = threading.Thread(target=self._rescan, name="tail-rescan", daemon=True)
        self._rescanner.start()

    def resync(self) -> None:
        with session_scope(self.engine) as session:
            ids = session.exec(
                select(Attempt.id).where(
                    col(Attempt.source).is_not(None), col(Attempt.status).in_(FOLLOWED)
                )
            ).all()
        with self._lock:
            # Those followed here too: another dashboard on the database may have closed them.
            followed_here = set(self._tails)
        for attempt_id in sorted({i for i in ids if i is not None} | followed_here):
            self.sync(attempt_id)

    def wake(self) -> None:
        """Look again soon: another dashboard on the database changed something."""
        self._wake_up.set()

    def _rescan(self) -> None:
        while not self._stopping.is_set():
            self._wake_up.wait(RESCAN_S)
            self._wake_up.clear()
            if self._stopping.is_set():
                return
            try:
                self.resync()
            except Exception:  # the database may be briefly away; try again later
                log.exception("rescanning the attempts to follow failed")
            # A busy campaign wakes this often (every ingest commit): one look a second.
            self._stopping.wait(MIN_RESCAN_GAP_S)

    def sync(self, attempt_id: int) -> None:
        """Follow the attempt if it should be followed, stop if it should not."""
        with session_scope(self.engine) as session:
            attempt = session.get(Attempt, attempt_id)
            source = attempt.source if attempt and Status(attempt.status) in FOLLOWED else None
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
            on_commit=self.on_commit,
        )
        with self._lock:
            if attempt_id in self._tails:
                return
            self._tails[attempt_id] = (source, tail)
        tail.start()

    def _mark_stopped(self, attempt_id: int) -> None:
        """Closed or detached: the page says the log is no longer followed, instead of the
        last state it had ('connected')."""
        with session_scope(self.engine) as session:
            tail = session.exec(select(TailState).where(TailState.attempt_id == attempt_id)).first()
            attempt = session.get(Attempt, attempt_id)
            if tail is None or attempt is None or tail.state == "stopped":
                return
            tail.state, tail.last_error, tail.host_key = "stopped", None, None
            tail.known_host_key = None
            session.add(tail)
            record(session, attempt.campaign_id, "attempt", attempt_id=attempt_id)
            campaign_id = attempt.campaign_id
        self.on_commit(campaign_id)

    def restart(self, attempt_id: int) -> None:
        with self._lock:
            old = self._tails.pop(attempt_id, None)
        if old:
            old[1].stop()
        self.sync(attempt_id)

    def stop_all(self) -> None:
        self._stopping.set()
        self._wake_up.set()
        with self._lock:
            tails = [tail for _, tail in self._tails.values()]
            self._tails.clear()
        for tail in tails:
            tail.stop_event.set()
        for tail in tails:
            tail.stop()
