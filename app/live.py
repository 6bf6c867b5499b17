"""The event bus: who is listening to which campaign, and waking them after a commit.

Publishers (the API, the forms, the tailer) write an Event row in their transaction and,
once it is committed, call `publish(campaign_id)`. The bus carries no data: a listener
wakes up and reads the events after its last id from the database, so a late or resumed
listener is never out of date, and a slow one costs a flag, not a growing queue.
On PostgreSQL, a NOTIFY sent in the same transaction wakes the other instances too.
"""

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import text

from app.db import libpq_dsn

log = logging.getLogger(__name__)


class Listener:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._woken = asyncio.Event()

    def wake(self) -> None:
        # Publishers run in worker threads; the flag lives on the server's event loop.
        self._loop.call_soon_threadsafe(self._woken.set)

    async def wait(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._woken.wait(), timeout)
        except TimeoutError:
            return False
        self._woken.clear()
        return True


class Bus:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[int, set[Listener]] = {}

    def publish(self, campaign_id: int) -> None:
        """Never blocks: each listener only gets its wake-up flag set."""
        with self._lock:
            listeners = list(self._listeners.get(campaign_id, ()))
        for listener in listeners:
            with contextlib.suppress(RuntimeError):  # its loop is closed: server stopping
                listener.wake()

    def publish_all(self) -> None:
        """Wake every listener of every campaign (the owner's credentials changed)."""
        with self._lock:
            campaign_ids = list(self._listeners)
        for campaign_id in campaign_ids:
            self.publish(campaign_id)

    @contextmanager
    def listen(self, campaign_id: int) -> Iterator[Listener]:
        listener = Listener(asyncio.get_running_loop())
        with self._lock:
            self._listeners.setdefault(campaign_id, set()).add(listener)
        try:
            yield listener
        finally:
            with self._lock:
                self._listeners.get(campaign_id, set()).discard(listener)

    def listener_count(self, campaign_id: int) -> int:
        with self._lock:
            return len(self._listeners.get(campaign_id, ()))


CHANNEL = "campaign_dash_events"


def notify_instances(session: Any, campaign_id: int) -> None:
    """On PostgreSQL, other dashboard instances hear of the event when it commits."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_notify(:channel, :campaign)"),
                        {"channel": CHANNEL, "campaign": str(campaign_id)})  # fmt: skip


class PostgresRelay:
    """Carries other instances' events into this one's bus (LISTEN/NOTIFY)."""

    def __init__(self, database_url: str, deliver: Callable[[int], None]) -> None:
        self.database_url = database_url
        self.deliver = deliver  # called with the campaign id of each event
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pg-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        import psycopg

        dsn = libpq_dsn(self.database_url)
        while not self._stop.is_set():
            try:
                with psycopg.connect(dsn, autocommit=True) as connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    while not self._stop.is_set():
                        for notice in connection.notifies(timeout=1.0, stop_after=100):
                            if notice.payload.isdigit():
                                self.deliver(int(notice.payload))
            except Exception:
                log.exception("listening for other instances' events failed; retrying")
                self._stop.wait(2.0)
