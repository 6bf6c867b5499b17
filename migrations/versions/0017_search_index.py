"""Search from an index, not a scan (app/repo/search.py), with the same answers.

SQLite: an FTS5 trigram table per searched table (a substring of any case, as the scan's
LIKE), kept in sync by triggers; external content, so the text is stored once (the attempt's
through a view that takes the root cause out of the diagnosis JSON). PostgreSQL: pg_trgm GIN
indexes, which serve ILIKE itself: a row's searched fields joined, the title, a note's body.
On both, the scan's own LIKE still decides which rows match: the answers stay the same.
A later batch migration of campaign, attempt or note on SQLite drops these triggers with the
table: run this downgrade() before it and this upgrade() after.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ROOT_CAUSE = "json_extract({row}.diagnosis, '$.root_cause')"
# (index, content table or view, source table, {index column: expression of a row})
SQLITE_INDEXES = [
    ("campaign_search", "campaign", "campaign",
     {"name": "{row}.name", "description": "{row}.description"}),
    ("attempt_search", "attempt_search_source", "attempt",
     {"title": "{row}.title", "verdict": "{row}.verdict", "root_cause": ROOT_CAUSE,
      "hypothesis": "{row}.hypothesis", "flags": "{row}.flags", "command": "{row}.command"}),
    ("note_search", "note", "note", {"body": "{row}.body"}),
]  # fmt: skip
# (index, table, expression): app/repo/search.py's POSTGRESQL_SEARCH_TEXT to the letter, which
# the search ANDs to its ILIKEs; one index for a row's fields, as the OR of an index each
# was planned as a sequential scan (six bitmap scans cost more than the estimate of one read).
POSTGRESQL_INDEXES = [
    ("ix_campaign_search_trgm", "campaign",
     "(coalesce(name, '') || ' ' || coalesce(description, ''))"),
    ("ix_attempt_search_trgm", "attempt",
     "(coalesce(title, '') || ' ' || coalesce(verdict, '') || ' ' || "
     "coalesce(diagnosis ->> 'root_cause', '') || ' ' || coalesce(hypothesis, '') || ' ' || "
     "coalesce(flags, '') || ' ' || coalesce(command, ''))"),
    # The title's own: the best-ranked hits (a title holding q) are asked for first.
    ("ix_attempt_title_trgm", "attempt", "title"),
    ("ix_note_body_trgm", "note", "body"),
]  # fmt: skip


def _sqlite_upgrade() -> None:
    op.execute(
        "CREATE VIEW attempt_search_source AS SELECT id, "
        + ", ".join(f"{e.format(row='attempt')} AS {c}"
                    for c, e in SQLITE_INDEXES[1][3].items())
        + " FROM attempt"
    )  # fmt: skip
    for name, content, table, columns in SQLITE_INDEXES:
        names = ", ".join(columns)
        op.execute(
            f"CREATE VIRTUAL TABLE {name} USING fts5({names}, content='{content}', "
            "content_rowid='id', tokenize='trigram')"
        )

        def values(row: str, columns: dict[str, str] = columns) -> str:
            return ", ".join(e.format(row=row) for e in columns.values())

        insert = f"INSERT INTO {name}(rowid, {names}) VALUES (new.id, {values('new')});"
        # External content: the index forgets a row only given the values it indexed.
        delete = (
            f"INSERT INTO {name}({name}, rowid, {names}) "
            f"VALUES ('delete', old.id, {values('old')});"
        )
        op.execute(f"CREATE TRIGGER {name}_insert AFTER INSERT ON {table} BEGIN {insert} END")
        op.execute(f"CREATE TRIGGER {name}_delete AFTER DELETE ON {table} BEGIN {delete} END")
        # Only when a searched column is written: a status or an offset changes often.
        watched = ", ".join(["id", *("diagnosis" if c == "root_cause" else c for c in columns)])
        op.execute(
            f"CREATE TRIGGER {name}_update AFTER UPDATE OF {watched} ON {table} "
            f"BEGIN {delete} {insert} END"
        )
        op.execute(f"INSERT INTO {name}({name}) VALUES ('rebuild')")  # the rows already there


def _sqlite_downgrade() -> None:
    for name, _, _, _ in SQLITE_INDEXES:
        for event in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER IF EXISTS {name}_{event}")
        op.execute(f"DROP TABLE IF EXISTS {name}")
    op.execute("DROP VIEW IF EXISTS attempt_search_source")


def upgrade() -> None:
    # The best hit first, on both: a title that is q, any case (app/repo/search.py's rank 0).
    op.execute("CREATE INDEX ix_attempt_title_lower ON attempt (lower(title))")
    if op.get_context().dialect.name == "sqlite":
        _sqlite_upgrade()
        return
    # Trusted since PostgreSQL 13: a database owner may create it.
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, table, column in POSTGRESQL_INDEXES:
        op.execute(f"CREATE INDEX {name} ON {table} USING gin ({column} gin_trgm_ops)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_attempt_title_lower")
    if op.get_context().dialect.name == "sqlite":
        _sqlite_downgrade()
        return
    # The extension stays: it is the database's, and something else may have come to use it.
    for name, _, _ in POSTGRESQL_INDEXES:
        op.execute(f"DROP INDEX IF EXISTS {name}")
