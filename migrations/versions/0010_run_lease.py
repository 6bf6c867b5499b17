"""Runs carry a lease: the dashboard driving each one and until when (app/runner/lease.py).
Runs left unfinished before it have none: the first dashboard to look claims them.

Revises 0009 (the campaign's bench_pattern, on main when this was rebased).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("run") as batch:
        batch.add_column(sa.Column("lease_owner", sa.String(length=200), nullable=True))
        batch.add_column(sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("run") as batch:
        batch.drop_column("lease_expires_at")
        batch.drop_column("lease_owner")
