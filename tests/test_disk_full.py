"""The database's disk fills up: writes are refused with 507."""

import pytest
from sqlalchemy import text

from app.db import make_engine, session_scope
from app.errors import StorageFull

# What PostgreSQL raises when a relation cannot grow: the same SQLSTATE, raised on purpose.
PG_DISK_FULL = (
    "DO $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' "
    "USING ERRCODE = 'disk_full'; END $$"
)


@pytest.mark.both_databases
def test_either_database_out_of_space_is_one_domain_error(database_url: str) -> None:
    """SQLite's SQLITE_FULL and PostgreSQL's disk_full (SQLSTATE 53100), each raised by the
    database itself, come out of a unit of work as StorageFull (507, or a paused tail)."""
    engine = make_engine(database_url)
    try:
        with pytest.raises(StorageFull, match="disk is full"), session_scope(engine) as session:
            if engine.dialect.name == "sqlite":
                # No room past the pages the file has now: what a full disk does to SQLite.
                pages = session.execute(text("PRAGMA page_count")).scalar_one()
                session.execute(text(f"PRAGMA max_page_count = {pages}"))
                session.execute(text("CREATE TABLE filler (data BLOB)"))
                session.execute(text("INSERT INTO filler VALUES (zeroblob(1 << 20))"))
            else:
                session.execute(text(PG_DISK_FULL))
    finally:
        engine.dispose()
