"""What each card of a campaign page is rendered from, as stored: one query of stamps that
change whenever a card's own data does, read alike by every dashboard of the database."""

import functools
from typing import Any, NamedTuple

from sqlalchemy import String, and_, bindparam, cast, func
from sqlalchemy import select as sa_select
from sqlalchemy.orm import aliased
from sqlmodel import Session, col

from app.models import Attempt, Measurement, Note, Run, TailState


class CardStamp(NamedTuple):
    """Timestamps as text, cast by the database, only ever compared: parsing a thousand of
    them per page view was half the query's time on SQLite, and 1.3 ms on PostgreSQL."""

    status: str
    title: str
    fingerprint: str | None  # others' "same root cause" badges
    # Set to NULL by the database itself when the attempt named is deleted: no updated_at.
    retest_of: int | None
    blocked_by: int | None
    updated_at: object  # moves with every update of the attempt's row (onupdate)
    # Rows are added and deleted, never edited in place; a figure replacing the newest one
    # may take its id again (SQLite), hence the highest value too (no sum: PostgreSQL's
    # overflows on figures near the float limit).
    measurements: int
    newest_measurement: int | None
    highest_figure: float | None
    notes: int
    tail_updated_at: object
    run_id: int | None  # the latest run, the one a card shows
    run_updated_at: object
    clock: bool  # that run was launched and has not ended: its elapsed time moves alone


def card_stamps(session: Session, *, campaign_id: int) -> dict[int, CardStamp]:
    """Each attempt's stamp, in id order."""
    # The connection's own rows (the session's snapshot): no ORM loading for plain columns.
    rows = session.connection().execute(_stamps_query(), {"campaign_id": campaign_id}).all()
    return {row[0]: CardStamp._make((*row[1:-1], bool(row[-1]))) for row in rows}


@functools.cache
def _stamps_query() -> Any:
    """Correlated subqueries, each an index lookup; built once (building it each time was a
    tenth of the query's time)."""

    def of_attempt(expr: Any, foreign_key: Any) -> Any:
        query = sa_select(expr).where(foreign_key == col(Attempt.id))
        return query.correlate(Attempt).scalar_subquery()

    def raw(column: Any) -> Any:
        return cast(column, String)

    runs = aliased(Run)
    latest_run = of_attempt(func.max(runs.id), runs.attempt_id)
    return (
        sa_select(
            col(Attempt.id), col(Attempt.status), col(Attempt.title), col(Attempt.fingerprint),
            col(Attempt.retest_of), col(Attempt.blocked_by), raw(col(Attempt.updated_at)),
            of_attempt(func.count(col(Measurement.id)), col(Measurement.attempt_id)),
            of_attempt(func.max(Measurement.id), col(Measurement.attempt_id)),
            of_attempt(func.max(Measurement.value), col(Measurement.attempt_id)),
            of_attempt(func.count(col(Note.id)), col(Note.attempt_id)),
            of_attempt(raw(TailState.updated_at), col(TailState.attempt_id)),
            col(Run.id), raw(col(Run.updated_at)),
            and_(col(Run.launched_at).is_not(None), col(Run.ended_at).is_(None)),
        )
        .outerjoin(Run, col(Run.id) == latest_run)
        .where(col(Attempt.campaign_id) == bindparam("campaign_id"))
        .order_by(col(Attempt.id))
    )  # fmt: skip
