"""Attempts keep the arguments their engine echoed in the log, parsed, for their flags.

Revises 0007 (the runner's run table, on main when this was rebased). Logs stored
before are looked through once, their first 4 MiB (where engines print the line).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

import zlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LOOK_BYTES = 4 << 20


def upgrade() -> None:
    with op.batch_alter_table("attempt") as batch:
        batch.add_column(sa.Column("logged_args", sa.JSON(), nullable=True))
    # The app's own finder and parser: the stored value is what the ingest would store.
    from app.flags import ArgsLineFinder, parse_logged_args

    connection = op.get_bind()
    attempt = sa.table("attempt", sa.column("id"), sa.column("logged_args", sa.JSON()))
    attempt_ids = connection.execute(sa.text("SELECT DISTINCT attempt_id FROM logchunk")).all()
    for (attempt_id,) in attempt_ids:
        finder = ArgsLineFinder()
        for (data,) in connection.execute(
            sa.text(
                "SELECT data FROM logchunk WHERE attempt_id = :id AND stream_offset < :look"
                " ORDER BY stream_offset"
            ),
            {"id": attempt_id, "look": LOOK_BYTES},
        ):
            finder.feed(zlib.decompress(data))
        logged = parse_logged_args(finder.line) if finder.line else None
        if logged is not None:
            connection.execute(
                attempt.update()
                .where(attempt.c.id == attempt_id)
                .values(logged_args=logged.to_json())
            )


def downgrade() -> None:
    with op.batch_alter_table("attempt") as batch:
        batch.drop_column("logged_args")
