"""Time what reading the environment adds to the ingest of a log's first bytes.

    python bench/environment.py [--mib 8] [--runs 5]

Builds an sglang-like log start (a `check_env` block, the seeds' `server_args` line, then
decode-batch and access lines) of --mib MiB, all of it within the bytes the reader looks at,
and a line of 1 MiB without a keyword (what made the unanchored search quadratic). Feeds it,
in 64 KiB chunks as the ingest does, to the environment reader, and, as the reference in the
same run, to the diagnosis engine (which every ingested byte goes through already).
"""

import argparse
import statistics
import time
from pathlib import Path

from app.diagnosis import Diagnoser
from app.environment import EnvironmentReader

CHUNK = 64 << 10
SEED_LOG = Path(__file__).resolve().parent.parent / "tests" / "data" / "seed_torch_symm_mem.log"
CHECK_ENV = (Path(__file__).resolve().parent.parent / "tests" / "corpus" / "environment"
             / "env-001.log")  # fmt: skip


def log_start(mib: int) -> bytes:
    args = next(x for x in SEED_LOG.read_text().splitlines() if "server_args=" in x)
    head = CHECK_ENV.read_text() + args + "\n"
    lines = [
        "[2026-02-27 13:24:01 TP0] Decode batch. #running-req: 64, #token: 81920, token usage: "
        "0.20, cuda graph: True, gen throughput (token/s): 92.61, #queue-req: 0",
        '[2026-02-27 13:24:01] INFO:     127.0.0.1:40220 - "POST /generate HTTP/1.1" 200 OK',
    ]
    body, size, n = [head], len(head), 0
    while size < mib << 20:
        line = lines[n % 2] + "\n"
        body.append(line)
        size, n = size + len(line), n + 1
    return "".join(body).encode()


def timed(make, data: bytes, runs: int) -> list[float]:  # type: ignore[no-untyped-def]
    took = []
    for _ in range(runs):
        reader = make()
        start = time.perf_counter()
        for at in range(0, len(data), CHUNK):
            reader.feed(data[at : at + CHUNK])
        took.append(time.perf_counter() - start)
    return took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    data = log_start(args.mib)
    long_line = b"x" * (1 << 20) + b"\n"
    reader = EnvironmentReader()
    for at in range(0, len(data), CHUNK):
        reader.feed(data[at : at + CHUNK])
    found = reader.environment.as_json() or {}
    print(f"read: {found.get('gpu_count')} x {found.get('gpu')}, torch {found.get('torch')}, "
          f"{found.get('engine')} {found.get('engine_version')}")  # fmt: skip
    for name, feed in (("log start", data), ("one 1 MiB line", long_line)):
        env = statistics.median(timed(EnvironmentReader, feed, args.runs))
        diagnosis = statistics.median(timed(Diagnoser, feed, args.runs))
        size = len(feed) / (1 << 20)
        print(f"{name} ({size:.1f} MiB): environment {env * 1000:.1f} ms "
              f"({size / env:.0f} MiB/s); diagnosis (reference) {diagnosis * 1000:.1f} ms "
              f"({size / diagnosis:.0f} MiB/s); ratio {env / diagnosis:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
