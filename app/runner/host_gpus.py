"""What nvidia-smi says of the GPU host's GPUs: memory in use, compute processes, which of
them a launch may use, and what still holds memory after a stop. Part of the runner's host
program (app/runner/hostprog.py): standard library only, Python 3.6 compatible."""

import os
import shutil
import subprocess
from typing import Callable, List, Optional, Sequence, Tuple

if __name__ != "__main__":
    # Run on a host, this file's code comes after host_proc.py's: `Answer` is already there.
    from app.runner.host_proc import Answer

# GPU memory within this much of what it was before the launch counts as given back.
GPU_SLACK_MIB = 256

GPU_QUERY = "--query-gpu=index,uuid,memory.used,memory.total,mig.mode.current"
APP_QUERY = "--query-compute-apps=pid,process_name,used_memory,gpu_uuid"


def _run_smi(smi: str, query: str) -> Tuple[int, str]:
    """One CSV query of nvidia-smi: its exit status and what it printed (stderr included)."""
    done = subprocess.run(
        [smi, query, "--format=csv,noheader,nounits"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        universal_newlines=True,
        timeout=20,
    )
    return done.returncode, done.stdout


def smi_rows(said: Tuple[int, str], width: int) -> List[List[str]]:
    """One CSV query's rows (`said`: its exit status and output), each cut into `width`
    cells: the process name, the one free-text cell, keeps any comma of its own (it is
    second: the cells after it are split off). A failed query raises OSError."""
    status, output = said
    if status != 0:
        lines = output.strip().splitlines()
        raise OSError("exit status %d%s" % (status, ": " + lines[-1] if lines else ""))
    rows = []
    for line in output.splitlines():
        first, _, rest = line.partition(",")
        cells = [first, *rest.rsplit(",", width - 2)] if rest else [first]
        if len(cells) == width:  # a warning line ("WARNING: infoROM is corrupted") is not
            rows.append([cell.strip() for cell in cells])
    return rows


def _mib(cell: str) -> Optional[int]:
    """A figure in MiB, or None for what nvidia-smi says instead: "[N/A]" (a GB10's unified
    memory, a process's under WDDM), "[Not Supported]", "[Insufficient Permissions]" (a MIG
    GPU seen from a container)."""
    figure = cell[:-3].strip() if cell.endswith("MiB") else cell
    return int(figure) if figure.isdigit() else None


# Where drivers put nvidia-smi, looked in when the PATH lacks it: a non-interactive SSH
# session's PATH is short (a container's driver mount is /usr/local/nvidia/bin, WSL's
# /usr/lib/wsl/lib), and a GPU check skipped for that would let a busy GPU poison a run.
SMI_DIRS = ("/usr/bin", "/usr/local/nvidia/bin", "/usr/lib/wsl/lib")


def find_smi(dirs: Sequence[str] = SMI_DIRS) -> Optional[str]:
    """nvidia-smi on the PATH, else the first in `dirs` that is an executable file."""
    found = shutil.which("nvidia-smi")
    if found is not None:
        return found
    for directory in dirs:
        path = os.path.join(directory, "nvidia-smi")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def gpus(dirs: Sequence[str] = SMI_DIRS) -> Answer:
    """GPU memory in use and compute processes, by nvidia-smi; `present` False without it
    (the note says where it was looked for), `error` when it fails (a driver it cannot
    reach, a field it does not know)."""
    smi = find_smi(dirs)
    if smi is None:
        return {"present": False, "note": "no nvidia-smi on the PATH or in " + ", ".join(dirs)}
    return read_gpus(lambda query: _run_smi(smi, query))


def read_gpus(ask: Callable[[str], Tuple[int, str]]) -> Answer:
    """`gpus()` from what nvidia-smi answers each query (`ask(query)`: its exit status and
    output); the GPUs are asked first, their processes only when that worked."""
    try:
        device_rows = smi_rows(ask(GPU_QUERY), 5)
        app_rows = smi_rows(ask(APP_QUERY), 4)
    except (OSError, subprocess.SubprocessError) as error:
        return {"present": True, "error": "nvidia-smi failed: %s" % error}
    devices, notes = [], []
    for index, uuid, used, total, mig in device_rows:
        device = {"index": index, "uuid": uuid, "used_mib": _mib(used), "total_mib": _mib(total),
                  "mig": mig == "Enabled"}  # fmt: skip
        if device["used_mib"] is None:
            notes.append("GPU %s says %s for its memory in use: checked by its compute "
                         "processes only" % (index, used))  # fmt: skip
        devices.append(device)
    if not devices:
        return {"present": True, "error": "nvidia-smi listed no GPU"}
    by_uuid = {d["uuid"]: d["index"] for d in devices}
    processes = []
    for pid, name, used, uuid in app_rows:
        processes.append({"pid": int(pid) if pid.isdigit() else None, "name": name,
                          "used_mib": _mib(used), "gpu": by_uuid.get(uuid, uuid)})  # fmt: skip
    answer = {"present": True, "devices": devices, "processes": processes}
    if notes:
        answer["note"] = "; ".join(notes)
    return answer


def _holder(process: Answer) -> str:
    held = "%d MiB" % process["used_mib"] if process["used_mib"] is not None else "memory"
    who = "pid %d" % process["pid"] if process["pid"] is not None else "a process"
    return "%s %s holds %s on GPU %s" % (who, process["name"], held, process["gpu"])


# An idle GPU shows a few MiB in use (one driving a display, some hundreds); a server's
# weights and KV cache are gigabytes.
BUSY_MIB = 1024


def gpus_busy(gpu: Answer) -> List[str]:
    """What holds the GPUs, each said with its pid and memory. Memory in use with no process
    listed counts too: nvidia-smi in a container does not list another PID namespace's."""
    said = [_holder(p) for p in gpu["processes"]]
    for device in gpu["devices"]:
        used = device["used_mib"]
        if used is not None and used > BUSY_MIB:
            listed = any(p["gpu"] == device["index"] for p in gpu["processes"])
            said.append(
                "GPU %s has %d of %s MiB in use%s%s"
                % (device["index"], used, device["total_mib"],
                   "" if listed else " by no process nvidia-smi lists here",
                   " (MIG: all its instances)" if device["mig"] else "")
            )  # fmt: skip
    return said


def only_visible(gpu: Answer, visible: Optional[str]) -> Answer:
    """The GPUs a CUDA_VISIBLE_DEVICES names (nvidia-smi's indices, which are CUDA's on a host
    of one kind of GPU, or UUIDs and their prefixes) and what runs on them; all of them when
    it is unset or names one nvidia-smi does not list (a MIG instance): better a refusal
    that names another job's GPU than a launch onto one in use."""
    if visible is None or not gpu.get("devices"):
        return gpu
    names = [name.strip() for name in visible.split(",") if name.strip()]
    picked = []
    for name in names:
        uuid = name.startswith("GPU-")
        found = [d for d in gpu["devices"]
                 if d["index"] == name or (uuid and d["uuid"].startswith(name))]  # fmt: skip
        if len(found) != 1:
            return gpu
        picked.append(found[0])
    indices = {d["index"] for d in picked}
    narrowed = dict(gpu)
    narrowed["devices"] = picked
    narrowed["processes"] = [p for p in gpu.get("processes", []) if p["gpu"] in indices]
    return narrowed


def gpu_left(before: Answer, now: Answer) -> List[str]:
    """What holds GPU memory that was free before the launch: compute processes that were
    not there, GPUs using more than they did (GPU_SLACK_MIB spared). Empty: it is back."""
    if now.get("error"):
        return ["cannot tell: %s" % now["error"]]
    known = {p["pid"] for p in before.get("processes", []) if p["pid"] is not None}
    left = [_holder(p) for p in now.get("processes", []) if p["pid"] not in known]
    used_before = {d.get("uuid", d["index"]): d["used_mib"] for d in before.get("devices", [])}
    for device in now.get("devices", []):
        was = used_before.get(device["uuid"], used_before.get(device["index"]))
        used = device["used_mib"]
        if used is not None and was is not None and used > was + GPU_SLACK_MIB:
            left.append("GPU %s has %d MiB in use, %d before the launch"
                        % (device["index"], used, was))  # fmt: skip
    return left
