"""``mirrorflow topics add|remove|list ROUTE [TOPIC]``: change a running route's topics, no restart."""

from __future__ import annotations

import argparse

from replicator.cli.commands import Command, Group, Option
from replicator.cli.common import CONFIG, config_of
from replicator.cli.output import table


def change_topic(args: argparse.Namespace) -> int:
    """Record the operator's wish in the state DB; workers re-read it every few seconds."""
    from replicator.domain.route_topic import AddedBy, DesiredState
    from replicator.state.repository import register_routes, set_topic
    from replicator.state.store import StateStore

    config = config_of(args)
    route = config.route(args.route)
    desired = DesiredState.REPLICATE if args.action == "add" else DesiredState.REMOVED
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


ROUTE, TOPIC = Option("route"), Option("topic")

TOPICS = Group("topics", help="add or remove topics of a route (running workers follow within seconds)", commands=(
    Command("add", change_topic, help="replicate TOPIC on ROUTE, even if the route's patterns do not match it",
            options=(CONFIG, ROUTE, TOPIC)),
    Command("remove", change_topic, help="stop replicating TOPIC on ROUTE, even if the route's patterns match it",
            options=(CONFIG, ROUTE, TOPIC)),
    Command("list", list_topics, help="the topics of ROUTE: wanted state and last reported status",
            options=(CONFIG, ROUTE)),
))
