"""``mirrorflow db upgrade``: migrate the state database of the config."""

from __future__ import annotations

import argparse

from replicator.cli.commands import Command, Group
from replicator.cli.common import CONFIG, config_of


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


DB = Group("db", help="the state database", commands=(
    Command("upgrade", upgrade_db, help="apply pending migrations and register the config's routes (idempotent)",
            options=(CONFIG,)),
))
