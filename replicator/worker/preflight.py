"""Checks before a route starts: both clusters answer, it cannot copy onto itself, an exactly-once route's
target can run transactions.

(That it was not failed over is asked first, of the state DB: see replicator.worker.startup.)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata, ConfigResource

from replicator.config import Config, RouteConfig
from replicator.domain.naming import group_id, positions_group_id
from replicator.errors import ClusterError, ConfigError, UsageError
from replicator.kafka.admin import ANSWER_GRACE_S, admin_client, connect
from replicator.kafka.clients import admin_settings
from replicator.kafka.group_members import active_members
from replicator.kafka.groups import list_groups
from replicator.waiting import until_answers
from replicator.worker.timeouts import WorkerTimeouts

log = logging.getLogger(__name__)


def wait_for_clusters(config: Config, route: RouteConfig, stop: threading.Event) -> WorkerTimeouts | None:
    """``check_clusters`` until both clusters answer (a cluster restarting or cut off is waited for, a
    refused login or bad config is raised at once): the route's worker's timeouts; None when ``stop`` came
    first."""
    where = (f"source={config.cluster(route.source).bootstrap_servers} "
             f"target={config.cluster(route.target).bootstrap_servers}")
    return until_answers(lambda: check_clusters(config, route), stop, what=f"a cluster of route {route.name}",
                         where=where, routes=[route.name])


def check_clusters(config: Config, route: RouteConfig, timeout: float = 5.0) -> WorkerTimeouts:
    """The route's worker's timeouts, read from the target (``worker_timeouts``) once both clusters answered; a
    clear error (no secrets) when a cluster does not answer (``retriable``), refuses us, or the route would loop
    on itself."""
    answers = {side: _answer(config, route, side, timeout) for side in ("source", "target")}
    ids = {side: meta.cluster_id for side, (_, meta) in answers.items()}
    target = read_target(*answers["target"], timeout)
    if route.guarantee == "exactly-once":
        check_transactions(config, route, target)
    check_one_guarantee(config, route)
    if ids["source"] == ids["target"] and route.policy == "identity":
        raise ConfigError(
            f"route {route.name}: source {route.source!r} and target {route.target!r} are the same cluster "
            f"(id {ids['source']}); with policy identity it would copy every topic onto itself"
        )
    return worker_timeouts(route, target)


TRANSACTION_LOG = "__transaction_state"
PRODUCER_MEMORY = "producer.id.expiration.ms"


@dataclass(frozen=True)
class Target:
    """What the route's start needs of its target, in one read: how many brokers it has, whether its
    transaction state log exists, and the settings of one of its brokers (empty, with ``unread`` saying why,
    when the brokers refused them or did not answer)."""

    brokers: int = 0
    transaction_log: bool = False
    settings: Mapping[str, str] = field(default_factory=dict)
    unread: str | None = None


def _answer(config: Config, route: RouteConfig, side: str, timeout: float) -> tuple[AdminClient, ClusterMetadata]:
    """The ``side`` cluster's admin client and metadata; ClusterError naming the route, the side and the cluster."""
    name = getattr(route, side)
    try:
        return connect(admin_settings(config.cluster(name).client_properties()), timeout)
    except ClusterError as exc:
        raise ClusterError(f"route {route.name}: {side} cluster {name!r} "
                           f"({config.cluster(name).bootstrap_servers}): {exc}", retriable=exc.retriable) from None


def read_target(admin: AdminClient, meta: ClusterMetadata, timeout: float = 5.0) -> Target:
    """The route's target as ``Target`` says, from its metadata (read once, by ``check_clusters``) and the configs
    of its broker of the lowest id."""
    brokers, transaction_log = len(meta.brokers), TRANSACTION_LOG in meta.topics
    if not meta.brokers:
        return Target(brokers, transaction_log, unread="no broker in the metadata")
    broker = ConfigResource(ConfigResource.Type.BROKER, str(min(meta.brokers)))
    try:
        entries = admin.describe_configs([broker], request_timeout=timeout)[broker].result(
            timeout=timeout + ANSWER_GRACE_S)
    except (KafkaException, TimeoutError) as exc:
        return Target(brokers, transaction_log, unread=str(exc) or type(exc).__name__)
    return Target(brokers, transaction_log, {name: str(entry.value) for name, entry in entries.items()})


def check_transactions(config: Config, route: RouteConfig, target: Target) -> None:
    """ConfigError when the target plainly cannot run transactions: its transaction state log does not exist
    yet and needs more replicas than the cluster has brokers (the log is created at the first transaction, and
    never could be). What the brokers do not let us read (configs refused) is left to the worker's start of
    transactions, which names what it meets."""
    if target.transaction_log or not target.brokers:
        return
    value = target.settings.get("transaction.state.log.replication.factor", "")
    factor = int(value) if value.isdigit() else 0
    if factor > target.brokers:
        raise ConfigError(
            f"route {route.name}: target cluster {route.target!r} ({config.cluster(route.target).bootstrap_servers}) "
            f"cannot run transactions, which guarantee exactly-once needs: transaction.state.log.replication.factor="
            f"{factor} but it has {target.brokers} broker(s), so its transaction state log can never be created (set "
            f"it to at most {target.brokers} on the brokers, or add brokers)")


def worker_timeouts(route: RouteConfig, target: Target) -> WorkerTimeouts:
    """The route's worker's timeouts, with how long the target's brokers remember a producer on a partition
    after the timestamps of its last records there (``WorkerTimeouts.forgets``): their ``producer.id.expiration.ms``,
    when they say (Kafka's default when they do not: DescribeConfigs refused, or no answer in time)."""
    value = target.settings.get(PRODUCER_MEMORY, "")
    if value.isdigit():
        return WorkerTimeouts(forgets=int(value) / 1000)
    log.info("the target's %s not read, taken as Kafka's default (%.0f s) route=%s error=%s", PRODUCER_MEMORY,
             WorkerTimeouts().forgets, route.name, target.unread or "not among the broker's settings")
    return WorkerTimeouts()


def check_one_guarantee(config: Config, route: RouteConfig) -> None:
    """UsageError while workers of the route run with the other guarantee: they are members of another group
    (at-least-once: the route's group on the source; exactly-once: its positions group on the target), so
    both would copy every record. A switch stops every worker first (docs/exactly-once.md)."""
    if route.guarantee == "exactly-once":
        cluster, group, other = route.source, group_id(route), "at-least-once"
    else:
        cluster, group, other = route.target, positions_group_id(route), "exactly-once"
    properties = config.cluster(cluster).client_properties()
    what = f"route {route.name}: cluster {cluster!r}"
    if group not in list_groups(admin_client(admin_settings(properties)), what):  # (quick on a fresh cluster)
        return
    members = active_members(properties, [group], what)[group]
    if members:
        raise UsageError(
            f"route {route.name}: {members} worker(s) of this route run {other} (members of group {group!r} on "
            f"{cluster!r}); both would copy every record: stop them before starting it {route.guarantee}")
