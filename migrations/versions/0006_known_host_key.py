"""Tail states keep the host key on record beside a changed one, for the owner to compare.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("tailstate") as batch:
        batch.add_column(sa.Column("known_host_key", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tailstate") as batch:
        batch.drop_column("known_host_key")
