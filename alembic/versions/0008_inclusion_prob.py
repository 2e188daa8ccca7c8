"""human grades keep the inclusion probability of their labelling design

Revision ID: 0008_inclusion_prob
Revises: 0007_token_probabilities
Create Date: 2026-12-01 10:00:00

- human_grades.inclusion_prob: the probability the design (`qadi sme queue`, or the user's own)
  gave the item of being labelled, in (0, 1]; NULL for a label without one. Estimates weight
  each label by its inverse (calibration/design.py), so it must survive an import.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_inclusion_prob"
down_revision = "0007_token_probabilities"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("human_grades") as table:
        table.add_column(sa.Column("inclusion_prob", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("human_grades") as table:
        table.drop_column("inclusion_prob")
