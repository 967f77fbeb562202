"""What each SLA check measured of a route beyond its lag: records copied so far (their rate per second over
time) and the replication latency (the newest heartbeat's age), for the Replication page's charts.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_route_sample",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("copied", sa.BigInteger(), nullable=True),
        sa.Column("latency_ms", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_mf_route_sample"),
    )
    op.create_index("ix_mf_route_sample_route_at", "mf_route_sample", ["route", "at"])


def downgrade() -> None:
    op.drop_index("ix_mf_route_sample_route_at", table_name="mf_route_sample")
    op.drop_table("mf_route_sample")
