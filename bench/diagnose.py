"""Time `campaign-dash diagnose` on a large sglang-like log against grep on the same file.

    python bench/diagnose.py [--size-mib 1024] [--runs 3] [--keep PATH]

Generates the log (decode-batch and HTTP access lines, a long server_args line every 50 MB,
a crash traceback at the end), then runs, in the same run and on the same page-cached file,
`LC_ALL=C grep -c -E 'Error|Traceback'` and `campaign-dash diagnose --json`. Prints
medians, the ratio, peak RSS, and checks that the diagnosis found the crash.
"""

import argparse
import compileall
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIB = 1 << 20
SERVER_ARGS = (
    "[2026-02-27 13:21:27] server_args=ServerArgs(model_path='/shared/kimi-k2.5-int4', "
    + ", ".join(f"option_{i}=None" for i in range(400))
    + ", enable_torch_symm_mem=True, error_on_warnings=False)\n"
)
CRASH = """[2026-02-27 19:40:02 TP3] Scheduler hit an exception: Traceback (most recent call last):
  File "/root/sglang/python/sglang/srt/managers/scheduler.py", line 2989, in run_scheduler_process
    scheduler.event_loop_overlap()
  File "/root/sglang/python/sglang/srt/distributed/device_communicators/torch_symm_mem.py", line 56
    self.max_size = TORCH_SYMM_MEM_ALL_REDUCE_MAX_SIZES[self.device_capability][self.world_size]
KeyError: 12

[2026-02-27 19:40:02] Received sigquit from a child process. It usually means the child failed.
"""


def one_mib_of_serving(rng: random.Random) -> bytes:
    lines = []
    size = 0
    while size < MIB:
        if rng.random() < 0.7:
            line = (
                f"[2026-02-27 13:{rng.randrange(60):02d}:{rng.randrange(60):02d} TP0] "
                "Decode batch. "
                f"#running-req: {rng.randrange(1, 128)}, #token: {rng.randrange(1000, 90000)}, "
                f"token usage: 0.{rng.randrange(10, 99)}, cuda graph: True, "
                f"gen throughput (token/s): {rng.uniform(60, 95):.2f}, #queue-req: 0\n"
            )
        else:
            line = (
                f"[2026-02-27 13:{rng.randrange(60):02d}:{rng.randrange(60):02d}] INFO:     "
                f'127.0.0.1:{rng.randrange(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK\n'
            )
        lines.append(line)
        size += len(line)
    return "".join(lines).encode()


def generate(path: Path, size_mib: int) -> None:
    rng = random.Random(7)
    blocks = [one_mib_of_serving(rng) for _ in range(16)]
    with path.open("wb") as out:
        for index in range(size_mib):
            if index % 50 == 0:
                out.write(SERVER_ARGS.encode())
            out.write(blocks[index % len(blocks)])
        out.write(CRASH.encode())


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str, int]:
    """Wall seconds, CPU seconds (user and system, all threads), stdout, peak RSS so far."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode not in (0, 1):
        sys.exit(f"{command[0]} failed: {result.stderr}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed, cpu, result.stdout, max(after.ru_maxrss, before.ru_maxrss)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the log here and keep it")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-diagnose-"))
    path = args.keep or workdir / "server.log"
    if not path.exists():
        generate(path, args.size_mib)
    size = path.stat().st_size
    grep_env = {**os.environ, "LC_ALL": "C"}
    grep = ["grep", "-c", "-E", "Error|Traceback", str(path)]
    diagnose = [sys.executable, "-m", "app", "diagnose", "--json", str(path)]
    # Bytecode as `pip install .` leaves it: an editable install under PYTHONDONTWRITEBYTECODE
    # would compile every module from source again on each run (about 50 ms here).
    compileall.compile_dir(Path(__file__).resolve().parent.parent / "app", quiet=1)
    timed(grep, grep_env)  # warm the page cache for both

    grep_times, diagnose_times, diagnose_cpu = [], [], []
    diagnosis: dict = {}
    peak_kib = 0
    for _ in range(args.runs):
        grep_times.append(timed(grep, grep_env)[0])
        # RUSAGE_CHILDREN keeps the largest child so far: diagnose is the only large one.
        elapsed, cpu, output, peak_kib = timed(diagnose)
        diagnose_times.append(elapsed)
        diagnose_cpu.append(cpu)
        diagnosis = json.loads(output)
    if not args.keep:
        path.unlink()
        workdir.rmdir()

    grep_s, diagnose_s = statistics.median(grep_times), statistics.median(diagnose_times)
    print(f"log: {size / MIB:,.0f} MiB, {args.runs} runs, medians")
    print(f"grep -c -E 'Error|Traceback': {grep_s:.2f} s ({size / MIB / grep_s:,.0f} MiB/s)")
    print(
        f"campaign-dash diagnose:        {diagnose_s:.2f} s ({size / MIB / diagnose_s:,.0f} MiB/s)"
    )
    print(f"ratio diagnose/grep: {diagnose_s / grep_s:.2f}x (goal <= 1.2x, issue 23)")
    # Above the wall time where a helper thread counts newlines while the scan runs.
    print(f"diagnose CPU (user + system): {statistics.median(diagnose_cpu):.2f} s")
    print(f"diagnose peak RSS: {peak_kib / 1024:.0f} MiB (goal < 64 MiB)")
    print(
        f"found: root_cause={diagnosis['root_cause']!r} class={diagnosis['error_class']} "
        f"figures={len(diagnosis['throughput'])}"
    )
    frame = diagnosis["frame"] or {}
    print(
        f"frame: {frame.get('file')}:{frame.get('line')} in {frame.get('function')}; "
        f"candidates: {len(diagnosis['candidates'])}"
    )
    if diagnosis["root_cause"] != "KeyError: 12":
        sys.exit("diagnosis missed the crash")
    if not str(frame.get("file", "")).endswith("torch_symm_mem.py"):
        sys.exit("diagnosis missed the frame to patch")


if __name__ == "__main__":
    main()
