"""projects: every team's data in a namespace of its own

Revision ID: 0009_projects
Revises: 0008_inclusion_prob
Create Date: 2026-12-02 10:00:00

- projects: one row per team; `default` is made here and holds every existing row, so a
  single team's use of the service is unchanged.
- api_keys, grade_requests, judgments, responses, human_grades, rubrics,
  calibration_reports and probe_runs gain `project` (NOT NULL, a foreign key to
  projects.name; no default once the existing rows are filed, so a writer that forgets it
  fails instead of filing a team's data under `default`).
- human grades are unique per (project, item_id, rater) and rubric versions per
  (project, rubric_id, version): two teams may use the same item ids and rubric ids.
- indexes on (project, created_at, id) for the scoped list endpoints.

Downgrade merges every project back into one namespace, so it refuses while a project
other than `default` holds rows (they would become every team's data).
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0009_projects"
down_revision = "0008_inclusion_prob"
branch_labels = None
depends_on = None

DEFAULT = "default"
TABLES = (
    "api_keys",
    "grade_requests",
    "judgments",
    "responses",
    "human_grades",
    "rubrics",
    "calibration_reports",
    "probe_runs",
)
# (table, index, columns) made here and dropped on the way down
INDEXES = (
    ("grade_requests", "ix_grade_requests_project_created", ["project", "created_at", "id"]),
    ("judgments", "ix_judgments_project_created", ["project", "created_at", "id"]),
    ("responses", "ix_responses_project", ["project", "id"]),
    ("human_grades", "ix_human_grades_project_created", ["project", "created_at", "id"]),
    (
        "calibration_reports",
        "ix_calibration_reports_project_kind",
        ["project", "kind", "scope", "created_at"],
    ),
    ("probe_runs", "ix_probe_runs_project_created", ["project", "created_at", "id"]),
)
# (table, unique constraint before, columns before, after, columns after)
UNIQUES = (
    ("human_grades", "uq_grade_item_rater", ["item_id", "rater"], "uq_grade_project_item_rater",
     ["project", "item_id", "rater"]),
    ("rubrics", "uq_rubric_version", ["rubric_id", "version"], "uq_rubric_project_version",
     ["project", "rubric_id", "version"]),
)  # fmt: skip


def upgrade() -> None:
    projects = op.create_table(
        "projects",
        sa.Column("name", sa.String(length=64), primary_key=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    now = datetime.now(UTC).replace(tzinfo=None)  # naive UTC, as every stamp is stored
    op.bulk_insert(projects, [{"name": DEFAULT, "created_at": now}])
    for table in TABLES:
        # existing rows are filed under `default` by the server default, which then goes
        with op.batch_alter_table(table) as batch:
            batch.add_column(
                sa.Column("project", sa.String(length=64), nullable=False, server_default=DEFAULT)
            )
        with op.batch_alter_table(table) as batch:
            batch.alter_column(
                "project", server_default=None, existing_type=sa.String(length=64)
            )
            batch.create_foreign_key(f"fk_{table}_project", "projects", ["project"], ["name"])
    for table, old, _, new, columns in UNIQUES:
        with op.batch_alter_table(table) as batch:
            batch.drop_constraint(old, type_="unique")
            batch.create_unique_constraint(new, columns)
    for table, name, columns in INDEXES:
        op.create_index(name, table, columns)


def downgrade() -> None:
    bind = op.get_bind()
    crowded = [
        table
        for table in TABLES
        if bind.execute(
            sa.text(f"SELECT 1 FROM {table} WHERE project <> :name LIMIT 1"), {"name": DEFAULT}
        ).first()
    ]
    if crowded:
        raise RuntimeError(
            f"projects other than '{DEFAULT}' hold rows in {crowded}: the schema before "
            "0009 has one namespace and would hand them to every key; move or delete them "
            "before downgrading"
        )
    for table, name, _ in INDEXES:
        op.drop_index(name, table_name=table)
    for table, old, old_columns, new, _ in UNIQUES:
        with op.batch_alter_table(table) as batch:
            batch.drop_constraint(new, type_="unique")
            batch.create_unique_constraint(old, old_columns)
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_constraint(f"fk_{table}_project", type_="foreignkey")
            batch.drop_column("project")
    op.drop_table("projects")
