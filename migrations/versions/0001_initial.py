"""Campaigns, attempts, notes, share links, tail state.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "campaign",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("metric", sa.String(length=40), nullable=False),
        sa.Column("higher_is_better", sa.Boolean(), nullable=False),
        sa.Column("baseline", sa.Float(), nullable=True),
        sa.Column("target", sa.Float(), nullable=True),
        sa.Column("description", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_campaign"),
    )
    op.create_table(
        "attempt",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("hypothesis", sa.String(), nullable=False),
        sa.Column("command", sa.String(), nullable=False),
        sa.Column("flags", sa.String(), nullable=False),
        sa.Column("source", sa.String(length=2000), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("verdict", sa.String(), nullable=True),
        sa.Column("metric_value", sa.Float(), nullable=True),
        sa.Column("retest_of", sa.Integer(), nullable=True),
        sa.Column("blocked_by", sa.Integer(), nullable=True),
        sa.Column("diagnosis", sa.JSON(), nullable=True),
        sa.Column("fingerprint", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaign.id"],
            name="fk_attempt_campaign_id_campaign",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["retest_of"],
            ["attempt.id"],
            name="fk_attempt_retest_of_attempt",
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["blocked_by"],
            ["attempt.id"],
            name="fk_attempt_blocked_by_attempt",
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_attempt"),
    )
    op.create_index("ix_attempt_campaign_id", "attempt", ["campaign_id"])
    op.create_index("ix_attempt_fingerprint", "attempt", ["fingerprint"])
    op.create_table(
        "note",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=True),
        sa.Column("body", sa.String(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaign.id"],
            name="fk_note_campaign_id_campaign",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["attempt_id"],
            ["attempt.id"],
            name="fk_note_attempt_id_attempt",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_note"),
    )
    op.create_index("ix_note_campaign_id", "note", ["campaign_id"])
    op.create_index("ix_note_attempt_id", "note", ["attempt_id"])
    op.create_table(
        "sharelink",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("redact", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_opened_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaign.id"],
            name="fk_sharelink_campaign_id_campaign",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_sharelink"),
        sa.UniqueConstraint("token_hash", name="uq_sharelink_token_hash"),
    )
    op.create_index("ix_sharelink_campaign_id", "sharelink", ["campaign_id"])
    op.create_table(
        "tailstate",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("source", sa.String(length=2000), nullable=False),
        sa.Column("offset", sa.BigInteger(), nullable=False),
        sa.Column("file_identity", sa.String(length=100), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=True),
        sa.Column("state", sa.String(length=40), nullable=False),
        sa.Column("last_error", sa.String(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["attempt_id"],
            ["attempt.id"],
            name="fk_tailstate_attempt_id_attempt",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_tailstate"),
        sa.UniqueConstraint("attempt_id", name="uq_tailstate_attempt_id"),
    )
    op.create_table(
        "sitesecret",
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("value", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_sitesecret"),
    )


def downgrade() -> None:
    for table in ("sitesecret", "tailstate", "sharelink", "note", "attempt", "campaign"):
        op.drop_table(table)
