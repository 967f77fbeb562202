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


def test_authentication_failure_is_named_without_secrets(tmp_path: Path) -> None:
    """A wrong SASL password: `mirrorflow run` exits 1 (a cluster error) naming the cluster and the cause, fast,
    with no traceback and no password; the right one gets in (so the listener works)."""
    import subprocess
    import sys

    from replicator.kafka.admin import cluster_metadata

    (cluster,) = start_pair(tmp_path, {"sasl": free_port()}, heap="384m", sasl_port=free_port(),
                            sasl_users={"alice": "alice-right-secret"})
    try:
        sasl = {"bootstrap.servers": cluster.spec.sasl_bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN", "sasl.username": "alice"}
        assert cluster_metadata({**sasl, "sasl.password": "alice-right-secret"}, timeout=15).brokers == 1
        config = tmp_path / "m.yaml"
        config.write_text(
            f"clusters:\n  eu: {{bootstrap.servers: '{cluster.spec.sasl_bootstrap_servers}', security.protocol: "
            "SASL_PLAINTEXT, sasl.mechanism: PLAIN, sasl.username: alice, sasl.password: wrong-pa55word}\n"
            f"  us: {{bootstrap.servers: '{cluster.spec.bootstrap_servers}'}}\n"
            "routes: [{name: eu-us, source: eu, target: us, topics: [x]}]\n"
            f"state: {{url: 'sqlite:///{tmp_path / 'state.db'}'}}\n")
        began = time.monotonic()
        done = subprocess.run([str(Path(sys.executable).parent / "mirrorflow"), "run", "--config", str(config)],
                              capture_output=True, text=True, timeout=60)
        took = time.monotonic() - began
    finally:
        cluster.stop()
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "source cluster 'eu'" in done.stderr and "authentication failed" in done.stderr, output
    assert "wrong-pa55word" not in output and "Traceback" not in output
    assert took < 15, f"reported after {took:.1f} s: a refused login should not wait for a timeout"


def test_a_killed_broker_leaves_no_zombie(tmp_path: Path) -> None:
    """A zombie has no command line, so the liveness check said "gone" before the exit was collected:
    every broker killed in the fault tests stayed a <defunct> java until pytest exited."""
    (cluster,) = start_pair(tmp_path, {"z": free_port()}, heap="256m")
    pid = cluster.pid()
    assert pid is not None
    cluster.kill()
    assert not Path(f"/proc/{pid}").exists(), Path(f"/proc/{pid}/status").read_text()[:200]
