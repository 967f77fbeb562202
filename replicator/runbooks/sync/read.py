"""Read what a sync plans from: a cluster's topics, topic-level configs and ACLs.

Unreachable cluster: ClusterError (nothing can be planned). One topic whose configs
cannot be read, or ACLs that cannot be listed: recorded in the view, so the rest
still syncs and the run reports that failure.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigSource,
    ResourcePatternType,
    ResourceType,
)

from replicator.domain.acl_spec import AclSpec
from replicator.domain.cluster_view import ClusterView
from replicator.errors import ClusterError
from replicator.kafka.admin import error_name, error_text
from replicator.kafka.topic_describes import describe_topic_configs

log = logging.getLogger(__name__)

# None matches any name, principal and host (confluent-kafka's annotations say str only).
ALL_ACLS = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,  # type: ignore[arg-type]
                            AclOperation.ANY, AclPermissionType.ANY)


def read_view(admin: AdminClient, describe: Iterable[str] = (), acls: bool = False,
              timeout: float = 15.0) -> ClusterView:
    """Topics and partition counts; configs of the ``describe`` topics that exist; ACLs if asked."""
    partitions, names = read_topics(admin, timeout)
    configs, unreadable = read_configs(admin, sorted(set(describe) & set(partitions)), timeout)
    acl_set, acl_error = read_acls(admin, timeout) if acls else (None, None)
    return ClusterView(partitions, names, configs, acl_set, unreadable, acl_error)


def read_topics(admin: AdminClient, timeout: float) -> tuple[dict[str, int], frozenset[str]]:
    """Healthy topics with their partition counts, and every listed name (errors included)."""
    try:
        meta = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"cannot list topics: {error_text(exc)}", retriable=True) from None
    healthy = {name: len(t.partitions) for name, t in meta.topics.items() if t.error is None}
    return healthy, frozenset(meta.topics)


def read_configs(admin: AdminClient, topics: list[str],
                 timeout: float) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Topic-level overrides per topic, and the topics whose configs could not be read (why)."""
    if not topics:
        return {}, {}
    configs: dict[str, dict[str, str]] = {}
    unreadable: dict[str, str] = {}
    for resource, future in describe_topic_configs(admin, topics, timeout).items():
        try:
            entries = future.result(timeout=timeout + 5)
        except KafkaException as exc:
            if error_name(exc) != "UNKNOWN_TOPIC_OR_PART":  # deleted meanwhile: simply gone
                unreadable[resource.name] = error_text(exc)
            continue
        # Overrides only: never a broker's static or default value, never a hidden secret.
        configs[resource.name] = {
            name: entry.value for name, entry in entries.items()
            if ConfigSource(entry.source) == ConfigSource.DYNAMIC_TOPIC_CONFIG and entry.value is not None
            and not entry.is_sensitive
        }
    return configs, unreadable


def read_acls(admin: AdminClient, timeout: float) -> tuple[frozenset[AclSpec] | None, str | None]:
    """Every ACL of the cluster; (None, None) without an authorizer; (None, why) when refused."""
    try:
        bindings = admin.describe_acls(ALL_ACLS, request_timeout=timeout).result(timeout=timeout + 5)
    except KafkaException as exc:
        if error_name(exc) == "SECURITY_DISABLED":
            return None, None
        return None, error_text(exc)
    return frozenset(to_spec(b) for b in bindings), None


def to_spec(binding: AclBinding) -> AclSpec:
    """confluent-kafka's binding as plain data."""
    return AclSpec(ResourceType(binding.restype).name, binding.name,
                   ResourcePatternType(binding.resource_pattern_type).name, binding.principal, binding.host,
                   AclOperation(binding.operation).name, AclPermissionType(binding.permission_type).name)


def to_binding(acl: AclSpec) -> AclBinding:
    """Plain data as confluent-kafka's binding."""
    return AclBinding(ResourceType[acl.resource_type], acl.name, ResourcePatternType[acl.pattern_type],
                      acl.principal, acl.host, AclOperation[acl.operation], AclPermissionType[acl.permission])
