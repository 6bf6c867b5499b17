"""Attempts keep the environment their log says they ran on (app/environment.py).

Logs stored before are read once, their first 8 MiB (where start-up prints it).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03
"""

import zlib
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LOOK_BYTES = 8 << 20


def upgrade() -> None:
    with op.batch_alter_table("attempt") as batch:
        batch.add_column(sa.Column("environment", sa.JSON(), nullable=True))
    # The app's own reader: the stored value is what the ingest would store.
    from app.environment import EnvironmentReader

    connection = op.get_bind()
    attempt = sa.table("attempt", sa.column("id"), sa.column("environment", sa.JSON()))
    attempt_ids = connection.execute(sa.text("SELECT DISTINCT attempt_id FROM logchunk")).all()
    for (attempt_id,) in attempt_ids:
        reader = EnvironmentReader()
        for (data,) in connection.execute(
            sa.text(
                "SELECT data FROM logchunk WHERE attempt_id = :id AND stream_offset < :look"
                " ORDER BY stream_offset"
            ),
            {"id": attempt_id, "look": LOOK_BYTES},
        ):
            reader.feed(zlib.decompress(data))
        found = reader.environment.as_json()
        if found is not None:
            connection.execute(
                attempt.update().where(attempt.c.id == attempt_id).values(environment=found)
            )


def downgrade() -> None:
    with op.batch_alter_table("attempt") as batch:
        batch.drop_column("environment")
