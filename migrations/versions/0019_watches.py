"""Watched log folders: a campaign's watches and the files each has seen.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "watch",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("campaign_id", sa.Integer(),
                  sa.ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False),
        sa.Column("source", sa.String(length=2000), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("listed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.String(length=500), nullable=True),
    )  # fmt: skip
    op.create_index("ix_watch_campaign_id", "watch", ["campaign_id"])
    op.create_table(
        "watchedfile",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("watch_id", sa.Integer(),
                  sa.ForeignKey("watch.id", ondelete="CASCADE"), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempt_id", sa.Integer(),
                  sa.ForeignKey("attempt.id", ondelete="SET NULL"), nullable=True),
        sa.Column("offered", sa.Boolean(), nullable=False),
        sa.UniqueConstraint("watch_id", "name"),
    )  # fmt: skip


def downgrade() -> None:
    op.drop_table("watchedfile")
    op.drop_index("ix_watch_campaign_id", table_name="watch")
    op.drop_table("watch")
