"""Queries of a campaign's live events (of every campaign's, for `None`: the campaign list): the
newest and oldest ids (a page's cursor, a stream's resume point) and the events after a cursor,
a batch at a time."""

from typing import Any, TypeVar

from sqlmodel import Session, col, func, select
from sqlmodel.sql.expression import SelectOfScalar

from app.models import LiveEvent

Q = TypeVar("Q", bound=SelectOfScalar[Any])

BATCH = 500  # events read at once: a stream far behind catches up in turns


def _of(query: Q, campaign_id: int | None) -> Q:
    return query if campaign_id is None else query.where(LiveEvent.campaign_id == campaign_id)


def newest_event_id(session: Session, campaign_id: int | None) -> int:
    query = select(func.coalesce(func.max(LiveEvent.id), 0))
    return int(session.exec(_of(query, campaign_id)).one() or 0)


def oldest_event_id(session: Session, campaign_id: int | None) -> int:
    query = select(func.coalesce(func.min(LiveEvent.id), 0))
    return int(session.exec(_of(query, campaign_id)).one() or 0)


def events_after(
    session: Session, campaign_id: int | None, after: int, upto: int | None
) -> list[LiveEvent]:
    """The next events after `after` (up to `upto`, when given), oldest first."""
    query = _of(select(LiveEvent).where(col(LiveEvent.id) > after), campaign_id)
    if upto is not None:
        query = query.where(col(LiveEvent.id) <= upto)
    return list(session.exec(query.order_by(col(LiveEvent.id)).limit(BATCH)))
