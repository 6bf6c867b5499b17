"""The runner's latency and overhead through a real sshd on loopback, a real `serve`.

    python bench/runner.py [--runs 10]

1. Ready noticed: a stand-in server writes its ready line and notes the moment; the
   dashboard's run records `ready_at` once the log said so and /health answered (asked
   from the host). Reference in the same run: one `ssh host true` with OpenSSH, the floor
   of any look at a remote host.
2. Overhead of one `campaign-dash try` (launch, ready, 1 warm-up + 3 benchmark runs, stop
   and proof) against the same steps by hand with OpenSSH in the same run: `setsid` launch,
   a /health poll every 0.1 s, the benchmark four times, `kill` of the group, a poll until
   the port is free. Both are split into phases: the try's from its run's own record
   (created, launched, ready, ended), the hand's from the clock between its steps.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.cli import free_port, serving
from tests.conftest import OWNER_TOKEN, owner_client
from tests.runner_helpers import bench_command, server_command
from tests.sshd import start_sshd

PY = sys.executable


TRY_PHASES = ["CLI start-up, run asked for", "queue, preflight, launch",
              "server start-up, ready noticed", "4 benchmarks, stop with proof",
              "end noticed, CLI exit"]  # fmt: skip
HAND_PHASES = ["launch", "ready (/health)", "4 benchmarks", "kill, port free"]


def phases(names: list[str], marks: list[float]) -> str:
    """Each phase's seconds, between consecutive marks."""
    spans = zip(names, marks[:-1], marks[1:], strict=True)
    return "; ".join(f"{name} {end - begin:.2f} s" for name, begin, end in spans)


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))]


def wait_run(api: httpx.Client, attempt_id: int) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        run = api.get(f"/api/attempts/{attempt_id}").json()["run"]
        if run["state"] in ("done", "failed"):
            return run  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise RuntimeError("the run did not end")


def moment(text: str) -> float:
    when = datetime.fromisoformat(text)  # stored in UTC; SQLite gives it back without a zone
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-runner-"))
    sshd = start_sshd(work / "sshd")
    ssh = ["ssh", "-F", str(sshd.ssh_config), "-o", f"UserKnownHostsFile={sshd.known_hosts}",
           "-o", "BatchMode=yes", sshd.alias]  # fmt: skip
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_DASH_")},
        "CAMPAIGN_DASH_DATABASE_URL": f"sqlite:///{work / 'dash.db'}",
        "CAMPAIGN_DASH_TOKEN": OWNER_TOKEN,
        "CAMPAIGN_DASH_SSH_CONFIG": str(sshd.ssh_config),
        "CAMPAIGN_DASH_SSH_KNOWN_HOSTS": str(sshd.known_hosts),
        "CAMPAIGN_DASH_TRUSTED_HOSTS_FILE": str(sshd.trusted_hosts),
        "CAMPAIGN_DASH_SSH_AGENT": "false",
        "CAMPAIGN_DASH_RUNS_ROOT": str(work / "runs"),
    }
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving(env, work, port), owner_client(url) as api:
        campaign = api.post("/api/campaigns", json={"name": "bench", "baseline": 1}).json()
        # 1. ready written -> ready recorded
        latencies = []
        for index in range(args.runs):
            server_port = free_port()
            ready_file = work / f"ready-{index}"
            body = {
                "title": f"ready {index}",
                "launch": {
                    "host": sshd.alias,
                    "grace_s": 5,
                    # Start-up takes 3 s, as a real one takes minutes: the tail is attached
                    # and following when the ready line comes.
                    "command": server_command(
                        server_port, "--start-delay", "3", "--ready-file", str(ready_file)
                    ),
                },
            }
            attempt = api.post(f"/api/campaigns/{campaign['id']}/attempts", json=body)
            run = wait_run(api, attempt.json()["id"])
            written = float(ready_file.read_text())
            latencies.append(moment(run["ready_at"]) - written)
        floor = []
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run([*ssh, "true"], check=True)
            floor.append(time.perf_counter() - start)
        p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
        ref = statistics.median(floor)
        print(f"ready noticed: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms "
              f"({args.runs} launches); `ssh host true`: p50 {ref * 1000:.0f} ms; "
              f"ratio p50 {p50 / ref:.2f}x")  # fmt: skip

        # 2. one try against the same steps by hand
        server_port = free_port()
        bench = bench_command(server_port, "--num-prompts", "4")
        start, began = time.perf_counter(), time.time()
        done = subprocess.run(
            [PY, "-m", "app", "try", "bench", "overhead", "--host", sshd.alias,
             "--bench", bench, "--repeat", "3", "--warmup", "1", "--url", url, "--",
             server_command(server_port)],
            env=env, cwd=work, capture_output=True, text=True, check=False,
        )  # fmt: skip
        try_s = time.perf_counter() - start
        exited = time.time()
        assert done.returncode == 0, done.stdout + done.stderr
        ours = [a for a in api.get(f"/api/campaigns/{campaign['id']}").json()["attempts"]
                if a["title"] == "overhead"]  # fmt: skip
        run = api.get(f"/api/attempts/{ours[0]['id']}").json()["run"]
        marks = [began, *(moment(run[k]) for k in ("created_at", "launched_at", "ready_at",
                                                    "ended_at")), exited]  # fmt: skip
        print("one try, by phase: " + phases(TRY_PHASES, marks))
    hand_port = free_port()
    log = work / "hand.log"
    start = time.perf_counter()
    steps = [start]
    launched = subprocess.run(
        [*ssh, f"setsid sh -c {json.dumps(server_command(hand_port))} > {log} 2>&1 "
         f"< /dev/null & echo $!"], capture_output=True, text=True, check=True,
    )  # fmt: skip
    pid = int(launched.stdout.split()[-1])
    steps.append(time.perf_counter())
    health = (f"{PY} -c \"import urllib.request,sys;"
              f"sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:{hand_port}/health',"
              f"timeout=2).status==200 else 1)\"")  # fmt: skip
    while subprocess.run([*ssh, health], capture_output=True, check=False).returncode != 0:
        time.sleep(0.1)
    steps.append(time.perf_counter())
    bench_s = 0.0
    for _ in range(4):
        one = time.perf_counter()
        subprocess.run([*ssh, bench_command(hand_port, "--num-prompts", "4")],
                       capture_output=True, check=True)  # fmt: skip
        bench_s += time.perf_counter() - one
    steps.append(time.perf_counter())
    subprocess.run([*ssh, f"kill -TERM -- -{pid}"], check=False)
    while subprocess.run([*ssh, f"ss -Htln 'sport = :{hand_port}' | grep -q ."],
                         check=False).returncode == 0:  # fmt: skip
        time.sleep(0.1)
    hand_s = time.perf_counter() - start
    steps.append(start + hand_s)
    print("by hand, by phase: " + phases(HAND_PHASES, steps))
    print(
        f"one try: {try_s:.2f} s; by hand with ssh: {hand_s:.2f} s (its 4 benchmark runs "
        f"{bench_s:.2f} s); overhead {try_s - hand_s:+.2f} s; ratio {try_s / hand_s:.2f}x"
    )
    sshd.stop()


if __name__ == "__main__":
    main()
