"""Asking a host's runner program something: over the tails' SSH pool for an ssh alias,
as a local subprocess for `local`. Programs are kept running (HostPrograms, shared by the
app's runs) and asked a line at a time: starting Python on the host for every look, or for
every run, costs a loaded host a second. A broken one is started again at the next
question. Blocking: callers are the runner's threads."""

import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, cast

from app.runner import host_checks, host_gpus, host_jobs, host_proc, host_results, hostprog
from app.runner.answers import Gpus, Health, Job, Preflight, StatusAnswer, StopReport
from app.tailing.factory import LogSources
from app.tailing.sources import BadSource, HostUnavailable, SourceURL, parse_source
from app.tailing.status import TailStatus

# The host program's files, sent as one program in this order, each using only what comes
# before it: /proc and JSON records, nvidia-smi, a benchmark's result file, jobs (start,
# status, wait, health), preflight and stop with its proof, the request loop.
PROGRAM_FILES: tuple[ModuleType, ...] = (
    host_proc, host_gpus, host_results, host_jobs, host_checks, hostprog,
)  # fmt: skip


def _program(files: tuple[ModuleType, ...]) -> bytes:
    return b"\n".join(Path(str(module.__file__)).read_bytes() for module in files)


PROGRAM = _program(PROGRAM_FILES)
LOCAL = "local"


class HostAnswerError(Exception):
    """The host's program ran but answered with an error."""


def check_host(host: str) -> str:
    """`local`, an ssh alias or [user@]host[:port]; raises ValueError otherwise."""
    host = host.strip()
    if host == LOCAL:
        return host
    try:
        parse_source(f"ssh://{host}/")
    except BadSource as error:
        raise ValueError(f"not a host: {error}") from None
    return host


class Session(Protocol):
    closed: bool

    def request(self, line: bytes, timeout_s: float) -> bytes: ...

    def close(self, *, broken: bool = False) -> None: ...


class LocalSession:
    """The program as a subprocess of the dashboard, for `local`."""

    def __init__(self) -> None:
        from app.tailing.ssh_source import BOOTSTRAP

        self.closed = False
        self._process = subprocess.Popen(
            [sys.executable, "-c", BOOTSTRAP, str(len(PROGRAM)), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self._process.stdin is not None
        self._process.stdin.write(PROGRAM)
        self._process.stdin.flush()
        self._buffer = bytearray()

    def request(self, line: bytes, timeout_s: float) -> bytes:
        assert self._process.stdin is not None and self._process.stdout is not None
        deadline = time.monotonic() + timeout_s
        try:
            self._process.stdin.write(line.rstrip(b"\n") + b"\n")
            self._process.stdin.flush()
        except OSError as error:
            self.close(broken=True)
            raise HostUnavailable(
                TailStatus.connection_lost, f"the runner program ended: {error}"
            ) from None
        fd = self._process.stdout.fileno()
        while (newline := self._buffer.find(b"\n")) < 0:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close(broken=True)
                raise HostUnavailable(
                    TailStatus.no_answer, "the runner program did not answer in time"
                )
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if ready:
                data = os.read(fd, 1 << 16)
                if not data:
                    self.close(broken=True)
                    raise HostUnavailable(TailStatus.connection_lost, "the runner program ended")
                self._buffer += data
        reply = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        return reply

    def close(self, *, broken: bool = False) -> None:
        if self.closed:
            return
        self.closed = True
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(2)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


class HostPrograms:
    """The host programs kept running, per host, each lent to one call at a time: the next
    run on a host is asked without starting Python there again. One idle past IDLE_S is
    closed rather than trusted (its channel may have died quietly)."""

    IDLE_S = 300.0

    def __init__(self, sources: LogSources) -> None:
        self.sources = sources
        self._idle: dict[str, list[tuple[float, Session]]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def _open(self, host: str) -> Session:
        if host == LOCAL:
            return LocalSession()
        try:
            url = parse_source(f"ssh://{host}/")
            source = self.sources.ssh(SourceURL("ssh", "/", url.host, url.user, url.port))
            return source.open_program(PROGRAM, ["serve"])
        except BadSource as error:  # a run stored before the API refused such hosts
            raise HostUnavailable(TailStatus.error, str(error)) from None

    def borrow(self, host: str) -> Session:
        stale = []
        found = None
        with self._lock:
            idle = self._idle.get(host, [])
            while idle and found is None:
                since, session = idle.pop()
                if session.closed or time.monotonic() - since > self.IDLE_S:
                    stale.append(session)
                else:
                    found = session
        for session in stale:
            session.close()
        return found or self._open(host)

    def give_back(self, host: str, session: Session) -> None:
        with self._lock:
            keep = not session.closed and not self._closed
            if keep:
                self._idle.setdefault(host, []).append((time.monotonic(), session))
        if not keep:
            session.close()  # lent when the app stopped: not left running

    def close_all(self) -> None:
        with self._lock:
            self._closed = True
            sessions = [s for idle in self._idle.values() for _, s in idle]
            self._idle.clear()
        for session in sessions:
            session.close()


class HostLink:
    """One host as the runner sees it; its programs are the app's (shared by its runs) or,
    without `programs`, its own, closed with it."""

    def __init__(
        self, sources: LogSources, host: str, programs: HostPrograms | None = None
    ) -> None:
        self.host = host
        self.is_local = host == LOCAL
        self._owned = programs is None
        self._programs = programs or HostPrograms(sources)

    def log_source(self, path: str) -> str:
        """The log source URL of a file on this host, for the ordinary tailer."""
        return f"file://{path}" if self.is_local else f"ssh://{self.host}{path}"

    def call(
        self, command: str, args: dict[str, Any], *, timeout_s: float = 30.0
    ) -> dict[str, Any]:
        """Run one subcommand of the host program; its JSON answer. Raises HostUnavailable
        when the host cannot be asked, HostAnswerError when the program says it failed."""
        line = json.dumps({"command": command, "args": args}).encode()
        session = self._programs.borrow(self.host)
        try:
            reply = session.request(line, timeout_s)
        finally:
            self._programs.give_back(self.host, session)
        try:
            answer = json.loads(reply)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise HostAnswerError(f"{self.host}: an answer the runner cannot read")
        if "error" in answer and len(answer) == 1:
            raise HostAnswerError(f"{self.host}: {answer['error']}")
        return answer

    # Each command with its arguments named, its answer typed (app/runner/answers.py); an
    # argument left None is not sent: the program has its own default.

    def start(
        self, run_dir: str, name: str, command: str, *, run_id: str,
        watch: dict[str, Any] | None = None,
    ) -> Job:  # fmt: skip
        """Start `command` as job `name` of the run directory, detached (once: a job started
        before answers `already`)."""
        args: dict[str, Any] = {"run_dir": run_dir, "name": name, "command": command,
                                "run_id": run_id}  # fmt: skip
        if watch is not None:
            args["watch"] = watch
        return cast(Job, self.call("start", args))

    def status(
        self, run_dir: str, names: list[str] | None = None, *, output: bool = False,
        health_url: str | None = None,
    ) -> StatusAnswer:  # fmt: skip
        """The jobs `names` (the server's, without), with the end of their log and their
        result file once they ended (`output`); the health URL asked in the same call."""
        return cast(StatusAnswer, self.call("status", _looks(run_dir, names, output, health_url)))

    def wait(
        self, run_dir: str, name: str, timeout_s: float, names: list[str] | None = None, *,
        output: bool = False, health_url: str | None = None,
    ) -> StatusAnswer:  # fmt: skip
        """`status` once job `name` ended or the server stopped running, or after `timeout_s`
        (the program waits 10 s at most)."""
        args = _looks(run_dir, names, output, health_url) | {"name": name, "timeout": timeout_s}
        return cast(StatusAnswer, self.call("wait", args, timeout_s=timeout_s + 30.0))

    def preflight(
        self, *, port: int | None, runs_root: str, skip_run: str, gpus: str | None,
        interpreter: str | None = None, probe: bool = False,
    ) -> Preflight:  # fmt: skip
        """What would poison a measurement of a launch on this host now; `probe`: what it
        would run on too (its GPUs, driver, and `interpreter`'s packages), as `probe`."""
        args: dict[str, Any] = {"port": port, "runs_root": runs_root, "skip_run": skip_run,
                                "gpus": gpus}  # fmt: skip
        if probe:
            args["interpreter"] = interpreter
        return cast(Preflight, self.call("preflight", args))

    def stop(
        self, run_dir: str, name: str, *, grace_s: float, timeout_s: float,
        port: int | None = None, gpu_before: Gpus | None = None,
        gpu_wait_s: float | None = None, gpus: str | None = None,
    ) -> StopReport:  # fmt: skip
        """Stop job `name` (SIGTERM, SIGKILL after `grace_s`) and prove it: its port free,
        the GPU memory on `gpus` back to `gpu_before` within `gpu_wait_s`."""
        given = {"run_dir": run_dir, "name": name, "grace_s": grace_s, "port": port,
                 "gpu_before": gpu_before, "gpu_wait_s": gpu_wait_s, "gpus": gpus}  # fmt: skip
        args = {key: value for key, value in given.items() if value is not None}
        return cast(StopReport, self.call("stop", args, timeout_s=timeout_s))

    def health(self, url: str) -> Health:
        """GET the URL from the host itself."""
        return cast(Health, self.call("health", {"url": url}))

    def close(self) -> None:
        if self._owned:
            self._programs.close_all()


def _looks(
    run_dir: str, names: list[str] | None, output: bool, health_url: str | None
) -> dict[str, Any]:
    args: dict[str, Any] = {"run_dir": run_dir, "names": names or ["server"], "output": output}
    if health_url:
        args["health_url"] = health_url
    return args
