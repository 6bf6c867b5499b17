"""Every status transition of an attempt, whoever asks (the owner, the ingest, the runner):
which changes each may make, why a change is refused, and what a change writes with it."""

from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import update
from sqlmodel import Session, col

from app import alerts, changes, repo
from app.errors import Conflict
from app.models import Attempt, Status, utcnow
from app.tailing.sources import BadSource, parse_source


class Actor(StrEnum):
    owner = "owner"  # the API and the forms
    ingest = "ingest"  # what the log's diagnosis and figures say
    runner = "runner"  # a server the dashboard launched: started, ready, crashed, measured


S = Status
# PRODUCT.md's lifecycle, as the owner may drive it. Any status may also become `blocked`
# (waiting on another attempt); a blocked attempt goes back into play when unblocked.
_OWNER: dict[Status, frozenset[Status]] = {
    S.proposed: frozenset({S.running, S.measured, S.eliminated}),
    S.running: frozenset({S.ready, S.crashed, S.measured, S.eliminated}),
    S.ready: frozenset({S.measured, S.crashed, S.eliminated}),
    S.measured: frozenset({S.adopted, S.eliminated}),
    S.crashed: frozenset({S.eliminated}),
    S.blocked: frozenset({S.proposed, S.running, S.eliminated}),
    S.adopted: frozenset(),
    S.eliminated: frozenset(),
}
# What a server's own evidence moves: never a verdict (adopted, eliminated), never `blocked`.
_EVIDENCE: dict[Status, frozenset[Status]] = {
    S.running: frozenset({S.ready, S.crashed, S.measured}),
    S.ready: frozenset({S.crashed, S.measured}),
}
_ALLOWED: dict[Actor, dict[Status, frozenset[Status]]] = {
    Actor.owner: _OWNER,
    # The engine served on after what read as fatal: the crash its diagnosis declared is
    # withdrawn (the ingest checks that it declared it).
    Actor.ingest: {**_EVIDENCE, S.crashed: frozenset({S.ready, S.measured})},
    # The runner launches (proposed or blocked become running), then reports like a log;
    # a launch stopped before it was ready learned nothing: its attempt is proposed again.
    Actor.runner: {
        **_EVIDENCE,
        S.running: _EVIDENCE[S.running] | {S.proposed},
        S.proposed: frozenset({S.running}),
        S.blocked: frozenset({S.running}),
    },
}

CLOSED = frozenset({S.adopted, S.eliminated})
# A log is followed while the attempt is in play (a crash's log may still say more).
FOLLOWED = frozenset({S.running, S.ready, S.measured, S.crashed, S.blocked})
_STARTED = frozenset({S.running, S.ready, S.measured, S.crashed})
_NEEDS_MEASUREMENT = frozenset({S.measured, S.adopted})
_TAKES_MEASUREMENTS = frozenset({S.proposed, S.running, S.ready, S.measured})


@dataclass(frozen=True)
class Change:
    """A transition made (`before == after`: nothing to do, nothing written)."""

    attempt_id: int
    before: Status
    after: Status
    by: Actor

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Refusal:
    """A transition refused, with the reason every actor is given in the same words."""

    attempt_id: int
    current: Status
    wanted: Status
    by: Actor
    message: str

    def __str__(self) -> str:
        return self.message


def final(closed: Status) -> str:
    return f"the attempt is already {closed.value}: a verdict is final, retest it instead"


def refusal(current: Status, new: Status, *, by: Actor = Actor.owner) -> str | None:
    """Why `current` cannot become `new` when `by` asks, or None when it can."""
    allowed = _ALLOWED[by].get(current, frozenset())
    if new == current or new in allowed or (by == Actor.owner and new == S.blocked):
        return None
    if current in CLOSED:
        return final(current)
    if new == S.adopted and current != S.measured:
        return f"only a measured attempt can be adopted (this one is {current.value})"
    if current == S.crashed and by == Actor.owner:
        return "a crashed attempt can only be eliminated or retested as a new attempt"
    choices = allowed | ({S.blocked} if by == Actor.owner else set())
    named = ", ".join(sorted(s.value for s in choices)) or "none"
    return f"cannot go from {current.value} to {new.value} (allowed: {named})"


def apply(session: Session, attempt: Attempt, new: Status, *, by: Actor) -> Change | Refusal:
    """Move the attempt to `new` if `by` may, in the caller's transaction: the timestamps,
    the live event and the tailer's second look (is the log still followed?) come with it."""
    assert attempt.id is not None
    current = Status(attempt.status)
    reason = refusal(current, new, by=by)
    needs_measurement = reason is None and new != current and new in _NEEDS_MEASUREMENT
    if needs_measurement and not repo.count_measurements(session, attempt_id=attempt.id):
        reason = f"attempt {attempt.id} has no measurement yet: cannot be {new.value}"
    if reason is not None:
        return Refusal(attempt.id, current, new, by, reason)
    change = Change(attempt.id, current, new, by)
    if not change.changed:
        return change
    # Only from the status read: two verdicts asked at once (an eliminate and an adopt from
    # two terminals) both read `measured`, and the second must not overwrite the first.
    guarded = (
        update(Attempt)
        .where(col(Attempt.id) == attempt.id, col(Attempt.status) == current)
        .values(status=new)
        .execution_options(synchronize_session=False)
    )
    if session.exec(guarded).rowcount != 1:
        return Refusal(
            attempt.id, current, new, by,
            f"attempt {attempt.id} changed while this was asked (it is no longer "
            f"{current.value}): nothing was done, look at it again",
        )  # fmt: skip
    now = utcnow()
    attempt.status = new
    if new in _STARTED and attempt.started_at is None:
        attempt.started_at = now
    if new in CLOSED:
        attempt.closed_at = now
    attempt.updated_at = now
    session.add(attempt)
    changes.record(session, attempt.campaign_id, "attempt", attempt_id=attempt.id)
    changes.follow_up(session, attempt.id)
    alerts.on_status(session, attempt, new)
    return change


def require(session: Session, attempt: Attempt, new: Status, *, by: Actor) -> Change:
    """`apply`, a refusal raised as a 409."""
    result = apply(session, attempt, new, by=by)
    if isinstance(result, Refusal):
        raise Conflict(result.message)
    return result


def is_closed(attempt: Attempt) -> bool:
    return Status(attempt.status) in CLOSED


def is_followed(attempt: Attempt) -> bool:
    return attempt.source is not None and Status(attempt.status) in FOLLOWED


def measurement_refusal(attempt: Attempt) -> str | None:
    """Why the attempt takes no more benchmark runs, or None."""
    if Status(attempt.status) in _TAKES_MEASUREMENTS:
        return None
    return f"attempt {attempt.id} is {attempt.status}: it takes no more measurements"


def metric_refusal(attempt: Attempt) -> str | None:
    """Why the attempt's metric cannot be replaced by hand, or None."""
    if not is_closed(attempt):
        return None
    return f"attempt {attempt.id} is {attempt.status}: its metric is final"


def source_refusal(attempt: Attempt) -> str | None:
    """Why no log can be attached to the attempt, or None."""
    if not is_closed(attempt):
        return None
    return f"attempt {attempt.id} is {attempt.status}: no log to attach"


def after_measurement(session: Session, attempt: Attempt, *, by: Actor) -> Change | Refusal:
    """A figure arrived: an attempt still in play (not crashed, not blocked) is measured."""
    if Status(attempt.status) in (S.proposed, S.running, S.ready):
        return apply(session, attempt, S.measured, by=by)
    return Change(attempt.id or 0, Status(attempt.status), Status(attempt.status), by)


def _another_file(old: str, new: str) -> bool:
    try:
        return parse_source(old).path != parse_source(new).path
    except BadSource:  # (a source stored before today's rules: another file, to be safe)
        return old != new


def attach_log(session: Session, attempt: Attempt, source: str, *, by: Actor) -> Change | Refusal:
    """Follow `source` as the attempt's log (the owner attaching one, the runner launching a
    server): a waiting attempt runs, and after commit the tailer follows the new log."""
    reason = source_refusal(attempt)
    if reason is not None:
        return Refusal(attempt.id or 0, Status(attempt.status), Status(attempt.status), by, reason)
    if attempt.source is not None and _another_file(attempt.source, source) and attempt.id:
        # Another log is another story: what the old one said is not this one's. (The same
        # path on another host, or by another scheme, is the same log said to be elsewhere.)
        repo.forget_log(session, attempt_id=attempt.id)
        attempt.diagnosis = attempt.fingerprint = None
        attempt.logged_args = attempt.environment = None
        session.flush()
        status = Status(attempt.status)
        unproven = status in (S.ready, S.crashed) or (
            status == S.measured and not repo.count_measurements(session, attempt_id=attempt.id)
        )
        if unproven:
            # what the old log proved (ready, crashed, its figures) the new one must prove again
            attempt.status = S.running
    attempt.source = source
    session.add(attempt)
    changes.follow_up(session, attempt.id)  # another log: the tail restarts on it
    if Status(attempt.status) in (S.proposed, S.blocked):
        return apply(session, attempt, S.running, by=by)
    return Change(attempt.id or 0, Status(attempt.status), Status(attempt.status), by)
