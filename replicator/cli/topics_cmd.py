"""``mirrorflow topics add|remove|pause|resume|list --route ROUTE [--topic TOPIC]`` (or ``ROUTE [TOPIC]``): change
a running route's topics, no restart."""

from __future__ import annotations

import argparse

from replicator.cli.commands import Command, Group, Option
from replicator.cli.common import CONFIG, config_of
from replicator.cli.output import table
from replicator.errors import UsageError


def _route_and_topic(args: argparse.Namespace, topic_wanted: bool) -> tuple[str, str | None]:
    """The route and topic, given as ``--route``/``--topic`` or, as before, by position (``ROUTE [TOPIC]``)."""
    words = list(args.names)
    route = args.route or (words.pop(0) if words else None)
    topic = getattr(args, "topic", None)
    if topic_wanted and topic is None and words:
        topic = words.pop(0)
    command = f"topics {args.action}"
    if route is None:
        raise UsageError(f"{command}: name the route (--route NAME)")
    if topic_wanted and topic is None:
        raise UsageError(f"{command}: name the topic (--topic NAME)")
    if words:
        raise UsageError(f"{command}: unexpected {' '.join(words)!r} (route {route!r}"
                         f"{f', topic {topic!r}' if topic_wanted else ''} given)")
    return route, topic


def change_topic(args: argparse.Namespace) -> int:
    """Record the operator's wish in the state DB; workers re-read it every few seconds."""
    from replicator.domain.route_topic import AddedBy, DesiredState
    from replicator.runbooks.topic_pause import refuse_failed_over
    from replicator.state.repository import register_routes, route_topics, set_topic
    from replicator.state.store import StateStore

    name, topic = _route_and_topic(args, topic_wanted=True)
    config = config_of(args)
    route = config.route(name)
    desired = DesiredState.REPLICATE if args.action == "add" else DesiredState.REMOVED
    with StateStore(config.state.url) as store:
        with store.session() as session:
            register_routes(session, [route])
            refuse_failed_over(route.name, str(topic), {r.topic: r for r in route_topics(session, route.name)})
            row = set_topic(session, route.name, str(topic), desired, AddedBy.CLI)
    print(f"route {route.name}: topic {row.topic} -> {row.desired_state}")
    return 0


def pause_topic(args: argparse.Namespace) -> int:
    """Pause or resume a topic the route copies: its workers stop (or start again) fetching it within seconds,
    every other partition staying where it is; the topic stays on the route."""
    from replicator.runbooks.topic_pause import pause_topic as change

    name, topic = _route_and_topic(args, topic_wanted=True)
    assert topic is not None
    print(change(config_of(args), name, topic, args.action == "pause"))
    return 0


def list_topics(args: argparse.Namespace) -> int:
    """Print the route's topic rows."""
    from replicator.state.repository import register_routes, route_topics
    from replicator.state.store import StateStore

    name, _ = _route_and_topic(args, topic_wanted=False)
    config = config_of(args)
    route = config.route(name)
    with StateStore(config.state.url) as store:
        with store.session() as session:
            register_routes(session, [route])
            rows = route_topics(session, route.name)
    print(table(["topic", "wanted", "status", "added by", "updated"],
                [[r.topic, r.desired_state, r.status, r.added_by, r.updated_at] for r in rows]))
    return 0


ROUTE = Option("--route", metavar="NAME", help="the route (or give it first by position)")
TOPIC = Option("--topic", metavar="NAME", help="the topic (or give it by position, after the route)")
NAMES = Option("names", nargs="*", metavar="ROUTE [TOPIC]", help="the route and topic by position (as before)")

TOPICS = Group("topics", help="add, remove, pause or resume topics of a route (running workers follow within "
               "seconds)", commands=(
    Command("add", change_topic, help="replicate TOPIC on ROUTE, even if the route's patterns do not match it",
            options=(CONFIG, ROUTE, TOPIC, NAMES)),
    Command("remove", change_topic, help="stop replicating TOPIC on ROUTE, even if the route's patterns match it",
            options=(CONFIG, ROUTE, TOPIC, NAMES)),
    Command("pause", pause_topic, help="stop copying TOPIC on ROUTE for now: no record fetched, no rebalance, the "
            "topic stays on the route (its lag grows)", options=(CONFIG, ROUTE, TOPIC, NAMES)),
    Command("resume", pause_topic, help="copy a paused TOPIC again, from where it stopped",
            options=(CONFIG, ROUTE, TOPIC, NAMES)),
    Command("list", list_topics, help="the topics of ROUTE: wanted state and last reported status",
            options=(CONFIG, ROUTE, NAMES)),
))
