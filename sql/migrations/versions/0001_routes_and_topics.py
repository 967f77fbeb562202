"""Routes and the topics of each route.

Revision ID: 0001
Revises:
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mf_route",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("source_cluster", sa.String(200), nullable=False),
        sa.Column("target_cluster", sa.String(200), nullable=False),
        sa.Column("policy", sa.String(50), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_mf_route"),
        sa.UniqueConstraint("name", name="uq_mf_route_name"),
    )
    op.create_table(
        "mf_route_topic",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("route_id", sa.Integer(), nullable=False),
        sa.Column("topic", sa.String(249), nullable=False),
        sa.Column("desired_state", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("status_detail", sa.Text(), nullable=True),
        sa.Column("added_by", sa.String(20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.ForeignKeyConstraint(
            ["route_id"], ["mf_route.id"], name="fk_mf_route_topic_route_id_mf_route", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_mf_route_topic"),
        sa.UniqueConstraint("route_id", "topic", name="uq_mf_route_topic_route_topic"),
    )
    op.create_index("ix_mf_route_topic_route_id", "mf_route_topic", ["route_id"])


def downgrade() -> None:
    op.drop_index("ix_mf_route_topic_route_id", table_name="mf_route_topic")
    op.drop_table("mf_route_topic")
    op.drop_table("mf_route")
