"""Exact ranges of source records lost to retention before a route copied them.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_data_loss",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("topic", sa.String(249), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("from_offset", sa.BigInteger(), nullable=False),
        sa.Column("to_offset", sa.BigInteger(), nullable=False),
        sa.Column("detected_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mf_data_loss"),
    )
    op.create_index("ix_mf_data_loss_route", "mf_data_loss", ["route"])


def downgrade() -> None:
    op.drop_index("ix_mf_data_loss_route", table_name="mf_data_loss")
    op.drop_table("mf_data_loss")
