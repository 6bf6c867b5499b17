"""What a pivot may have unblocked: when an attempt is adopted (a new stack, say), the
attempts waiting on it and the earlier ones that failed because the stack was the obstacle
are worth another try, with the same command, on the new baseline."""

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from sqlmodel import Session

from app import actions, repo, views
from app.errors import Invalid
from app.models import Attempt, Status
from app.numbers import fmt_number
from app.runner import launching
from app.schemas import AttemptOut, RetestIn
from app.stats import Call

# Failure classes that say the stack, not the idea, stood in the way.
STACK_CLASSES = frozenset({"unsupported_arch", "import_or_version"})
_FAILED = (Status.crashed, Status.eliminated)
_C = TypeVar("_C", bound="_Candidate")


class _Candidate(Protocol):
    """What the rule reads of an attempt: a stored row or its view."""

    @property
    def id(self) -> int | None: ...
    @property
    def status(self) -> Status: ...
    @property
    def diagnosis(self) -> dict[str, Any] | None: ...
    @property
    def stack_blocked(self) -> bool: ...
    @property
    def blocked_by(self) -> int | None: ...
    @property
    def retest_of(self) -> int | None: ...


def changed_the_stack(pivot: AttemptOut) -> bool:
    """Whether adopting it may have moved what the stack stood in the way of: its logged
    environment differs from its baseline's, or one of them is not known. Adopting a flag
    on the same CUDA, torch and engine unblocks nothing an unsupported arch stopped."""
    diff = pivot.env_diff
    return diff is None or bool(diff.changed or diff.added or diff.removed)


def _may_unblock(attempts: Sequence[_C], pivot_id: int, *, stack_moved: bool) -> list[_C]:
    """In the order they were tried: those `blocked_by` the pivot, and, when it moved the
    stack, the crashed or eliminated attempts from before it whose failure's class (or the
    owner's mark) says the stack; none that was already retested after it."""
    retested = {a.retest_of for a in attempts if a.retest_of is not None and (a.id or 0) > pivot_id}
    found = []
    for attempt in attempts:
        if attempt.id == pivot_id or attempt.id in retested:
            continue
        failed_on_stack = (
            stack_moved
            and (attempt.id or 0) < pivot_id
            and Status(attempt.status) in _FAILED
            and (
                attempt.stack_blocked
                or (attempt.diagnosis or {}).get("error_class") in STACK_CLASSES
            )
        )
        if attempt.blocked_by == pivot_id or failed_on_stack:
            found.append(attempt)
    return found


def unblocks(session: Session, attempt_id: int) -> list[Attempt]:
    """What adopting this attempt may unblock (`_may_unblock`)."""
    pivot = actions.require_attempt(session, attempt_id)
    assert pivot.id is not None
    moved = changed_the_stack(views.attempt_view(session, pivot))
    attempts = repo.list_attempts(session, campaign_id=pivot.campaign_id)
    return _may_unblock(attempts, pivot.id, stack_moved=moved)


def standing_offer(attempts: list[AttemptOut]) -> tuple[AttemptOut, list[AttemptOut]] | None:
    """The campaign page's banner: the newest adopted attempt and what it may unblock, while
    some of that is not yet retested (read from the page's own views: no query)."""
    adopted = [a for a in attempts if a.status == Status.adopted]
    if not adopted:
        return None
    pivot = max(adopted, key=lambda a: a.id)
    in_order = sorted(attempts, key=lambda a: a.id)
    offered = _may_unblock(in_order, pivot.id, stack_moved=changed_the_stack(pivot))
    return (pivot, offered) if offered else None


def retest_outcome(original: AttemptOut, retest: AttemptOut) -> str:
    """A retest's result beside its original's: "crashed again, same root cause",
    "measured 92.7, same as the baseline"."""
    status = retest.status
    if status == Status.crashed or (retest.diagnosis or {}).get("crashed"):
        theirs, mine = (original.diagnosis or {}), (retest.diagnosis or {})
        if mine.get("fingerprint") and mine.get("fingerprint") == theirs.get("fingerprint"):
            return "crashed again, same root cause"
        cause = mine.get("root_cause")
        return f"crashed, another way: {cause}" if cause else "crashed"
    if retest.metric_value is not None:
        said = f"measured {fmt_number(retest.metric_value)}"
        call = retest.stats.call
        if call == Call.same:
            return f"{said}, the same as the baseline"
        if call in (Call.better, Call.worse):
            return f"{said}, {call.value} than the baseline"
        return said
    return status.value


def retest_unblocked(session: Session, attempt_id: int, ids: list[int] | None) -> list[Attempt]:
    """A retest of each (all of them, or `ids`), `retest_of` its original; launched, one
    after the other on each host (the runner's queue), where the original was."""
    pivot = actions.require_attempt(session, attempt_id)
    offered = unblocks(session, attempt_id)
    chosen = offered
    if ids is not None:
        known = {a.id for a in offered}
        strays = [i for i in ids if i not in known]
        if strays:
            raise Invalid(
                f"ids: {', '.join(f'#{i}' for i in strays)} not among what #{attempt_id} may "
                "unblock (GET its unblocks)"
            )
        chosen = [a for a in offered if a.id in set(ids)]
    made = []
    for original in chosen:
        assert original.id is not None
        title = f"Retest after #{pivot.id}: {original.title}"[:200]
        made.append(launching.retest(session, original.id, RetestIn(title=title)))
    return made
