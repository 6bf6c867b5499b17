"""The runner's host program, locally and over the test sshd: a job detached in a session
of its own, its exit status written when it ends, preflight refusals, stop that proves it."""

import ast
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import UnionType
from typing import Any, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from app.config import Settings
from app.runner import answers as answers_
from app.runner.context import RunContext
from app.runner.hosts import (
    PROGRAM,
    PROGRAM_FILES,
    HostAnswerError,
    HostLink,
    HostPrograms,
    check_host,
)
from app.tailing.factory import LogSources
from app.tailing.sources import HostUnavailable
from app.tailing.ssh_source import unreachable
from tests.helpers import wait_for
from tests.runner_helpers import (
    StandInGPUs,
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


@pytest.fixture
def gpus(
    host: HostLink, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> StandInGPUs:
    """The stand-in nvidia-smi, first on the PATH the host's program sees: the sshd
    sessions', or this process's for `local` (its program is started at the first call)."""
    gpus = StandInGPUs(tmp_path / "gpus")
    if host.is_local:
        gpus.install(tmp_path / "bin")
        monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    else:
        sshd: Sshd = request.getfixturevalue("sshd")
        gpus.install(sshd.bin)
    return gpus


@pytest.fixture
def holder() -> Iterator[subprocess.Popen[bytes]]:
    """A process of this test's to hold stand-in GPU memory while it lives."""
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


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
    assert "no nvidia-smi on the PATH" in clear["gpu"]["note"]
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


def _imports(tree: ast.Module) -> set[str]:
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    return imported


def test_the_program_sent_to_a_host_is_python_3_6_and_runs_on_its_own(tmp_path: Path) -> None:
    """Its files, sent as one program, run on the host's python3 (an old GPU box's 3.6) with
    nothing installed: the standard library only, no import of the app but the ones each
    file makes for the dashboard, which the program as sent never runs."""
    for module in PROGRAM_FILES:
        assert len(Path(str(module.__file__)).read_text().splitlines()) < 400, module
    tree = ast.parse(PROGRAM.decode(), feature_version=(3, 6))
    stdlib = {"ctypes", "errno", "json", "os", "select", "shutil", "signal", "socket", "stat",
              "subprocess", "sys", "time", "traceback", "typing", "urllib"}  # fmt: skip
    assert _imports(tree) - stdlib == {"app"}, _imports(tree)
    # -I: isolated, so no `app` package from the working directory or the environment.
    args = json.dumps({"run_dir": str(tmp_path / "run"), "names": ["server"]})
    done = subprocess.run(
        [sys.executable, "-I", "-", "status", args],
        input=PROGRAM, capture_output=True, cwd=tmp_path, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    answer = json.loads(done.stdout)
    assert answer["jobs"]["server"] == {
        "name": "server", "exists": False, "started": False, "alive": False,
    }  # fmt: skip


def _mismatches(value: Any, hint: Any, where: str) -> list[str]:
    """Where `value`, an answer as it came over the wire, differs from its declared type:
    a key sent but not declared, a required one missing, a value of another type."""
    if is_typeddict(hint):
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not an object"]
        hints = get_type_hints(hint)
        found = [f"{where}.{key}: sent, not declared" for key in value if key not in hints]
        found += [f"{where}.{key}: missing" for key in hint.__required_keys__ - set(value)]
        for key in set(value) & set(hints):
            found += _mismatches(value[key], hints[key], f"{where}.{key}")
        return found
    origin, args = get_origin(hint), get_args(hint)
    if origin is UnionType:
        each = [_mismatches(value, option, where) for option in args]
        return [] if [] in each else [f"{where}: {value!r} is none of {hint}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {value!r} is not a list"]
        return [
            m for i, item in enumerate(value) for m in _mismatches(item, args[0], f"{where}[{i}]")
        ]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {value!r} is not an object"]
        return [m for k, item in value.items() for m in _mismatches(item, args[1], f"{where}[{k}]")]
    if hint is Any:
        return []
    expected = {float: (int, float), type(None): type(None)}.get(hint, hint)
    return [] if isinstance(value, expected) else [f"{where}: {value!r} is not {hint}"]


def test_every_answer_of_the_host_program_is_as_its_type_declares(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TypedDicts the driver reads the answers through (app/runner/answers.py) against
    what the program sends: each command, each shape of its answer, stand-in GPUs included."""
    gpus = StandInGPUs(tmp_path / "gpus")
    gpus.install(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    host = HostLink(LogSources(Settings(_env_file=None)), "local")  # type: ignore[call-arg]
    run_dir, port = str(runs / "typed"), free_port()
    health = f"http://127.0.0.1:{port}/health"
    result = tmp_path / "result.jsonl"
    seen: list[tuple[str, Any, Any]] = []

    def check(what: str, hint: Any, answer: Any) -> Any:
        seen.append((what, hint, answer))
        return answer

    check("status, nothing started", answers_.StatusAnswer, host.status(run_dir))
    never = host.stop(run_dir, "server", grace_s=1, timeout_s=30)
    check("stop, never started", answers_.StopReport, never)
    before = host.preflight(port=port, runs_root=str(runs), skip_run="typed", gpus=None)
    assert check("preflight", answers_.Preflight, before)["ok"], before
    server = server_command(port, *gpus.gpu_state_args(20000))
    check("start", answers_.Job, host.start(run_dir, "server", server, run_id="typed"))
    again = host.start(run_dir, "server", server, run_id="typed")
    assert check("start again", answers_.Job, again)["already"] is True
    wait_for(lambda: host.health(health)["ok"], what="the server's health")
    check("health", answers_.Health, host.health(health))
    check("health, refused", answers_.Health, host.health(f"http://127.0.0.1:{free_port()}/"))
    bench = bench_command(port, "--output-file", str(result))
    watch = {"path": str(result), "append": True}
    started = host.start(run_dir, "bench-1", bench, run_id="typed", watch=watch)
    check("start a benchmark", answers_.Job, started)
    ended = host.wait(run_dir, "bench-1", 10, ["server", "bench-1"], output=True, health_url=health)
    check("wait, the benchmark ended, with its output", answers_.StatusAnswer, ended)
    assert ended["jobs"]["bench-1"]["result_file"].get("text"), ended  # read back
    refused = host.preflight(port=port, runs_root=str(runs), skip_run="other", gpus=None)
    assert not check("preflight, refused", answers_.Preflight, refused)["ok"]
    report = host.stop(run_dir, "server", grace_s=5, port=port, gpu_before=before["gpu"],
                       gpu_wait_s=5, timeout_s=60)  # fmt: skip
    assert check("stop, proven", answers_.StopReport, report)["gpu_memory_back"] is True, report
    ended = host.status(run_dir, ["server", "bench-1"], output=True)
    check("status, all ended", answers_.StatusAnswer, ended)
    assert [m for what, hint, answer in seen for m in _mismatches(answer, hint, what)] == []


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


H200 = {"index": "0", "uuid": "GPU-00000000-39c3-6e6a-ceb6-3d4d06d7e93f", "used_mib": 0,
        "total_mib": 143771, "mig": False}  # fmt: skip


def test_preflight_refuses_gpus_a_compute_process_holds(
    host: HostLink, runs: Path, gpus: StandInGPUs, holder: subprocess.Popen[bytes]
) -> None:
    port = free_port()
    clear = host.call("preflight", {"port": port, "runs_root": str(runs)})
    assert clear["ok"] is True and clear["problems"] == []
    assert clear["gpu"] == {"present": True, "devices": [H200], "processes": []}
    gpus.hold(holder.pid, 10758)
    busy = host.call("preflight", {"port": port, "runs_root": str(runs)})
    assert busy["ok"] is False
    assert busy["problems"] == [
        f"GPUs busy: pid {holder.pid} sleep holds 10758 MiB on GPU 0; "
        "GPU 0 has 10758 of 143771 MiB in use"
    ]
    assert busy["gpu"]["processes"] == [
        {"pid": holder.pid, "name": "sleep", "used_mib": 10758, "gpu": "0"}
    ]
    holder.kill()
    holder.wait()  # the driver frees a process's memory as it ends
    assert host.call("preflight", {"port": port, "runs_root": str(runs)})["ok"] is True


def test_preflight_counts_gpu_memory_held_by_a_process_nvidia_smi_cannot_list(
    host: HostLink, runs: Path, gpus: StandInGPUs, holder: subprocess.Popen[bytes]
) -> None:
    # nvidia-smi in a container lists no process of another PID namespace (seen on an H200:
    # `unshare --pid` and the 10 GiB holder vanished from --query-compute-apps).
    gpus.hold(holder.pid, 20000, visible=False)
    busy = host.call("preflight", {"runs_root": str(runs)})
    assert busy["gpu"]["processes"] == []
    assert busy["problems"] == [
        "GPUs busy: GPU 0 has 20000 of 143771 MiB in use by no process nvidia-smi lists here"
    ]


def test_preflight_reads_what_nvidia_smi_says_instead_of_a_figure(
    host: HostLink, runs: Path, tmp_path: Path, gpus: StandInGPUs,
    holder: subprocess.Popen[bytes],
) -> None:  # fmt: skip
    # A GB10's unified memory: "[N/A]" for memory in use; a MIG GPU in a container:
    # "[Insufficient Permissions]"; a process's memory under WDDM: "[N/A]".
    gpus.gpus = [
        {"index": 0, "memory_total": 128000, "memory_figure": "[N/A]"},
        {"index": 1, "memory_total": 81920, "memory_figure": "[Insufficient Permissions]",
         "mig": "Enabled"},
        {"index": 2, "memory_total": 81920, "memory_used": 2048, "mig": "Enabled"},
    ]  # fmt: skip
    StandInGPUs.__init__(gpus, gpus.directory, *gpus.gpus)
    idle = host.call("preflight", {"runs_root": str(runs)})
    assert [d["used_mib"] for d in idle["gpu"]["devices"]] == [None, None, 2048]
    assert [d["mig"] for d in idle["gpu"]["devices"]] == [False, True, True]
    assert idle["gpu"]["note"] == (
        "GPU 0 says [N/A] for its memory in use: checked by its compute processes only; "
        "GPU 1 says [Insufficient Permissions] for its memory in use: checked by its compute "
        "processes only"
    )
    assert idle["problems"] == [
        "GPUs busy: GPU 2 has 2048 of 81920 MiB in use by no process nvidia-smi lists here "
        "(MIG: all its instances)"
    ]
    # A process name is free text, commas and all.
    gpus.hold(holder.pid, "[N/A]", name="/opt/env,v2/bin/python3")
    busy = host.call("preflight", {"runs_root": str(runs)})
    assert busy["problems"][0].startswith(
        f"GPUs busy: pid {holder.pid} /opt/env,v2/bin/python3 holds memory on GPU 0; "
    )


def test_preflight_refuses_when_nvidia_smi_fails(
    host: HostLink, runs: Path, gpus: StandInGPUs
) -> None:
    message = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running."
    )
    gpus.write(fail={"status": 9, "message": message})
    refused = host.call("preflight", {"runs_root": str(runs)})
    assert refused["ok"] is False
    assert refused["problems"] == [f"GPUs not checked: nvidia-smi failed: exit status 9: {message}"]


def two_gpus(gpus: StandInGPUs) -> None:
    gpus.gpus = [{"index": i, "memory_total": 143771, "memory_used": 0} for i in (0, 1)]
    StandInGPUs.__init__(gpus, gpus.directory, *gpus.gpus)


def test_preflight_checks_only_the_gpus_the_command_makes_visible(
    host: HostLink, runs: Path, gpus: StandInGPUs, holder: subprocess.Popen[bytes]
) -> None:
    two_gpus(gpus)
    gpus.hold(holder.pid, 10758, gpu=1)  # another team's job, on GPU 1

    def problems(visible: str | None) -> list[str]:
        answer = host.call("preflight", {"runs_root": str(runs), "gpus": visible})
        assert len(answer["gpu"]["devices"]) == 2  # the whole host is still reported
        return list(answer["problems"])

    holds = f"GPUs busy: pid {holder.pid} sleep holds 10758 MiB on GPU 1; "
    for free in ("0", " 0 ", "GPU-00000000", "GPU-00000000-39c3-6e6a-ceb6-3d4d06d7e93f"):
        assert problems(free) == [], free
    for busy in ("1", "0,1", "1,0"):
        assert problems(busy) == [holds + "GPU 1 has 10758 of 143771 MiB in use"], busy
    # Unset, or naming what nvidia-smi does not list (a MIG instance, a typo): every GPU.
    for unknown in (None, "MIG-5f7a", "2", "GPU-0"):
        assert problems(unknown) == [holds + "GPU 1 has 10758 of 143771 MiB in use"], unknown
    assert problems("") == []  # no GPU at all for that command


def test_a_stop_is_proven_on_its_own_gpus_whatever_another_job_takes_meanwhile(
    host: HostLink, runs: Path, gpus: StandInGPUs, holder: subprocess.Popen[bytes]
) -> None:
    two_gpus(gpus)
    port = free_port()
    before = host.call("preflight", {"port": port, "runs_root": str(runs), "gpus": "0"})["gpu"]
    start(host, runs / "g3", server_command(port, *gpus.gpu_state_args(40000)))
    wait_for(lambda: healthy(host, port), what="/health")
    gpus.hold(holder.pid, 20000, gpu=1)  # another job starts on GPU 1 while this one runs
    stop = {"run_dir": str(runs / "g3"), "port": port, "grace_s": 5, "gpu_before": before,
            "gpu_wait_s": 0.5}  # fmt: skip
    report = host.call("stop", {**stop, "gpus": "0"})
    assert report["stopped"] is True
    assert report["gpu_memory_back"] is True and report["gpu_left"] == []


def test_stop_proves_gpu_memory_back_to_what_it_was_before_the_launch(
    host: HostLink, runs: Path, gpus: StandInGPUs
) -> None:
    port = free_port()
    before = host.call("preflight", {"port": port, "runs_root": str(runs)})["gpu"]
    job = start(host, runs / "g1", server_command(port, *gpus.gpu_state_args(40000)))
    wait_for(lambda: healthy(host, port), what="/health")
    during = host.call("preflight", {"runs_root": str(runs), "skip_run": "g1"})["gpu"]
    [server] = during["processes"]  # the server, a process of the job's session
    assert str(server.pop("pid")) in session_processes(job["sid"])
    assert server == {"name": sys.executable, "used_mib": 40000, "gpu": "0"}
    report = host.call("stop", {"run_dir": str(runs / "g1"), "port": port, "grace_s": 5,
                                "gpu_before": before})  # fmt: skip
    assert report["stopped"] is True and report["port_free"] is True
    assert report["gpu_memory_back"] is True and report["gpu_left"] == []
    assert report["gpu"]["devices"] == [H200] and report["gpu"]["processes"] == []


def test_a_stop_whose_gpu_memory_is_not_back_says_what_holds_it(
    host: HostLink, runs: Path, gpus: StandInGPUs, tmp_path: Path
) -> None:
    port = free_port()
    before = host.call("preflight", {"port": port, "runs_root": str(runs)})["gpu"]
    orphan_file = tmp_path / "orphan.pid"
    command = server_command(port, *gpus.gpu_state_args(40000), "--gpu-orphan", str(orphan_file))
    job = start(host, runs / "g2", command)
    wait_for(lambda: healthy(host, port), what="/health")
    orphan = int(orphan_file.read_text())
    try:
        report = host.call("stop", {"run_dir": str(runs / "g2"), "port": port, "grace_s": 5,
                                    "gpu_before": before, "gpu_wait_s": 0.5})  # fmt: skip
        # The session is empty, the port free: the helper that left the session is not.
        assert report["stopped"] is True and session_processes(job["sid"]) == []
        assert report["gpu_memory_back"] is False
        assert report["gpu_left"] == [
            f"pid {orphan} {sys.executable} holds 40000 MiB on GPU 0",
            "GPU 0 has 40000 MiB in use, 0 before the launch",
        ]
    finally:
        os.kill(orphan, signal.SIGKILL)


def test_a_host_name_no_resolver_knows_fails_the_run_at_once_not_after_minutes() -> None:
    # (the resolver's own errors, as getaddrinfo raises them: no lookup leaves this machine)
    typo = unreachable(
        "nosuchhost-xyz", socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    )
    assert typo.lasting and "no host is named 'nosuchhost-xyz'" in str(typo)
    for passing in (
        socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"),
        ConnectionRefusedError(111, "Connection refused"),
    ):
        assert not unreachable("gpubox", passing).lasting
    calls = []

    def ask_host() -> None:
        calls.append(time.monotonic())
        raise typo

    context = RunContext(1, None, None, threading.Event(), 0.0)  # type: ignore[arg-type]
    started = time.monotonic()
    with pytest.raises(HostUnavailable):
        context.ask(ask_host)
    assert len(calls) == 1 and time.monotonic() - started < 1.0
