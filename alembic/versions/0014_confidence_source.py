"""a judgment's confidence source and a sampling judge's samples

Revision ID: 0014_confidence_source
Revises: 0013_alignment
Create Date: 2026-11-29 05:00:00

- judgments.confidence_source: where `confidence` comes from (token | sampling); NULL
  without a confidence. Rows stored before carry their token confidence; they are set to
  `token` where they have one.
- judgments.samples: a sampling judge's samples (each one's status and verdict), in order.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0014_confidence_source"
down_revision = "0013_alignment"
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("judgments") as batch:
        batch.add_column(sa.Column("confidence_source", sa.String(16), nullable=True))
        batch.add_column(sa.Column("samples", JSONType, nullable=True))
    op.execute(
        "UPDATE judgments SET confidence_source = 'token' WHERE confidence IS NOT NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table("judgments") as batch:
        batch.drop_column("samples")
        batch.drop_column("confidence_source")
