"""Stored log chunks, tail events, log-read measurements, per-campaign log settings.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "logchunk",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("stream_offset", sa.BigInteger(), nullable=False),
        sa.Column("length", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["attempt_id"], ["attempt.id"],
            name="fk_logchunk_attempt_id_attempt", ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_logchunk"),
    )  # fmt: skip
    op.create_index("ix_logchunk_attempt_id", "logchunk", ["attempt_id"])
    op.create_table(
        "tailevent",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("detail", sa.String(), nullable=False),
        sa.Column("stream_offset", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["attempt_id"], ["attempt.id"],
            name="fk_tailevent_attempt_id_attempt", ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_tailevent"),
    )  # fmt: skip
    op.create_index("ix_tailevent_attempt_id", "tailevent", ["attempt_id"])
    with op.batch_alter_table("tailstate") as batch:
        batch.add_column(
            sa.Column("stored_bytes", sa.BigInteger(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("host_key", sa.String(length=4000), nullable=True))
    with op.batch_alter_table("measurement") as batch:
        batch.add_column(sa.Column("log_offset", sa.BigInteger(), nullable=True))
    with op.batch_alter_table("campaign") as batch:
        batch.add_column(
            sa.Column(
                "metric_label", sa.String(length=100), nullable=False,
                server_default="Output token throughput",
            )
        )  # fmt: skip
        batch.add_column(sa.Column("ready_pattern", sa.String(length=500), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("campaign") as batch:
        batch.drop_column("ready_pattern")
        batch.drop_column("metric_label")
    with op.batch_alter_table("measurement") as batch:
        batch.drop_column("log_offset")
    with op.batch_alter_table("tailstate") as batch:
        batch.drop_column("host_key")
        batch.drop_column("stored_bytes")
    op.drop_table("tailevent")
    op.drop_table("logchunk")
