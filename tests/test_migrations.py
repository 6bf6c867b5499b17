"""Migrations: head matches the models, and data from the previous revision survives."""

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlmodel import SQLModel

import app.models  # noqa: F401
from app import migrate
from app.db import make_engine

pytestmark = pytest.mark.both_databases


@pytest.fixture
def database_url(empty_database_url: str) -> str:
    """Here each test migrates a database nothing has touched, itself."""
    return empty_database_url


def test_upgrade_head_on_a_fresh_database_matches_the_models(database_url: str) -> None:
    migrate.upgrade(database_url)
    engine = make_engine(database_url)
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"include_object": migrate.declared_by_models}
        )
        diff = compare_metadata(context, SQLModel.metadata)
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


def test_0008_finds_the_args_line_of_logs_stored_before(database_url: str) -> None:
    import json
    import zlib

    from app import demo_logs
    from app.flags import parse_logged_args

    migrate.upgrade(database_url, "0007")
    engine = make_engine(database_url)
    line = "[2026-02-27 13:21:27] " + demo_logs.server_args({"enable_torch_symm_mem": True})
    log = f"boot\n{line}\nready\n".encode()
    now = "2026-02-27 13:21:27"
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO campaign (id, name, metric, higher_is_better, description, noise_pct,"
                " metric_label, created_at) VALUES (1, 'c', 'tok/s', true, '', 1, 'x', :now)"
            ),
            {"now": now},
        )
        for attempt_id in (1, 2):
            connection.execute(
                text(
                    "INSERT INTO attempt (id, campaign_id, title, hypothesis, command, flags,"
                    " status, created_at, updated_at)"
                    " VALUES (:id, 1, 't', '', '', '', 'ready', :now, :now)"
                ),
                {"id": attempt_id, "now": now},
            )
        # Attempt 1's line spans two stored chunks; attempt 2's log has none.
        cut = 100
        for attempt_id, offset, piece in ((1, 0, log[:cut]), (1, cut, log[cut:]), (2, 0, b"x\n")):
            connection.execute(
                text(
                    "INSERT INTO logchunk (attempt_id, stream_offset, length, data)"
                    " VALUES (:a, :o, :n, :d)"
                ),
                {"a": attempt_id, "o": offset, "n": len(piece), "d": zlib.compress(piece)},
            )
    engine.dispose()

    migrate.upgrade(database_url)

    engine = make_engine(database_url)
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT id, logged_args FROM attempt ORDER BY id")).all()
    engine.dispose()
    stored = [(r[0], json.loads(r[1]) if isinstance(r[1], str) else r[1]) for r in rows]
    parsed = parse_logged_args(line)
    assert parsed is not None and parsed.flags["enable_torch_symm_mem"] is True
    assert stored == [(1, parsed.to_json()), (2, None)]


def test_0010_leaves_runs_unfinished_before_it_for_the_first_dashboard_to_claim(
    database_url: str,
) -> None:
    from app.runner.lease import instance_id
    from app.runner.records import Records

    migrate.upgrade(database_url, "0009")
    engine = make_engine(database_url)
    now = "2026-12-01 13:21:27"
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO campaign (id, name, metric, higher_is_better, description, noise_pct,"
                " metric_label, created_at) VALUES (1, 'c', 'tok/s', true, '', 1, 'x', :now)"
            ),
            {"now": now},
        )
        connection.execute(
            text(
                "INSERT INTO attempt (id, campaign_id, title, hypothesis, command, flags,"
                " status, created_at, updated_at)"
                " VALUES (1, 1, 't', '', '', '', 'running', :now, :now)"
            ),
            {"now": now},
        )
        for run_id, state in ((1, "benchmarking"), (2, "done")):
            connection.execute(
                text(
                    "INSERT INTO run (id, attempt_id, host, command, repeat, warmup,"
                    " ready_timeout_s, grace_s, keep, state, run_key, bench_done,"
                    " stop_requested, created_at, updated_at) VALUES (:id, 1, 'gpu-box',"
                    " 'python -m sglang.launch_server', 3, 1, 1200, 30, false, :state, :key,"
                    " 2, false, :now, :now)"
                ),
                {"id": run_id, "state": state, "key": f"1-{run_id}", "now": now},
            )
    engine.dispose()

    migrate.upgrade(database_url)

    engine = make_engine(database_url)
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT id, state, bench_done, lease_owner, lease_expires_at FROM run ORDER BY id")
        ).all()
    assert [tuple(r) for r in rows] == [
        (1, "benchmarking", 2, None, None),
        (2, "done", 2, None, None),
    ]
    records = Records(engine, instance_id())
    assert records.claim(1) is True and records.claim(2) is False  # the ended one: nothing to drive
    engine.dispose()


def test_0012_hands_out_no_id_again_after_the_upgrade(database_url: str) -> None:
    migrate.upgrade(database_url, "0011")
    engine = make_engine(database_url)
    now = "2026-12-01 13:21:27"

    def insert(connection: Any, table: str, **row: Any) -> int:
        """A row as the app adds it (the database picks its id); that id."""
        columns = ", ".join(row)
        values = ", ".join(f":{name}" for name in row)
        connection.execute(text(f"INSERT INTO {table} ({columns}) VALUES ({values})"), row)
        return int(connection.execute(text(f"SELECT max(id) FROM {table}")).scalar_one())

    def campaign(connection: Any, name: str) -> int:
        return insert(
            connection, "campaign", name=name, metric="tok/s", higher_is_better=True,
            description="", noise_pct=1.0, metric_label="x", created_at=now,
        )  # fmt: skip

    def attempt(connection: Any, campaign_id: int, title: str) -> int:
        return insert(
            connection, "attempt", campaign_id=campaign_id, title=title, hypothesis="",
            command="", flags="", status="proposed", created_at=now, updated_at=now,
        )  # fmt: skip

    def note(connection: Any, campaign_id: int, attempt_id: int, body: str) -> int:
        return insert(
            connection, "note", campaign_id=campaign_id, attempt_id=attempt_id, body=body,
            created_at=now, updated_at=now,
        )  # fmt: skip

    def event(connection: Any, campaign_id: int, **ids: int) -> int:
        return insert(
            connection, "event", campaign_id=campaign_id, kind="attempt", created_at=now, **ids
        )

    with engine.begin() as connection:
        kept = campaign(connection, "EAGLE-3")
        first = attempt(connection, kept, "EAGLE-3 speculative decoding")
        second = attempt(connection, kept, "Torch symmetric memory")
        kept_note = note(connection, kept, first, "see #2")
        newest = attempt(connection, kept, "NCCL Tree")
        newest_note = note(connection, kept, first, "doomed")
        # Deleted as the app deletes: the row goes, its last event names it.
        connection.execute(text("DELETE FROM attempt WHERE id = :id"), {"id": newest})
        event(connection, kept, attempt_id=newest)
        connection.execute(text("DELETE FROM note WHERE id = :id"), {"id": newest_note})
        last_event = event(connection, kept, note_id=newest_note)
    engine.dispose()

    migrate.upgrade(database_url)

    engine = make_engine(database_url)
    with engine.begin() as connection:
        rows = connection.execute(text("SELECT id, campaign_id, title FROM attempt ORDER BY id"))
        assert [tuple(r) for r in rows] == [
            (first, kept, "EAGLE-3 speculative decoding"),
            (second, kept, "Torch symmetric memory"),
        ]
        notes = connection.execute(text("SELECT id, attempt_id, body FROM note")).all()
        assert [tuple(n) for n in notes] == [(kept_note, first, "see #2")]
        # What was deleted before the upgrade stays spent.
        assert attempt(connection, kept, "again") > newest
        assert note(connection, kept, first, "again") > newest_note
        assert event(connection, kept, attempt_id=first) > last_event
        # And what is deleted after it: the newest of each, then a new one.
        doomed = campaign(connection, "doomed")
        doomed_attempt = attempt(connection, kept, "doomed")
        connection.execute(text("DELETE FROM attempt WHERE id = :id"), {"id": doomed_attempt})
        connection.execute(text("DELETE FROM campaign WHERE id = :id"), {"id": doomed})
        assert campaign(connection, "again") > doomed
        assert attempt(connection, kept, "again") > doomed_attempt
    engine.dispose()
