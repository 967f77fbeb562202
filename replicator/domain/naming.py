"""Names MirrorFlow gives to what it keeps in Kafka for a route (pure).

Every worker of a route joins one consumer group on the source; its offset syncs go
to one compacted topic on the target, which no route ever copies.
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


def sync_topic_name(route: Named) -> str:
    """The route's compacted offset-syncs topic on the target (excluded from every route)."""
    return f"mirrorflow-offset-syncs.{route.name}.internal"
