"""A ready run's benchmark phase: its warmup and repeat runs on the host one after another
(picked up after the last one recorded), each one's figures and whether it counts; a
failed run, a server that died meanwhile or no valid figure ends the run."""

from functools import partial
from typing import Any, NoReturn

from app.benchparse import ParseFailure
from app.diagnosis import diagnose_bytes
from app.models import Run, RunState, Status
from app.runner.answers import Job
from app.runner.benchfiles import ResultFile, result_file, run_figures
from app.runner.context import Finished, RunContext, Stopped, run_dir_of
from app.runner.outcomes import RunOutcome
from app.runner.stopping import stop_run
from app.runner.wording import bench_label


def benchmark(ctx: RunContext, run: Run) -> Run:
    """The run once its benchmark runs are done (still to be stopped), or ended."""
    if run.state != RunState.benchmarking:
        run = ctx.records.update(ctx.run_id, state=RunState.benchmarking)
    total = run.warmup + run.repeat
    if (run.auto_repeat or {}).get("ended_by"):
        total = run.bench_done  # its looks ended it before a restart: no run more
    assert run.bench is not None
    spec = result_file(run.bench)
    run_dir, bench = run_dir_of(run), run.bench
    for index in range(run.bench_done + 1, total + 1):
        name = f"bench-{index}"
        jobs = ctx.status(run, "server", name)["jobs"]
        if not jobs["server"].get("running"):
            _server_died(ctx, run, jobs["server"], index)
        if not jobs[name]["exists"]:
            # The result file as it is before the run: its own record is what it adds.
            watch = spec.watch() if spec else None
            ctx.ask(partial(ctx.host.start, run_dir, name, bench, run_id=run.run_key,
                            watch=watch))  # fmt: skip
        job = _wait_for_bench(ctx, run, index)
        entry = _bench_entry(ctx, run, index, job, spec)
        run = ctx.records.bench_run(
            ctx.run_id, entry, entry.get("metric_recorded"), last=index == total
        )
        if entry["failure"]:
            return stop_run(
                ctx,
                run,
                outcome=RunOutcome.bench_failed,
                reason=f"benchmark {bench_label(index, run.warmup)} failed: {entry['failure']}",
                state=RunState.failed,
            )
        ended_by = (run.auto_repeat or {}).get("ended_by")
        if ended_by is not None and ended_by != "budget":
            break
    counted = [e for e in run.bench_runs or [] if e.get("metric_recorded") is not None]
    if not counted:
        return stop_run(
            ctx,
            run,
            outcome=RunOutcome.bench_failed,
            reason="no benchmark run gave a valid figure (each had failed requests)",
            state=RunState.failed,
        )
    return run


def _stop_bench(ctx: RunContext, run: Run, name: str) -> None:
    run_dir = run_dir_of(run)
    ctx.ask(lambda: ctx.host.stop(run_dir, name, grace_s=5, timeout_s=60))


def _wait_for_bench(ctx: RunContext, run: Run, index: int) -> Job:
    name = f"bench-{index}"
    while True:
        # A stop asked for wakes the driver; one asked through another dashboard is read
        # at the fallback.
        if ctx.read_due():
            try:
                ctx.check_stop()
            except Stopped:
                _stop_bench(ctx, run, name)
                raise
        jobs = ctx.status(run, "server", name, output=True, wait_for=name)["jobs"]
        job, server = jobs[name], jobs["server"]
        if not server.get("running"):
            _stop_bench(ctx, run, name)
            _server_died(ctx, run, server, index)
        if job.get("exit") is not None or job.get("lost"):
            return job
        ctx.check_shutdown()


def _server_died(ctx: RunContext, run: Run, server: Job, index: int) -> NoReturn:
    diagnosis = ctx.caught_up(server)
    ended = server.get("exit")
    cause = diagnosis.get("root_cause") or (
        f"exited with status {ended['exit_code']}" if ended else "it is gone"
    )
    stop_run(
        ctx,
        run,
        outcome=RunOutcome.server_died,
        reason=f"the server died during benchmark {bench_label(index, run.warmup)}: {cause}",
        state=RunState.failed,
        attempt_status=Status.crashed,
        exit_code=ended["exit_code"] if ended else None,
    )
    raise Finished


def _bench_entry(
    ctx: RunContext, run: Run, index: int, job: Job, spec: ResultFile | None
) -> dict[str, Any]:
    """One finished benchmark run: its figures (its result file's, else its printed
    block's: app/runner/benchfiles), whether it counts, and the campaign's metric (its
    own pattern's figure, else output tok/s) when it does."""
    output = job.get("output") or ""
    ended = job.get("exit")
    exit_code = ended["exit_code"] if ended else None
    snapshot = ctx.records.load(ctx.run_id)
    pattern = snapshot.bench_pattern if snapshot else None
    read = run_figures(output, spec, job.get("result_file"), pattern)
    result = read.result
    warmup = index <= run.warmup
    failure = invalid = None
    figures: dict[str, float] = {}
    metric = None
    if exit_code != 0:
        cause = diagnose_bytes(output.encode()).root_cause
        last = output.strip().splitlines()[-1] if output.strip() else "no output"
        failure = f"exit status {exit_code}: {cause or last}"
    elif isinstance(result, ParseFailure):
        failure = result.reason
    else:
        figures, metric = result.figures, read.metric
        if not result.valid:
            invalid = "; ".join(result.problems) + ": not a figure"
        elif metric is None:
            failure = "no output token throughput in its result"
    return {
        "index": index,
        "warmup": warmup,
        "exit_code": exit_code,
        "figures": figures,
        # Where the figures were read: "jsonl", "json" (a result file), "block", "pattern".
        "source": None if isinstance(result, ParseFailure) else result.source,
        "result_file": read.result_file,
        "result_file_note": read.file_note,
        "metric_from": "pattern" if pattern else "output_tok_s",
        "failed_requests": None if isinstance(result, ParseFailure) else result.failed,
        "invalid": invalid,
        "failure": failure,
        "metric_recorded": None if (warmup or failure or invalid) else metric,
        "log_path": job.get("log_path"),
        # When it ran, as the host's clock says (epoch seconds)
        "started_at": job.get("started_at"),
    }
