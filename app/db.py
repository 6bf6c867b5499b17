"""Engine and sessions; SQLite tuned for one writer and many readers, PostgreSQL as is."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlmodel import Session

SQLITE_BUSY_TIMEOUT_MS = 10_000


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def is_postgres(url: str) -> bool:
    return make_url(url).get_backend_name() == "postgresql"


def libpq_dsn(url: str) -> str:
    """The SQLAlchemy URL as psycopg's own connection string."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def make_engine(url: str) -> Engine:
    if not is_sqlite(url):
        return create_engine(url, pool_pre_ping=True)
    engine = create_engine(
        url,
        # Requests run in a thread pool: a connection may move between threads.
        connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
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

    return engine


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """One unit of work: committed on success, rolled back on any error."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
