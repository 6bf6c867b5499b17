"""The ingest with a campaign whose webhook never answers, against the same ingest with no
webhook, in the same run: alerts are an outbox the ingest writes, sent by another thread.

    python bench/alerts.py [--logs 40] [--lines 4000] [--rounds 4]

Each round, for each mode (none, stuck), a fresh SQLite file and a real uvicorn dashboard:
--logs sglang-like logs (start-up, --lines decode lines, then the seeds' crash), each an
attempt with a file:// source created at once; timed from the first POST until every log is
read to its end and its attempt crashed. With "stuck", the campaign tells every event to a
loopback webhook that accepts the connection and never answers (each try waits out the 5 s
timeout, then is retried), so every crash queues one delivery the notifier cannot send;
"unused" sets the same webhook with no event chosen, the control for everything but the
deliveries.
"""

import argparse
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import demo_logs
from app.config import Settings
from tests.conftest import OWNER_TOKEN, running

EVENTS = ["ready", "crashed", "measured", "better", "run_failed", "stalled"]


def stuck_webhook() -> tuple[str, socket.socket]:
    """A listener nobody answers: connections are accepted by the kernel, never read."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    return f"http://127.0.0.1:{listener.getsockname()[1]}/hooks/never/answers", listener


def write_logs(folder: Path, count: int, lines: int) -> list[Path]:
    """Start-up, `lines` prefill lines (warm-up traffic before readiness), then the crash."""
    filler = [
        f"[2026-02-27 13:01:{i % 60:02d} TP0] Prefill batch. #new-seq: 1, #new-token: 512, "
        f"#cached-token: {i}, token usage: 0.01, #running-req: 0, #queue-req: 0"
        for i in range(lines)
    ]
    body = demo_logs.startup({}, ready=False) + filler + demo_logs.crash_torch_symm_mem()
    text = "\n".join(body) + "\n"
    paths = []
    for i in range(count):
        path = folder / f"run-{i:03d}.log"
        path.write_text(text)
        paths.append(path)
    return paths


def one(mode: str, count: int, lines: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = write_logs(folder, count, lines)
        size = sum(p.stat().st_size for p in paths)
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None, database_url=f"sqlite:///{tmp}/alerts.db", token=OWNER_TOKEN
        )
        listener = None
        with running(settings) as (_, client):
            campaign = client.post("/api/campaigns", json={"name": f"alerts {mode}"}).json()
            if mode in ("stuck", "unused"):
                url, listener = stuck_webhook()
                notify = {"urls": [url], "events": EVENTS if mode == "stuck" else []}
                client.patch(f"/api/campaigns/{campaign['id']}", json={"notify": notify})
            started = time.perf_counter()
            ids = [
                client.post(
                    f"/api/campaigns/{campaign['id']}/attempts",
                    json={"title": path.stem, "source": f"file://{path}"},
                ).json()["id"]
                for path in paths
            ]
            waiting = set(ids)
            deadline = time.monotonic() + 300
            detail: dict[str, Any] = {}
            while waiting and time.monotonic() < deadline:
                detail = client.get(f"/api/campaigns/{campaign['id']}").json()
                for attempt in detail["attempts"]:
                    tail = attempt["tail"] or {}
                    read = tail.get("bytes_read", 0) >= (tail.get("size") or 1)
                    if attempt["status"] == "crashed" and read:
                        waiting.discard(attempt["id"])
                time.sleep(0.05)
            elapsed = time.perf_counter() - started
            queued = 0
            if mode == "stuck":
                hooks = client.get(f"/api/campaigns/{campaign['id']}").json()["notify"]
                queued = len(ids)
                state = hooks["webhooks"][0]["state"]
            else:
                state = "-"
        if listener is not None:
            listener.close()
    if waiting:
        left = [(a["status"], a["tail"]) for a in detail["attempts"] if a["id"] in waiting]
        raise SystemExit(f"{mode}: {len(waiting)} logs never read to their crash: {left[:2]}")
    mib = size / (1 << 20)
    return {"mode": mode, "s": elapsed, "mib_s": mib / elapsed, "mib": mib, "queued": queued,
            "webhook": state}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--logs", type=int, default=40)
    parser.add_argument("--lines", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=4)
    options = parser.parse_args()
    threading.excepthook = lambda args: None  # a stuck send cut short at shutdown
    for round_ in range(1, options.rounds + 1):
        # Alternating which goes first: a later run may find a warmer machine.
        order = ("none", "unused", "stuck") if round_ % 2 else ("stuck", "unused", "none")
        results = {m: one(m, options.logs, options.lines) for m in order}
        none, unused, stuck = results["none"], results["unused"], results["stuck"]
        print(
            f"round {round_} ({order[0]} first): {options.logs} logs, {none['mib']:.1f} MiB: "
            f"no webhook {none['s']:.2f} s ({none['mib_s']:.1f} MiB/s); "
            f"a webhook that never answers {stuck['s']:.2f} s ({stuck['mib_s']:.1f} MiB/s), "
            f"{stuck['queued']} crashes queued, webhook {stuck['webhook']}; "
            f"ratio {stuck['s'] / none['s']:.2f}x; the same webhook set with no event chosen "
            f"(nothing to send) {unused['s']:.2f} s, {unused['s'] / none['s']:.2f}x"
        )


if __name__ == "__main__":
    main()
