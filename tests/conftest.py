"""Fixtures: a database per test copied from one migrated template (SQLite, and PostgreSQL
for the tests where the database decides), the app through an in-process client or a real
uvicorn server on a free loopback port, and HTTP clients for the owner and strangers."""

import asyncio
import contextlib
import os
import shutil
import socket
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url

from app.cli import prepare_database
from app.config import Settings
from app.serving import uvicorn_config
from app.web import create_app

if TYPE_CHECKING:
    from tests.sshd import Sshd

OWNER_TOKEN = "test-owner-token-" + "x" * 24
PG_URL_ENV = "CAMPAIGN_DASH_TEST_DATABASE_URL"
REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config: pytest.Config) -> None:
    for line in (
        "browser: drives Debian's Chromium through Playwright",
        "both_databases: runs on SQLite and again on PostgreSQL (the database decides it)",
        "serial: runs alone, after the parallel pass (it times the machine or fills it)",
    ):
        config.addinivalue_line("markers", line)
    # Every dashboard a test starts writes its runtime file here, one folder per worker, not
    # in the user's own: a test that finds dashboards gives its own folder.
    os.environ["CAMPAIGN_DASH_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="campaign-dash-runtime-")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ.pop("CAMPAIGN_DASH_RUNTIME_DIR", ""), ignore_errors=True)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # Tests the database decides (concurrency, locks, ids, leases, migrations, NOTIFY) run
    # on SQLite and again on PostgreSQL when CAMPAIGN_DASH_TEST_DATABASE_URL names a server.
    if "backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "both_databases"
    ):
        backends = ["sqlite"] + (["postgresql"] if os.environ.get(PG_URL_ENV) else [])
        metafunc.parametrize("backend", backends, scope="function")


@pytest.fixture
def backend() -> str:
    return "sqlite"


def _admin_conninfo() -> str:
    url = make_url(os.environ[PG_URL_ENV])
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def _pg_url(name: str) -> str:
    url = make_url(os.environ[PG_URL_ENV]).set(drivername="postgresql+psycopg", database=name)
    return url.render_as_string(hide_password=False)


def _pg_execute(statement: str) -> None:
    import psycopg

    with psycopg.connect(_admin_conninfo(), autocommit=True) as conn:
        conn.execute(statement)


class Templates:
    """One migrated, prepared database per backend for this test process, made on first use
    and copied for each test: Alembic runs once, not once per test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._sqlite: Path | None = None
        self._pg: str | None = None

    @staticmethod
    def prepare(url: str) -> None:
        prepare_database(Settings(database_url=url, token=OWNER_TOKEN, _env_file=None))  # type: ignore[call-arg]

    def sqlite_copy(self, target: Path) -> None:
        if self._sqlite is None:
            path = self.root / "template.db"
            self.prepare(f"sqlite:///{path}")
            self._sqlite = path
        # Through SQLite's backup API: the template is a database, not a file to copy.
        with sqlite3.connect(self._sqlite) as source, sqlite3.connect(target) as copy:
            source.backup(copy)
        copy.close()
        source.close()

    def pg_copy(self, name: str) -> None:
        if self._pg is None:
            template = "cd_tmpl_" + uuid.uuid4().hex[:12]
            _pg_execute(f'CREATE DATABASE "{template}"')
            self.prepare(_pg_url(template))  # its engine is disposed: nobody stays connected
            self._pg = template
        _pg_execute(f'CREATE DATABASE "{name}" TEMPLATE "{self._pg}"')

    def drop(self) -> None:
        if self._pg is not None:
            _pg_execute(f'DROP DATABASE IF EXISTS "{self._pg}" WITH (FORCE)')


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Templates]:
    made = Templates(tmp_path_factory.mktemp("templates"))
    try:
        yield made
    finally:
        made.drop()


@contextmanager
def pg_database(copy_of: Templates | None = None) -> Iterator[str]:
    name = "cd_test_" + uuid.uuid4().hex[:12]
    if copy_of is None:
        _pg_execute(f'CREATE DATABASE "{name}"')
    else:
        copy_of.pg_copy(name)
    try:
        yield _pg_url(name)
    finally:
        _pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def database_url(backend: str, tmp_path: Path, templates: Templates) -> Iterator[str]:
    """A database migrated to head, with the owner's secrets made: a copy of the template."""
    if backend == "sqlite":
        path = tmp_path / "campaign-dash.db"
        templates.sqlite_copy(path)
        yield f"sqlite:///{path}"
        return
    with pg_database(templates) as url:
        yield url


@pytest.fixture
def empty_database_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """A database nothing has touched (migration tests, a first start)."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'empty.db'}"
        return
    with pg_database(None) as url:
        yield url


@pytest.fixture
def settings(database_url: str) -> Settings:
    return Settings(database_url=database_url, token=OWNER_TOKEN, _env_file=None)  # type: ignore[call-arg]


class LiveServer:
    """A real uvicorn server in a thread, on a port the OS picked. The database is prepared
    first as `serve` prepares it (a no-op on a template's copy)."""

    def __init__(self, settings: Settings, port: int = 0) -> None:
        self.settings = settings
        prepare_database(settings)
        self.app = create_app(settings)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", port))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn_config(
            self.app, settings, log_level="warning", lifespan="on", timeout_graceful_shutdown=2
        )
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
        close_streams(self.app)
        self._server.should_exit = True
        self._thread.join(timeout=15)
        self._sock.close()


def close_streams(app: FastAPI) -> None:
    """Live streams never end by themselves: the hub ends them as the server stops, as a
    signal does for `serve`, so that shutting down waits on none."""
    loop: asyncio.AbstractEventLoop | None = getattr(app.state, "loop", None)
    if loop is not None and not loop.is_closed():
        with contextlib.suppress(RuntimeError):  # closed meanwhile: nothing is left open
            loop.call_soon_threadsafe(app.state.live.close)


def no_server_error(response: httpx.Response) -> None:
    """No request of any test may meet a 500: bad input gets a 4xx, and a 500 a test did
    not look at (a deadlock aborting a write) would pass unseen. (A 502 says a remote host
    failed: some tests ask for it.)"""
    if response.status_code != 500:
        return
    response.read()
    raise AssertionError(
        f"{response.request.method} {response.request.url} answered 500: {response.text[:500]}"
    )


SERVER_ERRORS = {"response": [no_server_error]}
# A client must let go of an idle connection before the server does (5 s keep-alive): one
# reused as the server closes it is reset under the request (a GET failed so in CI).
CLIENT_LIMITS = httpx.Limits(keepalive_expiry=2.0)


def owner_client(url: str) -> httpx.Client:
    """The owner, through the JSON API."""
    return httpx.Client(
        base_url=url,
        headers={"Authorization": f"Bearer {OWNER_TOKEN}"},
        timeout=30,
        event_hooks=SERVER_ERRORS,
        limits=CLIENT_LIMITS,
    )


@contextmanager
def running(settings: Settings) -> Iterator[tuple[LiveServer, httpx.Client]]:
    """A dashboard with these settings, and the owner's API client to it."""
    live = LiveServer(settings).start()
    try:
        with owner_client(live.url) as client:
            yield live, client
    finally:
        live.stop()


class Httpx2Bridge(httpx.BaseTransport):
    """Starlette's test transport speaks httpx2 once that is installed (the mcp SDK needs it);
    the tests speak httpx: requests and streamed responses are handed across as they are."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        import httpx2

        theirs = httpx2.Request(
            request.method, str(request.url), headers=request.headers.multi_items(),
            content=request.read(),
        )  # fmt: skip
        answer = self._inner.handle_request(theirs)
        return httpx.Response(
            answer.status_code, headers=answer.headers.multi_items(),
            stream=_BridgedStream(answer.stream), request=request,
        )  # fmt: skip


class _BridgedStream(httpx.SyncByteStream):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        yield from self._inner

    def close(self) -> None:
        self._inner.close()


class InProcess:
    """The app served through Starlette's in-process client: no socket, no uvicorn, for
    request/response tests. Its lifespan runs as the server's does, once; every client
    (owner, stranger, browser: each with its own cookies) goes through its transport."""

    url = "http://testserver"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        prepare_database(settings)
        self.app = create_app(settings)
        self._runner = TestClient(self.app, base_url=self.url)
        self._runner.__enter__()

    def client(self, **options: Any) -> httpx.Client:
        # The runner's transport runs each request on the event loop of its lifespan.
        transport = self._runner._transport
        if not isinstance(transport, httpx.BaseTransport):
            transport = Httpx2Bridge(transport)
        return httpx.Client(
            transport=transport, base_url=self.url, event_hooks=SERVER_ERRORS, **options
        )

    def close(self) -> None:
        close_streams(self.app)
        self._runner.__exit__(None, None, None)


@pytest.fixture
def server(settings: Settings) -> Iterator[LiveServer]:
    """A real uvicorn: for tests where a socket, a second process, a stream's timing or a
    browser is the point."""
    live = LiveServer(settings).start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture
def app_under_test(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Any]:
    """The real server when the test asked for it; the in-process client otherwise."""
    if "server" in request.fixturenames:
        yield request.getfixturevalue("server")
        return
    local = InProcess(settings)
    try:
        yield local
    finally:
        local.close()


def _client(target: Any, **options: Any) -> httpx.Client:
    if isinstance(target, InProcess):
        return target.client(**options)
    return httpx.Client(
        base_url=target.url, timeout=20, event_hooks=SERVER_ERRORS, limits=CLIENT_LIMITS, **options
    )


@pytest.fixture
def api(app_under_test: Any) -> Iterator[httpx.Client]:
    with _client(app_under_test, headers={"Authorization": f"Bearer {OWNER_TOKEN}"}) as client:
        yield client


@pytest.fixture
def anonymous(app_under_test: Any) -> Iterator[httpx.Client]:
    with _client(app_under_test) as client:
        yield client


@pytest.fixture
def browser(app_under_test: Any) -> Iterator[httpx.Client]:
    """The owner in a browser: logged in by the login link, holding the session cookie."""
    with _client(app_under_test, headers={"Accept": "text/html"}) as client:
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
def ssh_api(ssh_settings: Settings) -> Iterator[httpx.Client]:
    with running(ssh_settings) as (_, client):
        yield client


HTMX_FILES = {
    # CDN path the pages load -> (npm package, file inside it)
    "htmx.org@2.0.11/dist/htmx.min.js": ("htmx.org@2.0.11", "dist/htmx.min.js"),
}


def vendored_htmx() -> dict[str, bytes]:
    """The CDN files, taken from the npm registry's packages (tests run offline otherwise)."""
    import subprocess
    import tarfile

    cache = REPO / ".pytest_cache" / "vendor"
    cache.mkdir(parents=True, exist_ok=True)
    files = {}
    for cdn_path, (package, inner) in HTMX_FILES.items():
        target = cache / package / inner
        if not target.is_file():
            npm = shutil.which("npm")
            if npm is None:
                pytest.skip("npm is needed to fetch htmx from the npm registry")
            out = subprocess.run(
                [npm, "pack", package, "--pack-destination", str(cache)],
                capture_output=True, text=True, check=True, cwd=cache,
            )  # fmt: skip
            with tarfile.open(cache / out.stdout.strip().splitlines()[-1]) as archive:
                member = archive.extractfile(f"package/{inner}")
                assert member is not None
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(member.read())
        files[cdn_path] = target.read_bytes()
    return files


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:

    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(executable).exists():
        pytest.skip("Debian's chromium is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def open_page(chromium: object, request: pytest.FixtureRequest) -> Iterator[object]:
    """A factory of logged-in pages in fresh browser contexts, CDN served from npm copies
    (`cdn=False`: the CDN unreachable, as offline). Pages are on the test's live server
    unless `base=` names another dashboard."""
    files = vendored_htmx()
    contexts = []

    def route_cdn(route: object) -> None:
        url = route.request.url  # type: ignore[attr-defined]
        for cdn_path, body in files.items():
            if url.endswith(cdn_path):
                route.fulfill(
                    body=body,
                    content_type="application/javascript",  # type: ignore[attr-defined]
                    headers={"Access-Control-Allow-Origin": "*"},
                )
                return
        route.abort()  # type: ignore[attr-defined]

    def offline(route: object) -> None:
        route.abort()  # type: ignore[attr-defined]

    def make(
        path: str, *, logged_in: bool = True, base: str | None = None, cdn: bool = True
    ) -> object:
        base = base or request.getfixturevalue("server").url
        context = chromium.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
        contexts.append(context)
        context.route("https://cdn.jsdelivr.net/**", route_cdn if cdn else offline)
        page = context.new_page()
        dialogs: list[str] = []
        page.dialogs = dialogs  # type: ignore[attr-defined]  # an XSS that runs shows up here

        def on_dialog(dialog: object) -> None:
            dialogs.append(dialog.message)  # type: ignore[attr-defined]
            dialog.dismiss()  # type: ignore[attr-defined]

        page.on("dialog", on_dialog)
        if logged_in:
            page.goto(f"{base}/login?token={OWNER_TOKEN}&next={path}")
        else:
            page.goto(f"{base}{path}")
        return page

    yield make
    for context in contexts:
        context.close()
