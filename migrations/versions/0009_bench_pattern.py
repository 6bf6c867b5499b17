"""A campaign's own pattern for a launched benchmark's figure.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("campaign") as batch:
        batch.add_column(sa.Column("bench_pattern", sa.String(length=500), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("campaign") as batch:
        batch.drop_column("bench_pattern")
