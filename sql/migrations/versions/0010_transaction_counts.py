"""Transactions committed and aborted by each run of a worker of an exactly-once route (``mirrorflow status``).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_transaction_count",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_key", sa.String(64), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("worker", sa.String(200), nullable=False),
        sa.Column("committed", sa.BigInteger(), nullable=False),
        sa.Column("aborted", sa.BigInteger(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mf_transaction_count"),
        sa.UniqueConstraint("run_key", name="uq_mf_transaction_count_run_key"),
    )
    op.create_index("ix_mf_transaction_count_route", "mf_transaction_count", ["route"])


def downgrade() -> None:
    op.drop_index("ix_mf_transaction_count_route", table_name="mf_transaction_count")
    op.drop_table("mf_transaction_count")
