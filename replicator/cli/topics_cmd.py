"""``mirrorflow topics add|remove|list ROUTE [TOPIC]``: change a running route's topics, no restart."""

from __future__ import annotations

import argparse
from typing import Any

from replicator.cli.common import add_command, add_group, config_of
from replicator.cli.output import table


def register(commands: Any) -> None:
    """Add the ``topics`` command group."""
    sub = add_group(commands, "topics", help="add or remove topics of a route (running workers follow within seconds)")
    for action, text in (("add", "replicate TOPIC on ROUTE, even if the route's patterns do not match it"),
                         ("remove", "stop replicating TOPIC on ROUTE, even if the route's patterns match it")):
        parser = add_command(sub, action, change_topic, help=text)
        parser.add_argument("route")
        parser.add_argument("topic")
        parser.set_defaults(desired=action)
    listing = add_command(sub, "list", list_topics, help="the topics of ROUTE: wanted state and last reported status")
    listing.add_argument("route")


def change_topic(args: argparse.Namespace) -> int:
    """Record the operator's wish in the state DB; workers re-read it every few seconds."""
    from replicator.domain.route_topic import AddedBy, DesiredState
    from replicator.state.repository import register_routes, set_topic
    from replicator.state.store import StateStore

    config = config_of(args)
    route = config.route(args.route)
    desired = DesiredState.REPLICATE if args.desired == "add" else DesiredState.REMOVED
    with StateStore(config.state.url) as store:
        with store.session() as session:
            register_routes(session, [route])
            row = set_topic(session, route.name, args.topic, desired, AddedBy.CLI)
    print(f"route {route.name}: topic {row.topic} -> {row.desired_state}")
    return 0


def list_topics(args: argparse.Namespace) -> int:
    """Print the route's topic rows."""
    from replicator.state.repository import register_routes, route_topics
    from replicator.state.store import StateStore

    config = config_of(args)
    route = config.route(args.route)
    with StateStore(config.state.url) as store:
        with store.session() as session:
            register_routes(session, [route])
            rows = route_topics(session, route.name)
    print(table(["topic", "wanted", "status", "added by", "updated"],
                [[r.topic, r.desired_state, r.status, r.added_by, r.updated_at] for r in rows]))
    return 0
