"""Ids are never reused: on SQLite the tables whose ids people see or clients keep (campaigns,
attempts, notes, share links, runs, live events) become AUTOINCREMENT, so deleting the newest
row no longer hands its id to the next one. PostgreSQL's sequences never did: nothing to do.

SQLite kept no record of ids it handed out before: each table's counter starts at the
highest id it still holds, or one the live events still name (a deleted attempt's or note's
last event), whichever is higher. A campaign deleted before this migration, with everything
of it, left no trace: its id, had it been the highest, can come back once.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Each table and the highest id it ever handed out that the database still shows.
HIGHEST_SEEN = {
    "campaign": "SELECT max(id) FROM campaign",
    "attempt": "SELECT max(coalesce((SELECT max(id) FROM attempt), 0),"
    " coalesce((SELECT max(attempt_id) FROM event), 0))",
    "note": "SELECT max(coalesce((SELECT max(id) FROM note), 0),"
    " coalesce((SELECT max(note_id) FROM event), 0))",
    "sharelink": "SELECT max(id) FROM sharelink",
    "run": "SELECT max(id) FROM run",
    "event": "SELECT max(id) FROM event",
}


def _recreate(autoincrement: bool) -> None:
    for table in HIGHEST_SEEN:
        # A copy of the table with the same columns, indexes and constraints, rows and ids.
        with op.batch_alter_table(
            table, recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
        ):
            pass


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    _recreate(True)
    for table, query in HIGHEST_SEEN.items():
        highest = bind.execute(sa.text(query)).scalar() or 0
        # The copy's rows set the counter to their highest id; an id only the events name
        # may be higher, and an empty table has no counter yet.
        bind.execute(sa.text("DELETE FROM sqlite_sequence WHERE name = :t"), {"t": table})
        if highest:
            bind.execute(
                sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES (:t, :n)"),
                {"t": table, "n": highest},
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _recreate(False)
