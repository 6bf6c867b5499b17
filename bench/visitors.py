"""What anyone who can reach the port costs the server: a real `campaign-dash serve` process.

    python bench/visitors.py [--body-mib 1024] [--viewers 64] [--log-mib 200]

1. A 1 GiB body without credentials: the server's RSS before and after, how far the upload
   got before the 401, against a bodiless 401 in the same run.
2. 64 parallel anonymous share views (each viewer 5 in a row): all must be 200; the owner's
   requests meanwhile, p50/p99, against the same requests with no share load.
3. A stored log of 200 MB fetched with `GET /api/attempts/{id}/log`: the server's RSS growth
   while it streams, against the log's size (what reading it whole would cost).
"""

import argparse
import hashlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

TOKEN = "bench-owner-token-" + "x" * 24
MIB = 1 << 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]


def start_server(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_DASH_")}
    env |= {
        "CAMPAIGN_DASH_TOKEN": TOKEN,
        "CAMPAIGN_DASH_DATABASE_URL": f"sqlite:///{workdir / 'bench.db'}",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port)],
        env=env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(f"{url}/openapi.json", timeout=1)
            return process, url
        except httpx.TransportError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("serve did not start") from None
            time.sleep(0.1)


def upload_unauthenticated(port: int, size: int) -> tuple[int, int, float]:
    """POST `size` bytes with no credentials: (status, bytes sent at the answer, seconds)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    started = time.perf_counter()
    sock.sendall(
        b"POST /api/campaigns HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % size
    )
    sent = [0]
    block = b"[" + b"1," * (MIB // 2)

    def pump() -> None:
        try:
            while sent[0] < size:
                sock.sendall(block)
                sent[0] += len(block)
        except OSError:
            pass  # refused: the server closed the connection

    sender = threading.Thread(target=pump, daemon=True)
    sender.start()
    answer = b""
    while b"\r\n" not in answer:
        chunk = sock.recv(4096)
        if not chunk:
            break
        answer += chunk
    elapsed = time.perf_counter() - started
    at_answer = sent[0]
    sock.close()
    sender.join(timeout=60)
    return int(answer.split()[1]), at_answer, elapsed


def timed(call: Callable[[], httpx.Response], failures: list[int]) -> float:
    started = time.perf_counter()
    try:
        status = call().status_code
    except httpx.HTTPError:
        status = 0  # the server dropped the connection
    if status != 200:
        failures.append(status)
    return (time.perf_counter() - started) * 1000


def seed(owner: httpx.Client) -> tuple[int, str]:
    campaign = owner.post("/api/campaigns", json={"name": "bench", "baseline": 82}).json()
    for index in range(10):
        attempt = owner.post(
            f"/api/campaigns/{campaign['id']}/attempts", json={"title": f"hypothesis {index}"}
        ).json()
        for value in (80 + index, 81 + index):
            owner.post(f"/api/attempts/{attempt['id']}/measurements", json={"value": value})
        owner.post(f"/api/attempts/{attempt['id']}/notes", json={"body": f"note **{index}**"})
    token = owner.post(f"/api/campaigns/{campaign['id']}/shares").json()["token"]
    return campaign["id"], token


def bench_body(pid: int, url: str, size: int) -> None:
    port = int(url.rsplit(":", 1)[1])
    with httpx.Client(base_url=url) as client:
        client.post("/api/campaigns")  # warm up
        started = time.perf_counter()
        reference = client.post("/api/campaigns")
        bodiless_ms = (time.perf_counter() - started) * 1000
    before = rss_mib(pid)
    status, sent, seconds = upload_unauthenticated(port, size)
    time.sleep(0.5)  # let the server settle before reading its memory
    after = rss_mib(pid)
    print(f"1. {size // MIB} MiB body, no credentials: {status} after {seconds * 1000:.1f} ms,")
    print(
        f"   the client had sent {sent / MIB:.1f} MiB; server RSS {before:.1f} -> {after:.1f} MiB"
    )
    print(
        f"   reference, a bodiless request: {reference.status_code} in {bodiless_ms:.1f} ms; "
        f"ratio {seconds * 1000 / bodiless_ms:.1f}x; RSS growth {after - before:+.1f} MiB"
    )


def bench_share_views(pid: int, url: str, viewers: int) -> None:
    with httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120
    ) as owner:
        campaign_id, token = seed(owner)

        failures: list[int] = []

        def owner_request() -> float:
            return timed(lambda: owner.get(f"/api/campaigns/{campaign_id}", timeout=120), failures)

        for _ in range(20):
            owner_request()  # warm up
        quiet = [owner_request() for _ in range(200)]
        before = rss_mib(pid)
        statuses: list[int] = []
        lock = threading.Lock()
        start = threading.Barrier(viewers + 1)

        def view() -> None:
            with httpx.Client(base_url=url, timeout=120) as client:
                start.wait()
                for _ in range(5):
                    try:
                        status = client.get(f"/s/{token}").status_code
                    except httpx.HTTPError:
                        status = 0  # the server dropped the connection
                    with lock:
                        statuses.append(status)

        threads = [threading.Thread(target=view) for _ in range(viewers)]
        for thread in threads:
            thread.start()
        start.wait()
        began = time.perf_counter()
        loaded: list[float] = []
        while any(thread.is_alive() for thread in threads):
            loaded.append(owner_request())
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - began
        after = rss_mib(pid)
    ok = statuses.count(200)
    print(
        f"2. {viewers} parallel share viewers, 5 views each: {ok}/{len(statuses)} answered 200 "
        f"in {seconds:.2f} s ({len(statuses) / seconds:.0f} views/s)"
    )
    print(
        f"   owner GET /api/campaigns/{{id}} under that load ({len(loaded)} requests): "
        f"p50 {statistics.median(loaded):.1f} ms, p99 {percentile(loaded, 99):.1f} ms, "
        f"{len(failures)} failed {sorted(set(failures))}"
    )
    print(
        f"   reference, no share load ({len(quiet)} requests): "
        f"p50 {statistics.median(quiet):.1f} ms, p99 {percentile(quiet, 99):.1f} ms; "
        f"ratio p50 {statistics.median(loaded) / statistics.median(quiet):.1f}x, "
        f"p99 {percentile(loaded, 99) / percentile(quiet, 99):.1f}x"
    )
    print(f"   server RSS {before:.1f} -> {after:.1f} MiB")


def write_log(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    with path.open("wb") as out:
        written, number = 0, 0
        while written < size:
            block = b"".join(
                b"[2026-02-27 13:21:%02d TP0] Decode batch %d %s\n"
                % (n % 60, n, os.urandom(24).hex().encode())
                for n in range(number, number + 10_000)
            )
            number += 10_000
            out.write(block)
            digest.update(block)
            written += len(block)
    return digest.hexdigest()


def bench_log(pid: int, url: str, workdir: Path, size: int) -> None:
    log = workdir / "big.log"
    expected = write_log(log, size)
    length = log.stat().st_size
    with httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120
    ) as owner:
        campaign = owner.post("/api/campaigns", json={"name": "log"}).json()
        attempt = owner.post(
            f"/api/campaigns/{campaign['id']}/attempts",
            json={"title": "big log", "source": f"file://{log}"},
        ).json()
        deadline = time.monotonic() + 600
        while (owner.get(f"/api/attempts/{attempt['id']}").json()["tail"] or {}).get(
            "stored_bytes"
        ) != length:
            if time.monotonic() > deadline:
                raise RuntimeError("the log was not stored in 10 minutes")
            time.sleep(0.5)
        time.sleep(1)
        before = rss_mib(pid)
        peak = [before]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], rss_mib(pid))
                time.sleep(0.01)

        sampler = threading.Thread(target=sample)
        sampler.start()
        digest = hashlib.sha256()
        started = time.perf_counter()
        with owner.stream("GET", f"/api/attempts/{attempt['id']}/log", timeout=600) as response:
            for piece in response.iter_bytes():
                digest.update(piece)
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
    same = "identical" if digest.hexdigest() == expected else "DIFFERENT"
    print(
        f"3. GET /api/attempts/{{id}}/log of a {length / MIB:.0f} MiB stored log: {same} bytes, "
        f"{seconds:.2f} s ({length / MIB / seconds:.0f} MiB/s)"
    )
    print(
        f"   server RSS {before:.1f} MiB, peak while streaming {peak[0]:.1f} MiB "
        f"({peak[0] - before:+.1f} MiB); reference, the log's size: {length / MIB:.0f} MiB; "
        f"ratio {(peak[0] - before) / (length / MIB):.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--body-mib", type=int, default=1024)
    parser.add_argument("--viewers", type=int, default=64)
    parser.add_argument("--log-mib", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-visitors-") as tmp:
        workdir = Path(tmp)
        process, url = start_server(workdir)
        try:
            bench_body(process.pid, url, args.body_mib * MIB)
            bench_share_views(process.pid, url, args.viewers)
            bench_log(process.pid, url, workdir, args.log_mib * MIB)
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    main()
