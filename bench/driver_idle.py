"""The database queries of a launched run's driver while it waits for readiness and nothing
changes.

    python bench/driver_idle.py [--seconds 10]

A `local` launch of `sleep` (a server that never says ready, with no health URL) through a
real in-process dashboard on a fresh SQLite file; once its run is `starting`, every query
sent on the driver's thread (`run-ID`) is counted by SQLAlchemy's `before_cursor_execute`
for --seconds. Reference in the same run: the queries of the whole app over the same window
(the tailer following the silent log, the runner's manager).
"""

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import event

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.config import Settings
from tests.conftest import OWNER_TOKEN, running


def wait_state(client: Any, attempt_id: int, states: tuple[str, ...], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.get(f"/api/attempts/{attempt_id}").json()["run"]
        if run["state"] in states:
            return
        time.sleep(0.05)
    raise SystemExit(f"the run never reached {states}: {run}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            database_url=f"sqlite:///{tmp}/idle.db",
            token=OWNER_TOKEN,
            runs_root=f"{tmp}/runs",
        )
        with running(settings) as (live, client):
            campaign = client.post("/api/campaigns", json={"name": "idle driver"}).json()
            launch = {"host": "local", "command": "sleep 600", "ready_timeout_s": 3600}
            attempt = client.post(
                f"/api/campaigns/{campaign['id']}/attempts",
                json={"title": "never ready", "launch": launch},
            ).json()
            wait_state(client, attempt["id"], ("starting",), 30)
            driver = f"run-{attempt['run']['id']}"
            counts: Counter[str] = Counter()

            def count(*_args: object) -> None:
                name = threading.current_thread().name
                counts["driver" if name == driver else "app"] += 1

            engine = live.app.state.engine
            event.listen(engine, "before_cursor_execute", count)
            time.sleep(options.seconds)  # the window measured: nothing changes meanwhile
            event.remove(engine, "before_cursor_execute", count)
            client.post(f"/api/attempts/{attempt['id']}/stop")
            wait_state(client, attempt["id"], ("done", "failed"), 60)
    driver_rate = counts["driver"] / options.seconds
    app_rate = (counts["driver"] + counts["app"]) / options.seconds
    print(f"idle driver: {counts['driver']} queries in {options.seconds:g} s = {driver_rate:.1f}/s")
    share = driver_rate / app_rate if app_rate else 0.0
    print(f"whole app (reference): {app_rate:.1f}/s; the driver's share {share:.2f}")


if __name__ == "__main__":
    main()
