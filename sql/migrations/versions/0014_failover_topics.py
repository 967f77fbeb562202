"""A failover may move some topics of a route only (``--topic``): which.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("mf_failover_run") as batch:
        batch.add_column(sa.Column("topics", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("mf_failover_run") as batch:
        batch.drop_column("topics")
