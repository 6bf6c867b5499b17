"""What would poison a measurement, checked on the GPU host: before a launch (port, GPUs,
another run alive), and after a stop (no process left, port free, GPU memory back, shared
memory freed). Part of the host program (hostprog.py): stdlib only, Python 3.6."""

import json
import os
import signal
import subprocess
from typing import Any, List, Optional

if __name__ != "__main__":
    # Run on a host, this file's code comes after those of host_proc.py, host_gpus.py and
    # host_jobs.py.
    from app.runner.host_gpus import (
        _run_smi,
        find_smi,
        gpu_left,
        gpus,
        gpus_busy,
        only_visible,
        smi_rows,
    )
    from app.runner.host_jobs import RUNS_ROOT, _job, run_dir_of
    from app.runner.host_proc import (
        Answer,
        _processes,
        _read_json,
        _shm_in_use,
        _shm_names,
        _wait,
        boot_id,
        listeners,
        session_members,
    )

KILL_WAIT_S = 10.0
PORT_WAIT_S = 10.0
GPU_WAIT_S = 30.0


def live_runs(root: str, skip: Optional[str]) -> List[Answer]:
    """Servers launched by a runner that still have a process on this host (/proc read
    once, however many run directories the host has kept)."""
    root = os.path.abspath(os.path.expanduser(root))
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return []
    live_sessions = {fields[4] for fields in _processes() if len(fields) > 5 and fields[1] != "Z"}
    now_boot = boot_id()
    alive = []
    for entry in entries:
        if entry == skip:
            continue
        record = _read_json(os.path.join(root, entry, "server.json"))
        if record is None or str(record.get("sid")) not in live_sessions:
            continue
        if record.get("boot_id") and now_boot and record["boot_id"] != now_boot:
            continue  # launched before a reboot: that session id is someone else's now
        alive.append(
            {
                "run_dir": os.path.join(root, entry),
                "run_id": record.get("run_id"),
                "pid": record.get("pid"),
                "command": record.get("command"),
            }
        )
    return alive


def preflight(args: Answer) -> Answer:
    problems = []
    port = int(args["port"]) if args.get("port") else 0
    held = listeners(port) if port else []
    if held:
        who = ", ".join(
            "pid %d (%s)" % (p["pid"], p["cmdline"][:80]) for h in held for p in h["pids"]
        )
        problems.append("port %d is already in use%s" % (port, " by " + who if who else ""))
    gpu = gpus()
    if gpu.get("error"):
        # Neither free nor busy as far as anyone can tell, and a stop could not prove its
        # memory back: a driver nvidia-smi cannot reach would fail the server anyway.
        problems.append("GPUs not checked: %s" % gpu["error"])
    elif gpu.get("present"):
        busy = gpus_busy(only_visible(gpu, args.get("gpus")))
        if busy:
            problems.append("GPUs busy: " + "; ".join(busy))
    runs = live_runs(args.get("runs_root") or RUNS_ROOT, args.get("skip_run"))
    for run in runs:
        problems.append(
            "another launched run is still alive on this host: %s (pid %s)"
            % (run["run_id"] or run["run_dir"], run["pid"])
        )
    answer = {
        "ok": not problems,
        "problems": problems,
        "gpu": gpu,
        "boot_id": boot_id(),
        "runs": runs,
    }
    if "interpreter" in args:
        answer["probe"] = probe(args.get("interpreter"))
    return answer


# What the launch's interpreter is asked: its version and its packages' (by their metadata:
# importing torch would take seconds). Python 3.8+ on the interpreter's side.
PROBE = """
import json, sys
found = {"python": "%d.%d.%d" % tuple(sys.version_info[:3]), "packages": {}}
try:
    from importlib import metadata
except ImportError:
    metadata = None
for name in sys.argv[1:]:
    try:
        found["packages"][name] = metadata.version(name)
    except Exception:
        pass
print(json.dumps(found))
"""
PACKAGES = (
    "torch",
    "sglang",
    "vllm",
    "tensorrt_llm",
    "tensorrt-llm",
    "text-generation-server",
    "flashinfer-python",
    "flashinfer",
    "sgl-kernel",
    "triton",
    "pytorch-triton",
    "transformers",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "xformers",
    "flash-attn",
    "deep-gemm",
)
PROBE_TIMEOUT_S = 20


def probe(interpreter: Optional[str]) -> Answer:
    """The GPUs' model and driver (nvidia-smi), and the interpreter's packages: what the
    launch will run on, read before it. Each part says why it is missing; none refuses."""
    found = {"gpus": None, "python": None, "packages": {}, "notes": []}  # type: Answer
    smi = find_smi()
    if smi is None:
        found["notes"].append("no nvidia-smi")
    else:
        try:
            rows = smi_rows(_run_smi(smi, "--query-gpu=name,driver_version"), 2)
            found["gpus"] = [row[0] for row in rows]
            found["driver"] = rows[0][1] if rows else None
        except (OSError, subprocess.SubprocessError) as error:
            found["notes"].append("nvidia-smi: %s" % error)
    if not interpreter:
        found["notes"].append("the command names no Python interpreter to ask")
        return found
    try:
        done = subprocess.run(
            [os.path.expanduser(interpreter), "-c", PROBE, *PACKAGES],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=PROBE_TIMEOUT_S,
        )
        said = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as error:
        found["notes"].append("%s: %s" % (interpreter, error))
        return found
    if said is None:
        last = done.stderr.strip().splitlines()[-1:] or ["no output"]
        found["notes"].append("%s: exit status %d: %s" % (interpreter, done.returncode, last[0]))
        return found
    found["python"], found["packages"] = said.get("python"), said.get("packages") or {}
    return found


# --- stop, and prove it ------------------------------------------------------------------


def _signal_session(sid: int, sig: int) -> None:
    try:
        os.killpg(sid, sig)
    except OSError:
        pass
    # Members that moved to a process group of their own are still in the session.
    for member in session_members(sid):
        try:
            os.kill(member["pid"], sig)
        except OSError:
            pass


def stop(args: Answer) -> Answer:
    """SIGTERM to the job's session, SIGKILL after the grace period; then check that no
    process is left, the port is released, GPU memory is back and shared memory freed."""
    run_dir = run_dir_of(args)
    name = args.get("name", "server")
    job = _job(run_dir, name)
    if not job["started"]:
        return {"stopped": True, "signal": None, "left": [], "note": "never started"}
    sid = int(job["sid"])
    grace = float(args.get("grace_s", 30))
    used = None
    if not job["rebooted"] and session_members(sid):
        used = "SIGTERM"
        _signal_session(sid, signal.SIGTERM)
        if not _wait(lambda: not session_members(sid), grace):
            used = "SIGKILL"
            _signal_session(sid, signal.SIGKILL)
            _wait(lambda: not session_members(sid), KILL_WAIT_S)
    left = [] if job["rebooted"] else session_members(sid)
    if not left and not job["rebooted"]:
        # Dead but not yet reaped by their parent (init, for orphans): gone in a moment.
        _wait(lambda: not session_members(sid, zombies=True), KILL_WAIT_S)
    report: Answer = {"stopped": not left, "signal": used, "left": left}
    port = args.get("port")
    if port:
        report["port_free"] = _wait(lambda: not listeners(int(port)), PORT_WAIT_S)
    report.update(
        _gpu_proof(
            args.get("gpu_before") or {},
            float(args.get("gpu_wait_s", GPU_WAIT_S)),
            args.get("gpus"),
        )
    )
    report["shm_removed"], report["shm_left"] = _free_shm(job)
    _wait(lambda: _read_json(os.path.join(run_dir, name + ".exit")) is not None, 2.0)
    report["exit"] = _read_json(os.path.join(run_dir, name + ".exit"))
    return report


def _gpu_proof(before: Answer, wait_s: float, visible: Optional[str]) -> Answer:
    """Whether GPU memory is back to what it was before the launch (`before`, preflight's
    look) on the GPUs the server could use (`visible`: its CUDA_VISIBLE_DEVICES), looking
    again until `wait_s`: the driver frees a process's memory as it ends (within 0.2 s of a
    SIGKILL, on an H200), so what stays longer is held by something else."""
    gpu = gpus()
    if not gpu.get("present") or not before.get("devices"):
        return {"gpu": gpu}

    def left(now: Answer) -> List[str]:
        return gpu_left(only_visible(before, visible), only_visible(now, visible))

    holders = left(gpu)

    def back() -> bool:
        nonlocal gpu, holders
        gpu = gpus()
        holders = left(gpu)
        return not holders

    proven = not holders or _wait(back, wait_s)
    return {"gpu": gpu, "gpu_memory_back": proven, "gpu_left": holders}


def _free_shm(job: Answer) -> Any:
    """Shared memory a killed server left in /dev/shm (created after its launch, by this
    user, held by no process): removed. Others are reported, never touched."""
    before = set(job.get("shm_before") or [])
    new = [n for n in _shm_names() if n not in before]
    if not new:
        return [], []
    held = _shm_in_use()
    removed, left = [], []
    for entry in new:
        path = os.path.join("/dev/shm", entry)
        try:
            st = os.lstat(path)
            ours = st.st_uid == os.getuid() and st.st_mtime >= float(job.get("started_at", 0)) - 1
            if ours and entry not in held and os.path.isfile(path):
                os.unlink(path)
                removed.append(entry)
            else:
                left.append(entry)
        except OSError:
            continue
    return removed, left
