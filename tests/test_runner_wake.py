"""A launched run's driver waits without polling the database: woken through the app's commit
hook when its attempt changes (the tail read its log), read again otherwise only at its
fallback. A real dashboard launches `sleep` on `local` and its log is written by hand."""

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from app.config import Settings
from app.runner import context, manager
from app.runner.hosts import HostLink
from tests.conftest import LiveServer, running
from tests.helpers import attempt_of, make_campaign, wait_for

# Far past every bounded wait below: what happens within them came through the hook.
NO_FALLBACK_S = 60.0


@pytest.fixture
def dash(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[LiveServer, httpx.Client]]:
    monkeypatch.setattr(context, "CHANGE_FALLBACK_S", NO_FALLBACK_S)
    monkeypatch.setattr(manager, "RESCAN_S", NO_FALLBACK_S)
    with running(settings.model_copy(update={"runs_root": str(tmp_path / "runs")})) as served:
        yield served


class DriverWatch:
    """The queries one run's driver thread sends, and their count at each of its looks at
    the host (every HOST_POLL_S while its server starts)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.thread_name: str | None = None
        self.queries = 0
        self.at_host_looks: list[int] = []
        status = HostLink.status

        def counted_status(link: HostLink, *args: Any, **kwargs: Any) -> Any:
            if threading.current_thread().name == self.thread_name:
                self.at_host_looks.append(self.queries)
            return status(link, *args, **kwargs)

        monkeypatch.setattr(HostLink, "status", counted_status)

    def count(self, *_args: object) -> None:
        if threading.current_thread().name == self.thread_name:
            self.queries += 1


def launch_sleep(api: httpx.Client) -> dict[str, Any]:
    """A server that never says it is ready by itself: no port, no health URL, a silent log."""
    campaign = make_campaign(api)
    launch = {"host": "local", "command": "sleep 300", "ready_timeout_s": 600}
    body = {"title": "Ready by its log", "launch": launch}
    created = api.post(f"/api/campaigns/{campaign['id']}/attempts", json=body)
    assert created.status_code == 201, created.text
    return dict(created.json())


def ended(api: httpx.Client, attempt_id: int, timeout: float) -> dict[str, Any]:
    return wait_for(
        lambda: (r := attempt_of(api, attempt_id)["run"])["state"] in ("done", "failed") and r,
        timeout=timeout,
        what="the run to end",
    )


def test_a_driver_waiting_for_ready_reads_nothing_until_its_log_says_ready(
    dash: tuple[LiveServer, httpx.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    live, api = dash
    watch = DriverWatch(monkeypatch)
    event.listen(live.app.state.engine, "before_cursor_execute", watch.count)
    attempt = launch_sleep(api)
    attempt_id = attempt["id"]
    watch.thread_name = f"run-{attempt['run']['id']}"
    try:
        # Three looks at the host (1.5 s) once the tail has settled on the empty log: the
        # driver sent no query meanwhile (a 50 ms poll sent some 90 a look). Each of the
        # tail's states until then (file not found, connecting, connected) is a change of
        # the attempt, which wakes the driver: under load they came between the looks.
        wait_for(
            lambda: (attempt_of(api, attempt_id)["tail"] or {}).get("state") == "connected",
            timeout=30, what="the tail to settle on the empty log",
        )  # fmt: skip
        first = len(watch.at_host_looks)
        wait_for(lambda: len(watch.at_host_looks) >= first + 4, timeout=30, what="four looks")
        looks = watch.at_host_looks[first : first + 4]
        assert looks[3] - looks[0] <= 5, looks  # one read at most: the settling's own
        run = attempt_of(api, attempt_id)["run"]
        assert run["state"] == "starting", run

        said_at = time.time()
        with Path(run["log_path"]).open("a") as log:
            log.write("[2026-01-01 00:00:00] INFO:     Application startup complete.\n")
            log.write("[2026-01-01 00:00:00] The server is fired up and ready to roll!\n")
        ready = wait_for(
            lambda: (r := attempt_of(api, attempt_id)["run"])["ready_at"] and r,
            timeout=10,
            what="the run to be ready",
        )
        noticed = _seconds(ready["ready_at"]) - said_at
        assert noticed < 5, noticed  # the hook woke the driver: its fallback is 60 s
        run = ended(api, attempt_id, timeout=30)
        assert (run["state"], run["outcome"]) == ("done", "ready"), run
    finally:
        if attempt_of(api, attempt_id)["run"]["state"] not in ("done", "failed"):
            api.post(f"/api/attempts/{attempt_id}/stop")


def test_a_stop_asked_for_wakes_a_driver_waiting_for_ready(
    dash: tuple[LiveServer, httpx.Client],
) -> None:
    _, api = dash
    attempt_id = launch_sleep(api)["id"]
    wait_for(
        lambda: attempt_of(api, attempt_id)["run"]["state"] == "starting",
        timeout=30,
        what="the server to start",
    )
    stopped = api.post(f"/api/attempts/{attempt_id}/stop")
    assert stopped.status_code == 200, stopped.text
    run = ended(api, attempt_id, timeout=10)  # its fallback is 60 s
    assert (run["state"], run["outcome"], run["reason"]) == (
        "done", "stopped", "stopped on request; stopped by SIGTERM",
    ), run  # fmt: skip
    # Stopped before it was ready: nothing was learned, and nothing runs (not "running")
    assert attempt_of(api, attempt_id)["status"] == "proposed"


def _seconds(moment: str) -> float:
    parsed = datetime.fromisoformat(moment)
    return parsed.replace(tzinfo=parsed.tzinfo or UTC).timestamp()
