"""Failback runs: one row per run, its figures in columns and the whole run as JSON.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_failback_run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("mode", sa.String(20), nullable=False),
        sa.Column("primary_cluster", sa.String(200), nullable=False),
        sa.Column("backup_cluster", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("stopped_at_step", sa.String(30), nullable=True),
        sa.Column("failover_run_id", sa.Integer(), nullable=True),
        sa.Column("records_copied", sa.BigInteger(), nullable=False),
        sa.Column("unreplicated_records", sa.BigInteger(), nullable=False),
        sa.Column("not_copied_records", sa.BigInteger(), nullable=True),
        sa.Column("rto_seconds", sa.Double(), nullable=True),
        sa.Column("triggered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("run_json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mf_failback_run"),
    )
    op.create_index("ix_mf_failback_run_route", "mf_failback_run", ["route"])


def downgrade() -> None:
    op.drop_index("ix_mf_failback_run_route", table_name="mf_failback_run")
    op.drop_table("mf_failback_run")
