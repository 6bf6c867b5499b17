"""The event bus: who is listening to which campaign, and waking them after a commit.

Publishers (the API, the forms, the tailer) write an Event row in their transaction and,
once it is committed, call `publish(campaign_id)`. The bus carries no data: a listener
wakes up and reads the events after its last id from the database, so a late or resumed
listener is never out of date, and a slow one costs a flag, not a growing queue.
"""

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager


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
