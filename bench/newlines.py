"""What counting a log's newlines costs the scan, against `bytes.count` in the same run.

    python bench/newlines.py [--size-mib 64] [--runs 3]

1. `count_newlines` against `bytes.count(b"\\n")`, per 1 MiB segment, on bench/diagnose.py's
   sglang-like lines and on lines of one length each (64 bytes down to empty lines, where
   `bytes.replace` would lose and the short-line guard hands over to `bytes.count`).
2. A segment's count on the scanner's helper thread while Hyperscan scans it, against the
   scan then the count in one thread.
Best of `--runs`, in seconds per GiB: CPU time of this process in 1, wall time in 2 (the
helper's point is a second core).
"""

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from diagnose import one_mib_of_serving

from app.diagnosis import scanner

MIB = 1 << 20


def per_gib(
    data: bytes,
    runs: int,
    work: Callable[[bytes, int, int], int],
    clock: Callable[[], float] = time.process_time,
) -> float:
    best = float("inf")
    for _ in range(runs):
        start = clock()
        for segment in range(0, len(data), MIB):
            work(data, segment, segment + MIB)
        best = min(best, clock() - start)
    return best * (1 << 30) / len(data)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--size-mib", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    rng = random.Random(7)
    serving = b"".join(one_mib_of_serving(rng) for _ in range(16))
    logs = {"sglang-like (135 B)": serving * (args.size_mib // 16 or 1)}
    for length in (64, 40, 24, 16, 1):
        line = b"x" * (length - 1) + b"\n"
        logs[f"{length} B lines"] = line * (args.size_mib * MIB // length)

    def count(data: bytes, start: int, end: int) -> int:
        return data.count(b"\n", start, end)

    print("s/GiB: bytes.count, count_newlines, ratio")
    for name, data in logs.items():
        reference = per_gib(data, args.runs, count)
        result = per_gib(data, args.runs, scanner.count_newlines)
        print(f"{name:20s} {reference:6.2f} {result:6.2f} {result / reference:5.2f}x")

    scan = scanner.Scanner()
    data = logs["sglang-like (135 B)"]

    def in_turn(buffer: bytes, start: int, end: int) -> int:
        scan._database.scan(memoryview(buffer)[start:end], match_event_handler=scan._on_match)
        return scanner.count_newlines(buffer, start, end)

    for label, work in (("scan, then count", in_turn), ("count on the helper", scan._scan)):
        wall = per_gib(data, args.runs, work, time.perf_counter)
        print(f"{label:20s} {wall:6.2f} s/GiB (wall)")


if __name__ == "__main__":
    main()
