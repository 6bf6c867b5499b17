"""The event loop never waits on the database: a form whose database work is held (by a gate
the test controls) leaves every other request answering. And a request holds at most one
pooled connection at a time, counted by the pool's own checkout and checkin events."""

import contextvars
import itertools
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from app.config import Settings
from app.db import session_scope
from app.tailing.events import Event, Opened
from tests.conftest import OWNER_TOKEN, LiveServer, owner_client
from tests.helpers import (
    csrf_of,
    make_attempt,
    make_campaign,
    stored_log,
    tail_state,
    wait_for,
)
from tests.sshd import Sshd

# Which request the code runs for: set by the middleware below, carried into the worker
# threads that run handlers and dependencies (anyio copies the context into them).
REQUEST: contextvars.ContextVar[str | None] = contextvars.ContextVar("request", default=None)
_numbers = itertools.count()


class Tagged:
    """Pure ASGI middleware: names each HTTP request for the database probes."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = REQUEST.set(f"{scope['method']} {scope['path']} #{next(_numbers)}")
        try:
            await self.app(scope, receive, send)
        finally:
            REQUEST.reset(token)


@pytest.fixture
def tagged(settings: Settings) -> Iterator[LiveServer]:
    live = LiveServer(settings)
    live.app.add_middleware(Tagged)
    live.start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def owner(tagged: LiveServer) -> Iterator[httpx.Client]:
    with owner_client(tagged.url) as client:
        yield client


@pytest.fixture
def page_owner(tagged: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=tagged.url, timeout=30, headers={"Accept": "text/html"}) as client:
        assert client.get("/login", params={"token": OWNER_TOKEN}).status_code == 303
        yield client


class Gate:
    """Holds the first statement that one request sends to the database until released."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.prefix: str | None = None
        self.entered = threading.Event()
        self.release = threading.Event()
        event.listen(engine, "before_cursor_execute", self._hold)

    def arm(self, method_and_path: str) -> None:
        self.prefix = method_and_path + " #"
        self.entered.clear()
        self.release.clear()

    def _hold(self, *_: Any) -> None:
        tag = REQUEST.get()
        if self.prefix and tag and tag.startswith(self.prefix):
            self.prefix = None
            self.entered.set()
            assert self.release.wait(30), "the test never released the gate"

    def close(self) -> None:
        event.remove(self.engine, "before_cursor_execute", self._hold)


FormCase = Callable[[dict[str, Any]], tuple[str, dict[str, str], int]]
FORMS: dict[str, FormCase] = {
    "new campaign": lambda ids: ("/campaigns", {"name": "held"}, 303),
    "edit campaign": lambda ids: (f"/campaigns/{ids['c']}/edit", {"name": "renamed"}, 303),
    "new attempt": lambda ids: (f"/campaigns/{ids['c']}/attempts", {"title": "held"}, 303),
    "campaign note": lambda ids: (f"/campaigns/{ids['c']}/notes", {"body": "held"}, 303),
    "share": lambda ids: (f"/campaigns/{ids['c']}/shares", {}, 200),
    "status": lambda ids: (f"/attempts/{ids['a']}/status", {"status": "running"}, 303),
    "edit attempt": lambda ids: (f"/attempts/{ids['a']}/edit", {"title": "renamed"}, 303),
    "measurement": lambda ids: (f"/attempts/{ids['a']}/measurements", {"value": "81.5"}, 303),
    "attempt note": lambda ids: (f"/attempts/{ids['a']}/notes", {"body": "held"}, 303),
    "trust host key": lambda ids: (f"/attempts/{ids['a']}/trust-host-key", {}, 409),
    "edit note": lambda ids: (f"/notes/{ids['n']}/edit", {"body": "edited"}, 303),
    "delete note": lambda ids: (f"/notes/{ids['n']}/delete", {}, 303),
    "delete attempt": lambda ids: (f"/attempts/{ids['a']}/delete", {"confirm": "yes"}, 303),
    "delete campaign": lambda ids: (f"/campaigns/{ids['c']}/delete", {"confirm": "yes"}, 303),
    "refused form": lambda ids: (f"/attempts/{ids['a']}/measurements", {"value": "x"}, 422),
}


def _objects(api: httpx.Client) -> dict[str, Any]:
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    note = api.post(f"/api/attempts/{attempt['id']}/notes", json={"body": "n"}).json()
    return {"c": campaign["id"], "a": attempt["id"], "n": note["id"]}


def test_a_form_whose_database_work_is_held_blocks_no_other_request(
    tagged: LiveServer, owner: httpx.Client, page_owner: httpx.Client
) -> None:
    for form in FORMS:
        _held_form_leaves_others_answering(form, tagged, owner, page_owner)


def _held_form_leaves_others_answering(
    form: str, tagged: LiveServer, owner: httpx.Client, page_owner: httpx.Client
) -> None:
    ids = _objects(owner)
    path, data, expected = FORMS[form](ids)
    csrf = csrf_of(page_owner.get(f"/attempts/{ids['a']}").text)
    gate = Gate(tagged.app.state.engine)
    answers: list[httpx.Response] = []
    poster = threading.Thread(
        target=lambda: answers.append(page_owner.post(path, data={**data, "csrf_token": csrf}))
    )
    try:
        gate.arm(f"POST {path}")
        poster.start()
        assert gate.entered.wait(30), f"{form}: the form never reached the database"
        # Held inside its database work: were it on the event loop, nothing else would answer.
        with httpx.Client(base_url=tagged.url, timeout=10, headers=owner.headers) as other:
            assert other.get(f"/api/campaigns/{ids['c']}").status_code == 200, form
            assert other.get("/openapi.json").status_code == 200, form
        assert not answers, f"{form}: answered before its database work was released"
    finally:
        gate.release.set()
        poster.join(30)
        gate.close()
    assert not poster.is_alive(), form
    assert answers[0].status_code == expected, (form, answers[0].text[:300])


class ConnectionCount:
    """Per request: connections held now, and the most held at once."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.held: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self._lock = threading.Lock()
        event.listen(engine, "checkout", self._checkout)
        event.listen(engine, "checkin", self._checkin)

    def _checkout(self, _dbapi: Any, record: Any, _proxy: Any) -> None:
        tag = REQUEST.get()
        record.info["request"] = tag
        if tag is not None:
            with self._lock:
                self.held[tag] += 1
                self.peak[tag] = max(self.peak[tag], self.held[tag])

    def _checkin(self, _dbapi: Any, record: Any) -> None:
        tag = record.info.pop("request", None)
        if tag is not None:
            with self._lock:
                self.held[tag] -= 1

    def close(self) -> None:
        event.remove(self.engine, "checkout", self._checkout)
        event.remove(self.engine, "checkin", self._checkin)

    def of(self, method_and_path: str) -> list[int]:
        with self._lock:
            return [n for tag, n in self.peak.items() if tag.startswith(method_and_path + " #")]


def test_the_probe_sees_a_second_connection_when_one_is_taken(tagged: LiveServer) -> None:
    engine = tagged.app.state.engine
    count = ConnectionCount(engine)
    token = REQUEST.set("GET /nested #probe")
    try:
        with session_scope(engine) as outer, session_scope(engine) as inner:
            outer.connection()
            inner.connection()
    finally:
        REQUEST.reset(token)
        count.close()
    assert count.of("GET /nested") == [2]


def test_every_request_holds_at_most_one_connection(
    tagged: LiveServer, owner: httpx.Client, page_owner: httpx.Client
) -> None:
    count = ConnectionCount(tagged.app.state.engine)
    try:
        ids = _objects(owner)
        owner.post(f"/api/attempts/{ids['a']}/measurements", json={"value": 80.0})
        pages = ["/", f"/campaigns/{ids['c']}", f"/attempts/{ids['a']}"]
        for path in pages:
            assert page_owner.get(path).status_code == 200
            assert page_owner.get(path, headers={"HX-Request": "true"}).status_code == 200
        api_paths = ["/api/campaigns", f"/api/campaigns/{ids['c']}", f"/api/attempts/{ids['a']}"]
        api_paths += [f"/api/attempts/{ids['a']}/log", f"/api/campaigns/{ids['c']}/notes"]
        for path in api_paths:
            assert owner.get(path).status_code == 200
        share = page_owner.post(
            f"/campaigns/{ids['c']}/shares",
            data={"csrf_token": csrf_of(page_owner.get("/").text)},
        )
        assert share.status_code == 200
        csrf = csrf_of(page_owner.get(f"/attempts/{ids['a']}").text)
        for name, case in FORMS.items():
            if name.startswith("delete"):
                continue  # below, once the rest is done
            path, data, expected = case(ids)
            for headers in ({}, {"HX-Request": "true"}):
                answer = page_owner.post(path, data={**data, "csrf_token": csrf}, headers=headers)
                # Asked twice, some are refused the second time (running once measured).
                assert answer.status_code < 500, (name, answer.text[:300])
        for name in ("delete note", "delete attempt", "delete campaign"):
            path, data, expected = FORMS[name](ids)
            answer = page_owner.post(path, data={**data, "csrf_token": csrf})
            assert answer.status_code == expected, (name, answer.text[:300])
        peaks = {tag: n for tag, n in count.peak.items()}
    finally:
        count.close()
    assert peaks, "no request was seen taking a connection"
    assert all(n <= 1 for n in peaks.values()), {t: n for t, n in peaks.items() if n > 1}
    # The probe counts what it should: each page read its data through one connection.
    assert all(n == 1 for n in count.of(f"GET /campaigns/{ids['c']}")), peaks


class Deaf:
    """A source above the source interface whose read ignores the stop asked of it until
    released, like a read stuck on a host that went away."""

    def __init__(self) -> None:
        self.reading = threading.Event()
        self.release = threading.Event()

    def follow(self, offset: int, identity: str | None, stop: threading.Event) -> Iterator[Event]:
        yield Opened("deaf", 0)
        self.reading.set()
        assert self.release.wait(30), "the test never released the read"


@pytest.mark.parametrize("change", ["close", "new source", "delete"])
def test_no_request_waits_for_a_tail_to_end(
    change: str,
    tagged: LiveServer,
    owner: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    deaf = Deaf()
    monkeypatch.setattr(tagged.app.state.tailer, "source_factory", lambda _url: deaf)
    log, other = tmp_path / "stuck.log", tmp_path / "other.log"
    log.write_bytes(b"")
    other.write_bytes(b"")
    campaign = make_campaign(owner)
    attempt = make_attempt(owner, campaign["id"], source=f"file://{log}")
    path = f"/api/attempts/{attempt['id']}"
    try:
        assert deaf.reading.wait(30), "the tail never started"
        # Each change stops the tail: the answer does not wait for the stuck read to end.
        if change == "close":
            answer = owner.patch(path, json={"status": "eliminated", "verdict": "x"}, timeout=5)
        elif change == "new source":
            answer = owner.patch(path, json={"source": f"file://{other}"}, timeout=5)
        else:
            answer = owner.delete(path, timeout=5)
        assert answer.status_code in (200, 204), answer.text
        assert not deaf.release.is_set()
        if change != "delete":
            assert tail_state(owner, attempt["id"]) == "connected", "answered while still read"
    finally:
        deaf.release.set()
    if change == "close":
        wait_for(lambda: tail_state(owner, attempt["id"]) == "stopped", what="the tail ended")


def test_trusting_a_host_key_holds_one_connection_and_waits_for_no_tail(
    ssh_settings: Settings, sshd: Sshd, tmp_path: Path
) -> None:
    sshd.known_hosts.write_text("")  # the test sshd's key is nobody's yet
    log = tmp_path / "server.log"
    log.write_bytes(b"[2026-02-27 13:21:27] Load weight begin.\n")
    live = LiveServer(ssh_settings)
    live.app.add_middleware(Tagged)
    live.start()
    try:
        with owner_client(live.url) as api:
            campaign = make_campaign(api)
            attempt = make_attempt(api, campaign["id"], source=f"ssh://{sshd.alias}{log}")
            wait_for(
                lambda: tail_state(api, attempt["id"]) == "host key not trusted",
                what="the unknown key refused",
            )
            count = ConnectionCount(live.app.state.engine)
            try:
                trusted = api.post(f"/api/attempts/{attempt['id']}/trust-host-key", timeout=5)
            finally:
                count.close()
            assert trusted.status_code == 200, trusted.text
            # The tail restarts in the tailer's thread, not inside the request's session.
            assert count.of(f"POST /api/attempts/{attempt['id']}/trust-host-key") == [1]
            wait_for(lambda: stored_log(api, attempt["id"]) == log.read_bytes(), what="followed")
    finally:
        live.stop()
