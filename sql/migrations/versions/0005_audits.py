"""Audit runs of a route and their per (topic, partition, time bucket) results.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_audit_run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_key", sa.String(200), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("window_end", sa.DateTime(timezone=True), nullable=False),
        sa.Column("bucket_seconds", sa.Integer(), nullable=False),
        sa.Column("topics", sa.Text(), nullable=False),
        sa.Column("source_records", sa.BigInteger(), nullable=False),
        sa.Column("target_records", sa.BigInteger(), nullable=False),
        sa.Column("pending", sa.BigInteger(), nullable=False),
        sa.Column("missing", sa.BigInteger(), nullable=False),
        sa.Column("duplicates", sa.BigInteger(), nullable=False),
        sa.Column("extra", sa.BigInteger(), nullable=False),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mf_audit_run"),
        sa.UniqueConstraint("run_key", name="uq_mf_audit_run_run_key"),
    )
    op.create_index("ix_mf_audit_run_route", "mf_audit_run", ["route"])
    op.create_table(
        "mf_audit_result",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("topic", sa.String(249), nullable=False),
        sa.Column("target_topic", sa.String(249), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("bucket_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("source_count", sa.BigInteger(), nullable=False),
        sa.Column("target_count", sa.BigInteger(), nullable=False),
        sa.Column("pending", sa.BigInteger(), nullable=False),
        sa.Column("missing_count", sa.BigInteger(), nullable=False),
        sa.Column("duplicate_count", sa.BigInteger(), nullable=False),
        sa.Column("extra_count", sa.BigInteger(), nullable=False),
        sa.Column("missing_offsets", sa.Text(), nullable=True),
        sa.Column("duplicate_offsets", sa.Text(), nullable=True),
        sa.Column("extra_offsets", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["mf_audit_run.id"], name="fk_mf_audit_result_run_id_mf_audit_run", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_mf_audit_result"),
        sa.UniqueConstraint("run_id", "topic", "partition", "bucket_start", name="uq_mf_audit_result_bucket"),
    )
    op.create_index("ix_mf_audit_result_run_id", "mf_audit_result", ["run_id"])
    op.create_index("ix_mf_audit_result_route_topic_bucket", "mf_audit_result", ["route", "topic", "bucket_start"])


def downgrade() -> None:
    op.drop_index("ix_mf_audit_result_route_topic_bucket", table_name="mf_audit_result")
    op.drop_index("ix_mf_audit_result_run_id", table_name="mf_audit_result")
    op.drop_table("mf_audit_result")
    op.drop_index("ix_mf_audit_run_route", table_name="mf_audit_run")
    op.drop_table("mf_audit_run")
