"""The `campaign-dash` command as a user runs it: help texts, serve, restart on the same file."""

import hashlib
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy import text

from app.db import STARTUP_LOCK_KEY, libpq_dsn, make_engine, sqlite_lock_path, startup_lock
from tests.cli import clean_env, free_port, interrupt, launch, run_cli, serving, wait_until_serving
from tests.conftest import OWNER_TOKEN
from tests.helpers import wait_for


@pytest.fixture
def env(empty_database_url: str) -> dict[str, str]:
    values = dict(os.environ)
    values.pop("CAMPAIGN_DASH_TOKEN", None)
    values["CAMPAIGN_DASH_DATABASE_URL"] = empty_database_url
    return values


def test_help_explains_each_default(tmp_path: Path) -> None:
    result = run_cli("serve", "--help", env=dict(os.environ), cwd=tmp_path)
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "Defaults to 127.0.0.1, which means only this machine can connect" in text
    assert "Defaults to 8000" in text
    top = run_cli("--help", env=dict(os.environ), cwd=tmp_path)
    assert "CAMPAIGN_DASH_DATABASE_URL" in top.stdout and "CAMPAIGN_DASH_TOKEN" in top.stdout
    for command in ("serve", "demo", "db", "token"):
        assert command in top.stdout
    upgrade = run_cli("db", "upgrade", "--help", env=dict(os.environ), cwd=tmp_path)
    assert "head" in upgrade.stdout


def test_db_upgrade_creates_the_schema(env: dict[str, str], tmp_path: Path) -> None:
    result = run_cli("db", "upgrade", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "head" in result.stdout


def test_a_url_that_names_no_database_is_one_clear_line(tmp_path: Path) -> None:
    env = clean_env()
    for url in ("bogus://owner:s3cret@x/db", "not a url at all"):
        for command in (
            ("serve", "--port", str(free_port())),
            ("db", "upgrade"),
            ("token", "reset"),
        ):
            result = run_cli(*command, env={**env, "CAMPAIGN_DASH_DATABASE_URL": url}, cwd=tmp_path)
            assert result.returncode == 1
            assert result.stderr.count("\n") == 1, result.stderr
            assert "is not a database URL" in result.stderr and "s3cret" not in result.stderr


def test_a_database_that_cannot_be_opened_is_one_clear_line(tmp_path: Path) -> None:
    env = clean_env()
    for url, reasons in (
        (
            f"sqlite:///{tmp_path}/missing-dir/campaign-dash.db",
            ("No such file or directory", "unable to open database file"),
        ),
        ("postgresql+psycopg://owner:s3cret@127.0.0.1:1/none", ("Connection refused",)),
    ):
        for command in (("serve", "--port", str(free_port())), ("db", "upgrade")):
            result = run_cli(*command, env={**env, "CAMPAIGN_DASH_DATABASE_URL": url}, cwd=tmp_path)
            assert result.returncode == 1
            assert "Error: cannot open the database" in result.stderr
            assert any(reason in result.stderr for reason in reasons), result.stderr
            assert "Traceback" not in result.stderr and "s3cret" not in result.stderr


def test_token_reset_where_there_is_no_database_makes_none(tmp_path: Path) -> None:
    # From the wrong directory, it made a database of its own there and printed a link
    # that no running dashboard knew.
    env = clean_env()
    result = run_cli("token", "reset", env=env, cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [
        f"Error: no database at {tmp_path.resolve() / 'campaign-dash.db'}: nothing to reset "
        "(set CAMPAIGN_DASH_DATABASE_URL to the one `serve` uses; a first `serve` makes a "
        "database and prints its link)"
    ], result.stderr
    assert "Log in" not in result.stdout and list(tmp_path.iterdir()) == []


def test_a_port_in_use_is_one_clear_line_and_leaves_the_dashboards_links_alone(
    env: dict[str, str], tmp_path: Path
) -> None:
    port = free_port()
    with serving(env, tmp_path, port):
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        try:
            # A second terminal, a port some other program holds (a demo, say).
            taken = str(busy.getsockname()[1])
            second = run_cli("serve", "--port", taken, env=env, cwd=tmp_path)
        finally:
            busy.close()
        assert second.returncode == 1, second.stdout + second.stderr
        assert f"Error: cannot listen on 127.0.0.1:{taken}" in second.stderr, second.stderr
        assert "Traceback" not in second.stderr and "Log in" not in second.stdout
        # Links printed later still point at the dashboard that serves.
        reset = run_cli("token", "reset", env=env, cwd=tmp_path)
        assert reset.returncode == 0, reset.stderr
        assert f"http://127.0.0.1:{port}/login?token=" in reset.stdout, reset.stdout


def test_default_database_is_a_file_in_the_working_directory(tmp_path: Path) -> None:
    env = clean_env()
    result = run_cli("db", "upgrade", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "campaign-dash.db").is_file()


def test_serve_prints_a_login_link_once_and_data_survives_a_restart(
    env: dict[str, str], tmp_path: Path, backend: str
) -> None:
    port = free_port()
    with serving(env, tmp_path, port) as first:
        output = interrupt(first)
    match = re.search(rf"http://127\.0\.0\.1:{port}/login\?token=([\w-]+)", output)
    assert match, output
    token = match.group(1)
    auth = {"Authorization": f"Bearer {token}"}
    assert_token_stored_only_hashed(env["CAMPAIGN_DASH_DATABASE_URL"], token)

    with serving(env, tmp_path, port) as second:
        url = f"http://127.0.0.1:{port}"
        campaign = httpx.post(
            f"{url}/api/campaigns", json={"name": "kept", "baseline": 82}, headers=auth
        )
        assert campaign.status_code == 201
        campaign_id = campaign.json()["id"]
        attempt = httpx.post(
            f"{url}/api/campaigns/{campaign_id}/attempts", json={"title": "EAGLE-3"}, headers=auth
        ).json()
        httpx.post(
            f"{url}/api/attempts/{attempt['id']}/measurements", json={"value": 54}, headers=auth
        )
        login = httpx.get(f"{url}/login", params={"token": token})
        assert login.status_code == 303
        second_output = interrupt(second)
    assert token not in second_output  # printed once, never again

    with serving(env, tmp_path, port):
        detail = httpx.get(f"http://127.0.0.1:{port}/api/campaigns/{campaign_id}", headers=auth)
        assert detail.status_code == 200
        body = detail.json()
        assert body["name"] == "kept"
        assert body["attempts"][0]["metric_value"] == 54
        assert body["attempts"][0]["delta_pct"] == pytest.approx(-34.15, abs=0.01)


@pytest.mark.both_databases
def test_two_dashboards_started_at_once_on_a_new_database_both_serve_one_token(
    env: dict[str, str], tmp_path: Path
) -> None:
    ports = [free_port(), free_port()]
    processes = [launch(env, tmp_path, port) for port in ports]
    try:
        for process, port in zip(processes, ports, strict=True):
            wait_until_serving(process, port)
    finally:
        outputs = [interrupt(process) for process in processes]
    tokens = {t for out in outputs for t in re.findall(r"/login\?token=([\w-]+)", out)}
    # One of them generated the owner token; the other found it stored and printed none.
    assert len(tokens) == 1, outputs
    assert_token_stored_only_hashed(env["CAMPAIGN_DASH_DATABASE_URL"], tokens.pop())


def assert_token_stored_only_hashed(database_url: str, token: str) -> None:
    engine = make_engine(database_url)
    with engine.connect() as connection:
        values = [row[0] for row in connection.execute(text("SELECT value FROM sitesecret"))]
    engine.dispose()
    assert token not in " ".join(values)
    assert hashlib.sha256(token.encode()).hexdigest() in values


def test_configured_token_is_used_and_never_printed(env: dict[str, str], tmp_path: Path) -> None:
    env = {**env, "CAMPAIGN_DASH_TOKEN": OWNER_TOKEN}
    port = free_port()
    with serving(env, tmp_path, port) as process:
        ok = httpx.get(
            f"http://127.0.0.1:{port}/api/campaigns",
            headers={"Authorization": f"Bearer {OWNER_TOKEN}"},
        )
        assert ok.status_code == 200
        output = interrupt(process)
    assert OWNER_TOKEN not in output and "login?token=" not in output


def test_token_reset_beside_a_dashboard_whose_token_is_in_its_environment_changes_nothing(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The dashboard reads its token from CAMPAIGN_DASH_TOKEN, not the database: a reset
    from another terminal (without the variable) would print a link it answers with 401,
    and end every browser session for nothing."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving({**env, "CAMPAIGN_DASH_TOKEN": OWNER_TOKEN}, tmp_path, port):
        browser = httpx.Client(base_url=url)
        assert browser.get("/login", params={"token": OWNER_TOKEN}).status_code == 303
        before = secrets_and_sessions(env["CAMPAIGN_DASH_DATABASE_URL"])

        reset = run_cli("token", "reset", env=env, cwd=tmp_path)

        assert reset.returncode == 1, reset.stdout
        assert "token=" not in reset.stdout + reset.stderr
        said = " ".join(reset.stderr.split())
        assert f"the dashboard at {url} takes its owner token from CAMPAIGN_DASH_TOKEN" in said
        assert "restart it with a new CAMPAIGN_DASH_TOKEN" in said
        assert secrets_and_sessions(env["CAMPAIGN_DASH_DATABASE_URL"]) == before
        owner = {"Authorization": f"Bearer {OWNER_TOKEN}"}
        assert httpx.get(f"{url}/api/campaigns", headers=owner).status_code == 200
        assert browser.get("/", headers={"Accept": "text/html"}).status_code == 200
        browser.close()

    # Served without the variable, it takes the stored token again: a reset is what it needs.
    with serving(env, tmp_path, port):
        reset = run_cli("token", "reset", env=env, cwd=tmp_path)
        assert reset.returncode == 0, reset.stderr
        new = re.search(r"/login\?token=([\w-]+)", reset.stdout)
        assert new, reset.stdout
        owner = {"Authorization": f"Bearer {new.group(1)}"}
        wait_for(
            lambda: httpx.get(f"{url}/api/campaigns", headers=owner).status_code == 200,
            timeout=10, what="the new token accepted",
        )  # fmt: skip


def secrets_and_sessions(database_url: str) -> tuple[list[tuple[str, str]], list[str]]:
    engine = make_engine(database_url)
    with engine.connect() as connection:
        secrets = connection.execute(text("SELECT name, value FROM sitesecret ORDER BY name"))
        stored = [(row[0], row[1]) for row in secrets]
        sessions = connection.execute(text("SELECT token_hash FROM owner_session ORDER BY 1"))
        hashes = [row[0] for row in sessions]
    engine.dispose()
    return stored, hashes


def test_ctrl_c_ends_open_live_streams_and_the_server_stops(
    env: dict[str, str], tmp_path: Path
) -> None:
    """uvicorn waits for open responses before it stops, and a live stream never ends by
    itself: on Ctrl-C each one ends, so the process exits at once, not after a kill."""
    env = {**env, "CAMPAIGN_DASH_TOKEN": OWNER_TOKEN}
    port = free_port()
    auth = {"Authorization": f"Bearer {OWNER_TOKEN}"}
    with serving(env, tmp_path, port) as process, httpx.Client(headers=auth) as client:
        url = f"http://127.0.0.1:{port}"
        campaign = client.post(f"{url}/api/campaigns", json={"name": "live", "baseline": 1})
        with client.stream("GET", f"{url}/api/campaigns/{campaign.json()['id']}/events") as live:
            assert live.status_code == 200
            lines = live.iter_lines()
            assert next(lines) == "event: hello"
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=15) == 0
            list(lines)  # the stream ended: the rest reads to its end, no error


def test_access_log_redacts_tokens_in_urls() -> None:
    from app.logs import redact_url

    assert redact_url("/login?token=abc-DEF_1&next=/x") == "/login?token=[redacted]&next=/x"
    assert redact_url("/login?next=/&token=abc") == "/login?next=/&token=[redacted]"
    assert redact_url("/s/Zx9_abc.md") == "/s/[redacted].md"
    assert redact_url("/campaigns/1") == "/campaigns/1"


def _waiting_for_the_lock(database_url: str, pid: int) -> bool:
    """Whether process `pid` is blocked on the start-up lock (the kernel's or PostgreSQL's
    own list of waiters, not a guess from time passing)."""
    if database_url.startswith("sqlite"):
        inode = os.stat(sqlite_lock_path(database_url.removeprefix("sqlite:///"))).st_ino
        waiting = [line.split() for line in Path("/proc/locks").read_text().splitlines()]
        # A blocked request reads "N: -> FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF".
        return any(
            f[1] == "->" and f[5] == str(pid) and f[6].endswith(f":{inode}") for f in waiting
        )
    with psycopg.connect(libpq_dsn(database_url)) as connection:
        rows = connection.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
            " AND objid = %s",
            (STARTUP_LOCK_KEY,),
        ).fetchone()
    return bool(rows and rows[0])


@pytest.mark.both_databases
@pytest.mark.parametrize("command", [("db", "upgrade"), ("token", "reset")])
def test_db_upgrade_and_token_reset_wait_for_the_start_up_lock(
    command: tuple[str, str], env: dict[str, str], tmp_path: Path
) -> None:
    """Migrations run under the lock that dashboards starting at once take: a `db upgrade` or
    a `token reset` beside a starting dashboard waits for its turn."""
    database_url = env["CAMPAIGN_DASH_DATABASE_URL"]
    assert run_cli("db", "upgrade", "--revision", "0001", env=env, cwd=tmp_path).returncode == 0
    with startup_lock(database_url):
        process = subprocess.Popen(
            [sys.executable, "-m", "app", *command],
            env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            wait_for(
                lambda: (
                    process.poll() is not None or _waiting_for_the_lock(database_url, process.pid)
                ),
                what=f"{' '.join(command)} waiting for the lock",
            )
            assert process.poll() is None, process.communicate()
            with make_engine(database_url).connect() as connection:
                version = connection.execute(text("SELECT version_num FROM alembic_version"))
                assert version.scalar_one() == "0001"  # untouched while the lock is held
        except BaseException:
            process.kill()
            raise
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    with make_engine(database_url).connect() as connection:
        version = connection.execute(text("SELECT version_num FROM alembic_version"))
        assert version.scalar_one() != "0001"
    assert ("Log in:" in out) == (command == ("token", "reset"))
