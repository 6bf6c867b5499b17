"""Repeated measurements per attempt, the baseline history, and a noise band.

An attempt's single `metric_value` becomes its first measurement; a campaign's
baseline becomes the first entry of its history.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "measurement",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["attempt_id"],
            ["attempt.id"],
            name="fk_measurement_attempt_id_attempt",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_measurement"),
    )
    op.create_index("ix_measurement_attempt_id", "measurement", ["attempt_id"])
    op.create_table(
        "baselinechange",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("campaign_id", sa.Integer(), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=True),
        sa.Column("set_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["campaign_id"],
            ["campaign.id"],
            name="fk_baselinechange_campaign_id_campaign",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["attempt_id"],
            ["attempt.id"],
            name="fk_baselinechange_attempt_id_attempt",
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_baselinechange"),
    )
    op.create_index("ix_baselinechange_campaign_id", "baselinechange", ["campaign_id"])

    op.execute(
        "INSERT INTO measurement (attempt_id, value, created_at) "
        "SELECT id, metric_value, updated_at FROM attempt WHERE metric_value IS NOT NULL"
    )
    op.execute(
        "INSERT INTO baselinechange (campaign_id, value, set_at) "
        "SELECT id, baseline, created_at FROM campaign WHERE baseline IS NOT NULL"
    )
    with op.batch_alter_table("attempt") as batch:
        batch.drop_column("metric_value")
    with op.batch_alter_table("campaign") as batch:
        batch.add_column(sa.Column("noise_pct", sa.Float(), nullable=False, server_default="1.0"))


def downgrade() -> None:
    with op.batch_alter_table("campaign") as batch:
        batch.drop_column("noise_pct")
    with op.batch_alter_table("attempt") as batch:
        batch.add_column(sa.Column("metric_value", sa.Float(), nullable=True))
    op.execute(
        "UPDATE attempt SET metric_value = "
        "(SELECT avg(value) FROM measurement WHERE measurement.attempt_id = attempt.id)"
    )
    op.drop_table("baselinechange")
    op.drop_table("measurement")
