"""token probabilities of a verdict, and the distributional score beside the discrete one

Revision ID: 0007_token_probabilities
Revises: 0006_probes
Create Date: 2026-11-25 10:00:00

- judgments.probabilities: the distribution over the allowed ratings (or each criterion's
  met verdict) read from the judge's token logprobs (judges/logprobs.py); NULL when the
  judge gave none, never invented.
- judgments.expected_score: the probability-weighted expected score (G-Eval's), NULL
  where there is no distribution.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0007_token_probabilities"
down_revision = "0006_probes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    json_type = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
    with op.batch_alter_table("judgments") as batch:
        batch.add_column(sa.Column("probabilities", json_type, nullable=True))
        batch.add_column(sa.Column("expected_score", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("judgments") as batch:
        batch.drop_column("expected_score")
        batch.drop_column("probabilities")
