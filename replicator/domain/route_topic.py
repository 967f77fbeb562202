"""The topics of a route: what the operator wants, and what the workers report."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum


class DesiredState(StrEnum):
    """What the operator wants for a topic of a route."""

    REPLICATE = "replicate"
    PAUSED = "paused"
    REMOVED = "removed"
    FAILED_OVER = "failed-over"  # moved to the target by a per-topic failover: held like a pause until released


HELD = (DesiredState.PAUSED, DesiredState.FAILED_OVER)  # subscribed, not fetched


class TopicStatus(StrEnum):
    """What the workers last reported for a topic of a route."""

    PENDING = "pending"
    REPLICATING = "replicating"
    STOPPED = "stopped"
    FAILED = "failed"


class AddedBy(StrEnum):
    """Who put the topic on the route."""

    CONFIG = "config"
    CLI = "cli"
    DISCOVERY = "discovery"


@dataclass(frozen=True, slots=True)
class RouteTopic:
    """One source topic of a route, as stored in the state database."""

    route: str
    topic: str
    desired_state: DesiredState
    status: TopicStatus
    added_by: AddedBy
    status_detail: str | None = None
    updated_at: dt.datetime | None = None
