"""replicas share limits and secrets: judge call leases, per-key rate events, secrets

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 14:00:00

- judge_flights: one row per judge call in flight, leased by a process, so concurrent
  identical calls from several replicas make one backend call.
- rate_events: accepted requests per API key in the last minute, counted by every replica
  under a per-key advisory lock, so a key's rate limit holds across replicas.
Both are used on PostgreSQL only; on SQLite (one machine) the limits stay per process.
- service_secrets: secrets drawn once and shared by every process (the report-link key when
  QADI_REPORT_LINK_SECRET is unset).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "judge_flights",
        sa.Column("cache_key", sa.String(length=80), primary_key=True),
        sa.Column("owner", sa.String(length=32), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
    )
    op.create_table(
        "rate_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("api_key_id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_rate_events_key_at", "rate_events", ["api_key_id", "at"])
    op.create_table(
        "service_secrets",
        sa.Column("name", sa.String(length=64), primary_key=True),
        sa.Column("value", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("service_secrets")
    op.drop_index("ix_rate_events_key_at", table_name="rate_events")
    op.drop_table("rate_events")
    op.drop_table("judge_flights")
