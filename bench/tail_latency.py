"""Tail latency and catch-up through a real sshd on loopback, against bare readers.

    python bench/tail_latency.py [--lines 1000] [--catchup-mib 1024]

1. A writer appends a timestamped line every 10 ms. Two readers follow the same file in
   the same run: campaign-dash's pipeline (SSH source, ingest, SQLite commit) measured
   append-to-stored, and a bare paramiko `tail -F` measured append-to-received.
2. A 1 GiB log is caught up by the pipeline, against `ssh host cat file | grep -c Error`.
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import paramiko

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import changes, migrate
from app.db import make_engine, session_scope
from app.ingest import AttemptTail
from app.models import Attempt, Campaign
from app.repo import stored_log
from app.tailing.sources import parse_source
from app.tailing.ssh_pool import ConnectionPool, SSHOptions
from app.tailing.ssh_source import SSHSource
from tests.sshd import start_sshd


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]


def new_attempt(engine, source: str) -> int:  # type: ignore[no-untyped-def]
    with session_scope(engine) as session:
        campaign = Campaign(name="bench")
        session.add(campaign)
        session.flush()
        attempt = Attempt(
            campaign_id=campaign.id or 0, title="bench", source=source, status="running"
        )
        session.add(attempt)
        session.flush()
        return attempt.id or 0


def latency(workdir: Path, sshd, options: SSHOptions, lines: int) -> None:  # type: ignore[no-untyped-def]
    log = workdir / "latency.log"
    log.write_bytes(b"")
    url = f"sqlite:///{workdir / 'latency.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    source = f"ssh://{sshd.alias}{log}"
    attempt_id = new_attempt(engine, source)
    stored_at: dict[int, float] = {}
    read_upto = [0]

    # Read in the after-commit hook itself (a bench may: the app's hook only sets flags),
    # so the time taken is the commit's, not a reader thread's wake-up.
    def on_commit(_campaigns: frozenset[int], _attempts: frozenset[int]) -> None:
        now = time.time()
        with session_scope(engine) as session:
            data = stored_log(session, attempt_id, read_upto[0])
        read_upto[0] += len(data)
        for line in data.splitlines():
            if line.startswith(b"t="):
                stored_at.setdefault(int(line.split()[0][2:]), now)

    pool = ConnectionPool(options)
    changes.on_commit(engine, on_commit)
    tail = AttemptTail(
        engine, attempt_id, SSHSource(parse_source(source), pool), stall_after_s=3600
    )
    tail.start()

    bare_at: dict[int, float] = {}
    client = paramiko.SSHClient()
    client.load_host_keys(str(sshd.known_hosts))
    client.connect("127.0.0.1", port=sshd.port, key_filename=str(sshd.directory / "client_key"),
                   allow_agent=False, look_for_keys=False)  # fmt: skip
    _, stdout, _ = client.exec_command(f"tail -n 0 -F {log}")

    def bare_reader() -> None:
        for raw in stdout:
            now = time.time()
            if raw.startswith("t="):
                bare_at.setdefault(int(raw.split()[0][2:]), now)

    threading.Thread(target=bare_reader, daemon=True).start()
    time.sleep(2.0)  # both readers attached
    written: dict[int, float] = {}
    with log.open("ab") as out:
        for number in range(lines):
            written[number] = time.time()
            out.write(b"t=%d the server says something\n" % number)
            out.flush()
            time.sleep(0.01)
    time.sleep(2.0)
    tail.stop()
    client.close()
    engine.dispose()
    ours = [stored_at[n] - written[n] for n in written if n in stored_at]
    bare = [bare_at[n] - written[n] for n in written if n in bare_at]
    print(f"append-to-stored (campaign-dash): p50 {statistics.median(ours) * 1000:.1f} ms, "
          f"p99 {percentile(ours, 99) * 1000:.1f} ms ({len(ours)}/{lines} lines)")  # fmt: skip
    print(f"append-to-received (bare paramiko tail -F): "
          f"p50 {statistics.median(bare) * 1000:.1f} ms, "
          f"p99 {percentile(bare, 99) * 1000:.1f} ms ({len(bare)}/{lines} lines)")  # fmt: skip
    print(f"p99 difference: {(percentile(ours, 99) - percentile(bare, 99)) * 1000:+.1f} ms "
          "(goal: p99 < 250 ms and within 50 ms of the bare reader)")  # fmt: skip


def catch_up(workdir: Path, sshd, options: SSHOptions, mib: int) -> None:  # type: ignore[no-untyped-def]
    log = workdir / "catchup.log"
    line = b"[2026-02-27 13:21:27 TP0] Decode batch. #running-req: 32, "
    line += b"gen throughput (token/s): 81.5\n"
    block = line * ((1 << 20) // len(line))
    with log.open("wb") as out:
        for _ in range(mib):
            out.write(block)
        out.write(b"Traceback (most recent call last):\nKeyError: 12\n")
    size = log.stat().st_size
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # page cache
    started = time.monotonic()
    grep = subprocess.run(
        f"ssh -F {sshd.ssh_config} -o UserKnownHostsFile={sshd.known_hosts} {sshd.alias} "
        f"cat {log} | LC_ALL=C grep -c Error",
        shell=True, capture_output=True, text=True, check=False,
    )  # fmt: skip
    reference = time.monotonic() - started
    url = f"sqlite:///{workdir / 'catchup.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    source = f"ssh://{sshd.alias}{log}"
    attempt_id = new_attempt(engine, source)
    done = threading.Event()

    def on_commit(_campaigns: frozenset[int], _attempts: frozenset[int]) -> None:
        with session_scope(engine) as session:
            attempt = session.get(Attempt, attempt_id)
            if attempt and attempt.diagnosis and attempt.diagnosis["bytes_read"] >= size:
                done.set()

    pool = ConnectionPool(options)
    changes.on_commit(engine, on_commit)
    tail = AttemptTail(
        engine, attempt_id, SSHSource(parse_source(source), pool), stall_after_s=3600
    )
    started = time.monotonic()
    tail.start()
    done.wait(1800)
    ours = time.monotonic() - started
    tail.stop()
    engine.dispose()
    print(f"catch-up of {size / (1 << 20):,.0f} MiB: campaign-dash {ours:.1f} s "
          f"({size / (1 << 20) / ours:,.0f} MiB/s, stored and diagnosed); "
          f"ssh cat | grep -c Error {reference:.1f} s ({size / (1 << 20) / reference:,.0f} MiB/s, "
          f"count {grep.stdout.strip()}); ratio {ours / reference:.2f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--catchup-mib", type=int, default=1024)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-tail-"))
    sshd = start_sshd(workdir / "sshd")
    options = SSHOptions(config_path=sshd.ssh_config, known_hosts=(sshd.known_hosts,),
                         trusted_hosts_file=sshd.trusted_hosts, use_agent=False)  # fmt: skip
    try:
        latency(workdir, sshd, options, args.lines)
        if args.catchup_mib:
            catch_up(workdir, sshd, options, args.catchup_mib)
    finally:
        sshd.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
