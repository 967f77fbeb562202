"""Sync runs of a route (topic discovery, config and ACL sync) and each change they made.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_sync_run",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("step", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_mf_sync_run"),
    )
    op.create_index("ix_mf_sync_run_route", "mf_sync_run", ["route"])
    op.create_table(
        "mf_sync_change",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(30), nullable=False),
        sa.Column("resource", sa.Text(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("outcome", sa.String(20), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["mf_sync_run.id"], name="fk_mf_sync_change_run_id_mf_sync_run", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_mf_sync_change"),
    )
    op.create_index("ix_mf_sync_change_run_id", "mf_sync_change", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_mf_sync_change_run_id", table_name="mf_sync_change")
    op.drop_table("mf_sync_change")
    op.drop_index("ix_mf_sync_run_route", table_name="mf_sync_run")
    op.drop_table("mf_sync_run")
