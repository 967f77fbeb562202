"""Consumer-group offset checkpoints of a route and the runs that produced them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_checkpoint",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("group_id", sa.Text(), nullable=False),
        sa.Column("topic", sa.String(249), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("source_offset", sa.BigInteger(), nullable=False),
        sa.Column("target_topic", sa.String(249), nullable=False),
        sa.Column("target_offset", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("max_repeats", sa.BigInteger(), nullable=False),
        sa.Column("checkpointed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mf_checkpoint"),
        sa.UniqueConstraint("route", "group_id", "topic", "partition", name="uq_mf_checkpoint_route_group_partition"),
    )
    op.create_table(
        "mf_checkpoint_run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("groups", sa.Integer(), nullable=False),
        sa.Column("checkpoints", sa.Integer(), nullable=False),
        sa.Column("untranslated", sa.Integer(), nullable=False),
        sa.Column("target_commits", sa.Integer(), nullable=False),
        sa.Column("skipped_groups", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_mf_checkpoint_run"),
    )
    op.create_index("ix_mf_checkpoint_run_route", "mf_checkpoint_run", ["route"])


def downgrade() -> None:
    op.drop_index("ix_mf_checkpoint_run_route", table_name="mf_checkpoint_run")
    op.drop_table("mf_checkpoint_run")
    op.drop_table("mf_checkpoint")
