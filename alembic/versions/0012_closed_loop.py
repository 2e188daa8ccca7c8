"""the closed loop: calibration scopes recalibrated by the service, the log of every change
of a live guarantee, audits of live guarantees, request-time outcomes by day, report points

Revision ID: 0012_closed_loop
Revises: 0011_sme_workbench
Create Date: 2026-11-29 12:00:00

- calibration_scopes: what a project recalibrates by itself (rubric, α, δ, confidence,
  cascades, strata), when (after K new SME labels, every N hours), and how the last run went;
  a lease (owner, until) so one replica runs a scope at a time.
- guarantee_changes: every change of a live threshold (old and new, coverage, labels, who).
- guarantee_audits: each slice of fresh labels tested against a live guarantee.
- trust_outcome_counts: POST /judge's trust outcomes per day, rubric, evaluator, stratum and
  status, counted as requests finish (the dashboard reads these, never the requests).
- report_points: each stored report's summary for the history plots (a few hundred bytes,
  so a dashboard never parses whole reports).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0012_closed_loop"
down_revision = "0011_sme_workbench"
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "calibration_scopes",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        _project("calibration_scopes"),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("rubric", sa.String(160), nullable=False),
        sa.Column("options", JSONType, nullable=False),
        sa.Column("every_labels", sa.Integer(), nullable=True),
        sa.Column("every_hours", sa.Float(), nullable=True),
        sa.Column("audit_slice", sa.Integer(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_by", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("labels_seen", sa.Integer(), nullable=False),
        sa.Column("audited_through", sa.DateTime(), nullable=True),
        sa.Column("due_reason", sa.String(64), nullable=True),
        sa.Column("last_run_at", sa.DateTime(), nullable=True),
        sa.Column("last_status", sa.String(16), nullable=True),
        sa.Column("last_message", sa.Text(), nullable=True),
        sa.Column("last_report_id", sa.String(32), nullable=True),
        sa.Column("summary", JSONType, nullable=True),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(32), nullable=True),
        sa.Column("lease_until", sa.DateTime(), nullable=True),
        sa.UniqueConstraint("project", "name", name="uq_calibration_scopes_project_name"),
    )
    op.create_table(
        "guarantee_changes",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        _project("guarantee_changes"),
        sa.Column("report_id", sa.String(32), nullable=False),
        sa.Column("scope", sa.String(64), nullable=True),
        sa.Column("rubric_id", sa.String(128), nullable=False),
        sa.Column("evaluator", sa.String(512), nullable=False),
        sa.Column("stratum", sa.String(256), nullable=False),
        sa.Column("alpha", sa.Float(), nullable=False),
        sa.Column("delta", sa.Float(), nullable=False),
        sa.Column("confidence", sa.String(16), nullable=False),
        sa.Column("old_threshold", sa.Float(), nullable=True),
        sa.Column("new_threshold", sa.Float(), nullable=True),
        sa.Column("old_report_id", sa.String(32), nullable=True),
        sa.Column("coverage", sa.Float(), nullable=True),
        sa.Column("n_calibration", sa.Integer(), nullable=False),
        sa.Column("trigger", sa.String(64), nullable=False),
        sa.Column("actor", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index(
        "ix_guarantee_changes_project_created", "guarantee_changes", ["project", "created_at"]
    )
    op.create_table(
        "guarantee_audits",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        _project("guarantee_audits"),
        sa.Column("scope", sa.String(64), nullable=False),
        sa.Column("report_id", sa.String(32), nullable=False),
        sa.Column("evaluator", sa.String(512), nullable=False),
        sa.Column("stratum", sa.String(256), nullable=False),
        sa.Column("audit", JSONType, nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("labels_through", sa.DateTime(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index(
        "ix_guarantee_audits_project_created", "guarantee_audits", ["project", "created_at"]
    )
    op.create_table(
        "trust_outcome_counts",
        _project("trust_outcome_counts"),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("rubric_id", sa.String(128), nullable=False),
        sa.Column("evaluator", sa.String(512), nullable=False),
        sa.Column("stratum", sa.String(256), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(
            "project", "day", "rubric_id", "evaluator", "stratum", "status",
            name="pk_trust_outcome_counts",
        ),  # fmt: skip
    )
    op.create_table(
        "report_points",
        sa.Column(
            "report_id",
            sa.String(32),
            sa.ForeignKey("calibration_reports.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        _project("report_points"),
        sa.Column("scope", sa.String(256), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("point", JSONType, nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index(
        "ix_report_points_project_scope", "report_points", ["project", "scope", "created_at"]
    )


def _project(table: str) -> sa.Column:
    """A team's row (migration 0009_projects): its project, never defaulted."""
    return sa.Column(
        "project",
        sa.String(64),
        sa.ForeignKey("projects.name", name=f"fk_{table}_project"),
        nullable=False,
    )


def downgrade() -> None:
    op.drop_table("report_points")
    op.drop_table("trust_outcome_counts")
    op.drop_table("guarantee_audits")
    op.drop_table("guarantee_changes")
    op.drop_table("calibration_scopes")
