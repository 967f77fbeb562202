"""Backfill runs: one row per run, its planned source offset ranges as JSON, its status and figures.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_backfill_run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_key", sa.String(200), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("topic", sa.String(249), nullable=False),
        sa.Column("target_topic", sa.String(249), nullable=False),
        sa.Column("mode", sa.String(20), nullable=False),
        sa.Column("ranges", sa.Text(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("records_written", sa.BigInteger(), nullable=True),
        sa.Column("records_total", sa.BigInteger(), nullable=False),
        sa.Column("overlap_ok", sa.Boolean(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_mf_backfill_run"),
        sa.UniqueConstraint("run_key", name="uq_mf_backfill_run_run_key"),
    )
    op.create_index("ix_mf_backfill_run_route_topic", "mf_backfill_run", ["route", "topic"])


def downgrade() -> None:
    op.drop_index("ix_mf_backfill_run_route_topic", table_name="mf_backfill_run")
    op.drop_table("mf_backfill_run")
