"""Runtime files: how the CLI and the MCP server on the machine that runs `serve` find the
dashboard and a token for it without being told, as Jupyter's runtime files do. `serve`
writes one file per process, readable by its user alone, and removes it when it stops."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

ENV_DIR = "CAMPAIGN_DASH_RUNTIME_DIR"
PREFIX = "dashboard-"
# A live dashboard answers its port at once; a file whose port nobody answers in this long
# is a stale one (its process killed, its pid reused by another program).
PROBE_TIMEOUT_S = 0.5


def runtime_dir() -> Path:
    """$CAMPAIGN_DASH_RUNTIME_DIR, else $XDG_RUNTIME_DIR/campaign-dash (a per-user tmpfs the
    system empties at logout), else ~/.local/share/campaign-dash/runtime."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR])
    if os.environ.get("XDG_RUNTIME_DIR"):
        return Path(os.environ["XDG_RUNTIME_DIR"]) / "campaign-dash"
    return Path.home() / ".local" / "share" / "campaign-dash" / "runtime"


@dataclass(frozen=True)
class Dashboard:
    """One running dashboard, as its runtime file tells it."""

    url: str
    token: str  # valid for that process only; it dies with it
    pid: int
    database: str  # the URL, password hidden: which campaigns it holds
    started_at: float

    def describe(self) -> str:
        return f"{self.url} (pid {self.pid}, database {self.database})"


def new_token() -> str:
    return secrets.token_urlsafe(32)


@contextlib.contextmanager
def published(dashboard: Dashboard) -> Iterator[Path]:
    """The dashboard's runtime file, there while the block runs. It holds a token: the
    directory is made 0700 and the file 0600 before a byte of it is written."""
    directory = runtime_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / f"{PREFIX}{dashboard.pid}.json"
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".writing-")  # mode 0600
    with os.fdopen(fd, "w") as file:
        json.dump(asdict(dashboard), file)
    os.replace(temporary, path)  # a reader sees the whole file or none
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def _read(path: Path) -> Dashboard | None:
    try:
        data = json.loads(path.read_text())
        return Dashboard(
            url=str(data["url"]), token=str(data["token"]), pid=int(data["pid"]),
            database=str(data["database"]), started_at=float(data["started_at"]),
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return None  # half-written by hand, or of another version: not one to follow


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process holds the pid: not ours, but alive
    return True


def _answers(url: str) -> bool:
    parts = urlsplit(url)
    if not parts.hostname or not parts.port:
        return False
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


def running() -> list[Dashboard]:
    """The dashboards running on this machine for this user, the latest started first.
    A file whose process is gone is removed; one whose port nobody answers is passed over."""
    directory = runtime_dir()
    found = []
    for path in sorted(directory.glob(f"{PREFIX}*.json")) if directory.is_dir() else []:
        dashboard = _read(path)
        if dashboard is None:
            continue
        if not _alive(dashboard.pid):
            path.unlink(missing_ok=True)  # killed (SIGKILL, a crash): nobody will remove it
            continue
        if _answers(dashboard.url):
            found.append(dashboard)
    return sorted(found, key=lambda d: d.started_at, reverse=True)


def database_identity(url: str) -> str:
    """The database a dashboard serves, as two processes can compare it: a SQLite file by
    its absolute path (`campaign-dash.db` is relative to where each was started), any other
    by its URL with the password hidden."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return url
    path = parsed.database
    if parsed.get_backend_name() == "sqlite" and path and path != ":memory:":
        parsed = parsed.set(database=str(Path(path).resolve()))
    return parsed.render_as_string(hide_password=True)


def local_url(host: str, port: int) -> str:
    """Where a process of this machine reaches a dashboard listening on host:port."""
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
