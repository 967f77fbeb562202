"""What a backfill of a route's topic copies: offsets from times, the route's start, the plan.

The route's start on a partition is its first offset sync (``mirrorflow-offset-syncs.
<route>.internal`` on the target keeps one record per run start), else its committed
offset; the replica, its partitions and the committed offsets come from the audit's
preparation (the same topic selection the workers make).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaException, TopicPartition

from replicator.config import Config
from replicator.domain.audit_report import AuditWindow
from replicator.domain.naming import sync_topic_name
from replicator.errors import ClusterError, UsageError
from replicator.kafka.clients import admin_settings
from replicator.runbooks.audit.prepare import prepare_spec
from replicator.runbooks.backfill.plan import Bounds, plan_ranges
from replicator.runbooks.backfill.spec import BackfillSpec
from replicator.runbooks.checkpoints.syncs import first_copies

log = logging.getLogger(__name__)
Requested = Mapping[int, tuple[int, int | None]]
_ANY_WINDOW = AuditWindow(0, 60_000, 60_000)  # the audit preparation needs one; only its topics are used here


def prepare_backfill(config: Config, route_name: str, topic: str, *, times: tuple[int, int] | None = None,
                     offsets: Requested | None = None, overlap_ok: bool = False, run_key: str | None = None,
                     config_path: str | None = None, timeout: float = 15.0) -> BackfillSpec:
    """The spec of a backfill of ``topic`` by ``times`` (epoch ms ``[start, end)``) or by ``offsets``."""
    if (times is None) == (offsets is None):
        raise UsageError("a backfill takes a time range or offset ranges (one of the two)")
    route = config.route(route_name)
    found = prepare_spec(config, route_name, _ANY_WINDOW, [topic], timeout=timeout).topics[0]
    if found.target_partitions < found.partitions:
        raise UsageError(f"backfill of {topic}: target topic {found.target} on {route.target} has"
                         f" {found.target_partitions} of the source's {found.partitions} partitions"
                         " (run `mirrorflow sync` or the route first)")
    starts = _route_starts(config.cluster(route.target).client_properties(), sync_topic_name(route), topic,
                           f"route {route.name}: target cluster {route.target!r}")
    consumer = Consumer({**admin_settings(config.cluster(route.source).client_properties()),
                         "group.id": f"mirrorflow-backfill-{route.name}", "enable.auto.commit": "false"})
    try:
        bounds = {}
        for p in range(found.partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
            bounds[p] = Bounds(low, high, starts.get(p, found.committed_of(p)))
        requested = offsets if offsets is not None else _by_time(consumer, topic, found.partitions, times, timeout)
    except KafkaException as exc:
        raise ClusterError(f"route {route.name}: source cluster {route.source!r}: {exc.args[0].str()}",
                           retriable=exc.args[0].retriable()) from None
    finally:
        consumer.close()
    ranges = plan_ranges(topic, requested, bounds, offsets is not None, overlap_ok)
    for r in ranges:
        log.info("backfill plan route=%s topic=%s partition=%d offsets=%d-%d route_start=%s clamped=%s",
                 route.name, topic, r.partition, r.start, r.end, bounds[r.partition].route_start, r.clamped)
    return BackfillSpec(run_key or uuid.uuid4().hex, route.name, route.source, route.target, topic, found.target,
                        tuple(ranges), config_path, route.policy != "prefix")  # as the workers do: add_origin


def _by_time(consumer: Consumer, topic: str, partitions: int, times: tuple[int, int] | None,
             timeout: float) -> dict[int, tuple[int, int | None]]:
    """Per partition, the first offsets at or after the start and the end time (-1: none, the end offset)."""
    assert times is not None
    out: dict[int, tuple[int, int | None]] = {}
    found = [consumer.offsets_for_times([TopicPartition(topic, p, ms) for p in range(partitions)], timeout=timeout)
             for ms in times]
    for first, last in zip(*found, strict=True):
        out[first.partition] = (first.offset, None if last.offset < 0 else last.offset)
    for p, (start, _end) in out.items():
        if start < 0:  # nothing at or after the start time: an empty range at the end
            high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)[1]
            out[p] = (high, high)
    return out


def _route_starts(target: Mapping[str, str], syncs_topic: str, topic: str, what: str) -> dict[int, int]:
    """The first source offset the route copied, per partition of ``topic``, from its offset syncs."""
    return {p: offset for (t, p), offset in first_copies(target, syncs_topic, what).items() if t == topic}
