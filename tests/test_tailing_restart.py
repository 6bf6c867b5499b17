"""kill -9 of the dashboard mid-stream: the restarted one resumes where the database says."""

import contextlib
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from app.diagnosis import diagnose_bytes
from tests.conftest import OWNER_TOKEN
from tests.helpers import wait_for
from tests.sshd import Sshd, free_port

DATA = Path(__file__).parent / "data"


def start_dashboard(env: dict[str, str], port: int, cwd: Path) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "serve", "--port", str(port)],
        env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for(lambda: _answers(port), timeout=30, what="dashboard up")
    return process


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/login", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def committed_offset(database: Path, attempt_id: int) -> int:
    """The offset the killed dashboard had committed for the attempt's log."""
    with contextlib.closing(sqlite3.connect(database)) as connection:
        row = connection.execute(
            "SELECT offset FROM tailstate WHERE attempt_id = ?", (attempt_id,)
        ).fetchone()
    return int(row[0])


def test_kill_9_mid_stream_then_restart_loses_and_repeats_nothing(
    sshd: Sshd, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "CAMPAIGN_DASH_DATABASE_URL": f"sqlite:///{tmp_path / 'dash.db'}",
        "CAMPAIGN_DASH_TOKEN": OWNER_TOKEN,
        "CAMPAIGN_DASH_SSH_CONFIG": str(sshd.ssh_config),
        "CAMPAIGN_DASH_SSH_KNOWN_HOSTS": str(sshd.known_hosts),
        "CAMPAIGN_DASH_TRUSTED_HOSTS_FILE": str(sshd.trusted_hosts),
        "CAMPAIGN_DASH_SSH_AGENT": "false",
    }
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {OWNER_TOKEN}"}
    log = tmp_path / "restart.log"
    log.write_bytes(b"")
    server = start_dashboard(env, port, tmp_path)
    try:
        campaign = httpx.post(f"{url}/api/campaigns", json={"name": "restart"}, headers=auth).json()
        attempt = httpx.post(
            f"{url}/api/campaigns/{campaign['id']}/attempts",
            json={"title": "kill -9", "source": f"ssh://{sshd.alias}{log}"},
            headers=auth,
        ).json()
        done = threading.Event()

        def writer() -> None:
            with log.open("ab") as out:
                for number in range(4000):
                    out.write(
                        b"[2026-02-27 13:21:27 TP0] Decode batch %06d, gen throughput "
                        b"(token/s): %d.25\n" % (number, 60 + number % 30)
                    )
                    out.flush()
                    time.sleep(0.001)
                out.write((DATA / "seed_torch_symm_mem.log").read_bytes())
            done.set()

        thread = threading.Thread(target=writer)
        thread.start()

        def stored_bytes() -> int:
            body = httpx.get(f"{url}/api/attempts/{attempt['id']}", headers=auth).json()
            return int((body["tail"] or {}).get("stored_bytes", 0))

        wait_for(lambda: stored_bytes() > 0, what="bytes flowing")
        server.send_signal(signal.SIGKILL)  # mid-stream, no goodbye
        writing_at_kill = not done.is_set()
        server.wait(10)
        offset_at_kill = committed_offset(tmp_path / "dash.db", attempt["id"])
        # The log goes on while the dashboard is down.
        size_at_kill = log.stat().st_size
        wait_for(lambda: log.stat().st_size > size_at_kill, what="the log growing meanwhile")
        server = start_dashboard(env, port, tmp_path)
        thread.join()
        expected = log.read_bytes()
        # Killed mid-stream indeed: some of the log taken, more of it still to come.
        assert writing_at_kill
        assert 0 < offset_at_kill < len(expected), (offset_at_kill, len(expected))

        def stored() -> bytes:
            return httpx.get(f"{url}/api/attempts/{attempt['id']}/log", headers=auth).content

        wait_for(lambda: len(stored()) >= len(expected), timeout=60, what="caught up")
        assert hashlib.sha256(stored()).hexdigest() == hashlib.sha256(expected).hexdigest()
        body = httpx.get(f"{url}/api/attempts/{attempt['id']}", headers=auth).json()
        whole = diagnose_bytes(expected)
        assert body["diagnosis"]["root_cause"] == whole.root_cause == "KeyError: 12"
        assert body["diagnosis"]["fingerprint"] == whole.fingerprint
        assert body["diagnosis"]["throughput_total"] == len(whole.throughput)
        assert body["status"] == "crashed"
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
