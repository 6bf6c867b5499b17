"""A run as the API and the pages show it."""

from datetime import datetime

from sqlmodel import Session

from app.diagnosis.lines import decode
from app.models import Run, RunState, TailState, utcnow
from app.repo import kept_running, stored_log
from app.runner.lease import shown
from app.runner.wording import auto_said, bench_label, bench_progress, gpu_note
from app.schemas import RunOut

LAST_LINE_BYTES = 8 << 10
SHOWS_LAST_LINE = (RunState.launching, RunState.starting)


def _aware(moment: datetime | None) -> datetime | None:
    # SQLite gives the stored UTC moments back without their zone.
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=utcnow().tzinfo)


def last_line(session: Session, run: Run, tail: TailState | None) -> str | None:
    if tail is None or tail.stored_bytes == 0:
        return None
    data = stored_log(session, run.attempt_id, max(0, tail.stored_bytes - LAST_LINE_BYTES))
    lines = [line for line in data.split(b"\n") if line.strip()]
    return decode(lines[-1]) if lines else None


def run_view(session: Session, run: Run, tail: TailState | None) -> RunOut:
    assert run.id is not None
    launched, ended = _aware(run.launched_at), _aware(run.ended_at)
    kept_alive = kept_running(run)
    if kept_alive:
        ended = None  # its server still runs: its time still counts
    elif run.keep and run.stop_report is not None:
        ended = _aware(run.updated_at)  # a kept server's time ends when it was stopped
    elapsed = ((ended or utcnow()) - launched).total_seconds() if launched else None
    active = run.state not in (RunState.done, RunState.failed)
    return RunOut(
        id=run.id,
        state=run.state,
        outcome=run.outcome,
        reason=run.reason,
        host=run.host,
        command=run.command,
        bench=run.bench,
        repeat=run.repeat,
        warmup=run.warmup,
        keep=run.keep,
        ready_timeout_s=run.ready_timeout_s,
        health_url=run.health_url,
        port=run.port,
        pid=run.pid,
        pgid=run.pgid,
        exit_code=run.exit_code,
        boot_id=run.boot_id,
        run_dir=run.run_dir,
        log_path=run.log_path,
        bench_done=run.bench_done,
        bench_total=(run.warmup + run.repeat) if run.bench else 0,
        # Each with its `label` as people count: "warm-up 1", then "run 1", "run 2".
        bench_runs=[
            {**b, "label": bench_label(b["index"], run.warmup)} for b in run.bench_runs or []
        ],
        bench_progress=bench_progress(
            run.bench_done,
            run.warmup,
            run.repeat,
            auto=bool(run.auto_repeat),
            auto_ended=bool((run.auto_repeat or {}).get("ended_by")),
        )
        if run.state == RunState.benchmarking
        else None,
        auto_repeat=run.auto_repeat,
        auto_said=auto_said(run.auto_repeat),
        kept_running=kept_alive,
        gpu_note=gpu_note(run.host, (run.preflight or {}).get("gpu")),
        stop_report=run.stop_report,
        stop_requested=run.stop_requested,
        stoppable=(active and not run.stop_requested) or kept_alive,
        driven_by=shown(run.lease_owner) if run.lease_owner else None,
        elapsed_s=elapsed,
        last_line=last_line(session, run, tail) if run.state in SHOWS_LAST_LINE else None,
        created_at=run.created_at,
        launched_at=run.launched_at,
        ready_at=run.ready_at,
        ended_at=run.ended_at,
    )
