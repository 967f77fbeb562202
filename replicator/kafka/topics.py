"""Which source topics a route replicates right now, and their target topics.

Evaluated at start and every few seconds: the config's patterns, the topics added
or removed by hand (state DB), minus internal topics and topics that would loop.
Target topics are created with the source's partition count (and grown when the
source grew), copying the few topic configs that change what a topic can hold.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from replicator.domain.request_batches import PARTITIONS_PER_REQUEST, weighted_batches
from replicator.errors import ClusterError
from replicator.kafka.admin import ANSWER_GRACE_S
from replicator.kafka.topic_describes import DESCRIBE_TIMEOUT_S, describe_topic_configs
from replicator.logs import listed

log = logging.getLogger(__name__)

# What a replica must share with its source to hold the same records; the rest
# (and ACLs) is the metadata sync's job. message.timestamp.type is left out on
# purpose: LogAppendTime on the target would overwrite the source timestamps.
COPIED_CONFIGS = ("cleanup.policy", "max.message.bytes", "retention.ms", "retention.bytes",
                  "min.compaction.lag.ms", "max.compaction.lag.ms", "segment.bytes")


def source_partitions(admin: AdminClient, timeout: float = 10.0) -> dict[str, int]:
    """Every topic of a cluster and its partition count."""
    try:
        meta = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"cannot list topics: {exc.args[0].str()}", retriable=True) from exc
    return {name: len(t.partitions) for name, t in meta.topics.items() if t.error is None}


def _copied_configs(admin: AdminClient, topics: list[str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for resource, future in describe_topic_configs(admin, topics).items():
        try:
            entries = future.result(timeout=DESCRIBE_TIMEOUT_S + ANSWER_GRACE_S)
        except TimeoutError:
            raise ClusterError(f"cannot read the configs of source topic {resource.name}: no answer in "
                               f"{DESCRIBE_TIMEOUT_S + ANSWER_GRACE_S:.0f} s", retriable=True) from None
        out[resource.name] = {
            k: e.value for k, e in entries.items() if k in COPIED_CONFIGS and not e.is_default and e.value
        }
    return out


# The syncs topic's segments roll hourly: compaction never touches the active segment, and a run's record is
# rewritten at each step (each transaction of an exactly-once route): with the broker's default (7 days) every
# version of every run would be kept a week.
SYNC_TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.ms": str(3_600_000)}


def create_sync_topic(target: AdminClient, name: str) -> None:
    """The route's offset-syncs topic: one partition, so every sync of a source partition
    lands, in order, in one log; compacted. "Already exists" is success (its config is left as it is)."""
    _settle(target.create_topics([NewTopic(name, num_partitions=1, replication_factor=-1,
                                           config=SYNC_TOPIC_CONFIG)], request_timeout=15), "create", "created")


def ensure_target_topics(
    source: AdminClient, target: AdminClient, wanted: Mapping[str, tuple[str, int]],
    per_request: int = PARTITIONS_PER_REQUEST,
) -> list[str]:
    """Create missing target topics (``target name -> (source name, partitions)``), grow small ones, in requests
    of at most ``per_request`` new partitions.

    "Already exists" is success. Returns the target topics created or grown.
    """
    existing = source_partitions(target)
    missing = {name: spec for name, spec in wanted.items() if name not in existing}
    grow = {name: parts for name, (_, parts) in wanted.items() if name in existing and existing[name] < parts}
    changed: list[str] = []
    if missing:
        configs = _copied_configs(source, [src for src, _ in missing.values()])
        new = [NewTopic(name, num_partitions=parts, replication_factor=-1, config=configs.get(src, {}))
               for name, (src, parts) in missing.items()]
        changed += _settle(create_topics_in_batches(target, new, 15, per_request), "create", "created")
    if grow:
        growth = [(name, existing[name], parts) for name, parts in grow.items()]
        changed += _settle(add_partitions_in_batches(target, growth, 15, per_request), "add partitions to", "grown")
    return sorted(changed)


def create_topics_in_batches(admin: AdminClient, new: list[NewTopic], timeout: float,
                             per_request: int = PARTITIONS_PER_REQUEST) -> dict[str, Future[Any]]:
    """``admin.create_topics`` in requests a broker takes (``domain.request_batches``): each topic's future."""
    futures: dict[str, Future[Any]] = {}
    for batch in weighted_batches(new, lambda topic: topic.num_partitions, per_request):
        futures.update(admin.create_topics(batch, request_timeout=timeout))
    return futures


def add_partitions_in_batches(admin: AdminClient, growth: list[tuple[str, int, int]], timeout: float,
                              per_request: int = PARTITIONS_PER_REQUEST) -> dict[str, Future[Any]]:
    """``admin.create_partitions`` for ``(topic, partitions now, partitions wanted)`` in requests adding at most
    ``per_request`` partitions: Kafka's controller fails every topic of a request after its first 10,000 new
    partitions (its records per operation). Each topic's future."""
    futures: dict[str, Future[Any]] = {}
    for batch in weighted_batches(growth, lambda grown: grown[2] - grown[1], per_request):
        futures.update(admin.create_partitions([NewPartitions(name, wanted) for name, _, wanted in batch],
                                               request_timeout=timeout))
    return futures


def _settle(futures: Mapping[str, object], verb: str, done_verb: str) -> list[str]:
    """The topics the request changed; "already exists" (another worker got there first) is no problem."""
    done, problems = [], []
    for name, future in futures.items():
        try:
            future.result(timeout=20)  # type: ignore[attr-defined]
            done.append(name)
        except KafkaException as exc:
            error = exc.args[0]
            if error.name() in ("TOPIC_ALREADY_EXISTS", "INVALID_PARTITIONS"):
                continue  # another worker got there first
            problems.append(f"cannot {verb} target topic {name}: {error.str()}")
    if done:
        log.info("target topics %s count=%d topics=%s", done_verb, len(done), listed(done))
    if problems:
        raise ClusterError("; ".join(problems))
    return done
