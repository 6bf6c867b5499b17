"""Sessions: what a page reads in several queries is one moment of the database."""

import threading

import pytest
from sqlalchemy.exc import DBAPIError
from sqlmodel import select

from app import migrate, repo
from app.db import make_engine, session_scope
from app.models import Campaign

pytestmark = pytest.mark.both_databases


def _rename(database_url: str, name: str) -> None:
    engine = make_engine(database_url)
    with session_scope(engine) as session:
        campaign = session.exec(select(Campaign)).one()
        campaign.name = name
        session.add(campaign)
    engine.dispose()


def test_a_snapshot_session_does_not_see_a_commit_made_between_its_queries(
    database_url: str,
) -> None:
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    with session_scope(engine) as session:
        session.add(Campaign(name="before", metric="tok/s", baseline=82.0))
    with session_scope(engine, snapshot=True) as reader:
        first = reader.exec(select(Campaign.name)).one()
        _rename(database_url, "after")  # an ingest commit lands between two queries
        second = reader.exec(select(Campaign.name)).one()
    with session_scope(engine) as session:
        now = session.exec(select(Campaign.name)).one()
    engine.dispose()
    assert (first, second, now) == ("before", "before", "after")


def test_a_plain_session_sees_each_commit_as_it_lands(database_url: str) -> None:
    """The reference for the test above: without a snapshot, the skew is real."""
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    with session_scope(engine) as session:
        session.add(Campaign(name="before", metric="tok/s", baseline=82.0))
    with session_scope(engine) as reader:
        first = reader.exec(select(Campaign.name)).one()
        _rename(database_url, "after")
        second = reader.exec(select(Campaign.name)).one()
    engine.dispose()
    assert (first, second) == ("before", "after")


def test_a_snapshot_session_refuses_writes_on_postgresql(database_url: str) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite has no read-only transactions")
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    with (
        pytest.raises(DBAPIError, match="read-only transaction"),
        session_scope(engine, snapshot=True) as session,
    ):
        session.add(Campaign(name="x", metric="tok/s", baseline=1.0))
    engine.dispose()


def test_two_writers_of_one_new_secret_both_succeed_and_the_last_one_wins(
    database_url: str,
) -> None:
    # Two dashboards starting at once on a new database each recorded where they serve:
    # both read "no such secret", both inserted, and the second failed on the name.
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    second_done = threading.Event()
    with session_scope(engine) as first:
        repo.set_secret(first, name="served_at", value="http://127.0.0.1:1")

        def second_writer() -> None:
            with session_scope(engine) as second:
                repo.set_secret(second, name="served_at", value="http://127.0.0.1:2")
            second_done.set()

        writer = threading.Thread(target=second_writer)
        writer.start()
        # The second waits on the first's write lock, or (before) had only queued its insert.
        assert not second_done.wait(0.2)
    writer.join(timeout=30)
    with session_scope(engine) as session:
        stored = repo.get_secret(session, name="served_at")
    engine.dispose()
    assert second_done.is_set() and stored == "http://127.0.0.1:2"
