"""an index of the answers' attributes for metadata= filters (PostgreSQL)

Revision ID: 0015_attribute_index
Revises: 0014_confidence_source
Create Date: 2026-11-29 08:00:00

- responses.attributes: a GIN index (jsonb_path_ops) on PostgreSQL, which the metadata=
  filters of GET /judgments, the calibration source and regrading use as
  `attributes @> {"key": "value"}` (issue 39: they read every answer before). SQLite has no
  index of a JSON object's keys: nothing is made there.
"""

from __future__ import annotations

from alembic import op

revision = "0015_attribute_index"
down_revision = "0014_confidence_source"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.create_index(
            "ix_responses_attributes",
            "responses",
            ["attributes"],
            postgresql_using="gin",
            postgresql_ops={"attributes": "jsonb_path_ops"},
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_index("ix_responses_attributes", table_name="responses")
