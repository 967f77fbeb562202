"""The log ends a checkpoint run read beside each checkpoint: the group's lag on the source, and the lag it would
have on the target if it moved now (the Replication page's consumer-group lag).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("mf_checkpoint") as batch:
        batch.add_column(sa.Column("source_end", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("target_end", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mf_checkpoint") as batch:
        batch.drop_column("target_end")
        batch.drop_column("source_end")
