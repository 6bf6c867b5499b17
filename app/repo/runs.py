"""Queries of launched runs that the pages and the API read."""

from sqlmodel import Session, col, select

from app.models import Run


def runs_by_attempt(session: Session, *, attempt_ids: list[int]) -> dict[int, Run]:
    """Each attempt's latest run."""
    if not attempt_ids:
        return {}
    query = select(Run).where(col(Run.attempt_id).in_(attempt_ids)).order_by(col(Run.id))
    return {run.attempt_id: run for run in session.exec(query)}
