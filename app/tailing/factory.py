"""The app's log sources: a source for each log URL, the SSH connection pool they share
(built on first use, closed with the app), and what may never be a source.

One `LogSources` per app (create_app builds it): two apps in one process share no connection.
"""

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import make_url

from app.config import Settings
from app.db import is_sqlite
from app.errors import Invalid
from app.tailing.file_source import FileSource, refusal
from app.tailing.protocol import LogSource
from app.tailing.sources import SourceURL, parse_source

if TYPE_CHECKING:  # paramiko is imported only when an ssh:// source is used
    from app.tailing.ssh_pool import ConnectionPool, SSHOptions
    from app.tailing.ssh_source import SSHSource


def own_files(settings: Settings) -> tuple[Path, ...]:
    """The dashboard's database and secrets: never a log source, whoever asks."""
    files = [settings.trusted_hosts_file, Path(".env")]
    if is_sqlite(settings.database_url):
        database = make_url(settings.database_url).database or ""
        if database.startswith("file:"):  # SQLite's URI filenames
            database = database[len("file:") :].split("?", 1)[0]
        if database and database != ":memory:":
            files += [Path(database + suffix) for suffix in ("", "-wal", "-shm", "-journal")]
    return tuple(files)


def ssh_options(settings: Settings) -> "SSHOptions":
    from app.tailing.ssh_pool import SSHOptions

    return SSHOptions(
        config_path=settings.ssh_config,
        known_hosts=(settings.ssh_known_hosts,),
        trusted_hosts_file=settings.trusted_hosts_file,
        use_agent=settings.ssh_agent,
    )


def log_source_refusal(settings: Settings, source: str | None) -> str | None:
    """Why a file:// source may not be set: no log to follow (a directory, a FIFO, a device,
    /proc or /sys: re-read forever or a blocked tail) or one of the dashboard's own files."""
    if not source:
        return None
    parsed = parse_source(source)
    return refusal(parsed.path, own_files(settings)) if parsed.scheme == "file" else None


def check_log_source(settings: Settings, source: str | None) -> None:
    """422 (the API's answer) when `log_source_refusal` has a reason."""
    reason = log_source_refusal(settings, source)
    if reason:
        raise Invalid(f"source: {reason}")


def trust_offered_key(settings: Settings, source_url: str, key_line: str) -> None:
    """The owner trusts the key a source's host offered (as `tail.host_key` holds it)."""
    from app.tailing.host_keys import trust_host_key
    from app.tailing.ssh_pool import resolve

    options = ssh_options(settings)
    target = resolve(parse_source(source_url), options)
    trust_host_key(options.trusted_hosts_file, target.known_hosts_name, key_line)


class LogSources:
    """Makes the sources of one app; ssh:// ones share this object's connection pool."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.protected = own_files(settings)
        self._pool: ConnectionPool | None = None
        self._lock = threading.Lock()
        self._closed = False

    def open(self, url: str) -> LogSource:
        """The source that follows `url` (the tailer's source factory)."""
        parsed = parse_source(url)
        if parsed.scheme == "file":
            return FileSource(parsed.path, self.protected)
        return self.ssh(parsed)

    def ssh(self, url: SourceURL) -> "SSHSource":
        from app.tailing.ssh_source import SSHSource

        return SSHSource(url, self.pool())

    def pool(self) -> "ConnectionPool":
        with self._lock:
            if self._closed:
                # A late caller must not open connections that nothing will close.
                raise RuntimeError("the dashboard is stopping: its SSH connections are closed")
            if self._pool is None:
                from app.tailing.ssh_pool import ConnectionPool

                self._pool = ConnectionPool(ssh_options(self.settings))
            return self._pool

    def close(self) -> None:
        """Close every SSH connection; call once the tails are stopped."""
        with self._lock:
            self._closed, pool = True, self._pool
        if pool is not None:
            pool.close_all()

    def __enter__(self) -> "LogSources":
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
