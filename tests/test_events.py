"""The campaign event stream: JSON events as changes commit, resume by Last-Event-ID,
named heartbeats, and who may listen."""

import itertools
import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import Settings
from tests.conftest import LiveServer, owner_client, running
from tests.helpers import make_attempt, make_campaign
from tests.sse import SSEReader


def events_url(campaign_id: int, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"/api/campaigns/{campaign_id}/events" + (f"?{query}" if query else "")


def test_attempt_note_and_log_events_arrive_as_json(api: httpx.Client, tmp_path: Path) -> None:
    campaign = make_campaign(api)
    reader = SSEReader(api, events_url(campaign["id"]))
    assert reader.status == 200
    attempt = make_attempt(api, campaign["id"], title="EAGLE-3")
    created = reader.until(lambda m: m.event == "attempt")
    assert json.loads(created.data)["title"] == "EAGLE-3" and created.id

    api.patch(f"/api/attempts/{attempt['id']}", json={"status": "running"})
    moved = reader.until(
        lambda m: m.event == "attempt" and json.loads(m.data)["status"] == "running"
    )
    assert int(moved.id or 0) > int(created.id or 0)

    api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": "needs **NVLink**"})
    note = reader.until(lambda m: m.event == "note")
    assert "<strong>NVLink</strong>" in json.loads(note.data)["html"]

    log = tmp_path / "live.log"
    log.write_bytes(b"Load weight begin.\nKeyError: 12\n")
    api.patch(f"/api/attempts/{attempt['id']}", json={"source": f"file://{log}"})
    lines = reader.until(lambda m: m.event == "log")
    assert json.loads(lines.data) == {
        "attempt_id": attempt["id"], "lines": ["Load weight begin.", "KeyError: 12"],
        "offset": 0, "end": log.stat().st_size,
    }  # fmt: skip
    reader.close()


def test_hello_comes_once_the_stream_has_joined(api: httpx.Client, app_under_test: Any) -> None:
    """A client that has read hello misses no later change: it is said after the join."""
    hub = app_under_test.app.state.live
    for _ in range(5):
        campaign = make_campaign(api)
        with api.stream("GET", events_url(campaign["id"])) as live:
            assert live.status_code == 200
            assert next(live.iter_lines()) == "event: hello"
            joined = sum(len(b.subscribers) for b in list(hub.broadcasters.values()))
            assert joined == 1


@pytest.mark.both_databases
def test_last_event_id_gets_exactly_what_was_missed(api: httpx.Client) -> None:
    campaign = make_campaign(api)
    reader = SSEReader(api, events_url(campaign["id"]))
    first = make_attempt(api, campaign["id"], title="one")
    seen = reader.until(lambda m: m.event == "attempt")
    reader.close()
    make_attempt(api, campaign["id"], title="two")
    api.post(f"/api/attempts/{first['id']}/notes", json={"body": "missed"})
    resumed = SSEReader(api, events_url(campaign["id"]), headers={"Last-Event-ID": seen.id or ""})
    missed = [resumed.next(), resumed.next()]
    assert [m.event for m in missed] == ["attempt", "note"]
    assert json.loads(missed[0].data)["title"] == "two"
    assert json.loads(missed[1].data)["body"] == "missed"
    resumed.close()


def test_heartbeats_are_named_events(settings: Settings) -> None:
    with running(settings.model_copy(update={"heartbeat_seconds": 0.3})) as (_, api):
        campaign = make_campaign(api)
        reader = SSEReader(api, events_url(campaign["id"]))
        started = time.monotonic()
        beat = reader.next(timeout=5, skip=("hello",))
        assert beat.event == "heartbeat" and time.monotonic() - started < 3
        reader.close()


def test_heartbeats_keep_coming_while_changes_flow(settings: Settings) -> None:
    """The broadcaster beats for every reader, busy or quiet: a page hears that its stream
    lives from heartbeats alone, and calls itself offline after three missed ones."""
    with running(settings.model_copy(update={"heartbeat_seconds": 0.3})) as (server, api):
        campaign = make_campaign(api)
        attempt = make_attempt(api, campaign["id"])
        reader = SSEReader(api, events_url(campaign["id"]))
        stop = threading.Event()

        def write() -> None:  # a change every 0.1 s: the stream is never quiet for a beat
            with owner_client(server.url) as client:
                for n in itertools.count():
                    if stop.wait(0.1):
                        return
                    client.patch(f"/api/attempts/{attempt['id']}", json={"verdict": f"v{n}"})

        writer = threading.Thread(target=write)
        writer.start()
        try:
            reader.until(lambda m: m.event == "attempt")
            events: list[str] = []
            deadline = time.monotonic() + 20
            while events.count("heartbeat") < 4:
                assert time.monotonic() < deadline, f"beats missing among {events.count('attempt')}"
                events.append(reader.next(timeout=5, skip=("hello",)).event)
        finally:
            stop.set()
            writer.join(10)
        reader.close()
        between = events[events.index("heartbeat") : len(events) - events[::-1].index("heartbeat")]
        assert between.count("attempt") >= 3, events  # changes flowed between the beats


def test_streams_end_when_the_server_stops(api: httpx.Client, server: LiveServer) -> None:
    """uvicorn waits for open responses before it stops, and a live stream never ends by
    itself: on Ctrl-C or SIGTERM (the flag sse-starlette's hook on uvicorn sets) every
    stream ends, and one opened then ends at once."""
    from sse_starlette.sse import AppStatus

    campaign = make_campaign(api)
    reader = SSEReader(api, events_url(campaign["id"]))
    hub = server.app.state.live
    deadline = time.monotonic() + 10
    while sum(len(b.subscribers) for b in hub.broadcasters.values()) < 1:
        assert time.monotonic() < deadline, "the reader never joined"
        time.sleep(0.02)
    AppStatus.should_exit = True
    try:
        with pytest.raises(AssertionError, match="the stream ended"):
            reader.next(timeout=10)
        late = SSEReader(api, events_url(campaign["id"]))
        with pytest.raises(AssertionError, match="the stream ended"):
            late.next(timeout=10)
    finally:
        AppStatus.should_exit = False


def test_streams_need_the_owner_and_an_existing_campaign(
    api: httpx.Client, anonymous: httpx.Client
) -> None:
    campaign = make_campaign(api)
    assert anonymous.get(events_url(campaign["id"])).status_code == 401
    assert api.get(events_url(999), headers={"Accept": "text/event-stream"}).status_code == 404
    other = make_campaign(api, name="other")
    stray = make_attempt(api, other["id"])
    wrong = api.get(events_url(campaign["id"], view="attempt", attempt=str(stray["id"])))
    assert wrong.status_code == 404
    assert api.get(events_url(campaign["id"], view="bogus")).status_code == 422


def test_pages_get_the_same_partials_they_include(api: httpx.Client) -> None:
    campaign = make_campaign(api)
    reader = SSEReader(api, events_url(campaign["id"], view="campaign"))
    make_attempt(api, campaign["id"], title="Torch <symm> mem")
    timeline = reader.until(lambda m: m.event == "timeline")
    assert timeline.data.startswith('<section class="timeline" id="timeline"')
    assert "Torch &lt;symm&gt; mem" in timeline.data and "<symm>" not in timeline.data
    # The new-attempt form's "Retest of" and "Blocked by" choices gain the attempt too; as
    # the last message of the batch it carries the event id.
    choices = reader.until(lambda m: m.event == "attempt-choices")
    assert choices.data.startswith('<div id="attempt-choices"')
    assert choices.data.count("Torch &lt;symm&gt; mem") == 2
    assert choices.id
    reader.close()


def test_a_listener_too_far_behind_is_told_to_reload(api: httpx.Client, server: LiveServer) -> None:
    from app.db import session_scope
    from app.models import LiveEvent

    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    # The campaign's own event (made: the campaign list hears of it), then the attempt's.
    first = SSEReader(api, events_url(campaign["id"], after="0")).until(
        lambda m: m.event == "attempt"
    )
    with session_scope(server.app.state.engine) as session:
        for _ in range(6_000):
            session.add(
                LiveEvent(campaign_id=campaign["id"], kind="attempt", attempt_id=attempt["id"])
            )
    late = SSEReader(api, events_url(campaign["id"]), headers={"Last-Event-ID": first.id or ""})
    assert late.next(timeout=10).event == "reload"


def test_publishing_never_waits_for_listeners() -> None:
    """Publishers are the API's and the tailer's threads: each sets every listener's flag and
    goes on, whatever the listeners' loop is doing; many wake-ups read as one."""
    import asyncio
    import threading

    from app.live import Bus

    bus = Bus()
    listening, release = threading.Event(), threading.Event()
    outcome: list[tuple[list[bool], list[bool]]] = []

    async def scenario() -> tuple[list[bool], list[bool]]:
        with bus.listen(1) as first, bus.listen(1) as second:
            listening.set()
            release.wait(30)  # the loop is blocked: no listener reads meanwhile
            woken = [await first.wait(1), await second.wait(1)]
            again = [await first.wait(0.05), await second.wait(0.05)]
            return woken, again

    # Its own thread: a browser test's Playwright may own this thread's event loop.
    worker = threading.Thread(target=lambda: outcome.append(asyncio.run(scenario())))
    worker.start()
    assert listening.wait(30)
    publisher = threading.Thread(target=lambda: [bus.publish(1) for _ in range(20_000)])
    publisher.start()
    publisher.join(30)
    published = not publisher.is_alive()
    release.set()
    worker.join(30)
    assert published, "a publisher waited for a listener's loop"
    assert outcome == [([True, True], [False, False])]  # a flag per listener, not a queue
    assert bus.listener_count(1) == 0


def test_the_sqlite_relay_retries_a_failing_look_at_its_pace(tmp_path: Path) -> None:
    from sqlalchemy import event

    from app.db import make_engine
    from app.live import SqliteRelay

    engine = make_engine(f"sqlite:///{tmp_path / 'no-tables.db'}")  # every look fails
    looks: list[float] = []
    event.listen(engine, "before_cursor_execute", lambda *_: looks.append(time.monotonic()))
    relay = SqliteRelay(engine, lambda _campaign: None, every_s=0.2)
    relay.start()
    try:
        deadline = time.monotonic() + 10
        while len(looks) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        relay.stop()
        engine.dispose()
    assert len(looks) >= 4, looks
    # The first look fails before it knows where the events end: still not a busy loop.
    gaps = [later - earlier for earlier, later in itertools.pairwise(looks[:4])]
    assert min(gaps) >= 0.15, gaps
