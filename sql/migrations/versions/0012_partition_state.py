"""The state a worker found a partition in (FAULTED, STUCK), for ``status``, the page and the SLA.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_partition_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("topic", sa.String(249), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("since", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mf_partition_state"),
        sa.UniqueConstraint("route", "topic", "partition", name="uq_mf_partition_state_partition"),
    )
    op.create_index("ix_mf_partition_state_route", "mf_partition_state", ["route"])


def downgrade() -> None:
    op.drop_index("ix_mf_partition_state_route", table_name="mf_partition_state")
    op.drop_table("mf_partition_state")
