"""Runs: an attempt launched on its host by the runner, followed to its end.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=300), nullable=False),
        sa.Column("command", sa.String(), nullable=False),
        sa.Column("bench", sa.String(), nullable=True),
        sa.Column("repeat", sa.Integer(), nullable=False),
        sa.Column("warmup", sa.Integer(), nullable=False),
        sa.Column("ready_timeout_s", sa.Float(), nullable=False),
        sa.Column("grace_s", sa.Float(), nullable=False),
        sa.Column("keep", sa.Boolean(), nullable=False),
        sa.Column("health_url", sa.String(length=500), nullable=True),
        sa.Column("port", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("outcome", sa.String(length=40), nullable=True),
        sa.Column("reason", sa.String(), nullable=True),
        sa.Column("run_key", sa.String(length=64), nullable=False),
        sa.Column("run_dir", sa.String(length=1000), nullable=True),
        sa.Column("log_path", sa.String(length=1000), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("pgid", sa.Integer(), nullable=True),
        sa.Column("boot_id", sa.String(length=64), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("bench_done", sa.Integer(), nullable=False),
        sa.Column("bench_runs", sa.JSON(), nullable=True),
        sa.Column("preflight", sa.JSON(), nullable=True),
        sa.Column("stop_report", sa.JSON(), nullable=True),
        sa.Column("stop_requested", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("launched_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ready_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["attempt_id"], ["attempt.id"],
            name="fk_run_attempt_id_attempt", ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_run"),
    )  # fmt: skip
    op.create_index("ix_run_attempt_id", "run", ["attempt_id"])


def downgrade() -> None:
    op.drop_table("run")
