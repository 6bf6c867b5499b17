"""Time the diagnosis of a server that refused many requests, each with its handler's
traceback, against a log of the same size with none, side by side in the same run.

    python bench/refused_requests.py [--counts 1000,2000,4000,8000] [--runs 3]

A vLLM-like front end answering thousands of over-long prompts with a 400 logs each one's
traceback (served past), then a crash at the end. The diagnosis must stay linear in them: a
live tail re-reads its kept lines at each diagnosis. Prints, for each count, the median
seconds of both logs, their ratio, the growth from the count before (2.0 is linear), and
checks that the crash at the end is the root cause.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.diagnosis import diagnose_bytes

CRASH = (
    b"INFO 06-16 11:00:00 [loggers.py:87] Engine 000: Avg prompt throughput: 0.0 tokens/s\n"
    b'Traceback (most recent call last):\n  File "/srv/x.py", line 1, in run\nKeyError: 12\n'
)


def refused(count: int) -> bytes:
    parts = []
    for n in range(count):
        stamp = f"06-16 10:{n // 60 % 60:02d}:{n % 60:02d}"
        parts.append(
            f"INFO {stamp} [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 tokens/s\n"
            f"ERROR {stamp} [serving_chat.py:203] Error in preprocessing prompt inputs\n"
            "Traceback (most recent call last):\n"
            '  File "/srv/vllm/entrypoints/openai/serving_chat.py", line 190, in create\n'
            "    request_prompts = await self._preprocess_chat(\n"
            f"ValueError: This model's maximum context length is 8192 tokens. However, you "
            f"requested {8200 + n} tokens.\n"
        )
    return "".join(parts).encode() + CRASH


def quiet(size: int) -> bytes:
    line = b"INFO 06-16 10:03:14 [loggers.py:87] Engine 000: Avg prompt throughput: 1254.4 t/s\n"
    return line * (size // len(line)) + CRASH


def median_seconds(log: bytes, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        found = diagnose_bytes(log)
        times.append(time.perf_counter() - start)
        assert found.root_cause == "KeyError: 12", found.root_cause
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--counts", default="1000,2000,4000,8000")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'tracebacks':>10} {'MB':>5} {'refused s':>10} {'quiet s':>8} {'ratio':>6}", end="")
    print(f" {'growth':>7}")
    before = None
    for count in (int(c) for c in args.counts.split(",")):
        log = refused(count)
        seconds = median_seconds(log, args.runs)
        baseline = median_seconds(quiet(len(log)), args.runs)
        growth = f"{seconds / before:.2f}" if before else "-"
        print(
            f"{count:>10} {len(log) / 1e6:>5.1f} {seconds:>10.2f} {baseline:>8.2f} "
            f"{seconds / baseline:>5.1f}x {growth:>7}"
        )
        before = seconds


if __name__ == "__main__":
    main()
