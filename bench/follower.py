"""What the content fingerprint costs the follower, against bare reads of the same file.

    python bench/follower.py [--size-mib 512] [--looks 100000]

1. Catch-up: the follower (a 1 KiB checksum after every 1 MiB read) over a page-cached
   log, against a bare `os.read` loop of the same file in the same run.
2. One idle look: the fingerprint check (pread of the first KiB, crc32), against the
   `fstat` that the size check already paid for at every look.
3. One writer look (is a process still writing the file? every fd link of every visible
   process in /proc), made only once a file is quiet, against the idle look's fingerprint
   check, with this machine's count of processes and descriptors.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.tailing import follower

LINE = b"[2026-02-27 13:21:27 TP0] Decode batch. #running-req: 32, gen throughput (token/s): 81.5\n"


def bare_read(path: str) -> float:
    start = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    while os.read(fd, follower.READ_SIZE):
        pass
    os.close(fd)
    return time.perf_counter() - start


def followed(path: str, size: int) -> float:
    start = time.perf_counter()
    taken = 0
    events = follower.follow(path, 0, "-")
    for event in events:
        if event[0] == "D":
            taken += len(event[2])
            if taken >= size:
                break
    events.close()
    return time.perf_counter() - start


def per_look(path: str, looks: int) -> tuple[float, float]:
    fd = os.open(path, os.O_RDONLY)
    length, crc = follower._fresh(fd)
    start = time.perf_counter()
    for _ in range(looks):
        os.fstat(fd)
    fstat_s = (time.perf_counter() - start) / looks
    start = time.perf_counter()
    for _ in range(looks):
        follower._recheck(fd, length, crc)
    check_s = (time.perf_counter() - start) / looks
    os.close(fd)
    return fstat_s, check_s


def writer_looks(path: str, looks: int) -> tuple[float, int, int]:
    """Mean seconds of one writer look, and how many processes and descriptors it walked."""
    st = os.stat(path)
    start = time.perf_counter()
    for _ in range(looks):
        follower.writer_open(st)
    mean = (time.perf_counter() - start) / looks
    pids = [p for p in os.listdir("/proc") if p.isdigit()]
    fds = 0
    for pid in pids:
        try:
            fds += len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            continue
    return mean, len(pids), fds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=512)
    parser.add_argument("--looks", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "server.log")
        block = LINE * ((1 << 20) // len(LINE))
        with open(path, "wb") as out:
            for _ in range(args.size_mib):
                out.write(block)
        size = os.path.getsize(path)
        bare_read(path)  # page-cache it
        bare = statistics.median(bare_read(path) for _ in range(args.runs))
        follow = statistics.median(followed(path, size) for _ in range(args.runs))
        mib = size / (1 << 20)
        print(f"catch-up of {mib:.0f} MiB, medians of {args.runs}:")
        print(f"  bare os.read loop: {bare:.3f} s ({mib / bare:,.0f} MiB/s)")
        print(f"  follower:          {follow:.3f} s ({mib / follow:,.0f} MiB/s)")
        print(f"  ratio: {follow / bare:.2f}x")
        fstat_s, check_s = per_look(path, args.looks)
        print(f"one idle look, mean of {args.looks:,}:")
        print(f"  fstat (the size check): {fstat_s * 1e6:.2f} us")
        print(f"  fingerprint check:      {check_s * 1e6:.2f} us ({check_s / fstat_s:.1f}x)")
        writer_s, processes, fds = writer_looks(path, max(1, args.looks // 1000))
        first, settled = follower.WRITER_LOOK_EVERY_S, follower.WRITER_LOOK_MAX_S
        print(f"one writer look ({processes} processes, {fds} descriptors), a quiet file only:")
        print(f"  {writer_s * 1e3:.2f} ms ({writer_s / check_s:,.0f}x a fingerprint check);")
        print(f"  one every {first:.0f} s at first: {writer_s / first:.3%} of a core a quiet file,")
        print(f"  one every {settled:.0f} s once settled: {writer_s / settled:.3%}")


if __name__ == "__main__":
    main()
