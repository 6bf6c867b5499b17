"""One launched run, driven in a thread from wherever its row says it stands: launch
(after the host's earlier runs), ready or crashed, benchmark runs, stop and proof.
Started again after a dashboard restart, it picks the run up where it was."""

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC
from functools import partial
from typing import Any, TypeVar

from app.benchparse import ParseFailure
from app.diagnosis import diagnose_bytes
from app.models import Run, RunState, Status
from app.runner.answers import Job, StatusAnswer
from app.runner.benchfiles import ResultFile, result_file, run_figures
from app.runner.commands import health_url, listen_port, visible_gpus
from app.runner.host_checks import GPU_WAIT_S
from app.runner.host_jobs import RUNS_ROOT
from app.runner.hosts import HostAnswerError, HostLink
from app.runner.outcomes import RunOutcome
from app.runner.records import FINISHED, LeaseLost, Records, Snapshot
from app.runner.wake import Wake
from app.tailing.sources import HostUnavailable

log = logging.getLogger(__name__)
T = TypeVar("T")

# The database is read again when the run's attempt changes (what the tail of its log found,
# a stop asked for: the app's commit hook wakes the driver), at most every LOOK_GAP_S while
# a busy log commits again and again, and every CHANGE_FALLBACK_S all the same: a change
# made through another dashboard on the database does not pass through this one's hook.
CHANGE_FALLBACK_S = 2.0
LOOK_GAP_S = 0.05
HOST_POLL_S = 0.5  # the host: is the process still there
HEALTH_POLL_S = 0.25
EXIT_POLL_S = 0.05  # the host, for the exit status a server's wrapper writes in a moment
# A benchmark's end: the host program waits for it and answers at once (its `wait`); this
# long at most, so that a stop asked for meanwhile is heard.
BENCH_WAIT_S = 0.5
CATCH_UP_S = 5.0  # for the tail to read the last lines of a crashed server's log
EXIT_STATUS_WAIT_S = 5.0  # a server gone, its wrapper writing how it ended
GIVE_UP_S = 600.0  # a host unreachable this long: the run fails as infrastructure


class Shutdown(Exception):
    """The dashboard stops: leave the run as it is, to be picked up at the next start."""


class Stopped(Exception):
    """The owner asked to stop the run."""


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
        self.gpu_release_s = gpu_release_s
        self.run_id = run_id
        self.attempt_id = attempt_id  # whose changes wake it (the manager's `changed`)
        self.records = records
        self.host = host
        self.shutdown = shutdown
        self.wake = Wake()
        self._seen = 0  # the wake count as of the driver's last read of the database
        self._read_at = -LOOK_GAP_S
        self.lease_lost = threading.Event()  # set by the manager: another dashboard drives it
        self.on_exit = on_exit
        self.thread = threading.Thread(target=self._main, name=f"run-{run_id}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def changed(self) -> None:
        """Its attempt changed (the commit hook, on the committing thread). A change this
        driver committed itself is one it knows: waking it would cut its waits short."""
        if threading.current_thread() is not self.thread:
            self.wake.set()

    # --- plumbing ----------------------------------------------------------------------

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

    def _pause(self, seconds: float) -> bool:
        """Until something concerning the run happened since the driver last read it, or
        `seconds`; whether something did."""
        count = self.wake.wait(self._seen, seconds)
        woken, self._seen = count != self._seen, count
        self._check_shutdown()
        return woken

    def _check_shutdown(self) -> None:
        if self.shutdown.is_set():
            raise Shutdown
        if self.lease_lost.is_set():
            raise LeaseLost(self.run_id)

    def _snapshot(self) -> Snapshot:
        """The run as the database has it now."""
        self._seen = self.wake.count()  # before the read: a change after it wakes the next wait
        snapshot = self.records.load(self.run_id)
        self._read_at = time.monotonic()
        if snapshot is None:  # the attempt was deleted: nothing to record any more
            raise Shutdown
        return snapshot

    def _changed_snapshot(self, timeout_s: float) -> Snapshot | None:
        """The run read again once something concerning it happened, or CHANGE_FALLBACK_S
        after the last read, at most once every LOOK_GAP_S; None when `timeout_s` passed
        first. One read where a 50 ms poll made twenty a second, most of them idle."""
        now = time.monotonic()
        fallback = self._read_at + CHANGE_FALLBACK_S
        woken = self._pause(min(timeout_s, fallback - now))
        now = time.monotonic()
        if not woken and now < fallback:
            return None
        gap = self._read_at + LOOK_GAP_S - now
        if gap > 0 and self.shutdown.wait(gap):  # a busy log: one read per LOOK_GAP_S
            raise Shutdown
        return self._snapshot()

    def _run(self) -> Run:
        return self._snapshot().run

    def _check_stop(self) -> None:
        self._check_shutdown()
        if self._run().stop_requested:
            raise Stopped

    def _ask(self, call: Callable[[], T], *, stoppable: bool = False) -> T:
        """One call of the host program (`call`, a command of self.host); an unreachable
        host is retried (the run waits, saying why) until GIVE_UP_S, then the run fails as
        infrastructure. `stoppable`: nothing is launched yet, so a stop asked for meanwhile
        ends the wait."""
        first_failure = None
        delay = 0.5
        while True:
            try:
                answer = call()
                if first_failure is not None:
                    self.records.update(self.run_id, reason=None)
                return answer
            except HostUnavailable as error:
                now = time.monotonic()
                first_failure = first_failure or now
                if now - first_failure > GIVE_UP_S:
                    raise
                self.records.update(
                    self.run_id,
                    reason=f"{self.host.host}: {error.state}: {error}; retrying",
                )
                if stoppable:
                    self._pause(delay)  # a stop asked for wakes the driver
                    self._check_stop()
                elif self.shutdown.wait(delay):
                    raise Shutdown from None
                delay = min(delay * 2, 10.0)

    def _status(
        self, run: Run, *names: str, output: bool = False, health: bool = False,
        wait_for: str | None = None,
    ) -> StatusAnswer:  # fmt: skip
        """The jobs' state now or, `wait_for` a job's name, once it ended (or BENCH_WAIT_S)."""
        run_dir, asked = _run_dir(run), list(names) or ["server"]
        health_url = run.health_url if health else None
        if wait_for is None:
            ask = partial(self.host.status, run_dir, asked)
        else:
            ask = partial(self.host.wait, run_dir, wait_for, BENCH_WAIT_S, asked)
        looked = self._ask(partial(ask, output=output, health_url=health_url))
        server = looked["jobs"].get("server")
        if server and server.get("rebooted"):
            raise HostRebooted
        return looked

    # --- the phases --------------------------------------------------------------------

    def _drive(self) -> None:
        run = self._run()
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
                self._stop(
                    run,
                    outcome=outcome,
                    reason=run.reason,
                    state=RunState.failed if outcome.failed else RunState.done,
                )
        except Finished:
            pass
        except Stopped:
            run = self._run()
            if run.run_dir is None or run.pid is None:
                self.records.finish(
                    self.run_id,
                    state=RunState.failed,
                    outcome=RunOutcome.stopped,
                    reason="stopped before it was launched",
                )
                return
            self._stop(run, outcome=RunOutcome.stopped, reason="stopped on request")
        except HostRebooted:
            run = self._run()
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
            self._check_stop()
            blocker = self.records.blocking_run(self.run_id)
            if blocker is None:
                break
            reason = f"waiting for run {blocker.id} on {run.host}"
            if reason != reported:
                self.records.update(self.run_id, reason=reason)
                reported = reason
            # Its end wakes the queue (the manager); another dashboard's, the fallback.
            self._pause(CHANGE_FALLBACK_S)
        run_dir = run.run_dir or f"{self.runs_root.rstrip('/')}/{run.run_key}"
        if run.run_dir is not None:
            # Launched before a restart, perhaps: a server already there is this run's.
            job = self._ask(lambda: self.host.status(run_dir))["jobs"]["server"]
            if job["started"]:
                return self._launched(run, job)
        port = run.port if run.port is not None else listen_port(run.command)
        check = self._ask(
            lambda: self.host.preflight(
                port=port,
                runs_root=self.runs_root,
                skip_run=run.run_key,
                gpus=visible_gpus(run.command),
            ),
            stoppable=True,
        )
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
            job = self._ask(
                lambda: self.host.start(run_dir, "server", run.command, run_id=run.run_key)
            )
        except HostAnswerError as error:
            return self.records.finish(
                self.run_id,
                state=RunState.failed,
                outcome=RunOutcome.infrastructure,
                reason=str(error),
            )
        return self._launched(self._run(), job)

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
        self._check_shutdown()
        snapshot: Snapshot | None = self._snapshot()
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
                looked = self._status(run, health=said_ready)
                server, health = looked["jobs"]["server"], looked.get("health")
                if not server.get("running"):
                    return self._crashed(run, server)
                if said_ready and health is not None and health["ok"]:
                    return self.records.ready(self.run_id)
            if time.time() >= deadline:
                return self._stop(
                    run,
                    outcome=RunOutcome.ready_timeout,
                    reason=f"not ready after {run.ready_timeout_s:g} s",
                    state=RunState.failed,
                    attempt_status=Status.crashed,
                )
            # Until the attempt changes, the next look at the host, or the deadline.
            left = min(next_host_look - time.monotonic(), deadline - time.time())
            snapshot = self._changed_snapshot(left)

    def _caught_up(self, run: Run, job: Job | None) -> dict[str, Any]:
        """The diagnosis once the tail has read the log to its end (bounded): each commit
        of the tail wakes the driver."""
        size = (job.get("log_size") if job else None) or 0
        deadline = time.monotonic() + CATCH_UP_S
        snapshot = self._snapshot()
        while snapshot.tail_offset < size:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            snapshot = self._changed_snapshot(left) or self._snapshot()
        return snapshot.diagnosis

    def _crashed(self, run: Run, job: Job | None) -> Run:
        run_dir = _run_dir(run)
        if job is None:
            # The log said so first: its exit status follows within moments (the
            # traceback is printed before the process ends), and the host says when.
            job = self._ask(lambda: self.host.wait(run_dir, "server", CATCH_UP_S))["jobs"]["server"]
        # Its session can be empty a moment before its wrapper writes the exit status.
        deadline = time.monotonic() + EXIT_STATUS_WAIT_S
        while not job.get("exit") and not job.get("lost") and time.monotonic() < deadline:
            self._pause(EXIT_POLL_S)
            job = self._status(run)["jobs"]["server"]
        diagnosis = self._caught_up(run, job)
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
        return self._stop(
            run,
            outcome=RunOutcome.crashed,
            reason=reason,
            state=RunState.failed,
            attempt_status=Status.crashed,
            exit_code=exit_code,
        )

    def _after_ready(self, run: Run) -> None:
        if run.bench:
            run = self._benchmark(run)
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
        self._stop(run, outcome=outcome, reason=None)

    def _benchmark(self, run: Run) -> Run:
        if run.state != RunState.benchmarking:
            run = self.records.update(self.run_id, state=RunState.benchmarking)
        total = run.warmup + run.repeat
        assert run.bench is not None
        spec = result_file(run.bench)
        run_dir, bench = _run_dir(run), run.bench
        for index in range(run.bench_done + 1, total + 1):
            name = f"bench-{index}"
            jobs = self._status(run, "server", name)["jobs"]
            if not jobs["server"].get("running"):
                self._server_died(run, jobs["server"], name)
            if not jobs[name]["exists"]:
                # The result file as it is before the run: its own record is what it adds.
                watch = spec.watch() if spec else None
                self._ask(partial(self.host.start, run_dir, name, bench, run_id=run.run_key,
                                  watch=watch))  # fmt: skip
            job = self._wait_for_bench(run, name)
            entry = self._bench_entry(run, index, job, spec)
            run = self.records.bench_run(self.run_id, entry, entry.get("metric_recorded"))
            if entry["failure"]:
                return self._stop(
                    run,
                    outcome=RunOutcome.bench_failed,
                    reason=f"benchmark run {index} failed: {entry['failure']}",
                    state=RunState.failed,
                )
        counted = [e for e in run.bench_runs or [] if e.get("metric_recorded") is not None]
        if not counted:
            return self._stop(
                run,
                outcome=RunOutcome.bench_failed,
                reason="no benchmark run gave a valid figure (each had failed requests)",
                state=RunState.failed,
            )
        return run

    def _stop_bench(self, run: Run, name: str) -> None:
        run_dir = _run_dir(run)
        self._ask(lambda: self.host.stop(run_dir, name, grace_s=5, timeout_s=60))

    def _wait_for_bench(self, run: Run, name: str) -> Job:
        while True:
            # A stop asked for wakes the driver; one asked through another dashboard is read
            # at the fallback.
            woken = self.wake.count() != self._seen
            if woken or time.monotonic() >= self._read_at + CHANGE_FALLBACK_S:
                try:
                    self._check_stop()
                except Stopped:
                    self._stop_bench(run, name)
                    raise
            jobs = self._status(run, "server", name, output=True, wait_for=name)["jobs"]
            job, server = jobs[name], jobs["server"]
            if not server.get("running"):
                self._stop_bench(run, name)
                self._server_died(run, server, name)
            if job.get("exit") is not None or job.get("lost"):
                return job
            self._check_shutdown()

    def _server_died(self, run: Run, server: Job, name: str) -> None:
        diagnosis = self._caught_up(run, server)
        ended = server.get("exit")
        cause = diagnosis.get("root_cause") or (
            f"exited with status {ended['exit_code']}" if ended else "it is gone"
        )
        self._stop(
            run,
            outcome=RunOutcome.server_died,
            reason=f"the server died during benchmark {name}: {cause}",
            state=RunState.failed,
            attempt_status=Status.crashed,
            exit_code=ended["exit_code"] if ended else None,
        )
        raise Finished

    def _bench_entry(
        self, run: Run, index: int, job: Job, spec: ResultFile | None
    ) -> dict[str, Any]:
        """One finished benchmark run: its figures (its result file's, else its printed
        block's: app/runner/benchfiles), whether it counts, and the campaign's metric (its
        own pattern's figure, else output tok/s) when it does."""
        output = job.get("output") or ""
        ended = job.get("exit")
        exit_code = ended["exit_code"] if ended else None
        snapshot = self.records.load(self.run_id)
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
        }

    def _stop(
        self,
        run: Run,
        *,
        outcome: RunOutcome,
        reason: str | None,
        state: RunState = RunState.done,
        attempt_status: Status | None = None,
        **fields: Any,
    ) -> Run:
        self.records.update(self.run_id, state=RunState.stopping, outcome=outcome, reason=reason)
        run_dir = _run_dir(run)
        report = self._ask(
            lambda: self.host.stop(
                run_dir, "server", grace_s=run.grace_s, port=run.port,
                gpu_before=(run.preflight or {}).get("gpu"), gpu_wait_s=self.gpu_release_s,
                gpus=visible_gpus(run.command),
                timeout_s=run.grace_s + self.gpu_release_s + 60,
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
        return self.records.finish(
            self.run_id,
            state=state,
            outcome=outcome,
            reason="; ".join(said) or None,
            attempt_status=attempt_status,
            stop_report=report,
            **fields,
        )


class HostRebooted(Exception):
    """The host's boot id is not the one the run was launched under."""


class Finished(Exception):
    """The run reached its end inside a phase (recorded there)."""


def _run_dir(run: Run) -> str:
    """The run's directory on the host, known once it is launched."""
    assert run.run_dir is not None, run
    return run.run_dir
