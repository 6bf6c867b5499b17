"""What the owner asks of the runner (launch, stop, retest), in the request's transaction;
the run's driver takes it from there once it is committed."""

import secrets

from sqlmodel import Session, col, select

from app import actions, repo
from app.changes import follow_up, record
from app.errors import Conflict, Invalid
from app.models import Attempt, Run, RunState, utcnow
from app.runner.commands import listen_port
from app.schemas import AttemptCreate, LaunchIn, RetestIn
from app.stats import AUTO_MAX_RUNS, sequential_confidence

ACTIVE = (RunState.launching, RunState.starting, RunState.ready, RunState.benchmarking)


def launched(session: Session, run: Run) -> None:
    """After commit, the runner drives this run (or looks at it again): the app's hook
    wakes it with the attempts followed up."""
    follow_up(session, run.attempt_id)


def latest_run(session: Session, attempt_id: int) -> Run | None:
    query = select(Run).where(Run.attempt_id == attempt_id).order_by(col(Run.id).desc())
    return session.exec(query).first()


def add_run(session: Session, attempt: Attempt, launch: LaunchIn) -> Run:
    assert attempt.id is not None
    run = Run(
        attempt_id=attempt.id,
        host=launch.host,
        command=launch.command,
        bench=launch.bench,
        repeat=launch.max_runs if launch.repeat == "auto" else launch.repeat,
        auto_repeat=(
            {"max_runs": launch.max_runs, "confidence": sequential_confidence(launch.max_runs)}
            if launch.repeat == "auto"
            else None
        ),
        warmup=launch.warmup,
        ready_timeout_s=launch.ready_timeout_s,
        grace_s=launch.grace_s,
        keep=launch.keep,
        health_url=launch.health_url,
        port=listen_port(launch.command),
        # The run's directory on the host: unguessable, so two dashboards never share one.
        run_key=f"{attempt.id}-{secrets.token_hex(6)}",
    )
    session.add(run)
    session.flush()
    launched(session, run)
    return run


def create_launched_attempt(session: Session, campaign_id: int, data: AttemptCreate) -> Attempt:
    launch = data.launch
    assert launch is not None
    if data.source:
        raise Invalid("source: a launched attempt's log is the one the runner writes")
    fields = data.model_copy(update={"launch": None, "command": data.command or launch.command})
    attempt = actions.create_attempt(session, campaign_id, fields)
    add_run(session, attempt, launch)
    return attempt


def request_stop(session: Session, attempt_id: int) -> Attempt:
    attempt = actions.require_attempt(session, attempt_id)
    run = latest_run(session, attempt_id)
    if run is None:
        raise Conflict(f"attempt {attempt_id} was not launched by the dashboard: nothing to stop")
    kept_alive = repo.kept_running(run)
    if run.state not in ACTIVE and run.state != RunState.stopping and not kept_alive:
        raise Conflict(f"run {run.id} of attempt {attempt_id} has ended ({run.outcome})")
    run.stop_requested = True
    if kept_alive:
        run.state = RunState.stopping
        run.reason = "stopped on request"
    run.updated_at = utcnow()
    session.add(run)
    launched(session, run)
    record(session, attempt.campaign_id, "attempt", attempt_id=attempt_id)
    return attempt


def remeasure(session: Session, attempt_id: int) -> Attempt:
    """The attempt's command launched again, as an attempt of its own whose runs join its
    sample (a baseline re-measured, to settle a noisy comparison on both sides): no new
    hypothesis. Only a launched attempt can be: its launch is what is repeated."""
    original = actions.require_attempt(session, attempt_id)
    if original.joins is not None:
        raise Conflict(f"attempt {attempt_id} re-measures #{original.joins}: re-measure that one")
    if latest_run(session, attempt_id) is None:
        raise Conflict(
            f"attempt {attempt_id} was not launched by the dashboard: nothing to launch again"
        )
    attempt = retest(
        session, attempt_id, RetestIn(title=f"Re-measure: {original.title}"[:200], hypothesis="")
    )
    attempt.joins = attempt_id
    session.add(attempt)
    return attempt


def retest(session: Session, attempt_id: int, data: RetestIn) -> Attempt:
    """The same command again, as a new attempt linked `retest of`; launched the same way
    when the original was."""
    original = actions.require_attempt(session, attempt_id)
    run = latest_run(session, attempt_id)
    launch = None
    if run is not None:
        launch = LaunchIn(
            host=run.host,
            command=run.command,
            bench=run.bench,
            repeat="auto" if run.auto_repeat else run.repeat,
            max_runs=run.repeat if run.auto_repeat else AUTO_MAX_RUNS,
            warmup=run.warmup,
            ready_timeout_s=run.ready_timeout_s,
            keep=run.keep,
            health_url=run.health_url,
            grace_s=run.grace_s,
        )
    fields = AttemptCreate(
        title=data.title or f"Retest: {original.title}"[:200],
        hypothesis=original.hypothesis if data.hypothesis is None else data.hypothesis,
        command=original.command,
        flags=original.flags,
        retest_of=attempt_id,
    )
    attempt = actions.create_attempt(session, original.campaign_id, fields)
    if launch is not None:
        add_run(session, attempt, launch)
    return attempt
