"""Alerts: a campaign's chosen events, its webhooks and their deliveries (an outbox).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("campaign", sa.Column("notify_events", sa.JSON(), nullable=True))
    op.create_table(
        "webhook",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("campaign_id", sa.Integer(),
                  sa.ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_ok_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.String(length=500), nullable=True),
        sa.Column("last_error_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("dead", sa.Integer(), nullable=False),
    )  # fmt: skip
    op.create_index("ix_webhook_campaign_id", "webhook", ["campaign_id"])
    op.create_table(
        "delivery",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("webhook_id", sa.Integer(),
                  sa.ForeignKey("webhook.id", ondelete="CASCADE"), nullable=False),
        sa.Column("attempt_id", sa.Integer(),
                  sa.ForeignKey("attempt.id", ondelete="CASCADE"), nullable=False),
        sa.Column("event", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.String(length=20), nullable=True),
        sa.UniqueConstraint("webhook_id", "attempt_id", "event"),
    )  # fmt: skip
    op.create_index("ix_delivery_due_at", "delivery", ["due_at"])


def downgrade() -> None:
    op.drop_index("ix_delivery_due_at", table_name="delivery")
    op.drop_table("delivery")
    op.drop_index("ix_webhook_campaign_id", table_name="webhook")
    op.drop_table("webhook")
    with op.batch_alter_table("campaign") as batch:
        batch.drop_column("notify_events")
