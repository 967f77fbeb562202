"""Fence a cluster's topics against writes (DENY ACLs), watch that nothing got past, lift the fence.

What the fence adds and why: :mod:`replicator.domain.fence`. Here: the cluster's
side -- its ACLs and the broker setting that decides topics without any, the
rights the fence needs (DESCRIBE and ALTER on the cluster), the ACLs created and
deleted, and the watch: the topics' ends after the fence took hold, again after
the watch, and the records (not transaction markers) written in between.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AdminClient,
    ConfigResource,
    ResourcePatternType,
    ResourceType,
)

from replicator.config import Config
from replicator.domain.acl_spec import AclSpec
from replicator.domain.checkpoint import Partition
from replicator.domain.fence import Bypass, FencePlan, bypassed, moved, plan_fence
from replicator.errors import ClusterError, UsageError
from replicator.kafka.admin import error_text
from replicator.kafka.clients import admin_settings
from replicator.kafka.log_ranges import count_records, ends
from replicator.runbooks.sync.read import read_acls, to_binding

# Requests a broker accepted before it applied the fence may still land: the watch starts this long after it.
SETTLE_S = 2.0
TIMEOUT_S = 15.0
NEEDED = {AclOperation.DESCRIBE: "DESCRIBE (to list ACLs)", AclOperation.ALTER: "ALTER (to create and delete ACLs)"}


def _admin(config: Config, cluster: str) -> AdminClient:
    return AdminClient(admin_settings(config.cluster(cluster).client_properties()))


def plan(config: Config, cluster: str, topics: Sequence[str], exempt: Sequence[str]) -> FencePlan:
    """The fence of ``topics``; UsageError naming the cluster and what is missing when it cannot be raised."""
    admin = _admin(config, cluster)
    broker = _broker_settings(admin)
    acls, why_not = read_acls(admin, TIMEOUT_S)
    # A broker without an authorizer lists no ACL (Kafka 4: no error); its config says so when readable.
    if (acls is None and why_not is None) or broker.get("authorizer.class.name") == "":
        raise UsageError(f"cluster {cluster!r} has no authorizer (authorizer.class.name is not set on its brokers): "
                         "ACLs cannot fence its topics. Stop its producers yourself, or fail over without --fence")
    _check_rights(admin, cluster)
    if acls is None:
        raise UsageError(f"cluster {cluster!r}: its ACLs cannot be listed ({why_not}): the fence needs "
                         f"{' and '.join(NEEDED.values())} on the cluster")
    # Unreadable: taken as true, the safe side (a topic without ACLs is then refused, not fenced).
    everyone = broker.get("allow.everyone.if.no.acl.found", "true").lower() != "false"
    fence = plan_fence(cluster, topics, acls, exempt, everyone)
    if fence.problems:
        raise UsageError("\n".join(fence.problems))
    return fence


def _check_rights(admin: AdminClient, cluster: str) -> None:
    try:
        described = admin.describe_cluster(include_authorized_operations=True,
                                           request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S + 5)
    except KafkaException as exc:
        raise ClusterError(f"cluster {cluster!r}: cannot describe it: {error_text(exc)}") from None
    granted = set(described.authorized_operations or ())
    if AclOperation.ALL in granted:
        return
    missing = [what for op, what in NEEDED.items() if op not in granted]
    if missing:
        raise UsageError(f"cluster {cluster!r}: the fence needs {' and '.join(missing)} on the cluster, which this "
                         "client's principal lacks: grant them, or use an admin principal in the cluster's "
                         "properties")


def _broker_settings(admin: AdminClient) -> dict[str, str]:
    """A broker's config (empty when it cannot be read: DESCRIBE_CONFIGS on the cluster is missing)."""
    try:
        broker = admin.describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S + 5).nodes[0].id
        resource = ConfigResource(ResourceType.BROKER, str(broker))
        entries = admin.describe_configs([resource], request_timeout=TIMEOUT_S)[resource].result(
            timeout=TIMEOUT_S + 5)
    except (KafkaException, IndexError):
        return {}
    return {name: "" if entry.value is None else str(entry.value) for name, entry in entries.items()}


def raise_fence(config: Config, cluster: str, acls: Iterable[AclSpec]) -> None:
    """Create the fence's ACLs on ``cluster``; ClusterError naming the first refused."""
    wanted = list(acls)
    if not wanted:
        return
    admin = _admin(config, cluster)  # held until the futures are done: a dropped client cancels them
    futures = admin.create_acls([to_binding(a) for a in wanted], request_timeout=TIMEOUT_S)
    for binding, future in futures.items():
        try:
            future.result(timeout=TIMEOUT_S + 5)
        except KafkaException as exc:
            raise ClusterError(f"cluster {cluster!r}: ACL DENY {binding.principal} WRITE on topic {binding.name} "
                               f"refused: {error_text(exc)}") from None


def lift_fence(config: Config, cluster: str, acls: Iterable[AclSpec]) -> int:
    """Delete exactly the fence's ACLs from ``cluster`` (others stay); how many were still there."""
    wanted = list(acls)
    if not wanted:
        return 0
    filters = [AclBindingFilter(ResourceType.TOPIC, a.name, ResourcePatternType.LITERAL, a.principal, a.host,
                                AclOperation[a.operation], to_binding(a).permission_type) for a in wanted]
    deleted, admin = 0, _admin(config, cluster)
    for acl_filter, future in admin.delete_acls(filters, request_timeout=TIMEOUT_S).items():
        try:
            deleted += len(future.result(timeout=TIMEOUT_S + 5))
        except KafkaException as exc:
            raise ClusterError(f"cluster {cluster!r}: the fence's ACL on topic {acl_filter.name} for "
                               f"{acl_filter.principal} could not be deleted: {error_text(exc)}") from None
    return deleted


def watch(config: Config, cluster: str, topics: Sequence[str], seconds: float,
          say: Callable[[str], None]) -> tuple[Bypass, ...]:
    """The records written to ``topics`` during ``seconds`` after the fence settled (empty: none)."""
    admin = _admin(config, cluster)
    partitions = _partitions(admin, cluster, topics)
    time.sleep(SETTLE_S)
    before = ends(admin, cluster, partitions)
    began = time.monotonic()
    while (left := seconds - (time.monotonic() - began)) > 0:
        time.sleep(min(left, 5.0))
        if seconds - (time.monotonic() - began) > 0:
            say(f"  fence: watching {len(partitions)} partition(s) for writes past it, "
                f"{time.monotonic() - began:.0f} of {seconds:g} s")
    ranges = moved(before, ends(admin, cluster, partitions))
    return bypassed(ranges, count_records(config.cluster(cluster).client_properties(), ranges)) if ranges else ()


def _partitions(admin: AdminClient, cluster: str, topics: Sequence[str]) -> list[Partition]:
    try:
        meta = admin.list_topics(timeout=TIMEOUT_S)
    except KafkaException as exc:
        raise ClusterError(f"cluster {cluster!r}: no metadata: {error_text(exc)}") from None
    return [(t, p) for t in topics if t in meta.topics for p in sorted(meta.topics[t].partitions)]
