"""Migrations: head matches the models, and data from the previous revision survives."""

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlmodel import SQLModel

import app.models  # noqa: F401
from app import migrate
from app.db import make_engine


def test_upgrade_head_on_a_fresh_database_matches_the_models(database_url: str) -> None:
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    with engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), SQLModel.metadata)
    engine.dispose()
    assert diff == []


def test_upgrade_is_idempotent(database_url: str) -> None:
    migrate.upgrade(database_url)
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    with engine.connect() as connection:
        version = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    engine.dispose()
    head = ScriptDirectory.from_config(migrate.alembic_config(database_url)).get_current_head()
    assert version == head


def test_data_from_0001_survives_the_upgrade_to_head(database_url: str) -> None:
    migrate.upgrade(database_url, "0001")
    engine = make_engine(database_url)
    now = "2026-02-27 13:21:27"
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO campaign (id, name, metric, higher_is_better, baseline, target,"
                " description, created_at) VALUES (1, 'EAGLE-3', 'tok/s', true, 82, 120, '', :now)"
            ),
            {"now": now},
        )
        for attempt_id, title, status, metric in (
            (1, "EAGLE-3 speculative decoding", "measured", 54.0),
            (2, "Torch symmetric memory", "crashed", None),
        ):
            connection.execute(
                text(
                    "INSERT INTO attempt (id, campaign_id, title, hypothesis, command, flags,"
                    " status, metric_value, created_at, updated_at)"
                    " VALUES (:id, 1, :title, '', '', '', :status, :metric, :now, :now)"
                ),
                {"id": attempt_id, "title": title, "status": status, "metric": metric, "now": now},
            )
        connection.execute(
            text(
                "INSERT INTO note (campaign_id, attempt_id, body, created_at, updated_at)"
                " VALUES (1, 2, 'KeyError: 12', :now, :now)"
            ),
            {"now": now},
        )
    engine.dispose()

    migrate.upgrade(database_url)

    engine = make_engine(database_url)
    with engine.connect() as connection:
        measurements = connection.execute(
            text("SELECT attempt_id, value FROM measurement ORDER BY attempt_id")
        ).all()
        baselines = connection.execute(text("SELECT campaign_id, value FROM baselinechange")).all()
        attempts = connection.execute(
            text("SELECT id, title, status FROM attempt ORDER BY id")
        ).all()
        notes = connection.execute(text("SELECT body FROM note")).all()
        noise = connection.execute(text("SELECT noise_pct FROM campaign")).scalar()
    engine.dispose()
    assert [tuple(m) for m in measurements] == [(1, 54.0)]
    assert [tuple(b) for b in baselines] == [(1, 82.0)]
    assert [tuple(a) for a in attempts] == [
        (1, "EAGLE-3 speculative decoding", "measured"),
        (2, "Torch symmetric memory", "crashed"),
    ]
    assert [n[0] for n in notes] == ["KeyError: 12"]
    assert noise == 1.0
