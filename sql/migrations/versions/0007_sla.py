"""SLA check states per route and the history of breaches and recoveries.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_sla_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("check", sa.String(20), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("checked_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mf_sla_state"),
        sa.UniqueConstraint("route", "check", name="uq_mf_sla_state_route_check"),
    )
    op.create_table(
        "mf_sla_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route", sa.String(200), nullable=False),
        sa.Column("check", sa.String(20), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("notified_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("notify_error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_mf_sla_event"),
    )
    op.create_index("ix_mf_sla_event_route", "mf_sla_event", ["route"])


def downgrade() -> None:
    op.drop_index("ix_mf_sla_event_route", table_name="mf_sla_event")
    op.drop_table("mf_sla_event")
    op.drop_table("mf_sla_state")
