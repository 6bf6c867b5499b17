"""Live events: the wake-up bus, and the broadcasters that fan each change out as bytes.

Publishers (the API, the forms, the tailer) write an Event row in their transaction and,
once it is committed, call `publish(campaign_id)`. The bus carries no data: it wakes the
campaign's broadcasters, one per view, each of which reads the new events once, renders
them once in a worker thread and hands the same bytes to every subscriber's bounded
buffer. A subscriber whose buffer is full is dropped and resumes by its last event id, so
the database stays the source of truth. On PostgreSQL, NOTIFY wakes the other instances; on
one SQLite file, a look at the newest event ids.
"""

import asyncio
import contextlib
import enum
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from sqlalchemy import text

from app.collector import COLLECTOR
from app.db import libpq_dsn
from app.models import LiveEvent

log = logging.getLogger(__name__)
# Readers written to between two turns of the loop while a change fans out (about 5 ms).
FAN_OUT_SLICE = 250


class Listener:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._woken = asyncio.Event()
        self._touched: set[int] = set()  # on the loop only

    def wake(self) -> None:
        # Publishers run in worker threads; the flag lives on the server's event loop.
        self._loop.call_soon_threadsafe(self._woken.set)

    def touch(self, attempt_id: int) -> None:
        self._loop.call_soon_threadsafe(self._touch, attempt_id)

    def _touch(self, attempt_id: int) -> None:
        self._touched.add(attempt_id)
        self._woken.set()

    def take_touched(self) -> frozenset[int]:
        """The attempts whose in-memory state changed since the last take (on the loop)."""
        touched = frozenset(self._touched)
        self._touched.clear()
        return touched

    async def wait(self, timeout: float) -> bool:
        # asyncio.timeout, not wait_for: Python 3.11's wait_for loses a cancellation that
        # comes as the wait ends, and a stopped broadcaster would live on.
        try:
            async with asyncio.timeout(timeout):
                await self._woken.wait()
        except TimeoutError:
            return False
        self._woken.clear()
        return True


class Bus:
    """Wakes the listeners of a campaign, and those of every campaign (`None`: the campaign
    list's), when it has new events."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[int | None, set[Listener]] = {}
        # Bumped when the owner's credentials change: each stream checks its own again.
        self.revision = 0

    def publish(self, campaign_id: int) -> None:
        """Never blocks: each listener only gets its wake-up flag set."""
        with self._lock:
            listeners = [*self._listeners.get(campaign_id, ()), *self._listeners.get(None, ())]
        self._wake(listeners)

    def touch(self, campaign_id: int, attempt_id: int) -> None:
        """An attempt changed where no event row can say so (a tail a full disk paused, held
        in memory): its campaign's broadcasters render it again, for their readers only."""
        with self._lock:
            listeners = list(self._listeners.get(campaign_id, ()))
        for listener in listeners:
            with contextlib.suppress(RuntimeError):  # its loop is closed: server stopping
                listener.touch(attempt_id)

    def publish_all(self) -> None:
        """Wake every listener of every campaign (the owner's credentials changed)."""
        with self._lock:
            self.revision += 1
            listeners = [listener for each in self._listeners.values() for listener in each]
        self._wake(listeners)

    @staticmethod
    def _wake(listeners: list[Listener]) -> None:
        for listener in listeners:
            with contextlib.suppress(RuntimeError):  # its loop is closed: server stopping
                listener.wake()

    @contextmanager
    def listen(self, campaign_id: int | None) -> Iterator[Listener]:
        listener = Listener(asyncio.get_running_loop())
        with self._lock:
            self._listeners.setdefault(campaign_id, set()).add(listener)
        try:
            yield listener
        finally:
            with self._lock:
                self._listeners.get(campaign_id, set()).discard(listener)

    def listener_count(self, campaign_id: int | None) -> int:
        with self._lock:
            return len(self._listeners.get(campaign_id, ()))


# --- fan-out ------------------------------------------------------------------------

# A key names one broadcaster: (campaign id, view, and what the view is of: an attempt
# id, a share token). Same key, same bytes.
ViewKey = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Message:
    """One SSE message as bytes, and the newest event id it covers (what a reader that
    already has up to that id may skip). The owner's CSRF token differs per browser
    session: a rendering holds a marker in its place, split out here, filled per reader."""

    upto: int
    parts: tuple[bytes, ...]

    def encode(self, csrf: bytes) -> bytes:
        return self.parts[0] if len(self.parts) == 1 else csrf.join(self.parts)


Batch = tuple[Message, ...]


class Signal(enum.Enum):
    RECHECK = "recheck"  # a heartbeat is due, or the owner's credentials changed
    GONE = "gone"  # the share link was revoked or expired


Item = Batch | Signal


class Subscriber:
    """One reader's bounded buffer of whole batches. Full: dropped, never waited for.

    While its stream waits with nothing to send, `direct` writes a batch straight to its
    socket from the broadcaster: a change costs each reader a write of bytes, not a wake-up
    of its task. A socket that would make the write wait sends the reader back to its
    buffer and its own task, in order, until it has caught up."""

    def __init__(self, cursor: int, limit: int) -> None:
        self.cursor = cursor  # this reader has every event up to here already
        self.joined_at = 0  # the broadcaster's cursor when it joined: catch up to there
        self.dropped = False
        self.direct: Callable[[Batch], bool] | None = None
        self._limit = limit
        self._items: deque[Item] = deque()
        self._ready = asyncio.Event()

    def offer(self, item: Item) -> bool:
        if self.dropped:
            return False
        if self.direct is not None and isinstance(item, tuple) and not self._items:
            if self.direct(item):
                return True
            self.direct = None
        if len(self._items) >= self._limit:
            self.dropped = True  # what it holds is still delivered, then its stream ends
        else:
            self._items.append(item)
        self._ready.set()
        return not self.dropped

    def drop(self) -> None:
        self.dropped = True
        self.direct = None
        self._ready.set()

    async def take(self) -> list[Item] | None:
        """Every batch and signal waiting, oldest first (at least one); None once dropped
        and drained. All at once: a reader that fell behind catches up in one write."""
        while not self._items:
            if self.dropped:
                return None
            self._ready.clear()
            await self._ready.wait()
        items = list(self._items)
        self._items.clear()
        return items


Render = Callable[[Any, list[Any], dict[str, Any] | None], list[Message]]


@dataclass
class View:
    """What a broadcaster needs of its view: its campaign (None: every campaign), how to
    render a batch of events (in a worker thread: session, events, the view's own memory
    between batches), and, for a share, whether it may still be read."""

    campaign_id: int | None
    render: Render
    still_valid: Callable[[Any], bool] | None = None
    # Fills the memory from the same snapshot as the broadcaster's first cursor, so that
    # its first batch is as small as the next ones (not the whole page for every reader).
    prime: Callable[[Any, dict[str, Any]], None] | None = None
    # After a batch, rest this many times as long as it took to render: a costly view (a
    # share page masks the whole campaign) gathers the changes meanwhile into one render
    # and leaves the owner's requests most of the CPU.
    pace: float = 0.0
    # Whether it shows tails: an attempt touched in memory (`Bus.touch`) is rendered again.
    shows_tails: bool = True


class Broadcaster:
    def __init__(self, hub: "Hub", key: ViewKey, view: View) -> None:
        self.hub, self.key, self.view = hub, key, view
        self.cursor = 0  # every event up to here was handed to the subscribers
        self.subscribers: set[Subscriber] = set()
        self.joining = 0
        self.ready = asyncio.Event()
        self.failed: BaseException | None = None
        self.memory: dict[str, Any] = {}
        self.task: asyncio.Task[None] | None = None
        self.listener: Listener | None = None
        # Set with the task's cancellation when its last reader leaves: looked at after every
        # wait too, so that a stopped broadcaster never renders for nobody.
        self.stopped = False

    async def run(self) -> None:
        try:
            with self.hub.bus.listen(self.view.campaign_id) as listener:
                self.listener = listener
                # Listening first: a commit after this read wakes us, none is missed.
                self.cursor = await anyio.to_thread.run_sync(self._newest)
                self.ready.set()
                clock = asyncio.get_running_loop().time
                revision = self.hub.bus.revision
                beat_at = clock() + self.hub.heartbeat_s
                while not self.stopped:
                    await listener.wait(max(0.0, beat_at - clock()))
                    while not self.stopped:
                        # Every reader's heartbeat, busy or quiet, from here: no ping task
                        # or timer per connection.
                        if clock() >= beat_at or revision != self.hub.bus.revision:
                            revision = self.hub.bus.revision
                            beat_at = clock() + self.hub.heartbeat_s
                            self._hand(Signal.RECHECK)
                        if not await self._step():
                            break
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # Its readers reconnect and resume from the database with a new broadcaster.
            log.exception("the broadcaster of %s failed", self.key)
            self.failed = exc
            self.ready.set()
            if self.hub.broadcasters.get(self.key) is self:
                del self.hub.broadcasters[self.key]
            for subscriber in list(self.subscribers):
                subscriber.drop()

    def _newest(self) -> int:
        with self.hub.session() as session:
            if self.view.prime is not None:
                self.view.prime(session, self.memory)
            return self.hub.newest_event_id(session, self.view.campaign_id)

    async def _step(self) -> bool:
        """Fan out the next batch of events, and the touched attempts' renderings; False
        when there was neither."""
        started = time.perf_counter()
        assert self.listener is not None
        touched = self.listener.take_touched() if self.view.shows_tails else frozenset()
        fetched = await anyio.to_thread.run_sync(self._fetch, self.cursor, touched)
        if fetched is None:
            self._hand(Signal.GONE)
            return False
        cursor, batch, redrawn = fetched
        if cursor <= self.cursor and not redrawn:
            return False
        if cursor > self.cursor:
            # The cursor moves and the readers are counted with no await between: a
            # subscriber joins either before this batch (and gets it) or after (and catches
            # up to this cursor from the database).
            self.cursor = cursor
            await self._hand_in_slices(batch)
        # No event id: in memory only, for whoever reads now (a page rendered later shows it).
        await self._hand_in_slices(redrawn, everyone=True)
        if self.view.pace:
            await asyncio.sleep(self.view.pace * (time.perf_counter() - started))
        return True

    def _fetch(self, after: int, touched: frozenset[int]) -> tuple[int, Batch, Batch] | None:
        with self.hub.session() as session:
            if self.view.still_valid is not None and not self.view.still_valid(session):
                return None
            events = self.hub.events_after(session, self.view.campaign_id, after, None)
            cursor = after
            batch: Batch = ()
            redrawn: Batch = ()
            if events:
                batch = tuple(self.view.render(session, events, self.memory))
                self.hub.count_render(self.key)
                cursor = events[-1].id
            if touched:
                # Events without an id, which the renders send without one.
                campaign_id = self.view.campaign_id or 0
                unstored = [
                    LiveEvent(campaign_id=campaign_id, kind="attempt", attempt_id=attempt_id)
                    for attempt_id in sorted(touched)
                ]
                redrawn = tuple(self.view.render(session, unstored, self.memory))
            return cursor, batch, redrawn

    def _hand(self, item: Item, *, everyone: bool = False) -> None:
        self._hand_to(list(self.subscribers), item, everyone=everyone)

    async def _hand_in_slices(self, item: Item, *, everyone: bool = False) -> None:
        """Hand a batch to every reader here now, letting the loop serve other requests
        between slices: 2,000 socket writes in one go held the owner's next write back for
        as long (its p99 at 100 ms on two cores)."""
        if item == ():
            return
        readers = list(self.subscribers)
        for start in range(0, len(readers), FAN_OUT_SLICE):
            if start:
                await asyncio.sleep(0)
            self._hand_to(readers[start : start + FAN_OUT_SLICE], item, everyone=everyone)

    def _hand_to(self, readers: list[Subscriber], item: Item, *, everyone: bool) -> None:
        if item == ():
            return
        first = min(m.upto for m in item) if isinstance(item, tuple) else 0
        for subscriber in readers:
            if subscriber not in self.subscribers:
                continue  # it left, or was dropped, while an earlier slice went out
            given = item
            if isinstance(item, tuple) and subscriber.cursor >= first and not everyone:
                # It joined ahead of this batch (its page was newer): only what it lacks.
                given = tuple(m for m in item if m.upto > subscriber.cursor)
                if not given:
                    continue
            direct = subscriber.direct is not None
            if not subscriber.offer(given):
                self.subscribers.discard(subscriber)
                if isinstance(item, tuple):
                    self.hub.dropped += 1
            elif direct and subscriber.direct is None:
                self.hub.behind += 1
        if isinstance(item, Signal) and item is Signal.GONE:
            self.subscribers.clear()


class Hub:
    """The app's broadcasters, one per view key, started by their first subscriber and
    stopped when their last one leaves."""

    def __init__(
        self,
        bus: Bus,
        session: Callable[[], AbstractContextManager[Any]],
        events_after: Callable[[Any, int | None, int, int | None], list[Any]],
        newest_event_id: Callable[[Any, int | None], int],
        *,
        heartbeat_s: float,
        buffer: int = 64,
    ) -> None:
        self.bus = bus
        self.session = session
        self.events_after = events_after
        self.newest_event_id = newest_event_id
        self.heartbeat_s = heartbeat_s
        self.buffer = buffer
        self.broadcasters: dict[ViewKey, Broadcaster] = {}
        # Renders per view kind: the fan-out tests count them.
        self.renders: Counter[str] = Counter()
        self.dropped = 0  # readers dropped for a full buffer
        self.behind = 0  # direct writes a reader's full socket refused: sent from its buffer
        self.closed = False  # the server is stopping: no stream may go on
        self._lock = threading.Lock()

    def count_render(self, key: ViewKey) -> None:
        with self._lock:
            self.renders[str(key[1])] += 1

    @asynccontextmanager
    async def subscribe(
        self, key: ViewKey, view: View, cursor: int, newest: int
    ) -> AsyncIterator[Subscriber]:
        """Join the view's broadcaster. `newest`, the newest event id read just before,
        covers a broadcaster not woken yet: the reader catches up to the later of the two
        from the database, and skips the broadcaster's messages up to there."""
        broadcaster = self.broadcasters.get(key)
        if broadcaster is None:
            broadcaster = Broadcaster(self, key, view)
            self.broadcasters[key] = broadcaster
            broadcaster.task = asyncio.get_running_loop().create_task(broadcaster.run())
        subscriber = Subscriber(cursor, self.buffer)
        if self.closed:
            subscriber.drop()
        broadcaster.joining += 1
        try:
            await broadcaster.ready.wait()
            if broadcaster.failed is not None:
                raise RuntimeError("the broadcaster failed") from broadcaster.failed
            subscriber.joined_at = max(broadcaster.cursor, newest)
            subscriber.cursor = max(cursor, subscriber.joined_at)
            broadcaster.subscribers.add(subscriber)
            if newest > broadcaster.cursor and broadcaster.listener is not None:
                broadcaster.listener.wake()  # a commit it has not heard of yet
        finally:
            broadcaster.joining -= 1
        try:
            yield subscriber
        finally:
            broadcaster.subscribers.discard(subscriber)
            self._stop_if_idle(key, broadcaster)

    async def close_on_exit(self, should_exit: Callable[[], bool]) -> None:
        """Once the server stops, every stream ends (its reader reconnects to the next
        server): uvicorn waits for open responses before it stops, and a live stream
        never ends by itself."""
        while not should_exit():
            await asyncio.sleep(0.5)
        self.close()

    def close(self) -> None:
        """End every stream now and refuse new ones (on the server's event loop)."""
        self.closed = True
        for broadcaster in list(self.broadcasters.values()):
            for subscriber in list(broadcaster.subscribers):
                subscriber.drop()

    def _stop_if_idle(self, key: ViewKey, broadcaster: Broadcaster) -> None:
        if broadcaster.subscribers or broadcaster.joining:
            return
        if self.broadcasters.get(key) is broadcaster:
            del self.broadcasters[key]
        broadcaster.stopped = True
        if broadcaster.task is not None:
            broadcaster.task.cancel()
        if not self.broadcasters:
            COLLECTOR.readers_gone()


CHANNEL = "campaign_dash_events"


EVENTS_LOCK_SPACE = 0x6364  # advisory locks of one campaign's event writers


def take_event_turn(session: Any, campaign_id: int) -> None:
    """On PostgreSQL: wait for the campaign's turn to write events (an advisory lock held
    until commit), and tell the other dashboard instances when it commits. SQLite has one
    writer at a time: its ids already come in commit order."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:space, :campaign)"),
                        {"space": EVENTS_LOCK_SPACE, "campaign": campaign_id % 2**31})  # fmt: skip
        session.execute(text("SELECT pg_notify(:channel, :campaign)"),
                        {"channel": CHANNEL, "campaign": str(campaign_id)})  # fmt: skip


class _Relay:
    """Carries other instances' events into this one's bus, from a thread of its own:
    `deliver` is called with the campaign id of each event."""

    name = "relay"

    def __init__(self, deliver: Callable[[int], None]) -> None:
        self.deliver = deliver
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        raise NotImplementedError


class PostgresRelay(_Relay):
    """LISTEN/NOTIFY."""

    name = "pg-listen"

    def __init__(self, database_url: str, deliver: Callable[[int], None]) -> None:
        super().__init__(deliver)
        self.database_url = database_url

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


class SqliteRelay(_Relay):
    """One SQLite file has no NOTIFY: a look at the newest event ids twice a second (a read
    of the primary key, which waits on no writer), so a page on a second `serve` is not a
    heartbeat behind."""

    name = "sqlite-look"

    def __init__(
        self, engine: Any, deliver: Callable[[int], None], *, every_s: float = 0.5
    ) -> None:
        super().__init__(deliver)
        self.engine, self.every_s = engine, every_s

    def _run(self) -> None:
        after: int | None = None
        while not self._stop.wait(0 if after is None else self.every_s):
            try:
                with self.engine.connect() as connection:
                    if after is None:
                        newest = "SELECT coalesce(max(id), 0) FROM event"
                        after = int(connection.execute(text(newest)).scalar_one())
                        continue
                    rows = connection.execute(
                        text("SELECT campaign_id, max(id) FROM event WHERE id > :after"
                             " GROUP BY campaign_id"),
                        {"after": after},
                    ).all()  # fmt: skip
            except Exception:
                log.exception("looking for other instances' events failed; retrying")
                self._stop.wait(self.every_s)  # not at once, even before the first look
                continue
            for campaign_id, newest_id in rows:
                after = max(after, int(newest_id))
                self.deliver(int(campaign_id))
