"""Alembic environment of MirrorFlow's state database (run by replicator.state.store).

It migrates on the connection that ``upgrade`` hands over, inside the transaction
that holds the migration lock (see replicator.state.migration_lock).
"""

from alembic import context

from replicator.state.models import Base
from replicator.state.store import VERSION_TABLE

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    version_table=VERSION_TABLE,
    render_as_batch=True,  # SQLite can only ALTER through table copies
)
with context.begin_transaction():
    context.run_migrations()
