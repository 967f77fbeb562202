"""Heartbeats: a small record each route's workers write to their source cluster every few seconds.

The heartbeat topic is replicated like any topic, so its newest record on the target
tells how old what the target holds is, end to end, as a user sees it. Key: the
source cluster's name; value: JSON ``{"source", "route", "emitted_at_ms"}``.

Each route has its own heartbeat topic on its source, ``mirrorflow-heartbeats.<route>``,
and copies only its own: one topic shared by every route of a cluster would be
copied by each route of the same cluster pair into the same replica (duplicates
in it, audits never clean, and a stuck route's staleness hidden by a healthy one).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

HEARTBEAT_TOPIC = "mirrorflow-heartbeats"  # the heartbeat topics' common prefix


def heartbeat_topic(route: str) -> str:
    """The source topic the workers of ``route`` write their heartbeats to."""
    return f"{HEARTBEAT_TOPIC}.{route}"


def heartbeat_patterns(route: str, enabled: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(include, exclude) patterns a route adds to its topic filter: its own heartbeat topic
    when ``enabled``, and never another route's (whatever its own patterns match)."""
    own = re.escape(heartbeat_topic(route))
    include = (own,) if enabled else ()
    return include, (rf"(?!{own}$){re.escape(HEARTBEAT_TOPIC)}\..*",)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """One heartbeat: which route's workers wrote it on which source cluster, and when (epoch ms)."""

    source: str
    route: str
    emitted_at_ms: int


def encode_heartbeat(beat: Heartbeat) -> tuple[bytes, bytes]:
    """(key, value) of the record."""
    value = {"source": beat.source, "route": beat.route, "emitted_at_ms": beat.emitted_at_ms}
    return beat.source.encode(), json.dumps(value, separators=(",", ":")).encode()


def decode_heartbeat(value: bytes | None) -> Heartbeat | None:
    """The heartbeat in ``value``, or None when it is not one (a foreign record is skipped, not fatal)."""
    try:
        data = json.loads(value or b"")
        beat = Heartbeat(str(data["source"]), str(data["route"]), int(data["emitted_at_ms"]))
    except (ValueError, TypeError, KeyError):
        return None
    return beat


def latest_heartbeat(values: Iterable[bytes | None], source: str, route: str) -> Heartbeat | None:
    """The newest heartbeat of ``route`` from ``source`` among ``values``, or None."""
    mine = [b for b in map(decode_heartbeat, values) if b is not None and (b.source, b.route) == (source, route)]
    return max(mine, key=lambda b: b.emitted_at_ms, default=None)
