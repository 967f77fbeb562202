"""A failover may fence the source's topics against writes first (``--fence``): what it asked and raised.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("mf_failover_run") as batch:
        batch.add_column(sa.Column("fence", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("accept_bypass", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("fence_record", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mf_failover_run") as batch:
        batch.drop_column("fence_record")
        batch.drop_column("accept_bypass")
        batch.drop_column("fence")
