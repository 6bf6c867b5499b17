"""Queries of the tails (where each followed log stands), of the attempts to follow, and the
pruning of live events."""

from collections.abc import Collection

from sqlalchemy import delete, func
from sqlmodel import Session, col, select

from app.models import Attempt, LiveEvent, Status, TailState


def tail_state(session: Session, *, attempt_id: int) -> TailState | None:
    query = select(TailState).where(TailState.attempt_id == attempt_id)
    return session.exec(query).first()


def followed_attempt_ids(session: Session, *, statuses: Collection[Status]) -> list[int]:
    """Attempts with a log source and one of these statuses (the lifecycle's FOLLOWED)."""
    query = select(Attempt.id).where(
        col(Attempt.source).is_not(None), col(Attempt.status).in_(list(statuses))
    )
    return [attempt_id for attempt_id in session.exec(query) if attempt_id is not None]


def prune_live_events(session: Session, *, campaign_id: int, keep: int) -> None:
    """Live events are for listeners catching up; a listener further behind reloads."""
    newest = session.exec(
        select(func.max(LiveEvent.id)).where(LiveEvent.campaign_id == campaign_id)
    ).one()
    if newest and newest > keep:
        session.execute(
            delete(LiveEvent).where(
                col(LiveEvent.campaign_id) == campaign_id, col(LiveEvent.id) < newest - keep
            )
        )
