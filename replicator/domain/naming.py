"""Names MirrorFlow gives to what it keeps in Kafka for a route (pure).

Every worker of an at-least-once route joins one consumer group on the source; an
exactly-once route's workers join one on the target instead (positions_group_id), and
keep the source group's offsets as a copy. Offset syncs go to one compacted topic on
the target, which no route ever copies.
"""

from __future__ import annotations

from typing import Protocol


class Named(Protocol):
    """A route, as far as its names go."""

    @property
    def name(self) -> str:
        """The route's name."""


def group_id(route: Named) -> str:
    """The consumer group every worker of ``route`` joins."""
    return f"mirrorflow-{route.name}"


def positions_group_id(route: Named) -> str:
    """The consumer group of ``route``'s exactly-once workers, on the *target*: its members share the
    route's partitions (a zombie's transaction is fenced by it) and its offsets carry the source positions
    committed with the records (``replicator.domain.positions``)."""
    return f"mirrorflow-{route.name}.positions"


def sync_topic_name(route: Named) -> str:
    """The route's compacted offset-syncs topic on the target (excluded from every route)."""
    return f"mirrorflow-offset-syncs.{route.name}.internal"
