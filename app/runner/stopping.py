"""A run's last phase: its server stopped on the host and proven stopped (no process left,
its port free, its GPU memory back), and the run's end recorded with the proof."""

from typing import Any

from app.models import Run, RunState, Status
from app.runner.commands import visible_gpus
from app.runner.context import RunContext, run_dir_of
from app.runner.outcomes import RunOutcome


def stop_run(
    ctx: RunContext,
    run: Run,
    *,
    outcome: RunOutcome,
    reason: str | None,
    state: RunState = RunState.done,
    attempt_status: Status | None = None,
    **fields: Any,
) -> Run:
    ctx.records.update(ctx.run_id, state=RunState.stopping, outcome=outcome, reason=reason)
    run_dir = run_dir_of(run)
    report = ctx.ask(
        lambda: ctx.host.stop(
            run_dir, "server", grace_s=run.grace_s, port=run.port,
            gpu_before=(run.preflight or {}).get("gpu"), gpu_wait_s=ctx.gpu_release_s,
            gpus=visible_gpus(run.command),
            timeout_s=run.grace_s + ctx.gpu_release_s + 60,
        )
    )  # fmt: skip
    said = [reason] if reason else []
    # Proof, or the run failed: the next launch on this host would be measured against
    # what was left (its port, its GPU memory).
    unproven = []
    if not report["stopped"]:
        left = ", ".join(f"{p['pid']} ({p['comm']})" for p in report["left"])
        unproven.append(f"processes left: {left}")
    elif report["signal"]:
        said.append(f"stopped by {report['signal']}")
    if report.get("port_free") is False:
        unproven.append(f"port {run.port} still in use")
    if report.get("gpu_memory_back") is False:
        holders = "; ".join(report.get("gpu_left") or [])
        unproven.append(f"GPU memory not back to what it was before the launch: {holders}")
    if unproven:
        state = RunState.failed
        said.append("NOT proven stopped: " + "; ".join(unproven))
    ended = report.get("exit")
    if "exit_code" not in fields and ended and ended["exit_code"] is not None:
        fields["exit_code"] = ended["exit_code"]
    return ctx.records.finish(
        ctx.run_id,
        state=state,
        outcome=outcome,
        reason="; ".join(said) or None,
        attempt_status=attempt_status,
        stop_report=report,
        **fields,
    )
