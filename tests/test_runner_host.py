"""The runner's host program, locally and over the test sshd: a job detached in a session
of its own, its exit status written when it ends, preflight refusals, stop that proves it."""

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.runner.hosts import HostAnswerError, HostLink, HostPrograms, check_host
from app.tailing.factory import LogSources
from tests.helpers import wait_for
from tests.runner_helpers import (
    bench_command,
    free_port,
    port_listening,
    server_command,
    session_processes,
)
from tests.sshd import Sshd


@pytest.fixture(params=["local", "ssh"])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HostLink]:
    if request.param == "local":
        yield HostLink(LogSources(Settings(_env_file=None)), "local")  # type: ignore[call-arg]
        return
    sshd: Sshd = request.getfixturevalue("sshd")
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        ssh_config=sshd.ssh_config,
        ssh_known_hosts=sshd.known_hosts,
        trusted_hosts_file=sshd.trusted_hosts,
        ssh_agent=False,
    )
    yield HostLink(LogSources(settings), sshd.alias)


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return tmp_path / "runs"


def start(host: HostLink, run_dir: Path, command: str, name: str = "server") -> dict[str, Any]:
    job = host.call("start", {"run_dir": str(run_dir), "name": name, "command": command,
                              "run_id": run_dir.name})  # fmt: skip
    assert job["started"], job
    return job


def job_of(host: HostLink, run_dir: Path, name: str = "server") -> dict[str, Any]:
    return host.call("status", {"run_dir": str(run_dir), "names": [name], "output": True})["jobs"][
        name
    ]


def healthy(host: HostLink, port: int) -> bool:
    return bool(host.call("health", {"url": f"http://127.0.0.1:{port}/health"})["ok"])


def test_a_job_runs_in_a_session_of_its_own_and_its_exit_status_lands_in_a_file(
    host: HostLink, runs: Path
) -> None:
    port = free_port()
    job = start(host, runs / "r1", server_command(port, "--mode", "crash"))
    assert job["sid"] == job["pgid"] == job["pid"]
    assert job["sid"] != os.getsid(0)  # not the dashboard's session, nor the channel's
    assert job["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert job["log_path"] == str(runs / "r1" / "server.log")
    ended = wait_for(lambda: job_of(host, runs / "r1")["exit"], what="the exit file")
    assert ended["exit_code"] == 3
    final = job_of(host, runs / "r1")
    assert final["alive"] is False
    assert "KeyError: 12" in final["output"]
    assert "server_args=ServerArgs(" in final["output"]
    # The crash variant kills its child: nothing of the session is left.
    wait_for(lambda: not session_processes(job["sid"]), what="an empty session", timeout=10)


def test_stop_sends_sigterm_to_the_whole_session_and_proves_it_stopped(
    host: HostLink, runs: Path
) -> None:
    port = free_port()
    job = start(host, runs / "r2", server_command(port, "--children", "2"))
    wait_for(lambda: healthy(host, port), what="/health")
    assert len(session_processes(job["sid"])) >= 3  # the server and its two children
    report = host.call("stop", {"run_dir": str(runs / "r2"), "port": port, "grace_s": 10})
    assert report["stopped"] is True and report["signal"] == "SIGTERM"
    assert report["left"] == [] and report["port_free"] is True
    assert report["gpu"]["present"] is False  # said plainly: this machine has no nvidia-smi
    assert session_processes(job["sid"]) == []
    assert not port_listening(port)
    assert report["exit"]["signal"] == 15 or report["exit"]["exit_code"] == 143


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace_period(
    host: HostLink, runs: Path
) -> None:
    port = free_port()
    job = start(host, runs / "r3", server_command(port, "--mode", "ignore-term"))
    wait_for(lambda: healthy(host, port), what="/health")
    report = host.call("stop", {"run_dir": str(runs / "r3"), "port": port, "grace_s": 1})
    assert report["signal"] == "SIGKILL" and report["stopped"] is True
    assert session_processes(job["sid"]) == [] and not port_listening(port)
    log = job_of(host, runs / "r3")["output"]
    assert "SIGTERM received; ignoring it" in log


def test_the_job_outlives_the_channel_that_started_it(
    host: HostLink, runs: Path, request: pytest.FixtureRequest
) -> None:
    port = free_port()
    job = start(host, runs / "r4", server_command(port))
    if not host.is_local:
        sshd: Sshd = request.getfixturevalue("sshd")
        sshd.stop()  # every SSH session gone, the listener too
    wait_for(lambda: port_listening(port), what="the server listening")
    assert session_processes(job["sid"])
    # Cleaned up from this machine: the host is this machine.
    local = HostLink(LogSources(Settings(_env_file=None)), "local")  # type: ignore[call-arg]
    report = local.call("stop", {"run_dir": str(runs / "r4"), "port": port, "grace_s": 5})
    assert report["stopped"] and session_processes(job["sid"]) == []


def test_preflight_refuses_a_port_in_use_and_another_live_run(host: HostLink, runs: Path) -> None:
    port = free_port()
    clear = host.call("preflight", {"port": port, "runs_root": str(runs)})
    assert clear["ok"] is True and clear["problems"] == []
    assert "nvidia-smi not found" in clear["gpu"]["note"]
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        busy = host.call("preflight", {"port": port, "runs_root": str(runs)})
    assert busy["ok"] is False
    assert busy["problems"] == [f"port {port} is already in use by pid {os.getpid()} "
                                f"({busy['problems'][0].split('(', 1)[1]}"]  # fmt: skip
    other = free_port()
    job = start(host, runs / "alive", server_command(other))
    try:
        crowded = host.call("preflight", {"port": port, "runs_root": str(runs)})
        assert crowded["ok"] is False
        assert (
            f"another launched run is still alive on this host: alive (pid {job['pid']})"
            in (crowded["problems"])
        )
    finally:
        host.call("stop", {"run_dir": str(runs / "alive"), "grace_s": 5})


def test_a_benchmark_job_captures_its_output(host: HostLink, runs: Path) -> None:
    port = free_port()
    start(host, runs / "r5", server_command(port))
    try:
        wait_for(lambda: healthy(host, port), what="/health")
        start(host, runs / "r5", bench_command(port, "--num-prompts", "4"), name="bench-1")
        ended = wait_for(lambda: job_of(host, runs / "r5", "bench-1")["exit"], what="the bench")
        assert ended["exit_code"] == 0
        output = job_of(host, runs / "r5", "bench-1")["output"]
        assert "Output token throughput (tok/s):" in output
        assert "Successful requests:                     4" in output
    finally:
        host.call("stop", {"run_dir": str(runs / "r5"), "port": port, "grace_s": 5})


def test_starting_a_job_twice_starts_it_once(host: HostLink, runs: Path) -> None:
    first = start(host, runs / "r6", "sleep 30")
    again = host.call("start", {"run_dir": str(runs / "r6"), "name": "server",
                                "command": "sleep 30"})  # fmt: skip
    assert again["already"] is True and again["pid"] == first["pid"]
    host.call("stop", {"run_dir": str(runs / "r6"), "grace_s": 5})
    assert session_processes(first["sid"]) == []


def test_a_command_is_one_argument_no_shell_of_the_caller_reads() -> None:
    local = HostLink(LogSources(Settings(_env_file=None)), "local")  # type: ignore[call-arg]
    with pytest.raises(HostAnswerError, match="KeyError"):
        local.call("start", {"run_dir": "/tmp/x"})  # no command: a clear error, not a crash
    assert check_host("gpu-box") == "gpu-box"
    with pytest.raises(ValueError, match="not a host"):
        check_host("gpu;rm -rf /")


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_job_s_orphans_are_its_wrapper_s_to_reap(host: HostLink, runs: Path) -> None:
    # The leader leaves a child behind. Reparented to init, it would stay a zombie of the
    # session until init reaps (this machine's init: about once a second) and stop() would
    # wait that long for its proof; the wrapper reaps it as it ends.
    pid_file = runs / "orphan.pid"
    job = start(host, runs / "r7", f"sleep 30 & echo $! > {pid_file}; exit 0")
    wait_for(lambda: job_of(host, runs / "r7")["exit"], what="the leader's end")
    orphan = int(pid_file.read_text())
    assert _parent(orphan) == job["wrapper_pid"]
    report = host.call("stop", {"run_dir": str(runs / "r7"), "grace_s": 5})
    assert report["stopped"] is True and report["signal"] == "SIGTERM"
    assert session_processes(job["sid"]) == []  # no zombie either


def test_wait_answers_when_the_benchmark_ends(host: HostLink, runs: Path) -> None:
    port = free_port()
    start(host, runs / "r8", server_command(port))
    try:
        start(host, runs / "r8", "sleep 0.5; exit 3", name="bench-1")
        args = {"run_dir": str(runs / "r8"), "name": "bench-1", "output": True, "timeout": 10}
        jobs = host.call("wait", args)["jobs"]
        assert jobs["bench-1"]["exit"]["exit_code"] == 3  # it waited for the end, not 10 s
        assert jobs["server"]["running"] is True
    finally:
        host.call("stop", {"run_dir": str(runs / "r8"), "port": port, "grace_s": 5})


def test_the_runs_of_a_host_share_its_program(runs: Path) -> None:
    sources = LogSources(Settings(_env_file=None))  # type: ignore[call-arg]
    programs = HostPrograms(sources)
    first, second = HostLink(sources, "local", programs), HostLink(sources, "local", programs)
    one = start(first, runs / "a", "sleep 30")
    first.close()  # a run's end leaves the host's program running for the next
    two = start(second, runs / "b", "sleep 30")
    try:
        assert _parent(one["wrapper_pid"]) == _parent(two["wrapper_pid"])  # one program
    finally:
        programs.close_all()
        local = HostLink(sources, "local")
        for run_dir, job in ((runs / "a", one), (runs / "b", two)):
            assert local.call("stop", {"run_dir": str(run_dir), "grace_s": 5})["stopped"]
            assert session_processes(job["sid"]) == []
        local.close()
