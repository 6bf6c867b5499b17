"""Two `campaign-dash` processes on one SQLite file: a second serve, `db upgrade` and
`token reset` beside a running serve that is being written to lose nothing."""

import os
import sqlite3
import threading
from pathlib import Path

import httpx
import pytest

from tests.cli import clean_env, free_port, launch, run_cli, serving, wait_until_serving
from tests.conftest import OWNER_TOKEN


def open_database_files(pid: int, database: Path) -> dict[str, str]:
    """What the process's descriptors on the database's files point at."""
    found = {}
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        if target.startswith(str(database)):
            found[fd.name] = target
    return found


class Writer(threading.Thread):
    """Posts notes as fast as the server takes them; remembers every acknowledged one."""

    def __init__(self, url: str, campaign_id: int) -> None:
        super().__init__(daemon=True)
        self.url, self.campaign_id = url, campaign_id
        self.acknowledged: list[str] = []
        self.failures: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        headers = {"Authorization": f"Bearer {OWNER_TOKEN}"}
        with httpx.Client(base_url=self.url, headers=headers, timeout=30) as client:
            n = 0
            while not self.stop.is_set():
                body = f"note {n}"
                response = client.post(
                    f"/api/campaigns/{self.campaign_id}/notes", json={"body": body}
                )
                if response.status_code == 201:
                    self.acknowledged.append(body)
                else:
                    self.failures.append(f"{response.status_code} {response.text[:200]}")
                n += 1


@pytest.mark.parametrize(
    "second",
    [
        ("serve", "--port", "SAME"),
        ("serve", "--port", "OTHER"),
        ("db", "upgrade"),
        ("token", "reset"),
    ],
    ids=["serve-same-port", "serve-other-port", "db-upgrade", "token-reset"],
)
def test_a_second_process_leaves_the_running_dashboard_intact(
    tmp_path: Path, second: tuple[str, ...]
) -> None:
    database = tmp_path / "campaign-dash.db"
    env = clean_env()
    env |= {
        "CAMPAIGN_DASH_DATABASE_URL": f"sqlite:///{database}",
        "CAMPAIGN_DASH_TOKEN": OWNER_TOKEN,
    }
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with serving(env, tmp_path, port) as first:
        headers = {"Authorization": f"Bearer {OWNER_TOKEN}"}
        campaign = httpx.post(
            f"{url}/api/campaigns", json={"name": "side by side"}, headers=headers, timeout=10
        ).json()
        writer = Writer(url, campaign["id"])
        writer.start()
        try:
            wait_for_writes(writer, 20)
            args = [{"SAME": str(port), "OTHER": str(free_port())}.get(a, a) for a in second]
            if args[0] == "serve":
                other = launch(env, tmp_path, int(args[2]))
                if args[2] != str(port):
                    wait_until_serving(other, int(args[2]))
                    httpx.get(f"http://127.0.0.1:{args[2]}/api/campaigns", headers=headers)
                other.terminate()
                other.wait(timeout=30)
            else:
                # `db upgrade` writes from another process. `token reset` runs without the
                # variable and reads the database to refuse: the running dashboard's token
                # comes from its environment, which no reset changes.
                stored_token = {k: v for k, v in env.items() if k != "CAMPAIGN_DASH_TOKEN"}
                result = run_cli(*args, env=stored_token, cwd=tmp_path)
                if args[0] == "token":
                    assert result.returncode == 1 and "CAMPAIGN_DASH_TOKEN" in result.stderr
                else:
                    assert result.returncode == 0, result.stderr
            # The second process has come and gone: the first keeps its files and writes on.
            done = len(writer.acknowledged)
            wait_for_writes(writer, done + 20)
        finally:
            writer.stop.set()
            writer.join(timeout=30)
        assert not writer.failures, writer.failures[:3]
        files = open_database_files(first.pid, database)
        assert files, "the running dashboard holds its database open"
        assert not [t for t in files.values() if t.endswith("(deleted)")], files
        stored = httpx.get(f"{url}/api/campaigns/{campaign['id']}", headers=headers).json()
        assert stored["id"] == campaign["id"]
    check_database(database, writer.acknowledged)


def wait_for_writes(writer: Writer, count: int) -> None:
    for _ in range(600):
        if len(writer.acknowledged) >= count or writer.failures or not writer.is_alive():
            break
        writer.stop.wait(0.05)
    assert len(writer.acknowledged) >= count, (len(writer.acknowledged), writer.failures[:3])


def check_database(database: Path, acknowledged: list[str]) -> None:
    with sqlite3.connect(database) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        stored = {row[0] for row in connection.execute("SELECT body FROM note")}
    missing = [body for body in acknowledged if body not in stored]
    assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:3]}"


def test_a_corrupt_database_is_one_line_and_exit_1(tmp_path: Path) -> None:
    database = tmp_path / "campaign-dash.db"
    database.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))
    env = clean_env()
    env["CAMPAIGN_DASH_DATABASE_URL"] = f"sqlite:///{database}"
    for args in (("serve", "--port", str(free_port())), ("db", "upgrade"), ("token", "reset")):
        result = run_cli(*args, env=env, cwd=tmp_path)
        assert result.returncode == 1, (args, result.stdout, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (args, result.stderr)
        assert "cannot open the database" in lines[0] and str(database) in lines[0]
        assert "Traceback" not in result.stdout + result.stderr
