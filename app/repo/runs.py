"""Queries of launched runs that the pages and the API read."""

from sqlmodel import Session, col, select

from app.models import Run, RunState


def runs_by_attempt(session: Session, *, attempt_ids: list[int]) -> dict[int, Run]:
    """Each attempt's latest run."""
    if not attempt_ids:
        return {}
    query = select(Run).where(col(Run.attempt_id).in_(attempt_ids)).order_by(col(Run.id))
    return {run.attempt_id: run for run in session.exec(query)}


def kept_running(run: Run) -> bool:
    """Done with `--keep`, and not stopped since: its server is up on the host."""
    return run.state == RunState.done and run.keep and run.stop_report is None


def server_may_run(run: Run) -> bool:
    """The run's server may be on the host now: the run has not ended, or it was kept."""
    return run.state not in (RunState.done, RunState.failed) or kept_running(run)


def running_servers(session: Session, *, attempt_ids: list[int]) -> list[Run]:
    """The attempts' latest runs whose server may still be on its host."""
    runs = runs_by_attempt(session, attempt_ids=attempt_ids).values()
    return [run for run in runs if server_may_run(run)]
