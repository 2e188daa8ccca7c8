"""judge alignment: a revision of a judge's template from the experts' disagreements, and
its certification on held-out labels

Revision ID: 0013_alignment
Revises: 0012_closed_loop
Create Date: 2026-11-29 14:00:00

- alignment_runs: per run, the rubric version and judge revised, the folds fixed before the
  revision (item -> train | holdout) with their seed, the reviser model, the candidate
  template (a versioned, hashed template like any other), the held-out certification, and
  the approval (who, when, the rubric version it made live).
- alignment_grades: the candidate's verdict on each held-out item (a judge result as JSON,
  kept out of `judgments` until the run is approved: before that, the candidate is not a
  version of the rubric and its grades must not enter the live template's reports).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0013_alignment"
down_revision = "0012_closed_loop"
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "alignment_runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "project",
            sa.String(64),
            sa.ForeignKey("projects.name", name="fk_alignment_runs_project"),
            nullable=False,
        ),
        sa.Column("rubric_ref", sa.String(160), nullable=False),
        sa.Column("judge", sa.String(128), nullable=False),
        sa.Column("reviser", sa.String(128), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("holdout", sa.Float(), nullable=False),
        sa.Column("folds", JSONType, nullable=False),
        sa.Column("old_template", sa.String(160), nullable=False),
        sa.Column("candidate", JSONType, nullable=False),
        sa.Column("candidate_hash", sa.String(80), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("certification", JSONType, nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("approved_at", sa.DateTime(), nullable=True),
        sa.Column("approved_by", sa.String(128), nullable=True),
        sa.Column("approved_rubric_ref", sa.String(160), nullable=True),
    )
    op.create_index(
        "ix_alignment_runs_project_created", "alignment_runs", ["project", "created_at"]
    )
    op.create_table(
        "alignment_grades",
        sa.Column(
            "run_id",
            sa.String(32),
            sa.ForeignKey("alignment_runs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("item_id", sa.String(256), primary_key=True),
        sa.Column("response_id", sa.Integer(), sa.ForeignKey("responses.id"), nullable=False),
        sa.Column("result", JSONType, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("alignment_grades")
    op.drop_table("alignment_runs")
