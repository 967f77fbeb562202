"""``mirrorflow db upgrade``: migrate the state database of the config."""

from __future__ import annotations

import argparse
from typing import Any

from replicator.cli.common import add_command, add_group, config_of


def register(commands: Any) -> None:
    """Add the ``db`` command group."""
    sub = add_group(commands, "db", help="the state database")
    add_command(sub, "upgrade", upgrade_db,
                help="apply pending migrations and register the config's routes (idempotent)")


def upgrade_db(args: argparse.Namespace) -> int:
    """Migrate (StateStore does it on open) and upsert the routes."""
    from replicator.state.repository import register_routes  # SQLAlchemy: only when needed
    from replicator.state.store import StateStore, current_revision

    config = config_of(args)
    with StateStore(config.state.url) as store:
        with store.session() as session:
            routes = register_routes(session, config.routes)
        print(f"state database at revision {current_revision(store.engine)}: {store.engine.url!r}")
        print(f"routes registered: {', '.join(routes) or 'none'}")
    return 0
