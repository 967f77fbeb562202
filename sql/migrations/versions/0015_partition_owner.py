"""Which worker placed each partition last (its owner while it runs), for ``status`` and the Replication page.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_partition_owner",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("topic", sa.String(249), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(300), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mf_partition_owner"),
        sa.UniqueConstraint("route", "topic", "partition", name="uq_mf_partition_owner_partition"),
    )
    op.create_index("ix_mf_partition_owner_route", "mf_partition_owner", ["route"])


def downgrade() -> None:
    op.drop_index("ix_mf_partition_owner_route", table_name="mf_partition_owner")
    op.drop_table("mf_partition_owner")
