"""One lifecycle for every actor: the owner's API and forms, the ingest and the runner ask
app/lifecycle.py, get the same refusal in the same words, and each change it makes writes
its live event and wakes the tailer through the one after-commit hook."""

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy
from sqlalchemy import text
from sqlmodel import col, select

from app import changes, lifecycle, migrate
from app.db import make_engine, session_scope
from app.ingest import AttemptTail
from app.lifecycle import Actor, Change, Refusal
from app.models import Attempt, Campaign, LiveEvent, Measurement, Status
from app.tailing.events import Data, Event, Idle, Opened
from tests.conftest import LiveServer
from tests.helpers import (
    attempt_of,
    csrf_of,
    make_attempt,
    make_campaign,
    patch,
    stored_attempt,
    stored_log,
    tail_state,
    wait_for,
)

FINAL = "the attempt is already eliminated: a verdict is final, retest it instead"
CRASH_LOG = b'Traceback (most recent call last):\n  File "serve.py", line 3\nKeyError: 12\n'


class Once:
    """A source above the source interface: the whole log, then the caught-up moment."""

    def __init__(self, log: bytes) -> None:
        self.log = log

    def follow(self, offset: int, identity: str | None, stop: threading.Event) -> Iterator[Event]:
        yield Opened("once", len(self.log))
        yield Data(0, self.log)
        yield Idle(len(self.log))


def test_a_refusal_is_the_same_from_the_api_the_form_and_the_ingest(
    api: httpx.Client,
    browser: httpx.Client,
    server: LiveServer,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    log = tmp_path / "quiet.log"
    log.write_bytes(b"")
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"], source=f"file://{log}")
    wait_for(lambda: tail_state(api, attempt["id"]) == "connected", what="followed")
    assert patch(api, attempt["id"], status="eliminated", verdict="dead end").status_code == 200
    wait_for(lambda: tail_state(api, attempt["id"]) == "stopped", what="no longer followed")

    by_api = patch(api, attempt["id"], status="crashed")
    assert by_api.status_code == 409
    assert by_api.json()["detail"] == FINAL

    page = browser.get(f"/attempts/{attempt['id']}").text
    form = {"csrf_token": csrf_of(page), "status": "crashed"}
    by_form = browser.post(f"/attempts/{attempt['id']}/status", data=form)
    assert by_form.status_code == 409
    assert FINAL in by_form.text

    # The ingest reads a crash in the log of the attempt the owner closed meanwhile.
    engine = server.app.state.engine
    tail = AttemptTail(engine, attempt["id"], Once(CRASH_LOG), stall_after_s=300)
    with caplog.at_level(logging.INFO, logger="app.ingest"):
        tail.start()
        tail.thread.join(30)
    assert not tail.thread.is_alive()
    assert f"attempt {attempt['id']} stays eliminated: {FINAL}" in caplog.messages
    after = attempt_of(api, attempt["id"])
    assert after["status"] == "eliminated"
    assert after["diagnosis"]["root_cause"] == "KeyError: 12"  # read, but the verdict stands


def test_each_actor_may_make_only_its_own_transitions() -> None:
    # Verdicts are the owner's: neither the ingest nor the runner adopts or eliminates.
    assert lifecycle.refusal(Status.measured, Status.adopted, by=Actor.owner) is None
    assert lifecycle.refusal(Status.measured, Status.adopted, by=Actor.runner) == (
        "cannot go from measured to adopted (allowed: none)"
    )
    assert lifecycle.refusal(Status.running, Status.eliminated, by=Actor.ingest) == (
        "cannot go from running to eliminated (allowed: crashed, measured, ready)"
    )
    # Only the ingest withdraws a crash its own diagnosis declared; the owner retests.
    assert lifecycle.refusal(Status.crashed, Status.ready, by=Actor.ingest) is None
    assert lifecycle.refusal(Status.crashed, Status.ready, by=Actor.owner) == (
        "a crashed attempt can only be eliminated or retested as a new attempt"
    )
    # The runner launches; the ingest never does.
    assert lifecycle.refusal(Status.proposed, Status.running, by=Actor.runner) is None
    assert lifecycle.refusal(Status.proposed, Status.running, by=Actor.ingest) is not None
    # Blocking is the owner's, from anywhere.
    assert lifecycle.refusal(Status.adopted, Status.blocked, by=Actor.owner) is None
    assert lifecycle.refusal(Status.running, Status.blocked, by=Actor.runner) is not None


def test_the_runner_launches_through_the_lifecycle_and_the_tailer_follows(
    api: httpx.Client, server: LiveServer, tmp_path: Path
) -> None:
    log = tmp_path / "launched.log"
    log.write_bytes(b"server starting\n")
    campaign = make_campaign(api)
    attempt = make_attempt(api, campaign["id"])
    engine = server.app.state.engine
    with session_scope(engine) as session:
        row = session.get(Attempt, attempt["id"])
        assert row is not None
        before = _newest_event(session, campaign["id"])
        launched = lifecycle.attach_log(session, row, f"file://{log}", by=Actor.runner)
        adopted = lifecycle.apply(session, row, Status.adopted, by=Actor.runner)
    assert launched == Change(attempt["id"], Status.proposed, Status.running, Actor.runner)
    assert isinstance(adopted, Refusal)
    # Committed outside any request: the one hook still wakes the tailer, which follows.
    wait_for(lambda: stored_log(api, attempt["id"]) == b"server starting\n", what="followed")
    now = attempt_of(api, attempt["id"])
    assert now["status"] == "running" and now["started_at"] is not None
    with session_scope(engine) as session:
        kinds = session.exec(
            select(LiveEvent.kind, LiveEvent.attempt_id).where(
                LiveEvent.campaign_id == campaign["id"], col(LiveEvent.id) > before
            )
        ).all()
    assert ("attempt", attempt["id"]) in kinds


def _newest_event(session: object, campaign_id: int) -> int:
    ids = session.exec(  # type: ignore[attr-defined]
        select(LiveEvent.id).where(LiveEvent.campaign_id == campaign_id)
    ).all()
    return max(ids, default=0)


@pytest.mark.both_databases
def test_the_hook_runs_once_per_commit_that_recorded_and_never_after_a_rollback(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'hook.db'}"
    migrate.upgrade(url)
    engine, other = make_engine(url), make_engine(url)
    calls: list[tuple[frozenset[int], frozenset[int], frozenset[int]]] = []
    changes.on_commit(
        engine, lambda campaigns, attempts, changed: calls.append((campaigns, attempts, changed))
    )
    try:
        with session_scope(engine) as session:
            campaign = Campaign(name="hooked")
            session.add(campaign)
            session.flush()
            assert campaign.id is not None
            campaign_id = campaign.id
        assert calls == [], "nothing recorded: nothing to tell"

        with session_scope(engine) as session:
            changes.record(session, campaign_id, "campaign")
            changes.record(session, campaign_id, "campaign")  # the same event: written once
            changes.record(session, campaign_id, "log", attempt_id=7, start_offset=0, end_offset=4)
            changes.follow_up(session, 7)
            changes.record(session, campaign_id, "attempt", attempt_id=9)  # changed, not followed
        assert calls == [(frozenset({campaign_id}), frozenset({7}), frozenset({7, 9}))]

        with pytest.raises(RuntimeError), session_scope(engine) as session:
            changes.record(session, campaign_id, "campaign")
            changes.follow_up(session, 8)
            raise RuntimeError("refused halfway")
        assert len(calls) == 1, "a rolled-back change is never published"

        # Another engine on the same file (another app in this process) runs no hook of it.
        with session_scope(other) as session:
            changes.record(session, campaign_id, "campaign")
        assert len(calls) == 1

        with session_scope(engine) as session:
            rows = session.exec(
                select(LiveEvent.kind).where(LiveEvent.campaign_id == campaign_id)
            ).all()
        assert sorted(rows) == ["attempt", "campaign", "campaign", "log"]  # once a transaction
    finally:
        engine.dispose()
        other.dispose()


@pytest.fixture
def pg_engine(database_url: str) -> Iterator[Any]:
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has one writer at a time: its ids come in commit order")
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


def _campaign_with_attempt(engine: Any) -> tuple[int, int]:
    with session_scope(engine) as session:
        return stored_attempt(session, campaign="two writers", title="followed")


def _waiting_locks(engine: Any, locktype: str) -> int:
    with engine.connect() as probe:
        # pg_locks is the whole server's: only the waits of this database's sessions count.
        query = (
            "SELECT count(*) FROM pg_locks WHERE locktype = :type AND NOT granted AND pid IN"
            " (SELECT pid FROM pg_stat_activity WHERE datname = current_database())"
        )
        return int(probe.execute(text(query), {"type": locktype}).scalar_one())


@pytest.mark.both_databases
def test_a_campaigns_event_ids_commit_in_order(pg_engine: Any) -> None:
    """A reader that saw id N+1 committed must never see id N commit afterwards: on
    PostgreSQL ids are handed out at insert, so the campaign's event writers take turns
    from the insert to the commit."""
    campaign_id, _ = _campaign_with_attempt(pg_engine)
    inserted, go = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first_writer() -> None:
        try:
            with session_scope(pg_engine) as session:

                @sqlalchemy.event.listens_for(session, "after_flush")
                def hold(flushed: Any, _context: Any) -> None:
                    if any(isinstance(row, LiveEvent) for row in flushed.new):
                        inserted.set()  # its id is handed out; not committed yet
                        assert go.wait(10)

                changes.record(session, campaign_id, "campaign")
        except BaseException as error:  # the main thread reports it
            errors.append(error)

    def second_writer() -> None:
        with session_scope(pg_engine) as other:
            changes.record(other, campaign_id, "note", note_id=1)

    first = threading.Thread(target=first_writer)
    first.start()
    assert inserted.wait(10), "the first writer never inserted its event"
    second = threading.Thread(target=second_writer)
    second.start()
    deadline = time.monotonic() + 10
    while _waiting_locks(pg_engine, "advisory") == 0:
        assert second.is_alive(), "the second writer committed ahead of the first"
        assert time.monotonic() < deadline, "the second writer never waited its turn"
        time.sleep(0.02)
    go.set()
    first.join(10)
    second.join(10)
    assert not errors and not first.is_alive() and not second.is_alive()
    with session_scope(pg_engine) as session:
        rows = session.exec(
            select(LiveEvent)
            .where(LiveEvent.campaign_id == campaign_id)
            .order_by(col(LiveEvent.id))
        ).all()
    assert [row.kind for row in rows] == ["campaign", "note"]


@pytest.mark.both_databases
def test_a_writer_holding_a_row_and_one_waiting_for_it_both_commit(pg_engine: Any) -> None:
    """The owner's PATCH holds the attempt's row; the tailer, with its log event recorded,
    waits for that row. The turn to write events is taken only at commit, after every
    other change: neither waits for the other in a circle (PostgreSQL would abort one:
    the owner's verdict, lost to "deadlock detected")."""
    campaign_id, attempt_id = _campaign_with_attempt(pg_engine)
    errors: list[BaseException] = []

    def tailer() -> None:
        try:
            with session_scope(pg_engine) as session:
                changes.record(session, campaign_id, "log", attempt_id=attempt_id,
                               start_offset=0, end_offset=10)  # fmt: skip
                attempt = session.get(Attempt, attempt_id)
                assert attempt is not None
                attempt.diagnosis = {"bytes_read": 10}
                session.flush()  # waits for the owner's row
        except BaseException as error:
            errors.append(error)

    with session_scope(pg_engine) as owner:
        attempt = owner.get(Attempt, attempt_id)
        assert attempt is not None
        attempt.verdict = "works"
        owner.flush()  # the row is the owner's now
        thread = threading.Thread(target=tailer)
        thread.start()
        deadline = time.monotonic() + 10
        while _waiting_locks(pg_engine, "transactionid") == 0:
            assert thread.is_alive(), "the tailer did not wait for the owner's row"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        changes.record(owner, campaign_id, "attempt", attempt_id=attempt_id)
    thread.join(10)
    assert not errors and not thread.is_alive()
    with session_scope(pg_engine) as session:
        stored = session.get(Attempt, attempt_id)
        assert stored is not None and stored.verdict == "works"
        assert stored.diagnosis == {"bytes_read": 10}
        kinds = session.exec(
            select(LiveEvent.kind)
            .where(LiveEvent.campaign_id == campaign_id)
            .order_by(col(LiveEvent.id))
        ).all()
    assert list(kinds) == ["attempt", "log"]


@pytest.mark.both_databases
def test_two_verdicts_asked_at_once_the_second_is_refused_not_written_over(
    database_url: str,
) -> None:
    # An eliminate and an adopt from two terminals both read `measured`: the first to write
    # wins, and the second is told, whatever the order of their reads and writes.
    engine = make_engine(database_url)
    try:
        with session_scope(engine) as session:
            _, attempt_id = stored_attempt(session, campaign="two verdicts", title="measured")
            attempt = session.get(Attempt, attempt_id)
            assert attempt is not None
            attempt.status = Status.measured
            session.add(Measurement(attempt_id=attempt_id, value=100.0))
        with session_scope(engine) as first, session_scope(engine) as second:
            eliminating = first.get(Attempt, attempt_id)
            adopting = second.get(Attempt, attempt_id)
            assert eliminating is not None and adopting is not None
            assert adopting.status == Status.measured  # read before the other's write
            assert isinstance(
                lifecycle.apply(first, eliminating, Status.eliminated, by=Actor.owner), Change
            )
            eliminating.verdict = "race e"
            first.commit()
            refused = lifecycle.apply(second, adopting, Status.adopted, by=Actor.owner)
            assert isinstance(refused, Refusal) and "changed while" in refused.message
        with session_scope(engine) as session:
            stored = session.get(Attempt, attempt_id)
            assert stored is not None
            assert (stored.status, stored.verdict) == (Status.eliminated, "race e")
    finally:
        engine.dispose()
