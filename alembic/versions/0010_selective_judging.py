"""selective judging: confidences, the thresholds POST /judge applies, the SME queue

Revision ID: 0010_selective_judging
Revises: 0009_projects
Create Date: 2026-11-26 23:00:00

- judgments.confidence: the judge's probability of its verdict (token probabilities);
- human_grades.confidence: the same for judge grades imported from files;
- trust_thresholds: per stored calibration report (and its project), judge or cascade,
  stratum and (α, δ), the threshold above which a verdict is trusted, and what the guarantee
  is bound to;
- sme_queue: a project's items escalated to the SMEs at request time (or audited), with
  their inclusion probability.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010_selective_judging"
down_revision = "0009_projects"
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("judgments") as table:
        table.add_column(sa.Column("confidence", sa.Float(), nullable=True))
    with op.batch_alter_table("human_grades") as table:
        table.add_column(sa.Column("confidence", sa.Float(), nullable=True))
    op.create_table(
        "trust_thresholds",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        _project("trust_thresholds"),
        sa.Column(
            "report_id",
            sa.String(32),
            sa.ForeignKey("calibration_reports.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("rubric_id", sa.String(128), nullable=False),
        sa.Column("evaluator", sa.String(512), nullable=False),
        sa.Column("stratum", sa.String(256), nullable=False),
        sa.Column("alpha", sa.Float(), nullable=False),
        sa.Column("delta", sa.Float(), nullable=False),
        sa.Column("confidence", sa.String(16), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=True),
        sa.Column("entry", JSONType, nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_trust_thresholds_report_id", "trust_thresholds", ["report_id"])
    op.create_index(
        "ix_trust_thresholds_lookup",
        "trust_thresholds",
        ["project", "rubric_id", "evaluator", "stratum", "created_at"],
    )
    op.create_table(
        "sme_queue",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        _project("sme_queue"),
        sa.Column(
            "request_id", sa.String(32), sa.ForeignKey("grade_requests.id"), nullable=False
        ),
        sa.Column("response_id", sa.Integer(), sa.ForeignKey("responses.id"), nullable=False),
        sa.Column("item_id", sa.String(256), nullable=False),
        sa.Column("rubric_ref", sa.String(160), nullable=False),
        sa.Column("reason", sa.String(16), nullable=False),
        sa.Column("inclusion_prob", sa.Float(), nullable=False),
        sa.Column("trust", JSONType, nullable=False),
        sa.Column("attributes", JSONType, nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("request_id", name="uq_sme_queue_request_id"),
    )
    op.create_index("ix_sme_queue_response_id", "sme_queue", ["response_id"])
    op.create_index("ix_sme_queue_item_id", "sme_queue", ["item_id"])
    op.create_index("ix_sme_queue_project_created", "sme_queue", ["project", "created_at", "id"])


def _project(table: str) -> sa.Column:
    """A team's row (migration 0009_projects): its project, never defaulted."""
    return sa.Column(
        "project",
        sa.String(64),
        sa.ForeignKey("projects.name", name=f"fk_{table}_project"),
        nullable=False,
    )


def downgrade() -> None:
    op.drop_table("sme_queue")
    op.drop_table("trust_thresholds")
    with op.batch_alter_table("human_grades") as table:
        table.drop_column("confidence")
    with op.batch_alter_table("judgments") as table:
        table.drop_column("confidence")
