"""The fan-out is exact: every reader of every view gets every change once and in order,
across reconnects with Last-Event-ID and while writes go on; a reader too slow to keep up
is dropped and resumes with nothing lost or doubled; a change renders once per view,
however many readers it has."""

import asyncio
import contextlib
import html
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import h11
import httpx
import pytest
from sqlmodel import select

from app import live
from app.config import Settings
from app.db import session_scope
from app.live import Bus, Hub, View
from app.models import LiveEvent
from app.routes import events
from tests.conftest import OWNER_TOKEN, LiveServer, running
from tests.helpers import make_attempt, make_campaign, run_apart, wait_for_readers
from tests.sse import Message, SSEReader, sse_field

JSON_KINDS = {"attempt", "log", "note", "campaign"}


def events_url(campaign_id: int, **params: object) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"/api/campaigns/{campaign_id}/events" + (f"?{query}" if query else "")


def stored_ids(server: LiveServer, campaign_id: int, after: int = 0) -> list[int]:
    """The campaign's events the JSON stream carries, as the database holds them."""
    with session_scope(server.app.state.engine) as session:
        rows = session.exec(select(LiveEvent).where(LiveEvent.campaign_id == campaign_id))
        return sorted(e.id or 0 for e in rows if (e.id or 0) > after and e.kind in JSON_KINDS)


def newest_id(server: LiveServer, campaign_id: int) -> int:
    with session_scope(server.app.state.engine) as session:
        rows = session.exec(select(LiveEvent).where(LiveEvent.campaign_id == campaign_id))
        return max((e.id or 0 for e in rows), default=0)


def read_until(
    reader: SSEReader, done: Callable[[Message], bool], timeout: float = 20
) -> list[Message]:
    """Every message (heartbeats aside) up to and including the first that `done` accepts."""
    got: list[Message] = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"gave up after {len(got)} messages"
        message = reader.next(timeout=left)
        got.append(message)
        if done(message):
            return got


def reaches(last: int) -> Callable[[Message], bool]:
    return lambda m: m.id is not None and int(m.id) >= last


@pytest.mark.both_databases  # ids PostgreSQL hands out may commit out of order
def test_json_readers_joining_and_resuming_mid_burst_get_every_event_once(
    api: httpx.Client, server: LiveServer
) -> None:
    """The hand-over race: readers join and reconnect while a writer commits, each one
    from its own cursor; each sees exactly the stored events after its cursor, in order."""
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    writes = 60
    writer_done = threading.Event()

    def write() -> None:
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {OWNER_TOKEN}"}
        ) as c:
            for n in range(writes):
                if n % 3 == 0:
                    make_attempt(c, campaign["id"], title=f"burst {n}")
                else:
                    c.post(f"/api/attempts/{attempt['id']}/notes", json={"body": f"note {n}"})
        writer_done.set()

    readers = [SSEReader(api, events_url(campaign["id"], after=0)) for _ in range(3)]
    writer = threading.Thread(target=write)
    writer.start()
    # Readers that join mid-burst from wherever the others got, and one reconnect each.
    seen: list[list[int]] = [[] for _ in range(6)]
    late: list[SSEReader] = []
    for n in range(3):
        first = readers[n].next()
        seen[n].append(int(first.id or 0))
        late.append(
            SSEReader(api, events_url(campaign["id"]), headers={"Last-Event-ID": first.id or ""})
        )
        seen[3 + n].append(int(first.id or 0))  # its cursor, not a message it got
    writer.join(60)
    assert writer_done.is_set()
    last = newest_id(server, campaign["id"])
    for n, reader in enumerate(readers + late):
        # Half-way, drop the connection and resume from the last id this reader had.
        got = read_until(reader, lambda m: True)
        ids = [int(m.id) for m in got if m.id]
        reader.close()
        resumed = SSEReader(
            api, events_url(campaign["id"]), headers={"Last-Event-ID": str(ids[-1])}
        )
        got += read_until(resumed, reaches(last))
        resumed.close()
        seen[n] += [int(m.id) for m in got if m.id]
    for n, ids in enumerate(seen):
        cursor = ids[0]
        expected = stored_ids(server, campaign["id"], after=cursor if n >= 3 else 0)
        got_ids = ids[1:] if n >= 3 else ids
        assert got_ids == expected, f"reader {n}: {len(got_ids)} ids, {len(expected)} stored"


def log_texts(messages: list[Message], event: str) -> list[str]:
    return [
        html.unescape(text)
        for m in messages
        if m.event == event
        for text in re.findall(r'<span class="line[^"]*"[^>]*>([^<]*)\n</span>', m.data)
    ]


def test_page_and_share_readers_get_each_change_once_across_a_reconnect(
    api: httpx.Client, server: LiveServer, anonymous: httpx.Client, tmp_path: Path
) -> None:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], title="followed")
    share = api.post(f"/api/campaigns/{campaign['id']}/shares", json={}).json()
    token = share["url"].rsplit("/s/", 1)[1]
    start = newest_id(server, campaign["id"])
    views = {
        "campaign": (api, events_url(campaign["id"], view="campaign", after=start)),
        "attempt": (
            api,
            events_url(campaign["id"], view="attempt", attempt=attempt["id"], after=start),
        ),
        "share": (anonymous, f"/s/{token}/events?after={start}"),
    }
    readers = {name: [SSEReader(c, url) for _ in range(3)] for name, (c, url) in views.items()}
    log = tmp_path / "server.log"
    lines = [f"line {n} <b>&</b>" for n in range(400)]
    log.write_text("\n".join(lines[:200]) + "\n")
    api.patch(f"/api/attempts/{attempt['id']}", json={"source": f"file://{log}"})
    # A reader of each view drops its connection here and resumes by Last-Event-ID.
    got: dict[str, list[list[Message]]] = {name: [[] for _ in rs] for name, rs in readers.items()}
    deadline = time.monotonic() + 20
    while "line 199" not in "".join(log_texts(got["attempt"][0], f"log-{attempt['id']}")):
        assert time.monotonic() < deadline, "the first lines never came"
        got["attempt"][0].append(readers["attempt"][0].next())
    for name, rs in readers.items():
        got[name][0] += read_until(rs[0], lambda m: m.id is not None)
        rs[0].close()
        client, url = views[name]
        last_id = next(m.id for m in reversed(got[name][0]) if m.id)
        rs[0] = SSEReader(client, url, headers={"Last-Event-ID": last_id or ""})
    with log.open("a") as out:
        out.write("\n".join(lines[200:]) + "\n")
    api.patch(f"/api/attempts/{attempt['id']}", json={"verdict": "works"})
    for reader, messages in zip(readers["campaign"], got["campaign"], strict=True):
        # A changed attempt's card is swapped alone, not the whole timeline.
        messages += read_until(
            reader, lambda m: m.event == f"card-{attempt['id']}" and "works" in m.data
        )
    api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": "a note"})
    make_attempt(api, campaign["id"], title="second <one>")
    deadline = time.monotonic() + 30
    while stored_bytes(api, attempt["id"]) < log.stat().st_size:
        assert time.monotonic() < deadline, "the tailer never read the whole log"
        time.sleep(0.05)
    last = wait_quiet(server, campaign["id"])
    for name, rs in readers.items():
        for n, reader in enumerate(rs):
            got[name][n] += read_until(reader, reaches(last))
            reader.close()
            ids = [int(m.id) for m in got[name][n] if m.id]
            assert ids == sorted(set(ids)), f"{name} reader {n}: an id twice or out of order"
    for n in range(3):
        # The log's lines, appended: each exactly once, in order, across the reconnect.
        assert log_texts(got["attempt"][n], f"log-{attempt['id']}") == lines, f"attempt reader {n}"
        timelines = [m.data for m in got["campaign"][n] if m.event == "timeline"]
        assert "second &lt;one&gt;" in timelines[-1], "a new attempt re-renders the timeline"
        share_html = [m.data for m in got["share"][n] if m.event == "share-summary"]
        assert "second &lt;one&gt;" in share_html[-1]


def stored_bytes(api: httpx.Client, attempt_id: int) -> int:
    tail = api.get(f"/api/attempts/{attempt_id}").json().get("tail") or {}
    return int(tail.get("stored_bytes") or 0)


def wait_quiet(server: LiveServer, campaign_id: int, quiet_s: float = 1.0) -> int:
    """The newest event id once no new one came for `quiet_s` (the tailer settled)."""
    deadline = time.monotonic() + 30
    last, since = newest_id(server, campaign_id), time.monotonic()
    while time.monotonic() - since < quiet_s:
        assert time.monotonic() < deadline
        time.sleep(0.1)
        now = newest_id(server, campaign_id)
        if now != last:
            last, since = now, time.monotonic()
    return last


class RawReader:
    """An SSE reader over a raw socket with a tiny receive buffer: until it reads, the
    server's writes to it block, as a reader on a slow link's do."""

    def __init__(self, server: LiveServer, path: str, headers: dict[str, str]) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect(("127.0.0.1", server.port))
        self.conn = h11.Connection(h11.CLIENT)
        host = f"127.0.0.1:{server.port}"
        fields = [("Host", host), ("Connection", "close"), *headers.items()]
        request = h11.Request(method="GET", target=path, headers=fields)
        self.body = bytearray()  # what came of the stream and is not read yet
        self.sock.sendall(self.conn.send(request) + self.conn.send(h11.EndOfMessage()))

    def read_until(self, last: int, timeout: float = 30) -> list[Message]:
        """The messages after those read before, as they come, until one carries id `last`
        or later."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.settimeout(timeout)
        deadline = time.monotonic() + timeout
        while True:
            assert time.monotonic() < deadline, f"no id {last} in time"
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                self.conn.receive_data(self.sock.recv(1 << 16))
                continue
            assert isinstance(event, h11.Data | h11.Response), f"the stream ended: {event}"
            if not isinstance(event, h11.Data):
                continue
            self.body += bytes(event.data)
            # Whole messages only: the last may still be arriving.
            text = self.body.decode(errors="replace").replace("\r\n", "\n")
            whole, _, rest = text.rpartition("\n\n")
            messages = parse_sse(whole)
            if any(m.id and int(m.id) >= last for m in messages):
                self.body = bytearray(rest.encode())
                return messages

    def read_all(self, timeout: float = 30) -> list[Message]:
        """Everything until the server ends the stream, read as fast as it comes: the tiny
        buffer reopened a few KiB at a time (TCP's persist timer) takes minutes a MiB."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.settimeout(timeout)
        body = bytearray()  # extended in place: megabytes come in 4 KiB pieces
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                self.conn.receive_data(self.sock.recv(1 << 16))
            elif isinstance(event, h11.Data):
                body += bytes(event.data)
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                break
        self.sock.close()
        return parse_sse(body.decode())


def parse_sse(text: str) -> list[Message]:
    messages = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event, data, ident = "message", [], None
        for line in block.split("\n"):
            name, value = sse_field(line)
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
            elif name == "id":
                ident = value
        if data or ident or event != "message":
            messages.append(Message(event, "\n".join(data), ident))
    return [m for m in messages if m.event not in ("heartbeat", "hello")]


def log_ranges(messages: list[Message]) -> list[int]:
    """The log events' [offset, end) ranges, joined: one [0, size) when they tile the log
    with no gap and no overlap (a chunk may end mid-line, so lines would not say it)."""
    joined: list[int] = []
    for m in messages:
        if m.event == "log":
            data = json.loads(m.data)
            assert data["offset"] == (joined[-1] if joined else 0), "a gap or an overlap"
            joined = [data["end"]]
    return joined


def test_a_slow_reader_is_dropped_and_resumes_with_nothing_lost_or_doubled(
    api: httpx.Client, server: LiveServer, tmp_path: Path
) -> None:
    hub = server.app.state.live
    hub.buffer = 4  # batches a reader may hold: small, so the slow one is dropped soon
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    start = newest_id(server, campaign["id"])
    slow = RawReader(server, events_url(campaign["id"], after=start),
                     {"Authorization": f"Bearer {OWNER_TOKEN}"})  # fmt: skip
    fast = SSEReader(api, events_url(campaign["id"], after=start))
    deadline = time.monotonic() + 10
    while sum(len(b.subscribers) for b in hub.broadcasters.values()) < 2:
        assert time.monotonic() < deadline, "the readers never joined"
        time.sleep(0.02)
    # Big log chunks, one commit each: a few of them fill the slow reader's socket.
    log = tmp_path / "big.log"
    log.write_bytes(b"")
    api.patch(f"/api/attempts/{attempt['id']}", json={"source": f"file://{log}"})
    dropped_before = hub.dropped
    deadline = time.monotonic() + 30
    n = 0
    while hub.dropped == dropped_before:
        assert time.monotonic() < deadline, "the slow reader was never dropped"
        chunk = [f"{n:05d} " + "x" * 2000 for n in range(n, n + 100)]
        n += 100
        with log.open("a") as out:
            out.write("\n".join(chunk) + "\n")
        time.sleep(0.05)  # let the tailer commit this chunk on its own
    last = wait_quiet(server, campaign["id"])
    # The fast reader was never held back: it has everything already, in order.
    got = read_until(fast, reaches(last))
    fast.close()
    assert log_ranges(got) == [log.stat().st_size]
    # The slow one gets what its buffer held, then its stream ends; it resumes from there.
    before = slow.read_all()
    ids = [m.id for m in before if m.id]
    resumed = SSEReader(api, events_url(campaign["id"]), headers={"Last-Event-ID": ids[-1] or ""})
    after = read_until(resumed, reaches(last))
    resumed.close()
    assert log_ranges(before + after) == [log.stat().st_size]
    all_ids = [int(m.id) for m in before + after if m.id]
    assert all_ids == sorted(set(all_ids))


def test_a_reader_behind_then_caught_up_gets_every_change_once_in_order(
    api: httpx.Client, server: LiveServer, tmp_path: Path
) -> None:
    """An idle reader's batches go straight to its socket; once the socket is full they wait
    in its buffer, are sent from there in order, and the next ones go straight again."""
    hub = server.app.state.live
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    start = newest_id(server, campaign["id"])
    slow = RawReader(server, events_url(campaign["id"], after=start),
                     {"Authorization": f"Bearer {OWNER_TOKEN}"})  # fmt: skip
    wait_for_readers(server.app, 1, what="the reader joined")
    log = tmp_path / "big.log"
    log.write_bytes(b"")
    api.patch(f"/api/attempts/{attempt['id']}", json={"source": f"file://{log}"})
    behind_before = hub.behind
    deadline = time.monotonic() + 30
    n = 0
    while hub.behind == behind_before:  # until its socket refused a write
        assert time.monotonic() < deadline, "the reader's socket never filled"
        with log.open("a") as out:
            out.write("".join(f"{i:05d} " + "x" * 2000 + "\n" for i in range(n, n + 100)))
        n += 100
        time.sleep(0.05)  # let the tailer commit this chunk on its own
    assert hub.dropped == 0
    last = wait_quiet(server, campaign["id"])
    got = slow.read_until(last)
    # Caught up: a change now goes straight to its socket again, after all the rest.
    api.patch(f"/api/attempts/{attempt['id']}", json={"verdict": "after the catch-up"})
    got += slow.read_until(newest_id(server, campaign["id"]))
    slow.sock.close()
    assert log_ranges(got) == [log.stat().st_size]
    ids = [int(m.id) for m in got if m.id]
    assert ids == sorted(set(ids)) and ids[-1] == newest_id(server, campaign["id"])
    assert any("after the catch-up" in m.data for m in got if m.event == "attempt")


def test_a_reader_that_takes_no_bytes_is_cut_after_the_send_timeout(
    api: httpx.Client, server: LiveServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that never reads holds a send forever: the server hangs up on it (its
    stream ends mid-body) once a send has waited past the timeout, well before its buffer
    fills, and its broadcaster, now without readers, stops."""
    monkeypatch.setattr(events, "SEND_TIMEOUT_S", 0.5)
    hub = server.app.state.live
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    stuck = RawReader(server, events_url(campaign["id"]),
                      {"Authorization": f"Bearer {OWNER_TOKEN}"})  # fmt: skip
    deadline = time.monotonic() + 10
    while not hub.broadcasters:
        assert time.monotonic() < deadline, "the reader never joined"
        time.sleep(0.02)
    log = tmp_path / "big.log"
    log.write_bytes(b"")
    api.patch(f"/api/attempts/{attempt['id']}", json={"source": f"file://{log}"})
    deadline = time.monotonic() + 30
    chunks = 0
    while hub.broadcasters:  # big commits, until its socket is full and a send waits
        assert time.monotonic() < deadline, "the reader that takes nothing was never cut"
        with log.open("a") as out:
            out.write("\n".join(f"{chunks:03d} " + "x" * 2000 for _ in range(100)) + "\n")
        chunks += 1
        time.sleep(0.1)
    assert hub.dropped == 0  # cut for the stuck send, not dropped for a full buffer
    with pytest.raises(h11.RemoteProtocolError):
        stuck.read_all()


def test_a_change_renders_once_however_many_readers(settings: Settings) -> None:
    # Short heartbeats: a closed test reader's thread notices and hangs up soon.
    with running(settings.model_copy(update={"heartbeat_seconds": 0.3})) as (server, api):
        renders_once(server, api)


def renders_once(server: LiveServer, api: httpx.Client) -> None:
    hub = server.app.state.live
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    counts = {}
    for readers in (1, 12):
        json_readers = [SSEReader(api, events_url(campaign["id"])) for _ in range(readers)]
        page_readers = [
            SSEReader(api, events_url(campaign["id"], view="campaign")) for _ in range(readers)
        ]
        joined = 2 * readers
        deadline = time.monotonic() + 10
        while sum(len(b.subscribers) for b in hub.broadcasters.values()) < joined:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        before = dict(hub.renders)
        api.patch(f"/api/attempts/{attempt['id']}", json={"verdict": f"seen by {readers}"})
        last = newest_id(server, campaign["id"])
        for reader in json_readers + page_readers:
            read_until(reader, reaches(last))
            reader.close()
        counts[readers] = {k: hub.renders[k] - before.get(k, 0) for k in ("json", "campaign")}
    assert counts[1] == counts[12] == {"json": 1, "campaign": 1}
    # The broadcasters stop with their last reader.
    deadline = time.monotonic() + 10
    while hub.broadcasters:
        assert time.monotonic() < deadline, "a broadcaster outlived its readers"
        time.sleep(0.05)


def test_a_broadcaster_stopped_as_it_is_woken_renders_nothing_more() -> None:
    """The last reader leaves just as a change wakes the broadcaster: it must stop, not live
    on rendering every change for nobody (Python 3.11's wait_for could lose the cancel;
    under load a second JSON render per change came from such a broadcaster)."""
    renders: list[int] = []

    @contextmanager
    def no_session():  # type: ignore[no-untyped-def]
        yield None

    def render(_session: object, events: list[object], _memory: object) -> list[object]:
        renders.append(len(events))
        return []

    newest = [0]
    hub = Hub(
        Bus(),
        no_session,
        lambda _s, _c, after, _u: [type("E", (), {"id": newest[0]})()] * (newest[0] > after),
        lambda _s, _c: newest[0],
        heartbeat_s=30,
    )

    async def scenario(ticks: int) -> tuple[bool, int]:
        view = View(campaign_id=1, render=render)
        async with hub.subscribe((1, "json"), view, newest[0], newest[0]):
            broadcaster = hub.broadcasters[(1, "json")]
            for _ in range(5):  # at rest in its wait
                await asyncio.sleep(0)
            # A change wakes it; the reader leaves some loop turns later.
            newest[0] += 1
            hub.bus.publish(1)
            for _ in range(ticks):
                await asyncio.sleep(0)
        await asyncio.sleep(0.05)  # what it was doing as the reader left is done
        settled = len(renders)
        newest[0] += 1  # a change nobody reads
        hub.bus.publish(1)
        await asyncio.sleep(0.05)
        done = broadcaster.task is not None and broadcaster.task.done()
        if not done and broadcaster.task is not None:
            broadcaster.task.cancel()
        return done, len(renders) - settled

    for ticks in range(10):
        done, later = run_apart(scenario(ticks))
        assert done and later == 0, f"after {ticks} turns: running {not done}, renders {later}"


def test_a_change_fans_out_in_slices_that_let_the_loop_serve_others_between(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each reader here when the batch was cut gets it once; one that left between two
    slices gets nothing more; one that joins meanwhile catches up from the database (its
    cursor is already past the batch); and other work on the loop runs between slices."""
    monkeypatch.setattr(live, "FAN_OUT_SLICE", 1)

    @contextmanager
    def no_session():  # type: ignore[no-untyped-def]
        yield None

    newest = [0]
    event = type("E", (), {})

    def events_after(_s: object, _c: object, after: int, _u: object) -> list[object]:
        found = event()
        found.id = newest[0]  # type: ignore[attr-defined]
        return [found] * (newest[0] > after)

    def render(_session: object, events: list[object], _memory: object) -> list[live.Message]:
        return [live.Message(upto=e.id, parts=(b"change\n",)) for e in events]  # type: ignore[attr-defined]

    hub = Hub(Bus(), no_session, events_after, lambda _s, _c: newest[0], heartbeat_s=30)

    async def scenario() -> None:
        view = View(campaign_id=1, render=render)
        got: dict[str, list[object]] = {"a": [], "b": [], "c": []}
        seen_between: list[int] = []
        async with contextlib.AsyncExitStack() as readers:
            subscribers = {
                name: await readers.enter_async_context(hub.subscribe((1, "json"), view, 0, 0))
                for name in ("a", "b", "c")
            }
            broadcaster = hub.broadcasters[(1, "json")]
            for name, subscriber in subscribers.items():
                subscriber.direct = lambda batch, name=name: got[name].append(batch) or True  # type: ignore[misc]

            left = []

            async def meanwhile() -> None:
                # The first slice has gone out: count, then make the next reader leave.
                while not any(got.values()):
                    await asyncio.sleep(0)
                seen_between.append(sum(map(len, got.values())))
                late = next(name for name in ("a", "b", "c") if not got[name])
                broadcaster.subscribers.discard(subscribers[late])
                left.append(late)

            watcher = asyncio.create_task(meanwhile())
            newest[0] = 1
            hub.bus.publish(1)
            await asyncio.wait_for(watcher, timeout=10)
            assert seen_between == [1]  # the loop ran between the first slice and the rest
            assert broadcaster.cursor == 1  # a reader joining now catches up to here

            # A second change: once the readers that stayed have it, the first fan-out is over.
            newest[0] = 2
            hub.bus.publish(1)
            stayed = [name for name in got if name not in left]

            async def both_changes_reached_those_that_stayed() -> None:
                while sum(len(got[name]) for name in stayed) < 4:
                    await asyncio.sleep(0.01)

            await asyncio.wait_for(both_changes_reached_those_that_stayed(), timeout=10)
            assert got[left[0]] == []
            assert [len(got[name]) for name in stayed] == [2, 2]

    run_apart(scenario())
