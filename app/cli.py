"""The `campaign-dash` command: serve, demo, diagnose, db upgrade, token reset, mcp; the
campaign's verbs (app/verbs.py) and `try` ask the running dashboard."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import sys
import tempfile
import threading
import time
import webbrowser
from collections.abc import Iterator
from contextlib import AbstractContextManager as ContextManager
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from app.clitypes import FiniteFloatRange

if TYPE_CHECKING:
    from fastapi import FastAPI

    from app.config import Settings
    from app.diagnosis import Diagnosis

# The web stack (FastAPI, SQLAlchemy, Alembic, uvicorn) and the settings (pydantic, a
# quarter of a second) are imported inside the commands that need them, so that `diagnose`
# and `try` start without them.

HOST_HELP = (
    "Interface to listen on. Defaults to 127.0.0.1, which means only this machine can "
    "connect; use 0.0.0.0 to serve the network (put it behind TLS)."
)
PORT_HELP = "TCP port. Defaults to 8000, uvicorn's usual port."


SERVED_AT = "served_at"  # where `serve` last listened, for links printed by other commands


def base_url(settings: Settings, host: str, port: int) -> str:
    shown_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return (settings.public_url or f"http://{shown_host}:{port}").rstrip("/")


def login_url(settings: Settings, host: str, port: int, token: str) -> str:
    return f"{base_url(settings, host, port)}/login?token={token}"


def listen(host: str, port: int) -> socket.socket:
    """The dashboard's socket, bound before anything is printed or stored: a port another
    program holds is one line, not a login link to that program and a stored `served_at`
    that later links would follow."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as error:
        raise click.ClickException(f"cannot listen on {host}:{port}: {error}") from None
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {error.strerror or error}"
        ) from None
    return sock


def run_server(app: FastAPI, sock: socket.socket, log_level: str) -> None:
    import uvicorn

    from app.logs import uvicorn_log_config
    from app.serving import uvicorn_config

    settings = app.state.settings
    log_config = uvicorn_log_config([settings.token])
    config = uvicorn_config(app, settings, log_level=log_level, log_config=log_config)
    server = uvicorn.Server(config)
    # uvicorn re-raises the Ctrl-C it shut down on; uvicorn.run swallows it too.
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[sock])
    if not server.started:
        sys.exit(3)  # uvicorn.run's STARTUP_FAILURE: the app's startup failed


@contextmanager
def database_errors(url: str) -> Iterator[None]:
    """A database that cannot be opened is a one-line error naming it, not a traceback."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, DatabaseError, NoSuchModuleError

    try:
        shown = make_url(url).render_as_string(hide_password=True)
        yield
    except (ArgumentError, NoSuchModuleError) as error:
        raise click.ClickException(
            f"CAMPAIGN_DASH_DATABASE_URL is not a database URL SQLAlchemy knows ({error}); "
            "e.g. sqlite:///campaign-dash.db or postgresql+psycopg://user@host/db"
        ) from None
    except OSError as error:
        raise click.ClickException(f"cannot open the database {shown}: {error}") from None
    except DatabaseError as error:
        # OperationalError (unreadable, locked) and DatabaseError (not a database, corrupt).
        raise click.ClickException(f"cannot open the database {shown}: {error.orig}") from None


def missing_sqlite_file(url: str) -> str | None:
    """The absolute path of a SQLite database file that does not exist; None otherwise."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None  # database_errors says what is wrong with the URL
    path = parsed.database if parsed.get_backend_name() == "sqlite" else None
    if not path or path == ":memory:" or Path(path).exists():
        return None
    return str(Path(path).resolve())


def prepare_database(
    settings: Settings, revision: str = "head", *, secrets: bool = True
) -> str | None:
    """Migrate and (`secrets`) make sure an owner token exists, under the start-up lock:
    dashboards starting at once, or a `db upgrade` beside them, take turns. Returns a token
    just generated, to print once."""
    from app import migrate
    from app.auth import ensure_owner_secrets
    from app.db import make_engine, startup_lock

    with database_errors(settings.database_url):
        engine = make_engine(settings.database_url)
    try:
        with database_errors(settings.database_url), startup_lock(settings.database_url):
            migrate.upgrade(settings.database_url, revision)
            return ensure_owner_secrets(engine, settings.token) if secrets else None
    finally:
        engine.dispose()


# The campaign's verbs (app/verbs.py), by name: their module and the HTTP client it imports
# are loaded only when one is run or listed, so that `diagnose` starts without them.
VERB_NAMES = (
    "new", "campaigns", "attempts", "show", "eliminate", "adopt", "note", "search", "seen",
    "compare", "export",
)  # fmt: skip


class CommandsWithLazyVerbs(click.Group):
    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in VERB_NAMES:
            _add_verbs(self)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        _add_verbs(self)
        return super().list_commands(ctx)


def _add_verbs(group: click.Group) -> None:
    if VERB_NAMES[0] in group.commands:
        return
    from app.verbs import VERBS

    for verb in VERBS:
        group.add_command(verb)


@click.group(cls=CommandsWithLazyVerbs, context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """A live dashboard for GPU inference-server optimization campaigns.

    Configuration comes from the environment (and .env): CAMPAIGN_DASH_DATABASE_URL
    (default: campaign-dash.db in the working directory), CAMPAIGN_DASH_TOKEN (the
    owner token; unset, one is generated and printed once).
    """


class RepeatType(click.ParamType):
    """A count of benchmark runs (1 to 100), or `auto`."""

    name = "N|auto"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> int | str:
        text = str(value).strip().lower()
        if text == "auto":
            return "auto"
        if text.isdigit() and 1 <= int(text) <= 100:
            return int(text)
        self.fail(f"{value!r}: a count from 1 to 100, or auto", param, ctx)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help=HOST_HELP)
@click.option(
    "--port", default=8000, show_default=True, type=click.IntRange(1, 65535), help=PORT_HELP
)
def serve(host: str, port: int) -> None:
    """Migrate the database to head, then serve the dashboard."""
    from app import repo
    from app.auth import FROM_DATABASE, FROM_ENVIRONMENT, TOKEN_FROM
    from app.collector import COLLECTOR
    from app.config import Settings
    from app.db import session_scope
    from app.web import create_app

    sock = listen(host, port)
    settings = Settings()
    generated = prepare_database(settings)
    if generated:
        click.echo("Owner token generated; it is stored hashed and shown only this once.")
        click.echo(f"Log in: {login_url(settings, host, port, generated)}")
    elif not settings.token:
        click.echo(
            f"Dashboard: {base_url(settings, host, port)}/ (log in with the link printed at "
            "first start, or run: campaign-dash token reset)"
        )
    else:
        click.echo(
            f"Dashboard: {base_url(settings, host, port)}/ (log in with CAMPAIGN_DASH_TOKEN)"
        )
    with database_errors(settings.database_url):
        app = create_app(settings)
        with session_scope(app.state.engine) as session:
            repo.set_secret(session, name=SERVED_AT, value=base_url(settings, host, port))
            token_from = FROM_ENVIRONMENT if settings.token else FROM_DATABASE
            repo.set_secret(session, name=TOKEN_FROM, value=token_from)
    # What start-up made (modules, templates, mappers: 130,000 objects) lives as long as the
    # process, and so do a stream's objects while its reader stays: full collections skip
    # what survived the last one. Each walked it all, stalling every live stream at once.
    COLLECTOR.install()
    # A request thread lets go of the GIL at each SQLite query and waits to get it back
    # while a share page renders or the loop fans out: up to 5 ms a wait by default. At
    # 1 ms the owner's GET p99 beside 300 share viewers fell from 166 to 84 ms (bench/).
    sys.setswitchinterval(0.001)
    # SIGTERM unwinds like Ctrl-C (uvicorn shuts down gracefully, then hands the signal on):
    # its default action would end the process before its runtime file is removed.
    signal.signal(signal.SIGTERM, _interrupt)
    with published(app, settings, sock):
        run_server(app, sock, "info")


def published(app: FastAPI, settings: Settings, sock: socket.socket) -> ContextManager[Path]:
    """This dashboard's runtime file, with a token of its own, while it serves: the CLI
    verbs and `campaign-dash mcp` of this user on this machine find it by that."""
    from app import runtime

    token = runtime.new_token()
    app.state.auth.accept_runtime_token(token)
    host, port = sock.getsockname()[:2]
    return runtime.published(
        runtime.Dashboard(
            url=runtime.local_url(host, port), token=token, pid=os.getpid(),
            database=runtime.database_identity(settings.database_url), started_at=time.time(),
        )
    )  # fmt: skip


@main.group()
def db() -> None:
    """Database maintenance."""


@db.command("upgrade")
@click.option(
    "--revision",
    default="head",
    show_default=True,
    help="Target revision. Defaults to head, the schema this version of campaign-dash expects.",
)
def db_upgrade(revision: str) -> None:
    """Run the migrations on CAMPAIGN_DASH_DATABASE_URL."""
    from app.config import Settings

    settings = Settings()
    # No secrets here: a token generated now would never be printed.
    prepare_database(settings, revision, secrets=False)
    click.echo(f"Database at {revision}.")


@main.group()
def token() -> None:
    """The owner token."""


@token.command("reset")
@click.option(
    "--host",
    default=None,
    help="Host used in the printed link. Defaults to where `serve` last listened on this "
    "database, so the link opens the running dashboard.",
)
@click.option(
    "--port",
    default=None,
    type=click.IntRange(1, 65535),
    help="Port used in the printed link. Defaults to where `serve` last listened (8000 if "
    "it never ran).",
)
def token_reset(host: str | None, port: int | None) -> None:
    """Generate a new owner token (ends every browser session) and print its login link.

    Refused while the dashboard takes its token from CAMPAIGN_DASH_TOKEN: change it there."""
    from app import repo
    from app.auth import FROM_ENVIRONMENT, TOKEN_FROM, reset_owner_token
    from app.config import Settings
    from app.db import make_engine, session_scope

    settings = Settings()
    if settings.token:
        raise click.ClickException("CAMPAIGN_DASH_TOKEN is set: change it there instead.")
    missing = missing_sqlite_file(settings.database_url)
    if missing:
        # Run from the wrong directory, a reset made a database of its own there and a link
        # that no running dashboard knows.
        raise click.ClickException(
            f"no database at {missing}: nothing to reset (set CAMPAIGN_DASH_DATABASE_URL to "
            "the one `serve` uses; a first `serve` makes a database and prints its link)"
        )
    prepare_database(settings, secrets=False)
    with database_errors(settings.database_url):
        engine = make_engine(settings.database_url)
        try:
            with session_scope(engine) as session:
                served_at = repo.get_secret(session, name=SERVED_AT)
                token_from = repo.get_secret(session, name=TOKEN_FROM)
            if token_from == FROM_ENVIRONMENT:
                # Its link would be answered with 401, and every browser session ended.
                raise click.ClickException(
                    f"the dashboard at {served_at or 'this database'} takes its owner token "
                    "from CAMPAIGN_DASH_TOKEN in its environment, which no reset changes: to "
                    "change the token, restart it with a new CAMPAIGN_DASH_TOKEN (to have one "
                    "generated instead, restart it without CAMPAIGN_DASH_TOKEN, then reset)"
                )
            new = reset_owner_token(engine)
        finally:
            engine.dispose()
    if host is None and port is None and served_at and not settings.public_url:
        click.echo(f"Log in: {served_at}/login?token={new}")
    else:
        link = login_url(settings, host or "127.0.0.1", port or 8000, new)
        click.echo(f"Log in: {link}")


@main.command()
@click.option(
    "--port",
    default=8123,
    show_default=True,
    type=click.IntRange(1, 65535),
    help="TCP port. Defaults to 8123 so the demo does not collide with a real `serve` on 8000.",
)
@click.option("--no-browser", is_flag=True, help="Do not open a browser; just print the link.")
@click.option(
    "--speed",
    default=1.0,
    show_default=True,
    type=FiniteFloatRange(min=0.01, max=1000),
    help="Replay speed. Defaults to 1, about three minutes for the whole story.",
)
def demo(port: int, no_browser: bool, speed: float) -> None:
    """Replay the EAGLE-3 campaign of the seed write-ups live, on a database of its own.

    Its database and server logs live in a temporary directory, removed when the demo
    stops (Ctrl-C or SIGTERM).
    """
    sock = listen("127.0.0.1", port)  # a port in use: one line, no link, nothing made
    workdir = Path(tempfile.mkdtemp(prefix="campaign-dash-demo-"))
    # SIGTERM unwinds like Ctrl-C, through the cleanup below (uvicorn, while it serves,
    # shuts down gracefully first and then hands the signal on to this handler).
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        _run_demo(workdir, sock, no_browser, speed)
    finally:
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(workdir, ignore_errors=True)
        click.echo(f"Demo stopped; removed {workdir}.")


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _run_demo(workdir: Path, sock: socket.socket, no_browser: bool, speed: float) -> None:
    from app import demo as demo_story
    from app.config import Settings
    from app.web import create_app

    settings = Settings(database_url=f"sqlite:///{workdir / 'demo.db'}")
    generated = prepare_database(settings)
    token = settings.token or generated
    assert token is not None  # a fresh database always gets a generated token
    app = create_app(settings)
    stop = threading.Event()
    replay = demo_story.Replay(app.state, workdir, speed=speed, stop=stop)
    # The link opens the replayed campaign's page, where the story plays out live.
    login = login_url(settings, "127.0.0.1", sock.getsockname()[1], token)
    url = f"{login}&next=/campaigns/{replay.create_campaign()}"
    click.echo(f"Demo database: {workdir / 'demo.db'} (yours is untouched)")
    click.echo(f"Open: {url}")
    # The MCP server finds this demo's token by its address (its runtime file).
    click.echo(f"Connect a coding agent (MCP over stdio): {agent_line(local_url(sock))}")
    click.echo(
        f"Server logs of the story are written to {workdir}, one file per attempt. "
        "Ctrl-C stops the demo and removes them."
    )

    def start_when_serving() -> None:
        # The tailer starts with the server (its lifespan); the story starts after it.
        while not stop.is_set() and not getattr(app.state, "serving", False):
            stop.wait(0.05)
        if replay.run():
            click.echo(
                f"Demo replay finished: {len(demo_story.STORY)} attempts played. The dashboard "
                "stays up for you to explore; Ctrl-C stops it."
            )

    player = threading.Thread(target=start_when_serving, name="demo-replay", daemon=True)
    player.start()
    has_display = sys.platform in ("darwin", "win32") or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )
    if not no_browser and has_display:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    elif not no_browser:
        click.echo("No display here: open the link above in your browser.")
    try:
        with published(app, settings, sock):
            run_server(app, sock, "warning")
    finally:
        stop.set()
        player.join(timeout=5)


def local_url(sock: socket.socket) -> str:
    from app import runtime

    host, port = sock.getsockname()[:2]
    return runtime.local_url(host, port)


def agent_line(url: str) -> str:
    """What an agent's host is told to start (as `claude mcp add NAME -- COMMAND` takes it)."""
    return f"campaign-dash mcp --url {url}"


@main.command(
    "try",
    context_settings={"ignore_unknown_options": True},
)
@click.argument("campaign")
@click.argument("title")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--host", required=True, help="An ssh alias (as ~/.ssh/config names it) or local.")
@click.option("--bench", default=None, help="Benchmark command run on the host once ready. "
              "Defaults to none: the run ends when the server is ready.")  # fmt: skip
@click.option("--repeat", default="3", show_default=True, type=RepeatType(),
              help="Benchmark runs recorded: three give a mean and a spread; `auto`: at "
              "least three, then one more until the call against the baseline is clear, or "
              "--max-runs are done.")  # fmt: skip
@click.option("--max-runs", default=10, show_default=True, type=click.IntRange(3, 100),
              help="With --repeat auto: the most runs it may take.")  # fmt: skip
@click.option("--warmup", default=1, show_default=True, type=click.IntRange(0, 20),
              help="Benchmark runs before them, not recorded: the first run pays for "
              "compilation and caches.")  # fmt: skip
@click.option("--ready-timeout", default=1200.0, show_default=True,
              type=FiniteFloatRange(min=0, min_open=True, max=7 * 86400),
              help="Seconds to wait for ready: 20 minutes covers loading weights and "
              "capturing CUDA graphs of large models.")  # fmt: skip
@click.option("--keep", is_flag=True, help="Leave the server running at the end.")
@click.option("--retest-of", type=int, default=None, help="The attempt this one retests.")
@click.option("--hypothesis", default="", help="What the attempt tries, in a sentence.")
@click.option("--json", "as_json", is_flag=True,
              help="The progress on standard error; the attempt as it ended, one JSON "
              "document, on standard output.")  # fmt: skip
@click.option("--url", default=None,
              help="The running dashboard. Defaults to the one `serve` runs on this machine "
              "for this user (found by its runtime file), else http://127.0.0.1:8000, "
              "serve's default address, with CAMPAIGN_DASH_TOKEN.")  # fmt: skip
def try_(
    campaign: str, title: str, command: tuple[str, ...], host: str, bench: str | None,
    repeat: int | str, max_runs: int, warmup: int, ready_timeout: float, keep: bool,
    retest_of: int | None, hypothesis: str, as_json: bool, url: str | None,
) -> None:  # fmt: skip
    """Run one attempt on HOST: launch COMMAND (after --) detached, wait for ready or crash,
    benchmark it, record the figures, stop it. CAMPAIGN is an id or a name.

    \b
    Exit status:
      0  measured (or ready, without --bench)
      1  crashed, not ready in time, or the benchmark failed
      2  refused (host busy, port in use, bad usage) or infrastructure failure
    """
    from app.client import find
    from app.try_cli import command_text, run_try

    launch = {"host": host, "command": command_text(command), "repeat": repeat,
              "warmup": warmup, "ready_timeout_s": ready_timeout, "keep": keep}  # fmt: skip
    if repeat == "auto":
        launch["max_runs"] = max_runs
    if bench:
        launch["bench"] = bench
    found = find(url)
    if found.said:
        click.echo(found.said, err=True)
    code = run_try(
        found=found, as_json=as_json,
        campaign=campaign, title=title, launch=launch, hypothesis=hypothesis,
        retest_of=retest_of,
    )  # fmt: skip
    sys.exit(code)


READ_CHUNK = 4 << 20
EXIT_NO_CRASH, EXIT_CRASHED, EXIT_UNREADABLE = 0, 1, 2


class Unreadable(click.ClickException):
    """The log could not be read: exit 2, as bad usage, so that 1 always means crashed."""

    exit_code = EXIT_UNREADABLE


@main.command()
@click.argument("path", type=click.Path(allow_dash=True, dir_okay=False, path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
@click.option(
    "--ready-pattern",
    default=None,
    help="Regex of the line that says the server is up, for servers the engine does not know. "
    "Defaults to none: sglang, vLLM and uvicorn readiness lines are known.",
)
def diagnose(path: str, as_json: bool, ready_pattern: str | None) -> None:
    """Diagnose a server log offline (PATH, or - for standard input).

    \b
    Exit status, for scripts and CI:
      0  no crash found
      1  the log shows a crash
      2  the log could not be read, or bad usage
    """
    from concurrent.futures import ThreadPoolExecutor

    from app.diagnosis import Diagnoser
    from app.diagnosis.advice import advice_for
    from app.logbytes import TextCheck

    try:
        diagnoser = Diagnoser(ready_pattern)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--ready-pattern") from None
    name = "standard input" if path == "-" else path
    if path == "-" and sys.stdin is None:  # started with its standard input closed
        raise Unreadable("cannot read standard input: it is closed")
    check = TextCheck(name, "diagnose", piped=path == "-")
    try:
        if path != "-" and stat.S_ISCHR(os.stat(path).st_mode):
            raise Unreadable(f"{name} is a device, not a log file")  # (/dev/zero never ends)
        stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        # Reading lets go of the GIL: the next chunk is read while this one is diagnosed.
        with stream, ThreadPoolExecutor(max_workers=1) as reader:
            ahead = reader.submit(stream.read, READ_CHUNK)
            while chunk := ahead.result():
                ahead = reader.submit(stream.read, READ_CHUNK)
                if refused := check.refusal(chunk):
                    raise Unreadable(refused)
                diagnoser.feed(chunk)
    except OSError as error:
        raise Unreadable(f"cannot read {name}: {error.strerror or error}") from None
    result = diagnoser.diagnosis()
    if refused := check.never_decided(result.bytes_read):
        raise Unreadable(refused)
    if result.bytes_read == 0:
        # Shows no crash, as the contract has it; but `ssh host cat log | ...` prints
        # nothing when ssh fails, and that should not read as a healthy server.
        click.echo(f"Warning: {name} is empty: nothing to diagnose.", err=True)
    if as_json:
        # As the API's hints, the knowledge base's only: a log alone has no history.
        hints = [{"text": text, "source": "knowledge", "attempt_id": None}
                 for text in advice_for(result.to_dict())]  # fmt: skip
        click.echo(json.dumps({**result.to_dict(), "hints": hints}))
    else:
        click.echo(describe(result, color=sys.stdout.isatty()))
    sys.exit(EXIT_CRASHED if result.crashed else EXIT_NO_CRASH)


def describe(result: Diagnosis, *, color: bool) -> str:
    """The diagnosis as an engineer would want to read it in a terminal."""
    from app.diagnosis.advice import advice_for

    def bold(text: str, fg: str | None = None) -> str:
        return click.style(text, bold=True, fg=fg) if color else text

    state = "crashed" if result.crashed else ("ready" if result.ready else "no crash seen")
    if result.crashed and result.ready:
        state = "ready, then crashed"
    elif result.crashed is None:
        state = "crashed or not, the log does not tell"
    elif result.crashed is False and result.root_cause:  # a hang, or a warning alone
        state = "no crash, stalled on a failure"
    read = (
        f"{result.lines_read:,} line{'' if result.lines_read == 1 else 's'}, "
        f"{result.bytes_read:,} byte{'' if result.bytes_read == 1 else 's'}"
    )
    lines = [f"{bold('State:')} {state} ({read})"]
    if result.crashed_reason:
        lines.append(f"{bold('Why:')} {result.crashed_reason}")
    if result.root_cause and result.root_cause_at:
        lines.append(f"{bold('Root cause')} (line {result.root_cause_at.line}):")
        lines.append("  " + bold(result.root_cause, fg="red"))
    elif result.pending:
        lines.append(f"{bold('Root cause:')} {result.pending}")
    if result.frame:
        where = f"{result.frame.file}:{result.frame.line}"
        lines.append(f"{bold('Frame:')} {where} in {result.frame.function or '?'}")
    if len(result.candidates) > 1:
        lines.append(bold("Also in this log:"))
        lines.extend(f"  line {c.line_no}: {c.line}" for c in result.candidates[1:])
    if result.error_class:
        lines.append(f"{bold('Class:')} {result.error_class}")
    advice = advice_for(result.to_dict())
    if advice:
        lines.append(bold("What to try next:"))
        lines.extend(f"  - {text}" for text in advice)
    if result.fingerprint:
        lines.append(f"{bold('Fingerprint:')} {result.fingerprint}")
    if result.excerpt:
        lines.append(bold(f"Excerpt (from line {result.excerpt_first_line}):"))
        lines.extend("  | " + _cut(line) for line in result.excerpt.splitlines())
    if result.throughput:
        lines.append(bold("Throughput:"))
        by_label: dict[tuple[str, str], list[float]] = {}
        for figure in result.throughput:
            by_label.setdefault((figure.label, figure.unit), []).append(figure.value)
        for (label, unit), values in by_label.items():
            summary = f"last {values[-1]:g} {unit}"
            if len(values) > 1:
                summary += f", max {max(values):g}, {len(values)} figures"
            lines.append(f"  {label}: {summary}")
    return "\n".join(lines)


EXCERPT_LINE_CHARS = 400  # a terminal's few lines of an excerpt line (--json has it all)


def _cut(line: str) -> str:
    """An excerpt's line as a terminal shows it: a 20 MB `server_args=...` echo is no read."""
    if len(line) <= EXCERPT_LINE_CHARS:
        return line
    return f"{line[:EXCERPT_LINE_CHARS]}… ({len(line) - EXCERPT_LINE_CHARS:,} more characters)"


@main.command()
@click.option("--url", default=None,
              help="The running dashboard. Defaults to the one `serve` runs on this machine "
              "for this user (its runtime file holds a token); elsewhere give it with "
              "CAMPAIGN_DASH_TOKEN.")  # fmt: skip
def mcp(url: str | None) -> None:
    """A Model Context Protocol server on standard input and output, for a coding agent's
    host to start: its tools read and drive the campaigns through the running dashboard's
    API, so what the agent does shows live on the pages."""
    from app.mcp_server import serve_stdio

    serve_stdio(url)
