"""Each topic's lag as the SLA DAG measured it, for the page's lag over time.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_lag_sample",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("topic", sa.String(249), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("lag", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mf_lag_sample"),
    )
    op.create_index("ix_mf_lag_sample_route_at", "mf_lag_sample", ["route", "at"])


def downgrade() -> None:
    op.drop_index("ix_mf_lag_sample_route_at", table_name="mf_lag_sample")
    op.drop_table("mf_lag_sample")
