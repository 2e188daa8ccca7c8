"""probe runs: the stored result of `qadi probe` / POST /probes

Revision ID: 0006_probes
Revises: 0005
Create Date: 2026-11-30 10:00:00

- probe_runs: one row per probe run, with its report (JSON), Markdown and HTML renderings,
  and the perturbed texts with their seed. The judge calls of a run are ordinary rows of
  `judgments`; their answers carry the attribute `probe_of`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006_probes"
down_revision = "0005"
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "probe_runs",
        sa.Column("id", sa.String(length=32), primary_key=True),
        sa.Column("rubric_ref", sa.String(length=160), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("report", JSON, nullable=False),
        sa.Column("perturbations", JSON, nullable=False),
        sa.Column("html", sa.Text(), nullable=False),
        sa.Column("markdown", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_probe_runs_created", "probe_runs", ["created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_probe_runs_created", table_name="probe_runs")
    op.drop_table("probe_runs")
