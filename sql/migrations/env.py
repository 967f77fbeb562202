"""Alembic environment of MirrorFlow's state database (run by replicator.state.store)."""

from alembic import context

from replicator.state.models import Base
from replicator.state.store import VERSION_TABLE

engine = context.config.attributes["engine"]

with engine.begin() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        version_table=VERSION_TABLE,
        render_as_batch=True,  # SQLite can only ALTER through table copies
    )
    with context.begin_transaction():
        context.run_migrations()
