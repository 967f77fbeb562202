"""What an audit of a route covers now: its topics, their replicas, and the route's committed offsets.

The topics are the ones the route's workers replicate (``select_topics``: patterns,
topics added or removed by hand, loops left out). The committed offsets are read
with a consumer that never joins the route's group (``Consumer.committed``); an
offset committed for an earlier topic of the same name (another topic id) counts as
nothing committed.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from replicator.config import Config, RouteConfig
from replicator.domain.audit_report import AuditWindow
from replicator.domain.audit_scope import left_out
from replicator.domain.commit_metadata import belongs_to_other_topic, decode_note
from replicator.domain.naming import group_id
from replicator.domain.topic_selection import select_topics
from replicator.errors import ClusterError, ConfigError, UsageError
from replicator.kafka.admin import connected_admin
from replicator.kafka.clients import admin_settings
from replicator.kafka.groups import SETTLING  # a fresh cluster's coordinator answers these for a few seconds
from replicator.kafka.topic_describes import topic_ids
from replicator.kafka.topics import source_partitions
from replicator.runbooks.audit.spec import AuditSpec, TopicSpec

log = logging.getLogger(__name__)

def prepare_spec(config: Config, route_name: str, window: AuditWindow, topics: Iterable[str] | None = None,
                 run_key: str | None = None, config_path: str | None = None, timeout: float = 15.0) -> AuditSpec:
    """The spec of an audit of ``route_name`` over ``window`` (all its topics, or ``topics``)."""
    route = config.route(route_name)
    policy = config.policy(route)
    with _named(route, "source"):
        source = connected_admin(admin_settings(config.cluster(route.source).client_properties()))
    with _named(route, "target"):
        target = connected_admin(admin_settings(config.cluster(route.target).client_properties()))
    with _named(route, "source"):
        added, removed = _manual_topics(config, route)
        selection = select_topics(source_partitions(source, timeout), route.topic_filter, policy, route.target,
                                  added, removed)
    chosen = _chosen(route, selection.names, topics)
    with _named(route, "target"):
        on_target = source_partitions(target, timeout)
    with _named(route, "source"):
        committed = _committed(config, route, source, {t: selection.partitions[t] for t in chosen}, timeout)
    with _named(route, "target"):
        first_copies = _first_copies(config, route, chosen)
    backfilled = _backfilled(config, route)
    specs = []
    for name in chosen:
        parts, replica = selection.partitions[name], policy.format_remote_topic(route.source, name)
        specs.append(TopicSpec(name, replica, parts, on_target.get(replica, 0),
                               tuple(committed.get((name, p)) for p in range(parts)),
                               left_out(first_copies.get(name, {}), backfilled.get(name, {}), parts)))
    notes = _notes(route, specs)
    # As the workers do (route_worker: add_origin): only prefix routes leave headers untouched.
    stamps_origin = route.policy != "prefix"
    return AuditSpec(run_key or uuid.uuid4().hex, route.name, route.source, route.target, window, tuple(specs),
                     config_path, tuple(notes), stamps_origin)


def _notes(route: RouteConfig, topics: list[TopicSpec]) -> list[str]:
    """What the reader of the verdict must know to read it right."""
    notes = [f"target topic {t.target} on {route.target} has {t.target_partitions} of the source's"
             f" {t.partitions} partitions: records of the others count as missing (or pending)"
             for t in topics if t.target_partitions < t.partitions]
    if not topics:
        notes.append(f"route {route.name} replicates no topic now: nothing to audit")
    notes += [f"{t.source}-{p}: source offsets {start}-{end} left out: written before the route's first copy "
              "and not backfilled since" for t in topics for p, start, end in t.left_out]
    if route.on_refused_record == "dead-letter":
        notes.append("records the target refused went to the dead-letter topic and count as missing here")
    return notes


def _first_copies(config: Config, route: RouteConfig, topics: list[str]) -> dict[str, dict[int, int]]:
    """The first source offset the route copied, per topic and partition (its offset syncs on the target)."""
    from replicator.domain.naming import sync_topic_name
    from replicator.runbooks.checkpoints.syncs import first_copies

    name = sync_topic_name(route)
    out: dict[str, dict[int, int]] = {}
    for (topic, partition), offset in first_copies(config.cluster(route.target).client_properties(), name,
                                                   f"offset syncs {name}").items():
        if topic in topics:
            out.setdefault(topic, {})[partition] = offset
    return out


def _backfilled(config: Config, route: RouteConfig) -> dict[str, dict[int, list[tuple[int, int]]]]:
    """The source ranges finished backfills of the route copied, per topic and partition."""
    from replicator.domain.backfill_run import BackfillStatus
    from replicator.state.backfills import runs
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        with store.session() as session:
            done = runs(session, route.name, statuses=[BackfillStatus.DONE])
    out: dict[str, dict[int, list[tuple[int, int]]]] = {}
    for run in done:
        for r in run.ranges:
            out.setdefault(run.topic, {}).setdefault(r.partition, []).append((r.start, r.end))
    return out


def _chosen(route: RouteConfig, replicated: list[str], wanted: Iterable[str] | None) -> list[str]:
    if wanted is None:
        return replicated
    asked = sorted(set(wanted))
    unknown = [t for t in asked if t not in replicated]
    if unknown:
        known = ", ".join(replicated) or "none"
        raise UsageError(f"route {route.name} does not replicate {', '.join(map(repr, unknown))}"
                         f" (its topics now: {known})")
    return asked


@contextmanager
def _named(route: RouteConfig, side: str) -> Iterator[None]:
    """Re-raise a cluster error naming the route's side and cluster."""
    where = f"route {route.name}: {side} cluster {getattr(route, side)!r}"
    try:
        yield
    except KafkaException as exc:
        error = exc.args[0]
        raise ClusterError(f"{where}: {error.str()}", retriable=error.retriable()) from None
    except ClusterError as exc:
        raise ClusterError(f"{where}: {exc}", retriable=exc.retriable) from None


def _manual_topics(config: Config, route: RouteConfig) -> tuple[set[str], set[str]]:
    """Topics added or removed by ``mirrorflow topics`` (the workers read the same rows)."""
    from replicator.state.route_link import StateLink
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        try:
            return StateLink(route, store).manual_topics()
        except ConfigError:  # the route is not registered yet: no topic was added or removed by hand
            return set(), set()


def _committed(config: Config, route: RouteConfig, admin: AdminClient, partitions: dict[str, int],
               timeout: float) -> dict[tuple[str, int], int]:
    """The route's committed offset per (topic, partition); absent where none (or a stale one) is."""
    wanted = [TopicPartition(t, p) for t, n in sorted(partitions.items()) for p in range(n)]
    if not wanted:
        return {}
    ids = topic_ids(admin, sorted(partitions), timeout)  # one deleted meanwhile: read without the check
    # Not AdminClient.list_consumer_group_offsets: with confluent-kafka 2.16 it crashed the
    # process (SIGSEGV) while a fresh cluster's group coordinator was loading.
    consumer = Consumer({**admin_settings(config.cluster(route.source).client_properties()),
                         "group.id": group_id(route), "enable.auto.commit": "false"})
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                found = consumer.committed(wanted, timeout=timeout)
                break
            except KafkaException as exc:
                if exc.args[0].name() not in SETTLING or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()
    out = {}
    for tp in found:
        if tp.offset < 0:
            continue
        if belongs_to_other_topic(decode_note(tp.metadata), ids.get(tp.topic)):
            log.info("stale committed offset ignored route=%s topic=%s partition=%d offset=%d", route.name,
                     tp.topic, tp.partition, tp.offset)
            continue
        out[(tp.topic, tp.partition)] = tp.offset
    return out
