"""Sessions: what a page reads in several queries is one moment of the database."""

import pytest
from sqlalchemy.exc import DBAPIError
from sqlmodel import select

from app import migrate
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
