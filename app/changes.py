"""Live events: their one writer, in the transaction of the change they report, and the one
after-commit hook that publishes them (`bus.publish`) and wakes the tailer and the runner.

Whoever changes something (a request, the ingest, the tailer, the runner) calls `record`
in its transaction; nobody publishes by hand. The app installs its hook on its engine with
`on_commit`, so every session of that engine, and only of that engine, runs it on commit.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Engine, event
from sqlalchemy.orm import Session

from app.live import take_event_turn
from app.models import LiveEvent

# The app's hook rides on its engine, the one thing every unit of work is given: two apps
# in one process (the tests, the demo) never run each other's.
_HOOK_OPTION = "campaign_dash_after_commit"
_PENDING = "campaign_dash_pending"
_WAKE_OPTION = "campaign_dash_wakes"

AfterCommit = Callable[[frozenset[int], frozenset[int], frozenset[int]], None]
"""Called with the campaigns that have new live events, the attempts whose log may be
followed or stopped now, and the attempts that changed (an event recorded for them, or
followed up: what a run's driver waits for). It runs on the committing thread, still
holding the connection: it must only set flags (publish, wake), never wait or query."""


@dataclass
class _Pending:
    campaigns: set[int] = field(default_factory=set)
    attempts: set[int] = field(default_factory=set)
    changed: set[int] = field(default_factory=set)
    events: dict[tuple[object, ...], LiveEvent] = field(default_factory=dict)
    wakes: set[str] = field(default_factory=set)


def _pending(session: Session) -> _Pending:
    pending = session.info.get(_PENDING)
    if pending is None:
        pending = session.info[_PENDING] = _Pending()
    return pending


def record(
    session: Session,
    campaign_id: int,
    kind: str,
    *,
    attempt_id: int | None = None,
    note_id: int | None = None,
    start_offset: int | None = None,
    end_offset: int | None = None,
) -> None:
    """An event for live pages, in the same transaction as the change it reports. Events
    carry ids, not state: the same one twice in a transaction is written once.

    The row is inserted when the transaction commits, after its other changes: see
    `_insert_events`."""
    pending = _pending(session)
    if attempt_id is not None:
        pending.changed.add(attempt_id)
    key = (campaign_id, kind, attempt_id, note_id, start_offset, end_offset)
    if key in pending.events:
        return
    pending.campaigns.add(campaign_id)
    pending.events[key] = LiveEvent(
        campaign_id=campaign_id,
        kind=kind,
        attempt_id=attempt_id,
        note_id=note_id,
        start_offset=start_offset,
        end_offset=end_offset,
    )


def follow_up(session: Session, attempt_id: int | None) -> None:
    """After commit, the tailer looks at this attempt again (its source or status changed:
    its log may now be followed, restarted or stopped)."""
    if attempt_id is not None:
        pending = _pending(session)
        pending.attempts.add(attempt_id)
        pending.changed.add(attempt_id)


def wake_after_commit(session: Session, name: str) -> None:
    """After commit, the worker `on_wake` named `name` wakes (an alert was queued, say)."""
    _pending(session).wakes.add(name)


def on_wake(engine: Engine, name: str, wake: Callable[[], None]) -> None:
    """`wake` (which only sets a flag) runs after every commit that asked for `name`."""
    wakes = dict(engine.get_execution_options().get(_WAKE_OPTION) or {})
    wakes[name] = wake
    engine.update_execution_options(**{_WAKE_OPTION: wakes})


def on_commit(engine: Engine, hook: AfterCommit) -> None:
    """Every session on `engine` calls `hook` after a commit that recorded something."""
    engine.update_execution_options(**{_HOOK_OPTION: hook})


@event.listens_for(Session, "before_commit")
def _insert_events(session: Session) -> None:
    """The transaction's events, inserted last. On PostgreSQL, ids are handed out at insert,
    not at commit: a reader that saw id 11 committed could move past id 10, committed a
    moment later. So a campaign's event writers take turns from the insert to the commit
    (`take_event_turn`). Everything else is flushed before the turn is taken: a writer
    holding a turn never waits for a row another writer holds while waiting for the turn."""
    pending: _Pending | None = session.info.get(_PENDING)
    if pending is None or not pending.events:
        return
    session.flush()
    for campaign_id in sorted({e.campaign_id for e in pending.events.values()}):
        take_event_turn(session, campaign_id)  # in one order: two writers never deadlock
    session.add_all(pending.events.values())
    pending.events = {}
    session.flush()


@event.listens_for(Session, "after_commit")
def _after_commit(session: Session) -> None:
    pending: _Pending | None = session.info.pop(_PENDING, None)
    if pending is None:
        return
    bind = session.get_bind()
    if pending.wakes:
        wakes = bind.get_execution_options().get(_WAKE_OPTION) or {}
        for name in pending.wakes:
            if name in wakes:
                wakes[name]()
    if not (pending.campaigns or pending.attempts):
        return
    hook: AfterCommit | None = bind.get_execution_options().get(_HOOK_OPTION)
    if hook is not None:
        hook(frozenset(pending.campaigns), frozenset(pending.attempts), frozenset(pending.changed))


@event.listens_for(Session, "after_soft_rollback")
def _after_rollback(session: Session, _previous: object) -> None:
    session.info.pop(_PENDING, None)  # nothing was stored: nothing to tell
