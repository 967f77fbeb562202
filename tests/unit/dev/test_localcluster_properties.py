"""The broker configuration a LocalClusterSpec produces (pure: no JVM started)."""

from __future__ import annotations

from pathlib import Path

from replicator.dev.localcluster import LocalClusterSpec, new_cluster_id, server_properties


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
