"""The broker configuration a LocalClusterSpec produces (pure: no JVM started)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from replicator.dev.broker_config import cluster_nodes
from replicator.dev.localcluster import LocalClusterSpec, new_cluster_id, server_properties
from replicator.errors import ClusterError


def _spec(**options: object) -> LocalClusterSpec:
    return LocalClusterSpec(name="p", home=Path("/x/p"), port=19092, controller_port=19093, **options)  # type: ignore[arg-type]


def test_single_node_kraft_on_loopback() -> None:
    props = server_properties(_spec())
    assert props["process.roles"] == "broker,controller"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:19093"
    assert props["log.dirs"] == "/x/p/data"
    assert props["auto.create.topics.enable"] == "false"
    assert "authorizer.class.name" not in props


def test_authorizer_super_users_and_extra_properties() -> None:
    props = server_properties(
        _spec(authorizer=True, super_users=("User:admin", "User:ANONYMOUS"), auto_create_topics=True,
              extra_properties={"message.max.bytes": "2000000", "num.partitions": "4"})
    )
    assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert props["super.users"] == "User:admin;User:ANONYMOUS"
    assert props["auto.create.topics.enable"] == "true"
    assert props["message.max.bytes"] == "2000000" and props["num.partitions"] == "4"  # extras win


def test_cluster_ids_are_kafka_uuids() -> None:
    ids = {new_cluster_id() for _ in range(2000)}  # ~1 in 64 raw ids starts with "-"
    assert len(ids) == 2000
    assert all(len(i) == 22 and "=" not in i and not i.startswith("-") for i in ids)


def test_without_a_proxy_the_listeners_are_unchanged() -> None:
    plain, sasl = server_properties(_spec()), server_properties(_spec(sasl_port=19094, sasl_users={"u": "p"}))
    assert plain["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19092"
    assert plain["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    assert sasl["listeners"] == ("PLAINTEXT://127.0.0.1:19092,SASL_PLAINTEXT://127.0.0.1:19094,"
                                 "CONTROLLER://127.0.0.1:19093")
    assert not any("PROXIED" in value for value in (*plain.values(), *sasl.values()))
    assert _spec().proxied_bootstrap_servers is None


def test_proxied_listener_advertises_the_proxy() -> None:
    spec = _spec(proxied_port=19095, proxy_advertised="127.0.0.1:31000")
    props = server_properties(spec)
    assert props["listeners"] == ("PLAINTEXT://127.0.0.1:19092,PROXIED://127.0.0.1:19095,"
                                  "CONTROLLER://127.0.0.1:19093")
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19092,PROXIED://127.0.0.1:31000"
    assert props["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PROXIED:PLAINTEXT"
    assert props["inter.broker.listener.name"] == "PLAINTEXT"  # the broker never talks to itself through the proxy
    assert spec.bootstrap_servers == "127.0.0.1:19092"  # direct clients are unaffected
    assert spec.proxied_bootstrap_servers == "127.0.0.1:31000"


def test_proxied_listener_beside_sasl() -> None:
    props = server_properties(_spec(sasl_port=19094, sasl_users={"u": "p"}, proxied_port=19095,
                                    proxy_advertised="127.0.0.1:31000"))
    assert props["listeners"] == ("PLAINTEXT://127.0.0.1:19092,SASL_PLAINTEXT://127.0.0.1:19094,"
                                  "PROXIED://127.0.0.1:19095,CONTROLLER://127.0.0.1:19093")
    assert props["advertised.listeners"].endswith(",SASL_PLAINTEXT://127.0.0.1:19094,PROXIED://127.0.0.1:31000")
    assert props["listener.security.protocol.map"].endswith(",SASL_PLAINTEXT:SASL_PLAINTEXT,PROXIED:PLAINTEXT")


def test_proxied_listener_needs_the_proxy_address() -> None:
    import pytest

    from replicator.errors import ClusterError

    with pytest.raises(ClusterError, match="proxied_port needs proxy_advertised"):
        server_properties(_spec(proxied_port=19095))


def test_tls_listeners_sasl_ssl_with_scram_and_mutual_tls() -> None:
    from replicator.dev.localcluster import TlsListener

    secure = TlsListener("SECURE", 19096, "SASL_SSL", Path("/t/broker.keystore.pem"), Path("/t/ca.pem"))
    mtls = TlsListener("MTLS", 19097, "SSL", Path("/t/broker.keystore.pem"), Path("/t/ca.pem"), client_auth=True)
    props = server_properties(_spec(tls_listeners=(secure, mtls), scram_users={"mirrorflow": "pw"}))
    assert props["listeners"] == ("PLAINTEXT://127.0.0.1:19092,SECURE://127.0.0.1:19096,MTLS://127.0.0.1:19097,"
                                  "CONTROLLER://127.0.0.1:19093")
    assert props["advertised.listeners"] == ("PLAINTEXT://127.0.0.1:19092,SECURE://127.0.0.1:19096,"
                                             "MTLS://127.0.0.1:19097")
    assert props["listener.security.protocol.map"].endswith(",SECURE:SASL_SSL,MTLS:SSL")
    assert props["listener.name.secure.sasl.enabled.mechanisms"] == "SCRAM-SHA-256,SCRAM-SHA-512"
    assert "ScramLoginModule required;" in props["listener.name.secure.scram-sha-512.sasl.jaas.config"]
    assert props["listener.name.secure.ssl.client.auth"] == "none"
    assert props["listener.name.mtls.ssl.client.auth"] == "required"
    assert props["listener.name.mtls.ssl.keystore.type"] == "PEM"
    assert props["listener.name.mtls.ssl.truststore.location"] == "/t/ca.pem"
    assert "pw" not in "".join(props.values())  # SCRAM users are created through the admin API, not here
    assert props["ssl.principal.mapping.rules"].startswith("RULE:^CN=")


def test_a_tls_listener_must_use_a_tls_protocol() -> None:
    import pytest

    from replicator.dev.localcluster import TlsListener
    from replicator.errors import ClusterError

    with pytest.raises(ClusterError, match="listener X: protocol 'SASL_PLAINTEXT' is not a TLS one"):
        server_properties(_spec(tls_listeners=(TlsListener("X", 1, "SASL_PLAINTEXT", Path("k"), Path("c")),)))


def test_a_single_node_keeps_one_copy_of_everything() -> None:
    props = server_properties(_spec())
    assert props["node.id"] == "1"
    assert props["offsets.topic.replication.factor"] == props["transaction.state.log.replication.factor"] == "1"
    assert props["transaction.state.log.min.isr"] == "1"
    assert "default.replication.factor" not in props and "min.insync.replicas" not in props


def test_three_nodes_make_one_cluster_whose_topics_survive_a_node() -> None:
    ports = itertools.count(20000)
    nodes = cluster_nodes(_spec(), 3, lambda: next(ports))
    props = [server_properties(node) for node in nodes]
    assert [p["node.id"] for p in props] == ["1", "2", "3"]
    voters = "1@127.0.0.1:20001,2@127.0.0.1:20003,3@127.0.0.1:20005"
    assert {p["controller.quorum.voters"] for p in props} == {voters}  # one quorum
    assert [p["listeners"] for p in props][1] == "PLAINTEXT://127.0.0.1:20002,CONTROLLER://127.0.0.1:20003"
    assert [p["log.dirs"] for p in props] == [f"/x/p/node-{n}/data" for n in (1, 2, 3)]
    assert len({node.cluster_id for node in nodes}) == 1 and nodes[0].cluster_id is not None
    for p in props:  # acks=all writes go on with one node away
        assert p["default.replication.factor"] == p["offsets.topic.replication.factor"] == "3"
        assert p["transaction.state.log.replication.factor"] == "3"
        assert p["min.insync.replicas"] == p["transaction.state.log.min.isr"] == "2"


def test_a_cluster_of_no_node_is_refused() -> None:
    with pytest.raises(ClusterError, match="cluster p: a cluster needs at least one node, not 0"):
        cluster_nodes(_spec(), 0, lambda: 1)


def test_a_tool_that_failed_is_named_by_its_exception_not_its_last_stack_frame() -> None:
    from replicator.dev.localcluster import java_failure

    stderr = ('Exception in thread "main" org.apache.kafka.common.config.ConfigException: Invalid value 2592000000 '
              'for configuration producer.id.expiration.ms: Not a number of type INT\n'
              '\tat org.apache.kafka.common.config.ConfigDef.parseType(ConfigDef.java:754)\n'
              '\tat kafka.tools.StorageTool.main(StorageTool.scala)\n')
    assert java_failure(stderr) == ("org.apache.kafka.common.config.ConfigException: Invalid value 2592000000 for "
                                    "configuration producer.id.expiration.ms: Not a number of type INT")
    assert java_failure("SLF4J: no binding\nsomething went wrong\n") == "SLF4J: no binding"
    assert java_failure("") == "(nothing on stderr)"
