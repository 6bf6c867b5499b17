"""The campaign page's card stamps from indexes: each attempt's columns they read
(app/repo/cards.py), and each measurement's id and value beside its attempt. On SQLite the
attempt row holds its diagnosis before `fingerprint` and `updated_at`, on overflow pages read
for every attempt of a page: 4.9 ms of stamps for 1,000 attempts, 3.4 ms with these. On
PostgreSQL an attempt's newest figure was found by walking the primary key backwards: 86 ms,
9 ms with these. Each replaces the single-column index it starts with.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

CARD_COLUMNS = ["campaign_id", "id", "status", "title", "fingerprint", "retest_of",
                "blocked_by", "updated_at"]  # fmt: skip


def upgrade() -> None:
    op.create_index("ix_attempt_campaign_card", "attempt", CARD_COLUMNS)
    op.drop_index("ix_attempt_campaign_id", table_name="attempt")
    op.create_index("ix_measurement_attempt_stamp", "measurement", ["attempt_id", "id", "value"])
    op.drop_index("ix_measurement_attempt_id", table_name="measurement")


def downgrade() -> None:
    op.create_index("ix_measurement_attempt_id", "measurement", ["attempt_id"])
    op.drop_index("ix_measurement_attempt_stamp", table_name="measurement")
    op.create_index("ix_attempt_campaign_id", "attempt", ["campaign_id"])
    op.drop_index("ix_attempt_campaign_card", table_name="attempt")
