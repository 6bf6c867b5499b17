"""An attempt may re-measure another (`joins`): its runs join that one's sample.

A plain column, no foreign key: adding one would rebuild SQLite's attempt table, and ids are
never reused (0012), so an id left behind by a delete names no other attempt.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("attempt", sa.Column("joins", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempt") as batch:
        batch.drop_column("joins")
