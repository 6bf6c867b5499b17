"""A stand-in for `nvidia-smi`'s CSV queries, answering as the real one does (as read on an
H200, driver 580): `--query-gpu=...` and `--query-compute-apps=...` with
`--format=csv[,noheader][,nounits]`; an unknown field is refused with status 2.

Its GPUs are the state directory's gpus.json; its compute processes are apps/PID.json files,
each listed, and its memory counted on its GPU, only while that process lives (the driver
frees a process's memory as it ends). gpus.json:
  {"gpus": [{"index": 0, "uuid": "GPU-...", "memory_total": 143771, "memory_used": 0,
             "memory_figure": "[N/A]" (instead of a figure, as a GB10 says), "mig": "Enabled"}],
   "fail": {"status": 9, "message": "..."} (when the driver cannot be reached)}
apps/PID.json: {"pid": PID, "gpu": 0, "used_memory": 10758 (or "[N/A]"), "visible": false (in
another PID namespace: its memory is counted, the process is not listed)}.
"""

import json
import sys
from pathlib import Path
from typing import Any

GPU_FIELDS = {
    "index": ("index", lambda g, used: str(g["index"])),
    "uuid": ("uuid", lambda g, used: g["uuid"]),
    "name": ("name", lambda g, used: g.get("name", "NVIDIA H200")),
    "driver_version": ("driver_version", lambda g, used: g.get("driver", "580.95.05")),
    "memory.used": ("memory.used [MiB]", lambda g, used: used),
    "memory.total": ("memory.total [MiB]", lambda g, used: str(g["memory_total"])),
    "mig.mode.current": ("mig.mode.current", lambda g, used: g.get("mig", "Disabled")),
}
APP_FIELDS = {
    "pid": ("pid", lambda a, gpu: str(a["pid"])),
    "process_name": ("process_name", lambda a, gpu: a.get("process_name") or _argv0(a["pid"])),
    "used_memory": ("used_gpu_memory [MiB]", lambda a, gpu: str(a["used_memory"])),
    "gpu_uuid": ("gpu_uuid", lambda a, gpu: gpu["uuid"]),
}


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _argv0(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except OSError:
        return "[Not Found]"


def _apps(state: Path) -> list[dict[str, Any]]:
    apps = []
    for path in sorted((state / "apps").glob("*.json")):
        try:
            app = json.loads(path.read_text())
        except (OSError, ValueError):
            continue  # being written
        if _alive(int(app["pid"])):
            apps.append(app)
    return apps


def _used(gpu: dict[str, Any], apps: list[dict[str, Any]]) -> str:
    if "memory_figure" in gpu:
        return str(gpu["memory_figure"])
    held = sum(
        a["used_memory"]
        for a in apps
        if a.get("gpu", 0) == gpu["index"] and isinstance(a["used_memory"], int)
    )
    return str(gpu.get("memory_used", 0) + held)


def _cell(value: str, header: str, units: bool) -> str:
    if units and header.endswith("[MiB]") and value.isdigit():
        return f"{value} MiB"
    return value


def main(argv: list[str]) -> int:
    # `--state DIR` first: the wrapper on the PATH says which stand-in GPUs it answers for.
    state, args = Path(argv[1]), argv[2:]
    queries = [a for a in args if a.startswith("--query-")]
    formats = [a.split("=", 1)[1].split(",") for a in args if a.startswith("--format=")]
    if len(queries) != 1 or len(formats) != 1 or "csv" not in formats[0] or len(args) != 2:
        print(f"the stand-in nvidia-smi answers one CSV query, not: {' '.join(args)}")
        return 2
    spec = json.loads((state / "gpus.json").read_text())
    if spec.get("fail"):
        print(spec["fail"]["message"])
        return int(spec["fail"]["status"])
    kind, _, wanted = queries[0].partition("=")
    table = GPU_FIELDS if kind == "--query-gpu" else APP_FIELDS
    if kind not in ("--query-gpu", "--query-compute-apps"):
        print(f"the stand-in nvidia-smi does not know {kind}")
        return 2
    names = wanted.split(",")
    for name in names:
        if name not in table:
            print(f'Field "{name}" is not a valid field to query.\n')
            return 2
    header, units = "noheader" not in formats[0], "nounits" not in formats[0]
    apps, gpus = _apps(state), spec["gpus"]
    if header:
        print(", ".join(table[n][0] for n in names))
    if kind == "--query-gpu":
        rows = [[(n, table[n][1](g, _used(g, apps))) for n in names] for g in gpus]
    else:
        by_index = {g["index"]: g for g in gpus}
        rows = [
            [(n, table[n][1](a, by_index[a.get("gpu", 0)])) for n in names]
            for a in apps
            if a.get("visible", True)
        ]
    for row in rows:
        print(", ".join(_cell(value, table[n][0], units) for n, value in row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
