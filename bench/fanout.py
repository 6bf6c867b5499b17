"""Live pages for a crowd: raw SSE clients against a real `campaign-dash serve` holding a
1,000-attempt campaign, and against a bare sse-starlette broadcaster in the same run.

    python bench/fanout.py [--seconds 15] [--json-clients 500] [--page-clients 200]
                           [--share-clients 300] [--attempts 1000] [--server-cpus 0,1]

With --server-cpus, the dashboard and the bare broadcaster run on those cores alone and the
clients and the writer on the others (a many-core host); without it all share the machine.

A writer thread posts changes through the API (each one a verdict on a different attempt,
so no two coalesce into one card); every client scans its stream for each change's marker.
Latency runs from the moment the writer sends its request (an upper bound on "from commit")
to the first byte of the marker at the client. Printed: p50/p99 latency, delivered/expected,
the writer's request p50/p99, and the bare broadcaster's figures and the ratio.
"""

import argparse
import asyncio
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

TOKEN = "bench-owner-token-" + "x" * 24
MARK = re.compile(rb"bench-(\d+)-x")
SERVER_CPUS: set[int] = set()  # the servers' cores, when pinned


def pin_server() -> None:
    """Runs in the server's child process before it starts."""
    if SERVER_CPUS:
        os.sched_setaffinity(0, SERVER_CPUS)


def more_files() -> None:
    """Thousands of sockets on each side: the soft limit up to the hard one."""
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def wait_up(url: str, process: subprocess.Popen[bytes], path: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(url + path, timeout=1)
            return
        except httpx.TransportError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"{url} did not start") from None
            time.sleep(0.1)


def start_dashboard(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_DASH_")}
    env |= {"CAMPAIGN_DASH_TOKEN": TOKEN,
            "CAMPAIGN_DASH_DATABASE_URL": f"sqlite:///{workdir / 'bench.db'}"}  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port)],
        env=env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=pin_server,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_up(url, process, "/openapi.json")
    return process, url


def start_bare() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve-bare", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=pin_server,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_up(url, process, "/ready")
    return process, url


def serve_bare(port: int) -> None:
    """The reference: one queue per client, each publish put on every queue."""
    import uvicorn
    from sse_starlette import EventSourceResponse, ServerSentEvent
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    queues: set[asyncio.Queue[str]] = set()

    async def events(_request: Request) -> EventSourceResponse:
        queue: asyncio.Queue[str] = asyncio.Queue()

        async def stream():  # type: ignore[no-untyped-def]
            queues.add(queue)
            try:
                yield ServerSentEvent(data="", event="hello")
                while True:
                    yield ServerSentEvent(data=await queue.get(), event="attempt")
            finally:
                queues.discard(queue)

        return EventSourceResponse(stream())

    async def publish(request: Request) -> PlainTextResponse:
        data = f'{{"verdict": "bench-{request.query_params["i"]}-x"}}'
        for queue in list(queues):
            queue.put_nowait(data)
        return PlainTextResponse("ok")

    async def ready(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/events", events), Route("/publish", publish, methods=["POST"]),
                            Route("/ready", ready)])  # fmt: skip
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


@dataclass
class Run:
    sent: dict[int, float] = field(default_factory=dict)  # marker -> when its request left
    posts_ms: list[float] = field(default_factory=list)
    failed_posts: int = 0
    got: list[dict[int, float]] = field(default_factory=list)  # per client: marker -> when
    ended: int = 0  # streams the server ended (dropped) before the run's end
    cpu_s: float = 0.0  # the server's CPU while the changes were posted and delivered


async def sse_client(
    url: str,
    path: str,
    headers: dict[str, str],
    run: Run,
    connected: asyncio.Event,
    stop: asyncio.Event,
) -> None:
    seen: dict[int, float] = {}
    run.got.append(seen)
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Accept: text/event-stream",
             *(f"{k}: {v}" for k, v in headers.items())]  # fmt: skip
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    tail = b""
    first = True
    try:
        while not stop.is_set():
            chunk = await reader.read(1 << 16)
            if not chunk:
                run.ended += 1
                return
            now = time.perf_counter()
            if first:
                first = False
                connected.set()
            data = tail + chunk
            for found in MARK.finditer(data):
                seen.setdefault(int(found.group(1)), now)
            tail = data[-24:]
    finally:
        writer.close()


def writer_thread(url: str, changes: list[tuple[str, str, dict[str, str]]], rate: float,
                  run: Run, start_at: int) -> None:  # fmt: skip
    """Each change at its time: (method, path, JSON body with the marker)."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        began = time.perf_counter()
        for n, (method, path, body) in enumerate(changes):
            delay = began + n / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            marker = start_at + n
            sent = time.perf_counter()
            run.sent[marker] = sent
            try:
                response = client.request(method, path, json=body)
                if response.status_code >= 300:
                    run.failed_posts += 1
            except httpx.HTTPError:
                run.failed_posts += 1
            run.posts_ms.append((time.perf_counter() - sent) * 1000)


async def scenario(
    url: str,
    path: str,
    headers: dict[str, str],
    clients: int,
    changes: list[tuple[str, str, dict[str, str]]],
    rate: float,
    start_at: int,
    server: int,
    owner_gets: str | None = None,
    when_connected: Callable[[], object] | None = None,
) -> tuple[Run, list[float]]:
    run = Run()
    stop = asyncio.Event()
    tasks = []
    for batch in range(0, clients, 50):
        events = [asyncio.Event() for _ in range(min(50, clients - batch))]
        tasks += [asyncio.create_task(sse_client(url, path, headers, run, e, stop)) for e in events]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in events)), 60)
    await asyncio.sleep(1)  # every stream past its catch-up
    gets: list[float] = []
    getter_stop = threading.Event()
    getter = None
    if owner_gets:
        getter = threading.Thread(target=owner_getter, args=(url, owner_gets, gets, getter_stop))
        getter.start()
    if when_connected is not None:
        when_connected()
    cpu_before = cpu_seconds(server)
    writer = threading.Thread(target=writer_thread, args=(url, changes, rate, run, start_at))
    writer.start()
    while writer.is_alive():
        await asyncio.sleep(0.1)
    deadline = time.perf_counter() + 10
    expected = set(run.sent)
    while time.perf_counter() < deadline and not all(expected <= s.keys() for s in run.got):
        await asyncio.sleep(0.1)
    run.cpu_s = cpu_seconds(server) - cpu_before
    getter_stop.set()
    if getter:
        getter.join()
    stop.set()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return run, gets


def owner_getter(url: str, path: str, out: list[float], stop: threading.Event) -> None:
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        while not stop.is_set():
            started = time.perf_counter()
            client.get(path)
            out.append((time.perf_counter() - started) * 1000)
            stop.wait(0.05)


def report(name: str, run: Run, reference_p99: float | None = None) -> float:
    latencies = [
        (when - run.sent[m]) * 1000 for seen in run.got for m, when in seen.items() if m in run.sent
    ]
    expected = len(run.sent) * len(run.got)
    delivered = sum(len(seen.keys() & run.sent.keys()) for seen in run.got)
    p99 = pct(latencies, 99)
    ratio = f", {p99 / reference_p99:.2f}x bare" if reference_p99 else ""
    print(f"{name}: latency p50 {pct(latencies, 50):.1f} ms, p99 {p99:.1f} ms{ratio}; "
          f"delivered {delivered}/{expected}; streams ended early {run.ended}; "
          f"writer p50 {pct(run.posts_ms, 50):.1f} ms, p99 {pct(run.posts_ms, 99):.1f} ms, "
          f"{len(run.posts_ms)} changes posted, {run.failed_posts} failed; "
          f"server CPU {run.cpu_s:.2f} s")  # fmt: skip
    return p99


def seed(url: str, attempts: int) -> tuple[int, list[int], str]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        campaign = client.post("/api/campaigns", json={"name": "bench", "baseline": 82}).json()
        ids = []
        for n in range(attempts):
            body = {"title": f"hypothesis {n}", "hypothesis": "a longer line " * 5}
            made = client.post(f"/api/campaigns/{campaign['id']}/attempts", json=body).json()
            ids.append(made["id"])
            if n % 3 == 0:
                client.post(f"/api/attempts/{made['id']}/measurements", json={"value": 80 + n % 7})
        token = client.post(f"/api/campaigns/{campaign['id']}/shares").json()["token"]
    return campaign["id"], ids, token


def verdicts(ids: list[int], count: int, start_at: int) -> list[tuple[str, str, dict[str, str]]]:
    return [("PATCH", f"/api/attempts/{ids[n % len(ids)]}",
             {"verdict": f"bench-{start_at + n}-x"}) for n in range(count)]  # fmt: skip


def cpu_seconds(pid: int) -> float:
    """The process's user and system CPU so far (a steadier figure than latency on shared
    cores: what the other work takes does not count)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def main(args: argparse.Namespace) -> None:
    seconds = args.seconds
    print(f"load average before: {loadavg()} ({os.cpu_count()} cores, shared)")
    bare, bare_url = start_bare()
    try:
        n = int(seconds * 10)
        changes: list[tuple[str, str, dict[str, str]]] = [
            ("POST", f"/publish?i={i}", {}) for i in range(n)
        ]
        run, _ = await scenario(bare_url, "/events", {}, args.json_clients, changes, 10, 0,
                                bare.pid)  # fmt: skip
        bare_p99 = report(f"bare sse-starlette, {args.json_clients} clients, 10 changes/s", run)
    finally:
        bare.terminate()
        bare.wait()
    with tempfile.TemporaryDirectory() as tmp:
        process, url = start_dashboard(Path(tmp))
        try:
            started = time.perf_counter()
            campaign_id, ids, token = seed(url, args.attempts)
            print(f"seeded {args.attempts} attempts in {time.perf_counter() - started:.1f} s")
            owner = {"Authorization": f"Bearer {TOKEN}"}
            events = f"/api/campaigns/{campaign_id}/events"
            only = set(args.only or ("json", "campaign", "share"))
            m = int(seconds * 2)
            if "json" in only:
                changes = verdicts(ids, n, 10_000)
                profiled: list[subprocess.Popen[bytes] | None] = []
                run, _ = await scenario(
                    url, events, owner, args.json_clients, changes, 10, 10_000, process.pid,
                    when_connected=lambda: profiled.append(
                        profile(process.pid, args.profile, seconds)
                    ),
                )  # fmt: skip
                report(f"dashboard JSON, {args.json_clients} clients, 10 changes/s", run, bare_p99)
                if profiled and profiled[0] is not None:
                    profiled[0].wait()
            if "campaign" in only:
                page = events + "?view=campaign"
                changes = verdicts(ids, m, 20_000)
                run, _ = await scenario(
                    url, page, owner, args.page_clients, changes, 2, 20_000, process.pid
                )
                report(f"dashboard campaign page ({args.attempts} attempts), "
                       f"{args.page_clients} viewers, 2 changes/s", run)  # fmt: skip
            if "share" in only:
                probe = f"/api/attempts/{ids[0]}"
                quiet: list[float] = []
                owner_getter_for(url, probe, quiet, 3.0)
                share = f"/s/{token}/events"
                run, gets = await scenario(url, share, {}, args.share_clients,
                                           verdicts(ids, m, 30_000), 2, 30_000, process.pid,
                                           probe)  # fmt: skip
                report(f"dashboard share page, {args.share_clients} viewers, 2 changes/s", run)
                print(f"  owner GET {probe} meanwhile: p50 {pct(gets, 50):.1f} ms, "
                      f"p99 {pct(gets, 99):.1f} ms ({len(gets)} requests); with no viewers: "
                      f"p50 {pct(quiet, 50):.1f} ms, p99 {pct(quiet, 99):.1f} ms")  # fmt: skip
        finally:
            process.terminate()
            process.wait()
    print(f"load average after: {loadavg()}")


def profile(pid: int, out: str | None, seconds: float) -> subprocess.Popen[bytes] | None:
    """py-spy on the dashboard while the JSON scenario's changes flow (collapsed stacks, GIL
    holders only): where a change's time goes."""
    if not out:
        return None
    command = ["py-spy", "record", "--gil", "--nonblocking", "--format", "raw", "--rate", "200",
               "--duration", str(int(seconds) + 2), "--pid", str(pid), "--output", out]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL)


def owner_getter_for(url: str, path: str, out: list[float], seconds: float) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=owner_getter, args=(url, path, out, stop))
    thread.start()
    time.sleep(seconds)
    stop.set()
    thread.join()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15, help="of changes per scenario")
    parser.add_argument("--json-clients", type=int, default=500)
    parser.add_argument("--page-clients", type=int, default=200)
    parser.add_argument("--share-clients", type=int, default=300)
    parser.add_argument("--attempts", type=int, default=1000)
    parser.add_argument(
        "--only",
        choices=["json", "campaign", "share"],
        action="append",
        help="run only these dashboard scenarios (repeatable); bare always runs",
    )
    parser.add_argument("--profile", help="py-spy's collapsed stacks of the JSON scenario here")
    parser.add_argument(
        "--server-cpus", help="cores of the servers, e.g. 0,1; the clients get the others"
    )
    parser.add_argument("--serve-bare", type=int, help=argparse.SUPPRESS)
    parsed = parser.parse_args()
    more_files()
    if parsed.server_cpus:
        SERVER_CPUS.update(int(cpu) for cpu in parsed.server_cpus.split(","))
        os.sched_setaffinity(0, os.sched_getaffinity(0) - SERVER_CPUS)
    if parsed.serve_bare:
        serve_bare(parsed.serve_bare)
    else:
        asyncio.run(main(parsed))
