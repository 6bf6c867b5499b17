"""Engine and sessions; SQLite tuned for one writer and many readers, PostgreSQL as is."""

import errno
import fcntl
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlmodel import Session

from app.errors import STORAGE_FULL, StorageFull

SQLITE_BUSY_TIMEOUT_MS = 10_000
STARTUP_LOCK_KEY = 0x63640002  # advisory lock: one dashboard at a time prepares the database
# What one dashboard at a time does among those on one database, per row id: a log followed.
TAIL_LOCK_SPACE = 0x63640001
_LOCK_SPACES = (TAIL_LOCK_SPACE,)


SQLITE_FULL = 13  # "database or disk is full" (the primary result code)
PG_DISK_FULL = "53100"  # SQLSTATE disk_full


def is_disk_full(error: BaseException) -> bool:
    """Whether the database refused a write for want of disk space: SQLite's SQLITE_FULL or
    PostgreSQL's disk_full, as the driver raised it or as SQLAlchemy wrapped it."""
    cause = getattr(error, "orig", None) or error
    code = getattr(cause, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF == SQLITE_FULL:
        return True
    return getattr(cause, "sqlstate", None) == PG_DISK_FULL


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def is_postgres(url: str) -> bool:
    return make_url(url).get_backend_name() == "postgresql"


def libpq_dsn(url: str) -> str:
    """The SQLAlchemy URL as psycopg's own connection string."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@contextmanager
def startup_lock(url: str) -> Iterator[None]:
    """Dashboards starting at once on one database migrate it and create its secrets one
    at a time: concurrent Alembic runs both create the tables, and two generated owner
    tokens would collide."""
    if is_sqlite(url):
        with _sqlite_file_lock(make_url(url).database):
            yield
        return
    if not is_postgres(url):
        yield
        return
    import psycopg

    try:
        connection = psycopg.connect(libpq_dsn(url), autocommit=True)
    except psycopg.OperationalError as error:
        raise ConnectionError(str(error).strip()) from error
    with connection:
        connection.execute("SELECT pg_advisory_lock(%s)", (STARTUP_LOCK_KEY,))
        yield  # the lock ends with the connection


@contextmanager
def _sqlite_file_lock(path: str | None) -> Iterator[None]:
    if not path or path == ":memory:" or path.startswith("file:"):
        yield
        return
    # A file of its own, never the database: closing any descriptor of the database file
    # would drop every POSIX lock this process holds on it, SQLite's own included, and a
    # second process could then delete the live -wal and -shm files (SQLite's "How To
    # Corrupt An SQLite Database File", 2.2).
    descriptor = os.open(sqlite_lock_path(path), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def sqlite_lock_path(database_path: str) -> str:
    return database_path + ".lock"


class Held(Protocol):
    def close(self) -> None: ...


class _Unshared:
    """A database no other process can open (in memory): nothing to hold."""

    def close(self) -> None:
        return None


class _ByteLock:
    def __init__(self, descriptor: int) -> None:
        self.descriptor = descriptor

    def close(self) -> None:
        os.close(self.descriptor)  # the lock ends with its open file description


def try_exclusive(url: str, space: int, key: int) -> Held | None:
    """This process's hold on `key` of `space`, or None while another dashboard on the
    database holds it. Either ends when closed or when the process dies, so another
    dashboard takes over."""
    if is_postgres(url):
        import psycopg

        connection = psycopg.connect(libpq_dsn(url), autocommit=True)
        row = connection.execute("SELECT pg_try_advisory_lock(%s, %s)", (space, key)).fetchone()
        if row and row[0]:
            return connection  # a session lock: held while the connection is open
        connection.close()
        return None
    path = make_url(url).database if is_sqlite(url) else None
    if not path or path == ":memory:" or path.startswith("file:"):
        return _Unshared()
    # One byte of the lock file per key, locked as an open file description's (Linux's
    # OFD locks): a classic POSIX lock would be dropped when the startup lock closes its
    # descriptor of the same file.
    descriptor = os.open(sqlite_lock_path(path), os.O_RDWR | os.O_CREAT, 0o600)
    offset = key * len(_LOCK_SPACES) + _LOCK_SPACES.index(space)
    request = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
    try:
        fcntl.fcntl(descriptor, fcntl.F_OFD_SETLK, request)
    except OSError as error:
        os.close(descriptor)
        if error.errno in (errno.EAGAIN, errno.EACCES):
            return None
        raise
    return _ByteLock(descriptor)


# Requests do their database work in anyio's worker threads (this many, set by the app's
# lifespan: anyio's default) and each holds at most one connection, taken at its first query.
REQUEST_THREADS = 40
# On top of them: one per followed log (its commits) and the live streams' reads.
POOL_OVERFLOW = 40
POOL_TIMEOUT_S = 30.0


def make_engine(url: str) -> Engine:
    pool = {
        "pool_size": REQUEST_THREADS,
        "max_overflow": POOL_OVERFLOW,
        "pool_timeout": POOL_TIMEOUT_S,
        # The connection used last: a burst's extra connections go idle, and the page
        # cache of the one in use stays warm (FIFO would visit, and fill, every one).
        "pool_use_lifo": True,
    }
    if not is_sqlite(url):
        return create_engine(url, pool_pre_ping=True, **pool)
    engine = create_engine(
        url,
        # Requests run in a thread pool: a connection may move between threads.
        connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
        **pool,
    )

    @event.listens_for(engine, "connect")
    def _tune_sqlite(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        # WAL lets pages read while the tailer writes; NORMAL is durable across
        # application crashes, which is what the stored offsets rely on.
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin_snapshot(connection: Connection) -> None:
        # pysqlite opens transactions only for writes; in WAL mode a BEGIN makes every
        # read that follows share the first one's snapshot.
        if connection.get_execution_options().get(_SQLITE_SNAPSHOT):
            connection.exec_driver_sql("BEGIN")

    return engine


_SQLITE_SNAPSHOT = "campaign_dash_snapshot"


def _snapshot_engine(engine: Engine) -> Engine:
    if engine.dialect.name == "postgresql":
        return engine.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
    if engine.dialect.name == "sqlite":
        return engine.execution_options(**{_SQLITE_SNAPSHOT: True})
    return engine


@contextmanager
def session_scope(engine: Engine, *, snapshot: bool = False) -> Iterator[Session]:
    """One unit of work: committed on success, rolled back on any error. Its connection is
    taken at the first query, so a request waiting for a worker thread holds none.

    `snapshot`: a read-only unit whose queries all see one moment. Without it a page built
    from several queries could show a tail already past the crash beside a diagnosis from
    before it (PostgreSQL's READ COMMITTED and pysqlite's autocommit SELECTs both take a
    new snapshot per statement).

    A write refused for want of disk space, by either database, is raised as StorageFull:
    one error for the web layer (507) and the tailer (pause and retry) to know."""
    bind = _snapshot_engine(engine) if snapshot else engine
    with Session(bind, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException as error:
            session.rollback()
            if is_disk_full(error):
                raise StorageFull(STORAGE_FULL) from error
            raise
