"""JSON API for launched attempts: stop one, retest one, re-measure one."""

from fastapi import APIRouter, Body, Depends

from app import actions, pivots, views
from app.deps import SessionDep, require_api_owner
from app.runner import launching
from app.schemas import AttemptOut, RetestIn, RetestUnblockedIn

router = APIRouter(tags=["runs"], dependencies=[Depends(require_api_owner)])


@router.post("/api/attempts/{attempt_id}/stop")
def stop_attempt(attempt_id: int, session: SessionDep) -> AttemptOut:
    """Stop a launched attempt's server (SIGTERM to its process group, SIGKILL after the
    grace period, then proof that it stopped); 409 when it was not launched or has ended."""
    attempt = launching.request_stop(session, attempt_id)
    session.flush()
    return views.attempt_view(session, attempt)


@router.get("/api/attempts/{attempt_id}/unblocks")
def attempt_unblocks(attempt_id: int, session: SessionDep) -> list[AttemptOut]:
    """The attempts adopting this one may unblock: those blocked by it, and the earlier
    crashed or eliminated ones whose failure class says the stack stood in the way
    (unsupported_arch, import_or_version), none already retested after it."""
    found = pivots.unblocks(session, attempt_id)
    campaign = actions.require_campaign(session, found[0].campaign_id) if found else None
    return views.attempt_views(session, campaign, found) if campaign else []


@router.post("/api/attempts/{attempt_id}/retest-unblocked", status_code=201)
def retest_unblocked(
    attempt_id: int, session: SessionDep, data: RetestUnblockedIn | None = Body(default=None)
) -> list[AttemptOut]:
    """A retest of each attempt it may unblock (or of `ids` among them), `retest_of` its
    original, launched where the original was: one at a time on each host."""
    made = pivots.retest_unblocked(session, attempt_id, (data or RetestUnblockedIn()).ids)
    session.flush()
    return [views.attempt_view(session, attempt) for attempt in made]


@router.post("/api/attempts/{attempt_id}/remeasure", status_code=201)
def remeasure_attempt(attempt_id: int, session: SessionDep) -> AttemptOut:
    """Launch this attempt's command again as a re-measurement: a new attempt (`joins` this
    one) whose runs join this one's sample when others are judged against it; 409 when it
    was not launched."""
    attempt = launching.remeasure(session, attempt_id)
    session.flush()
    return views.attempt_view(session, attempt)


@router.post("/api/attempts/{attempt_id}/retest", status_code=201)
def retest_attempt(
    attempt_id: int, session: SessionDep, data: RetestIn | None = Body(default=None)
) -> AttemptOut:
    """A new attempt, `retest of` this one, with the same command; launched the same way
    when this one was launched."""
    attempt = launching.retest(session, attempt_id, data or RetestIn())
    session.flush()
    return views.attempt_view(session, attempt)
