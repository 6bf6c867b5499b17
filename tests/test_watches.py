"""Watched log folders: each new log file of a folder on a host becomes an attempt, titled
after the file and followed like any other; the files already there are offered; one file
is one attempt across a dropped connection and a dashboard restart."""

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy

from app import demo_logs
from app.config import Settings
from tests.conftest import running
from tests.helpers import UI_WAIT_MS, attempt_of, make_campaign, wait_for
from tests.sshd import Sshd


def watch(api: httpx.Client, campaign_id: int, source: str) -> dict[str, Any]:
    response = api.post(f"/api/campaigns/{campaign_id}/watches", json={"source": source})
    assert response.status_code == 201, response.text
    return response.json()


def listed(api: httpx.Client, campaign_id: int, watch_id: int) -> dict[str, Any]:
    """Once the watch's first listing is in (what it found is offered)."""

    def probe() -> dict[str, Any] | None:
        found = api.get(f"/api/campaigns/{campaign_id}/watches").json()
        mine = next(w for w in found if w["id"] == watch_id)
        return mine if mine["listed_at"] else None

    return wait_for(probe, what="the watch's first listing")


def more_listings(api: httpx.Client, campaign_id: int, watch_id: int, count: int) -> None:
    """Until the watch has listed its folder `count` more times (each listing moves
    `listed_at`): what it would import twice, it would have by then."""
    for _ in range(count):
        before = listed(api, campaign_id, watch_id)["listed_at"]
        wait_for(
            lambda seen=before: listed(api, campaign_id, watch_id)["listed_at"] != seen,
            what="another listing",
        )


def attempts(api: httpx.Client, campaign_id: int) -> list[dict[str, Any]]:
    return api.get(f"/api/campaigns/{campaign_id}").json()["attempts"]


def start_log(path: Path) -> None:
    path.write_text("\n".join(demo_logs.startup({"tp_size": 8}, ready=False)) + "\n")


def test_bad_watches_are_refused_and_a_watch_can_be_removed(
    api: httpx.Client, tmp_path: Path
) -> None:
    campaign = make_campaign(api)
    url = f"/api/campaigns/{campaign['id']}/watches"
    for source, said in (
        ("http://gpubox/data/logs/*.log", "ssh://"),
        ("file://relative/*.log", "absolute"),
        ("ssh://gpubox/data/*/x.log", "a folder and a file-name pattern"),
        ("ssh://gpu;rm/data/*.log", "host"),
        ("file:///data/logs/\n*.log", "one line"),
    ):
        refused = api.post(url, json={"source": source})
        assert refused.status_code == 422 and said in refused.text, (source, refused.text)
    assert (
        api.post("/api/campaigns/999999/watches", json={"source": "file:///x/*.log"}).status_code
        == 404
    )
    made = watch(api, campaign["id"], f"file://{tmp_path}/*.log")
    assert api.delete(f"/api/watches/{made['id']}").status_code == 204
    assert api.get(url).json() == []
    assert api.delete(f"/api/watches/{made['id']}").status_code == 404


def test_a_watch_of_the_root_folder_lists_it_and_a_broken_watch_says_why(
    api: httpx.Client, settings: Settings
) -> None:
    campaign = make_campaign(api)
    root = watch(api, campaign["id"], "file:///*.no-file-has-this-extension")
    found = listed(api, campaign["id"], root["id"])
    assert (found["offered"], found["last_error"]) == ([], None)
    # A stored source this version cannot read (written by hand, or by another version): the
    # watch says so where its owner looks, instead of "first listing under way" for good.
    broken = watch(api, campaign["id"], "file:///data/logs/*.log")
    engine = sqlalchemy.create_engine(settings.database_url)
    try:
        with engine.begin() as connection:
            connection.execute(
                sqlalchemy.text("UPDATE watch SET source = :source WHERE id = :id"),
                {"source": "file:///data/logs/", "id": broken["id"]},
            )
    finally:
        engine.dispose()

    def said() -> str | None:
        mine = next(w for w in api.get(f"/api/campaigns/{campaign['id']}/watches").json()
                    if w["id"] == broken["id"])  # fmt: skip
        return mine["last_error"]

    assert "a folder and a file-name pattern" in wait_for(said, what="the watch's error")


@pytest.mark.serial  # it times a new file to its attempt
def test_a_local_folder_offers_what_was_there_and_imports_what_comes(
    api: httpx.Client, tmp_path: Path
) -> None:
    campaign = make_campaign(api)
    logs = tmp_path / "logs"
    logs.mkdir()
    start_log(logs / "old-run.log")
    (logs / "notes.txt").write_text("not a log")
    made = watch(api, campaign["id"], f"file://{logs}/*.log")
    assert listed(api, campaign["id"], made["id"])["offered"] == ["old-run.log"]
    assert attempts(api, campaign["id"]) == []

    start_log(logs / "tp8-ep.log")
    appeared = time.monotonic()
    [new] = wait_for(lambda: attempts(api, campaign["id"]) or None, what="the new log's attempt")
    assert time.monotonic() - appeared < 2.0
    assert new["title"] == "tp8-ep" and new["source"] == f"file://{logs}/tp8-ep.log"
    # Followed like any other: its server_args line gives its flags.
    followed = wait_for(
        lambda: (a := attempt_of(api, new["id"]))["flags"]["logged"] and a, what="flags"
    )
    assert followed["flags"]["logged"]["tp_size"] == "8"

    # The offered file, taken by the owner.
    taken = api.post(f"/api/watches/{made['id']}/import", json={"name": "old-run.log"})
    assert taken.status_code == 201 and taken.json()["title"] == "old-run"
    again = api.post(f"/api/watches/{made['id']}/import", json={"name": "old-run.log"})
    assert again.status_code == 422 and "already" in again.json()["detail"]
    stray = api.post(f"/api/watches/{made['id']}/import", json={"name": "notes.txt"})
    assert stray.status_code == 422
    assert listed(api, campaign["id"], made["id"])["offered"] == []


def _dashboard(ssh_settings: Settings, tmp_path: Path) -> Settings:
    return ssh_settings.model_copy(update={"database_url": f"sqlite:///{tmp_path / 'watch.db'}"})


def test_a_folder_over_ssh_makes_each_new_log_one_attempt_across_drops_and_a_restart(
    ssh_settings: Settings, sshd: Sshd, tmp_path: Path
) -> None:
    settings = _dashboard(ssh_settings, tmp_path)
    logs = tmp_path / "remote-logs"
    logs.mkdir()
    names = [f"run-{i}.log" for i in range(1, 6)]
    with running(settings) as (_, api):
        campaign = make_campaign(api)
        cid = campaign["id"]
        made = watch(api, cid, f"ssh://{sshd.alias}{logs}/*.log")
        assert listed(api, cid, made["id"])["offered"] == []
        for name in names[:3]:
            start_log(logs / name)
            time.sleep(0.1)  # the files' spacing under test, not a wait for a condition
        found = wait_for(lambda: len(a := attempts(api, cid)) >= 3 and a, what="three attempts")
        assert [a["title"] for a in found] == ["run-1", "run-2", "run-3"]

        # The connection dropped under it: the next listing connects again.
        for pid in sshd.session_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        start_log(logs / names[3])
        found = wait_for(lambda: len(a := attempts(api, cid)) >= 4 and a, what="after the drop")
        assert found[-1]["title"] == "run-4"
    # A log written while no dashboard ran is new to the next one.
    start_log(logs / names[4])
    with running(settings) as (_, api):
        found = wait_for(lambda: len(a := attempts(api, cid)) >= 5 and a, what="after restart")
        # Still: each file once, none offered.
        more_listings(api, cid, made["id"], 3)  # nothing may be imported twice
        found = attempts(api, cid)
        assert [a["title"] for a in found] == ["run-1", "run-2", "run-3", "run-4", "run-5"]
        assert [a["source"] for a in found] == [
            f"ssh://{sshd.alias}{logs}/{name}" for name in names
        ]
        assert api.get(f"/api/campaigns/{cid}/watches").json()[0]["offered"] == []
        state = wait_for(
            lambda: (a := attempt_of(api, found[-1]["id"]))["tail"]["bytes_read"] > 0 and a,
            what="the last log followed over ssh",
        )
        assert state["status"] == "running"


@pytest.mark.both_databases
def test_two_dashboards_on_one_database_import_a_file_once(
    settings: Settings, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    with running(settings) as (_, api), running(settings) as (_, other):
        campaign = make_campaign(api)
        made = watch(api, campaign["id"], f"file://{logs}/*.log")
        listed(api, campaign["id"], made["id"])
        for i in range(6):
            start_log(logs / f"run-{i}.log")
        wait_for(lambda: len(attempts(other, campaign["id"])) >= 6, what="six attempts")
        more_listings(api, campaign["id"], made["id"], 4)  # none may take one twice
        titles = [a["title"] for a in attempts(api, campaign["id"])]
        assert sorted(titles) == [f"run-{i}" for i in range(6)]


@pytest.mark.browser
def test_the_campaign_page_adds_shows_imports_and_removes_a_watch(
    api: httpx.Client,
    open_page,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    campaign = make_campaign(api)
    logs = tmp_path / "logs"
    logs.mkdir()
    start_log(logs / "before.log")
    page = open_page(f"/campaigns/{campaign['id']}")
    form = page.locator("#watch-form")
    form.locator("input[name=source]").fill(f"file://{logs}/*.log")
    form.locator("button").click()
    # The first listing arrives live: the file already there is offered.
    offer = page.locator("#watches .offered li", has_text="before.log")
    offer.wait_for(timeout=UI_WAIT_MS)
    start_log(logs / "by-hand.log")
    page.locator(".card .title", has_text="by-hand").wait_for(timeout=UI_WAIT_MS)
    offer.locator("button").click()
    page.locator(".card .title", has_text="before").wait_for(timeout=UI_WAIT_MS)
    assert page.locator("#watches .offered").count() == 0
    page.locator("#watches button.danger").click()
    page.locator("#watches .watch").wait_for(state="detached", timeout=UI_WAIT_MS)
    assert api.get(f"/api/campaigns/{campaign['id']}/watches").json() == []
    # A bad source is said on the form, nothing else lost.
    page.locator("#watch-form input[name=source]").fill("ssh://gpubox/data/*/x.log")
    page.locator("#watch-form button").click()
    page.locator("#watches", has_text="a folder and a file-name pattern").wait_for(
        timeout=UI_WAIT_MS
    )
