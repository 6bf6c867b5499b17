"""Fixtures: a fresh database per test (SQLite, and PostgreSQL when configured), a real
uvicorn server on a free loopback port, and HTTP clients for the owner and strangers."""

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
import uvicorn
from sqlalchemy.engine import make_url

from app.config import Settings
from app.web import create_app

if TYPE_CHECKING:
    from tests.sshd import Sshd

OWNER_TOKEN = "test-owner-token-" + "x" * 24
PG_URL_ENV = "CAMPAIGN_DASH_TEST_DATABASE_URL"
REPO = Path(__file__).resolve().parent.parent


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Every test that touches the database runs on SQLite, and again on PostgreSQL
    # when CAMPAIGN_DASH_TEST_DATABASE_URL names a server.
    if "backend" in metafunc.fixturenames:
        backends = ["sqlite"] + (["postgresql"] if os.environ.get(PG_URL_ENV) else [])
        metafunc.parametrize("backend", backends, scope="function")


def _create_pg_database(admin_url: str) -> tuple[str, str]:
    import psycopg

    name = "cd_test_" + uuid.uuid4().hex[:12]
    url = make_url(admin_url)
    conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.set(database=name).render_as_string(hide_password=False), name


def _drop_pg_database(admin_url: str, name: str) -> None:
    import psycopg

    conninfo = (
        make_url(admin_url).set(drivername="postgresql").render_as_string(hide_password=False)
    )
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def database_url(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'campaign-dash.db'}"
        return
    admin_url = os.environ[PG_URL_ENV]
    url, name = _create_pg_database(admin_url)
    try:
        yield url.replace("postgresql://", "postgresql+psycopg://", 1)
    finally:
        _drop_pg_database(admin_url, name)


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, token=OWNER_TOKEN, _env_file=None)  # type: ignore[call-arg]


class LiveServer:
    """A real uvicorn server in a thread, on a port the OS picked."""

    def __init__(self, settings: Settings) -> None:
        self.app = create_app(settings)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def start(self) -> "LiveServer":
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=15)
        self._sock.close()


@pytest.fixture
def server(settings: Settings) -> Iterator[LiveServer]:
    live = LiveServer(settings).start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def api(server: LiveServer) -> Iterator[httpx.Client]:
    """The owner, through the JSON API."""
    headers = {"Authorization": f"Bearer {OWNER_TOKEN}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=20) as client:
        yield client


@pytest.fixture
def anonymous(server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=20) as client:
        yield client


@pytest.fixture
def browser(server: LiveServer) -> Iterator[httpx.Client]:
    """The owner in a browser: logged in by the login link, holding the session cookie."""
    with httpx.Client(base_url=server.url, timeout=20, headers={"Accept": "text/html"}) as client:
        response = client.get("/login", params={"token": OWNER_TOKEN})
        assert response.status_code == 303
        yield client


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator["Sshd"]:
    from tests.sshd import start_sshd

    server = start_sshd(tmp_path / "sshd")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def ssh_settings(sshd: "Sshd", tmp_path: Path) -> Settings:
    """A dashboard whose SSH setup points at the test sshd (SQLite: SSH is not about the DB)."""
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=f"sqlite:///{tmp_path / 'ssh.db'}",
        token=OWNER_TOKEN,
        ssh_config=sshd.ssh_config,
        ssh_known_hosts=sshd.known_hosts,
        trusted_hosts_file=sshd.trusted_hosts,
        ssh_agent=False,
    )


@pytest.fixture
def ssh_server(ssh_settings: Settings) -> Iterator[LiveServer]:
    live = LiveServer(ssh_settings).start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def ssh_api(ssh_server: LiveServer) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {OWNER_TOKEN}"}
    with httpx.Client(base_url=ssh_server.url, headers=headers, timeout=30) as client:
        yield client
