"""Queries of a campaign's live events: the newest and oldest ids (a page's cursor, a stream's
resume point) and the events after a cursor, a batch at a time."""

from sqlmodel import Session, col, func, select

from app.models import LiveEvent

BATCH = 500  # events read at once: a stream far behind catches up in turns


def newest_event_id(session: Session, campaign_id: int) -> int:
    query = select(func.coalesce(func.max(LiveEvent.id), 0))
    return int(session.exec(query.where(LiveEvent.campaign_id == campaign_id)).one() or 0)


def oldest_event_id(session: Session, campaign_id: int) -> int:
    query = select(func.coalesce(func.min(LiveEvent.id), 0))
    return int(session.exec(query.where(LiveEvent.campaign_id == campaign_id)).one() or 0)


def events_after(
    session: Session, campaign_id: int, after: int, upto: int | None
) -> list[LiveEvent]:
    """The next events after `after` (up to `upto`, when given), oldest first."""
    query = select(LiveEvent).where(LiveEvent.campaign_id == campaign_id, col(LiveEvent.id) > after)
    if upto is not None:
        query = query.where(col(LiveEvent.id) <= upto)
    return list(session.exec(query.order_by(col(LiveEvent.id)).limit(BATCH)))
