"""One launched run, driven in a thread from wherever its row says it stands: launch (after
the host's earlier runs), ready or crashed, then its benchmark runs (benchmarking.py) and its
stop (stopping.py). Started again after a dashboard restart, it picks the run up where it was."""

import logging
import threading
import time
from datetime import UTC
from typing import Any

from app.environment import from_probe
from app.flags import detect_engine
from app.models import Run, RunState, Status
from app.runner.answers import Job
from app.runner.benchmarking import benchmark
from app.runner.commands import health_url, interpreter, listen_port, visible_gpus
from app.runner.context import (
    CATCH_UP_S,
    Finished,
    HostRebooted,
    RunContext,
    Shutdown,
    Stopped,
    run_dir_of,
)
from app.runner.host_checks import GPU_WAIT_S
from app.runner.host_jobs import RUNS_ROOT
from app.runner.hosts import HostAnswerError, HostLink
from app.runner.outcomes import RunOutcome
from app.runner.records import FINISHED, LeaseLost, Records, Snapshot
from app.runner.stopping import stop_run
from app.tailing.sources import HostUnavailable

log = logging.getLogger(__name__)

# The driver's looks at the host while its server starts, and once it ended.
HOST_POLL_S = 0.5  # the host: is the process still there
HEALTH_POLL_S = 0.25
EXIT_POLL_S = 0.05  # the host, for the exit status a server's wrapper writes in a moment
EXIT_STATUS_WAIT_S = 5.0  # a server gone, its wrapper writing how it ended


class RunDriver:
    def __init__(
        self,
        run_id: int,
        attempt_id: int,
        records: Records,
        host: HostLink,
        shutdown: threading.Event,
        on_exit: Any = None,
        runs_root: str = RUNS_ROOT,
        gpu_release_s: float = GPU_WAIT_S,
    ) -> None:
        self.runs_root = runs_root
        self.run_id = run_id
        self.attempt_id = attempt_id  # whose changes wake it (the manager's `changed`)
        self.records = records
        self.host = host
        self.ctx = RunContext(run_id, records, host, shutdown, gpu_release_s)
        # The manager sets these: something happened, another dashboard drives the run.
        self.wake, self.lease_lost = self.ctx.wake, self.ctx.lease_lost
        self.on_exit = on_exit
        self.thread = threading.Thread(target=self._main, name=f"run-{run_id}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def changed(self) -> None:
        """Its attempt changed (the commit hook, on the committing thread). A change this
        driver committed itself is one it knows: waking it would cut its waits short."""
        if threading.current_thread() is not self.thread:
            self.wake.set()

    def _main(self) -> None:
        try:
            self._drive()
        except Shutdown:
            pass
        except LeaseLost:
            log.warning("run %s is driven by another dashboard now: left to it", self.run_id)
        except Exception as error:
            log.exception("run %s failed", self.run_id)
            try:
                self.records.finish(
                    self.run_id,
                    state=RunState.failed,
                    outcome=RunOutcome.infrastructure,
                    reason=f"the runner failed: {type(error).__name__}: {error}",
                )
            except Exception:
                log.exception("recording the failure of run %s failed", self.run_id)
        finally:
            self.host.close()
            if self.on_exit is not None:
                self.on_exit(self.run_id)

    # --- the phases --------------------------------------------------------------------

    def _drive(self) -> None:
        run = self.ctx.load_run()
        try:
            if run.state == RunState.launching:
                run = self._launch(run)
                if run.state in FINISHED:
                    return
            if run.state == RunState.starting:
                run = self._wait_for_ready(run)
                if run.state in FINISHED:
                    return
            if run.state in (RunState.ready, RunState.benchmarking):
                self._after_ready(run)
            elif run.state == RunState.stopping:
                # Picked up halfway through a stop: the end it was heading for.
                outcome = run.outcome or RunOutcome.stopped
                stop_run(
                    self.ctx,
                    run,
                    outcome=outcome,
                    reason=run.reason,
                    state=RunState.failed if outcome.failed else RunState.done,
                )
        except Finished:
            pass
        except Stopped:
            run = self.ctx.load_run()
            if run.run_dir is None or run.pid is None:
                self.records.finish(
                    self.run_id,
                    state=RunState.failed,
                    outcome=RunOutcome.stopped,
                    reason="stopped before it was launched",
                )
                return
            # (a server already ready keeps its status: the lifecycle refuses this)
            stop_run(
                self.ctx, run, outcome=RunOutcome.stopped, reason="stopped on request",
                attempt_status=Status.proposed,
            )  # fmt: skip
        except HostRebooted:
            run = self.ctx.load_run()
            self.records.finish(
                self.run_id,
                state=RunState.failed,
                outcome=RunOutcome.host_rebooted,
                reason=f"{run.host} rebooted (its boot id changed) while the run was "
                f"{run.state}: its server is gone",
                attempt_status=Status.crashed if run.state != RunState.benchmarking else None,
            )
        except HostUnavailable as error:
            self.records.finish(
                self.run_id,
                state=RunState.failed,
                outcome=RunOutcome.infrastructure,
                reason=f"{self.host.host}: {error.state}: {error}",
            )

    def _launch(self, run: Run) -> Run:
        reported = None
        while True:
            self.ctx.check_stop()
            blocker = self.records.blocking_run(self.run_id)
            if blocker is None:
                break
            # (named by its attempt: a run id is nothing a person sees elsewhere)
            reason = f"waiting for attempt #{blocker.attempt_id} on {run.host}"
            if reason != reported:
                self.records.update(self.run_id, reason=reason)
                reported = reason
            # Its end wakes the queue (the manager); another dashboard's, the fallback.
            self.ctx.pause_for_change()
        run_dir = run.run_dir or f"{self.runs_root.rstrip('/')}/{run.run_key}"
        if run.run_dir is not None:
            # Launched before a restart, perhaps: a server already there is this run's.
            job = self.ctx.ask(lambda: self.host.status(run_dir))["jobs"]["server"]
            if job["started"]:
                return self._launched(run, job)
        port = run.port if run.port is not None else listen_port(run.command)
        check = self.ctx.ask(
            lambda: self.host.preflight(
                port=port,
                runs_root=self.runs_root,
                skip_run=run.run_key,
                gpus=visible_gpus(run.command),
                interpreter=interpreter(run.command),
                probe=True,
            ),
            stoppable=True,
        )
        # What it will run on, as the host says now: the log may say more, and wins.
        check["environment"] = from_probe(check.get("probe"), detect_engine(run.command))
        if not check["ok"]:
            return self.records.finish(
                self.run_id,
                state=RunState.failed,
                outcome=RunOutcome.refused,
                reason="refused: " + "; ".join(check["problems"]),
                preflight=check,
            )
        self.records.update(
            self.run_id,
            run_dir=run_dir,
            port=port,
            health_url=health_url(run.command, run.health_url),
            preflight=check,
            reason="launching",
        )
        try:
            job = self.ctx.ask(
                lambda: self.host.start(run_dir, "server", run.command, run_id=run.run_key)
            )
        except HostAnswerError as error:
            return self.records.finish(
                self.run_id,
                state=RunState.failed,
                outcome=RunOutcome.infrastructure,
                reason=str(error),
            )
        return self._launched(self.ctx.load_run(), job)

    def _launched(self, run: Run, job: Job) -> Run:
        log_path = job.get("log_path")
        assert log_path is not None, job  # a started job has its record
        # The answer's run_dir is absolute (~ expanded on the host): the log source needs it.
        self.records.update(self.run_id, run_dir=log_path.rpartition("/")[0])
        return self.records.launched(self.run_id, job, self.host.log_source(log_path))

    def _wait_for_ready(self, run: Run) -> Run:
        assert run.launched_at is not None
        launched = run.launched_at.replace(tzinfo=run.launched_at.tzinfo or UTC)
        deadline = launched.timestamp() + run.ready_timeout_s
        next_host_look = 0.0
        said_ready = False
        self.ctx.check_shutdown()
        snapshot: Snapshot | None = self.ctx.snapshot()
        while True:
            if snapshot is not None:  # read again: what the log says now
                if snapshot.run.stop_requested:
                    raise Stopped
                run, diagnosis = snapshot.run, snapshot.diagnosis
                if diagnosis.get("crashed"):
                    return self._crashed(run, None)
                says_ready = bool(diagnosis.get("ready"))
                if says_ready and not run.health_url:
                    return self.records.ready(self.run_id)
                if says_ready and not said_ready:
                    next_host_look = 0.0  # the log just said so: /health is asked at once
                said_ready = says_ready
            # Once the log says ready, /health is asked in each look at the process.
            now = time.monotonic()
            if now >= next_host_look:
                next_host_look = now + (HEALTH_POLL_S if said_ready else HOST_POLL_S)
                looked = self.ctx.status(run, health=said_ready)
                server, health = looked["jobs"]["server"], looked.get("health")
                if not server.get("running"):
                    return self._crashed(run, server)
                if said_ready and health is not None and health["ok"]:
                    return self.records.ready(self.run_id)
            if time.time() >= deadline:
                return stop_run(
                    self.ctx,
                    run,
                    outcome=RunOutcome.ready_timeout,
                    reason=f"not ready after {run.ready_timeout_s:g} s",
                    state=RunState.failed,
                    attempt_status=Status.crashed,
                )
            # Until the attempt changes, the next look at the host, or the deadline.
            left = min(next_host_look - time.monotonic(), deadline - time.time())
            snapshot = self.ctx.changed_snapshot(left)

    def _crashed(self, run: Run, job: Job | None) -> Run:
        run_dir = run_dir_of(run)
        if job is None:
            # The log said so first: its exit status follows within moments (the
            # traceback is printed before the process ends), and the host says when.
            waited = self.ctx.ask(lambda: self.host.wait(run_dir, "server", CATCH_UP_S))
            job = waited["jobs"]["server"]
        # Its session can be empty a moment before its wrapper writes the exit status.
        deadline = time.monotonic() + EXIT_STATUS_WAIT_S
        while not job.get("exit") and not job.get("lost") and time.monotonic() < deadline:
            self.ctx.pause(EXIT_POLL_S)
            job = self.ctx.status(run)["jobs"]["server"]
        diagnosis = self.ctx.caught_up(job)
        ended = job.get("exit")
        exit_code = ended["exit_code"] if ended else None
        cause = diagnosis.get("root_cause")
        if cause:
            reason = f"crashed before ready: {cause}"
        elif exit_code is not None:
            reason = f"exited with status {exit_code} before it was ready"
        else:
            reason = "ended before it was ready (how, the host cannot say)"
        if exit_code is not None and cause:
            reason += f" (exit status {exit_code})"
        # What the server left behind (its children, the port) is cleaned up all the same.
        return stop_run(
            self.ctx,
            run,
            outcome=RunOutcome.crashed,
            reason=reason,
            state=RunState.failed,
            attempt_status=Status.crashed,
            exit_code=exit_code,
        )

    def _after_ready(self, run: Run) -> None:
        if run.bench:
            run = benchmark(self.ctx, run)
            if run.state in FINISHED:
                return
            outcome = RunOutcome.measured
        else:
            outcome = RunOutcome.ready
        if run.keep:
            self.records.finish(
                self.run_id,
                state=RunState.done,
                outcome=outcome,
                reason=f"kept running on {run.host} (pid {run.pid})",
            )
            return
        stop_run(self.ctx, run, outcome=outcome, reason=None)
