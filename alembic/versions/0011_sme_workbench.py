"""the SME workbench: people, invites, sessions, assignments and adjudications; a bounded queue

Revision ID: 0011_sme_workbench
Revises: 0010_selective_judging
Create Date: 2026-11-29 10:00:00

- sme_queue: one entry per (project, item, rubric version, reason) (issue 42.6: identical
  requests each added a row); `request_id` no longer unique and nullable (an entry drawn from
  stored judgments has no request); the key that queued it (per-key budget); the labels
  wanted (2 for the overlap share), the expertise tag that routes it, its place in the
  serving order, its status, and the stratum of a sampled round; `trust` nullable. Existing
  duplicates keep their first row.
- smes, sme_invites, web_sessions: the workbench's people (SMEs, senior SMEs, leads), their
  one-time sign-in links and browser sessions (only hashes of links and sessions are kept).
- sme_assignments: an item's label slots (1, or 2 when double-labelled), each reserved by
  one SME, then submitted (a grade) or closed as "cannot judge" with the reason.
- sme_adjudications: the outcome of a disagreement between two SMEs, beside both labels.
- human_grades.rationale: the grader's reason, stored with her grade.
- projects.trust_stratum: the attribute a project pins trust strata to (issue 42.12).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0011_sme_workbench"
down_revision = "0010_selective_judging"
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade() -> None:
    _dedupe_queue()
    with op.batch_alter_table("sme_queue") as table:
        table.drop_constraint("uq_sme_queue_request_id", type_="unique")
        table.alter_column("request_id", existing_type=sa.String(32), nullable=True)
        table.alter_column("trust", existing_type=JSONType, nullable=True)
        table.add_column(sa.Column("inclusion_stratum", sa.String(256), nullable=True))
        table.add_column(sa.Column("api_key_id", sa.Integer(), nullable=True))
        table.add_column(
            sa.Column("labels_wanted", sa.Integer(), nullable=False, server_default="1")
        )
        table.add_column(sa.Column("route_tag", sa.String(128), nullable=False, server_default=""))
        table.add_column(sa.Column("order_key", sa.Float(), nullable=False, server_default="0"))
        table.add_column(sa.Column("status", sa.String(16), nullable=False, server_default="open"))
        table.create_unique_constraint(
            "uq_sme_queue_item_reason", ["project", "item_id", "rubric_ref", "reason"]
        )
    op.create_index("ix_sme_queue_request_id", "sme_queue", ["request_id"])
    op.create_index(
        "ix_sme_queue_open", "sme_queue", ["project", "status", "route_tag", "order_key"]
    )
    op.create_index("ix_sme_queue_key_created", "sme_queue", ["api_key_id", "created_at"])
    with op.batch_alter_table("human_grades") as table:
        table.add_column(sa.Column("rationale", sa.Text(), nullable=True))
    with op.batch_alter_table("projects") as table:
        table.add_column(sa.Column("trust_stratum", sa.String(64), nullable=True))
    op.create_table(
        "smes",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        _project("smes"),
        sa.Column("handle", sa.String(128), nullable=False),
        sa.Column("display_name", sa.String(256), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("tags", JSONType, nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.UniqueConstraint("project", "handle", name="uq_smes_project_handle"),
    )
    op.create_table(
        "sme_invites",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        _project("sme_invites"),
        sa.Column("sme_id", sa.Integer(), sa.ForeignKey("smes.id"), nullable=False),
        sa.Column("token_hash", sa.String(80), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("used_at", sa.DateTime(), nullable=True),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.UniqueConstraint("token_hash", name="uq_sme_invites_token_hash"),
    )
    op.create_index("ix_sme_invites_sme_id", "sme_invites", ["sme_id"])
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.String(80), primary_key=True),
        _project("web_sessions"),
        sa.Column("sme_id", sa.Integer(), sa.ForeignKey("smes.id"), nullable=False),
        sa.Column("csrf_token", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
    )
    op.create_index("ix_web_sessions_sme_id", "web_sessions", ["sme_id"])
    op.create_table(
        "sme_assignments",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        _project("sme_assignments"),
        sa.Column("queue_id", sa.Integer(), sa.ForeignKey("sme_queue.id"), nullable=False),
        sa.Column("slot", sa.Integer(), nullable=False),
        sa.Column("sme_id", sa.Integer(), sa.ForeignKey("smes.id"), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reserved_until", sa.DateTime(), nullable=True),
        sa.Column("draft", JSONType, nullable=True),
        sa.Column("grade_id", sa.Integer(), sa.ForeignKey("human_grades.id"), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("submitted_at", sa.DateTime(), nullable=True),
        sa.UniqueConstraint("queue_id", "slot", name="uq_sme_assignments_slot"),
        sa.UniqueConstraint("queue_id", "sme_id", name="uq_sme_assignments_sme"),
    )
    op.create_index("ix_sme_assignments_sme_status", "sme_assignments", ["sme_id", "status"])
    op.create_table(
        "sme_adjudications",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        _project("sme_adjudications"),
        sa.Column("queue_id", sa.Integer(), sa.ForeignKey("sme_queue.id"), nullable=False),
        sa.Column("sme_id", sa.Integer(), sa.ForeignKey("smes.id"), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("criteria", JSONType, nullable=True),
        sa.Column("rationale", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("queue_id", name="uq_sme_adjudications_queue_id"),
    )


def _dedupe_queue() -> None:
    """Before the unique constraint: an (item, rubric, reason) queued several times keeps
    its first row (the later ones are the same item, for the same reason)."""
    queue = sa.table(
        "sme_queue",
        sa.column("id", sa.Integer()),
        sa.column("project", sa.String()),
        sa.column("item_id", sa.String()),
        sa.column("rubric_ref", sa.String()),
        sa.column("reason", sa.String()),
    )
    first = (
        sa.select(sa.func.min(queue.c.id))
        .group_by(queue.c.project, queue.c.item_id, queue.c.rubric_ref, queue.c.reason)
        .scalar_subquery()
    )
    op.execute(sa.delete(queue).where(queue.c.id.not_in(first)))


def _project(table: str) -> sa.Column:
    """A team's row (migration 0009_projects): its project, never defaulted."""
    return sa.Column(
        "project",
        sa.String(64),
        sa.ForeignKey("projects.name", name=f"fk_{table}_project"),
        nullable=False,
    )


def downgrade() -> None:
    op.drop_table("sme_adjudications")
    op.drop_table("sme_assignments")
    op.drop_table("web_sessions")
    op.drop_table("sme_invites")
    op.drop_table("smes")
    with op.batch_alter_table("projects") as table:
        table.drop_column("trust_stratum")
    with op.batch_alter_table("human_grades") as table:
        table.drop_column("rationale")
    op.drop_index("ix_sme_queue_key_created", table_name="sme_queue")
    op.drop_index("ix_sme_queue_open", table_name="sme_queue")
    op.drop_index("ix_sme_queue_request_id", table_name="sme_queue")
    op.execute("DELETE FROM sme_queue WHERE request_id IS NULL")
    with op.batch_alter_table("sme_queue") as table:
        table.drop_constraint("uq_sme_queue_item_reason", type_="unique")
        for column in ("status", "order_key", "route_tag", "labels_wanted", "api_key_id"):
            table.drop_column(column)
        table.drop_column("inclusion_stratum")
        table.alter_column("trust", existing_type=JSONType, nullable=False)
        table.alter_column("request_id", existing_type=sa.String(32), nullable=False)
        table.create_unique_constraint("uq_sme_queue_request_id", ["request_id"])
