"""LocalCluster options the later issues rely on, on a real broker: authorizer and super users."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from replicator.kafka.admin import admin_client, create_topics
from tests.support import free_port, start_pair

pytestmark = pytest.mark.kafka

ALL_ACLS = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                            AclOperation.ANY, AclPermissionType.ANY)


def test_authorizer_cluster_accepts_and_lists_acls(tmp_path: Path) -> None:
    (cluster,) = start_pair(tmp_path, {"secured": free_port()}, authorizer=True, heap="384m")
    try:
        bootstrap = cluster.spec.bootstrap_servers
        assert create_topics(bootstrap, {"orders": 1}) == ["orders"]  # the super user may
        admin = admin_client(bootstrap)
        binding = AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                             AclOperation.READ, AclPermissionType.ALLOW)
        for future in admin.create_acls([binding]).values():
            future.result(timeout=15)
        # ACLs reach the authorizer through the metadata log: visible shortly after, not at once.
        deadline, listed = time.monotonic() + 15, []
        while binding not in listed and time.monotonic() < deadline:
            listed = admin.describe_acls(ALL_ACLS).result(timeout=15)
            time.sleep(0.2)
        assert binding in listed
    finally:
        cluster.stop()
    assert not cluster.is_running()
