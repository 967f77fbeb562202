"""Failover runs of a route, their steps, and where each group resumes on the target.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_failover_run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("source_cluster", sa.String(200), nullable=False),
        sa.Column("target_cluster", sa.String(200), nullable=False),
        sa.Column("route_group", sa.Text(), nullable=False),
        sa.Column("mode", sa.String(20), nullable=False),
        sa.Column("groups", sa.Text(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("margin_seconds", sa.Integer(), nullable=False),
        sa.Column("drain_timeout_seconds", sa.Integer(), nullable=False),
        sa.Column("stop_timeout_seconds", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("stopped_at_step", sa.String(30), nullable=True),
        sa.Column("source_reachable", sa.Boolean(), nullable=True),
        sa.Column("rpo_records", sa.BigInteger(), nullable=True),
        sa.Column("rpo_basis", sa.String(30), nullable=True),
        sa.Column("rpo_as_of", sa.DateTime(timezone=True), nullable=True),
        sa.Column("rpo_partitions", sa.Text(), nullable=True),
        sa.Column("rto_seconds", sa.Double(), nullable=True),
        sa.Column("lags", sa.Text(), nullable=True),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.Column("triggered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("route_stopped_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("abandoned_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("released_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_mf_failover_run"),
    )
    op.create_index("ix_mf_failover_run_route", "mf_failover_run", ["route"])
    op.create_table(
        "mf_failover_step",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("step", sa.String(30), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["mf_failover_run.id"], name="fk_mf_failover_step_run_id_mf_failover_run", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_mf_failover_step"),
        sa.UniqueConstraint("run_id", "step", name="uq_mf_failover_step_run_step"),
    )
    op.create_index("ix_mf_failover_step_run_id", "mf_failover_step", ["run_id"])
    op.create_table(
        "mf_failover_offset",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Text(), nullable=False),
        sa.Column("topic", sa.String(249), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("target_topic", sa.String(249), nullable=False),
        sa.Column("target_offset", sa.BigInteger(), nullable=True),
        sa.Column("basis", sa.String(30), nullable=False),
        sa.Column("source_offset", sa.BigInteger(), nullable=True),
        sa.Column("max_repeats", sa.BigInteger(), nullable=True),
        sa.Column("as_of", sa.DateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.String(20), nullable=True),
        sa.Column("current_offset", sa.BigInteger(), nullable=True),
        sa.Column("verified_offset", sa.BigInteger(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["mf_failover_run.id"], name="fk_mf_failover_offset_run_id_mf_failover_run",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_mf_failover_offset"),
        sa.UniqueConstraint("run_id", "group_id", "target_topic", "partition", name="uq_mf_failover_offset_point"),
    )
    op.create_index("ix_mf_failover_offset_run_id", "mf_failover_offset", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_mf_failover_offset_run_id", table_name="mf_failover_offset")
    op.drop_table("mf_failover_offset")
    op.drop_index("ix_mf_failover_step_run_id", table_name="mf_failover_step")
    op.drop_table("mf_failover_step")
    op.drop_index("ix_mf_failover_run_route", table_name="mf_failover_run")
    op.drop_table("mf_failover_run")
