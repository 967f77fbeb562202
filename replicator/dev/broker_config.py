"""What a local KRaft node is (``LocalClusterSpec``) and the ``server.properties`` it runs with (pure).

A cluster is one node by default. Several nodes make one cluster when they share a
cluster id and the controller quorum (``voters``); each node is then broker and
controller at once, and topics get ``replicas`` copies (``min.insync.replicas`` 2 from
three on), so a node can stop or die while the cluster goes on: leaders move.
"""

from __future__ import annotations

import base64
import dataclasses
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from replicator.errors import ClusterError


@dataclass(frozen=True, slots=True)
class TlsListener:
    """A TLS listener of a local cluster: ``SASL_SSL`` (SCRAM-SHA-256/512 logins) or ``SSL`` (with
    ``client_auth``, only clients with a certificate the truststore's CA signed get in: mutual TLS)."""

    name: str  # the listener's name in server.properties (not PLAINTEXT, CONTROLLER, PROXIED)
    port: int
    protocol: str  # SASL_SSL | SSL
    keystore: Path  # PEM: the broker's key, then its certificate chain
    truststore: Path  # PEM: the CA that signs client certificates
    client_auth: bool = False

    def bootstrap_servers(self, host: str) -> str:
        """``host:port`` of this listener."""
        return f"{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class LocalClusterSpec:
    """What a local cluster looks like; every option later work needs is here."""

    name: str
    home: Path
    port: int
    controller_port: int
    host: str = "127.0.0.1"
    heap: str = "512m"
    auto_create_topics: bool = False
    authorizer: bool = False
    super_users: tuple[str, ...] = ("User:ANONYMOUS",)
    extra_properties: Mapping[str, str] = field(default_factory=dict)
    # A second listener, SASL_PLAINTEXT with mechanism PLAIN, for these users (name -> password).
    sasl_port: int | None = None
    sasl_users: Mapping[str, str] = field(default_factory=dict)
    # A second PLAINTEXT listener (named PROXIED) on ``proxied_port`` that advertises
    # ``proxy_advertised`` (``host:port`` of a TCP proxy in front of it). Clients follow the
    # advertised address, so those that bootstrap through the proxy stay behind it, while
    # clients of the main listener talk to the broker directly (fault tests).
    proxied_port: int | None = None
    proxy_advertised: str | None = None
    # TLS listeners (SASL_SSL with SCRAM, SSL with or without client certificates), and the SCRAM users
    # (name -> password) that ``LocalCluster.start`` creates for both SCRAM-SHA-256 and SCRAM-SHA-512.
    tls_listeners: tuple[TlsListener, ...] = ()
    scram_users: Mapping[str, str] = field(default_factory=dict)
    # One node of several (``voters`` set): its id, every node's ``id@host:controller_port``, the cluster id all of
    # them are formatted with, and how many copies topics get. The defaults are a cluster of one node.
    node_id: int = 1
    voters: str | None = None
    cluster_id: str | None = None
    replicas: int = 1

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of the broker listener."""
        return f"{self.host}:{self.port}"

    @property
    def proxied_bootstrap_servers(self) -> str | None:
        """The proxy's ``host:port`` in front of the PROXIED listener, when there is one."""
        return self.proxy_advertised if self.proxied_port is not None else None

    @property
    def sasl_bootstrap_servers(self) -> str | None:
        """``host:port`` of the SASL listener, when there is one."""
        return None if self.sasl_port is None else f"{self.host}:{self.sasl_port}"


def server_properties(spec: LocalClusterSpec) -> dict[str, str]:
    """The broker's ``server.properties`` for ``spec`` (pure)."""
    props = {
        "process.roles": "broker,controller",
        "node.id": str(spec.node_id),
        "controller.quorum.voters": spec.voters or f"{spec.node_id}@{spec.host}:{spec.controller_port}",
        "listeners": f"PLAINTEXT://{spec.host}:{spec.port},CONTROLLER://{spec.host}:{spec.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{spec.host}:{spec.port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(spec.home / "data"),
        "num.partitions": "1",
        "offsets.topic.replication.factor": str(spec.replicas),
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": str(spec.replicas),
        "transaction.state.log.min.isr": str(_min_isr(spec)),
        "share.coordinator.state.topic.replication.factor": str(spec.replicas),
        "share.coordinator.state.topic.min.isr": str(_min_isr(spec)),
        "group.initial.rebalance.delay.ms": "0",
        # KIP-848 groups: notice a crashed member in 10 s, not 45 (local clusters only)
        "group.consumer.session.timeout.ms": "10000",
        "group.consumer.min.session.timeout.ms": "6000",
        "group.consumer.heartbeat.interval.ms": "2000",
        "group.consumer.min.heartbeat.interval.ms": "1000",
        "auto.create.topics.enable": str(spec.auto_create_topics).lower(),
        "log.segment.bytes": str(64 * 1024 * 1024),
        "log.cleaner.backoff.ms": "1000",  # compacted topics compact within seconds (broker default 15 s)
        # The active controller writes a no-op record to the metadata log every 500 ms by default (KIP-835, for
        # a health metric), and the broker fetches each: a third of an idle local broker's CPU (3.0 -> 2.0 % of
        # a core, measured), which a machine running several test clusters feels.
        "metadata.max.idle.interval.ms": "5000",
    }
    if spec.replicas > 1:
        props.update({"default.replication.factor": str(spec.replicas), "min.insync.replicas": str(_min_isr(spec)),
                      # a node back after a restart leads its partitions again within seconds (default 300 s)
                      "leader.imbalance.check.interval.seconds": "10"})
    if spec.authorizer:
        props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        props["super.users"] = ";".join(spec.super_users)
    if spec.sasl_port is not None:
        props.update(_sasl_listener(spec, props))
    if spec.proxied_port is not None:
        props.update(_proxied_listener(spec, props))
    for listener in spec.tls_listeners:
        props.update(_tls_listener(spec, listener, props))
    if spec.tls_listeners:
        # An mTLS client's principal is its certificate's CN (User:mirrorflow), not the whole subject.
        props["ssl.principal.mapping.rules"] = "RULE:^CN=([^,]+).*$/$1/,DEFAULT"
    props.update(spec.extra_properties)
    return props


def _min_isr(spec: LocalClusterSpec) -> int:
    """Writes with acks=all need this many copies: 2 of 3 or more (a node may be away), else all."""
    return 2 if spec.replicas >= 3 else spec.replicas


def _with_listener(props: Mapping[str, str], name: str, bind: str, advertised: str,
                   protocol: str) -> dict[str, str]:
    """``listeners``, ``advertised.listeners`` and the protocol map of ``props`` with one more listener."""
    listeners = props["listeners"].split(",")
    listeners.insert(-1, f"{name}://{bind}")  # CONTROLLER stays last
    return {
        "listeners": ",".join(listeners),
        "advertised.listeners": f"{props['advertised.listeners']},{name}://{advertised}",
        "listener.security.protocol.map": f"{props['listener.security.protocol.map']},{name}:{protocol}",
    }


_SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def _tls_listener(spec: LocalClusterSpec, listener: TlsListener, props: Mapping[str, str]) -> dict[str, str]:
    if listener.protocol not in ("SASL_SSL", "SSL"):
        raise ClusterError(f"cluster {spec.name}: listener {listener.name}: protocol {listener.protocol!r} "
                           "is not a TLS one (SASL_SSL or SSL)")
    address = listener.bootstrap_servers(spec.host)
    out = _with_listener(props, listener.name, address, address, listener.protocol)
    prefix = f"listener.name.{listener.name.lower()}."
    out.update({
        f"{prefix}ssl.keystore.type": "PEM",
        f"{prefix}ssl.keystore.location": str(listener.keystore),
        f"{prefix}ssl.truststore.type": "PEM",
        f"{prefix}ssl.truststore.location": str(listener.truststore),
        f"{prefix}ssl.client.auth": "required" if listener.client_auth else "none",
    })
    if listener.protocol == "SASL_SSL":
        out[f"{prefix}sasl.enabled.mechanisms"] = ",".join(_SCRAM)
        for mechanism in _SCRAM:
            out[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;")
    return out


def _proxied_listener(spec: LocalClusterSpec, props: Mapping[str, str]) -> dict[str, str]:
    """The PROXIED listener added to whatever listeners ``props`` already has."""
    if not spec.proxy_advertised:
        raise ClusterError(f"cluster {spec.name}: proxied_port needs proxy_advertised (the proxy's host:port)")
    return _with_listener(props, "PROXIED", f"{spec.host}:{spec.proxied_port}", spec.proxy_advertised, "PLAINTEXT")


def _sasl_listener(spec: LocalClusterSpec, props: Mapping[str, str]) -> dict[str, str]:
    users = " ".join(f'user_{name}="{password}"' for name, password in spec.sasl_users.items())
    address = f"{spec.host}:{spec.sasl_port}"
    return {
        **_with_listener(props, "SASL_PLAINTEXT", address, address, "SASL_PLAINTEXT"),
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};",
    }


def new_cluster_id() -> str:
    """A random Kafka cluster id (a UUID in Kafka's base64url form)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):  # as Kafka's own: a leading dash reads as an option
            return cluster_id


def cluster_nodes(spec: LocalClusterSpec, count: int, free_port: Callable[[], int]) -> list[LocalClusterSpec]:
    """The ``count`` nodes of one cluster made after ``spec``: each in ``<home>/node-<id>`` with ports of its own
    (from ``free_port``), one cluster id, every node a voter of the quorum, topics with up to three copies."""
    if count < 1:
        raise ClusterError(f"cluster {spec.name}: a cluster needs at least one node, not {count}")
    ports = [(free_port(), free_port()) for _ in range(count)]
    voters = ",".join(f"{n}@{spec.host}:{controller}" for n, (_, controller) in enumerate(ports, 1))
    cluster_id = spec.cluster_id or new_cluster_id()
    return [dataclasses.replace(spec, home=spec.home / f"node-{n}", port=port, controller_port=controller,
                                node_id=n, voters=voters, cluster_id=cluster_id, replicas=min(count, 3))
            for n, (port, controller) in enumerate(ports, 1)]
