"""mirrorflow.yaml: what loads, and the one-line message every bad config gets."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from replicator.config import MappingPolicy, load_config, parse_config
from replicator.errors import ConfigError

GOOD = """\
clusters:
  primary: {bootstrap.servers: "127.0.0.1:19092"}
  backup:  {bootstrap.servers: "127.0.0.1:29092", security.protocol: SASL_SSL, sasl.password: "${PW}"}
routes:
  - name: primary-to-backup
    source: primary
    target: backup
    topics: ["orders", "payments\\\\..*"]
    exclude: ["__.*", ".*\\\\.internal"]
    policy: prefix
    guarantee: at-least-once
    consumer: {}
    producer: {linger.ms: 5, enable.idempotence: true}
state: {url: "sqlite:///.mirrorflow/state.db"}
"""
ENV = {"PW": "hunter2"}


def test_design_example_loads_into_typed_objects() -> None:
    config = parse_config(GOOD, environ=ENV)
    route = config.route("primary-to-backup")
    assert (route.source, route.target, route.policy, route.separator) == ("primary", "backup", "prefix", ".")
    assert route.topics == ("orders", r"payments\..*")
    assert route.producer == {"linger.ms": "5", "enable.idempotence": "true"}
    assert config.cluster("backup").client_properties()["sasl.password"] == "hunter2"
    assert config.state.url == "sqlite:///.mirrorflow/state.db"


def test_mapping_policy_and_defaults() -> None:
    text = GOOD.replace("policy: prefix", "policy: {mapping: {orders: orders-dr}}")
    route = parse_config(text, environ=ENV).routes[0]
    assert route.policy == MappingPolicy(mapping={"orders": "orders-dr"})
    minimal = parse_config('clusters: {a: {bootstrap.servers: "h:1"}}')
    assert minimal.routes == () and minimal.state.url.startswith("sqlite:///")


def test_config_objects_are_frozen() -> None:
    config = parse_config(GOOD, environ=ENV)
    name = config.routes[0].name
    with pytest.raises(ValidationError, match="Instance is frozen") as caught:
        config.routes[0].name = "other"  # type: ignore[misc]
    assert [(e["type"], e["loc"]) for e in caught.value.errors()] == [("frozen_instance", ("name",))]
    assert config.routes[0].name == name


def test_secrets_are_masked_in_redacted_view() -> None:
    shown = parse_config(GOOD, environ=ENV).cluster("backup").redacted()
    assert shown["sasl.password"] == "********" and "hunter2" not in str(shown)
    assert shown["security.protocol"] == "SASL_SSL"


BAD = [
    ("unknown cluster", GOOD.replace("target: backup", "target: dr"),
     "routes[0].target: unknown cluster 'dr' (known: backup, primary)"),
    ("duplicate route",
     GOOD.replace("routes:\n",
                  "routes:\n  - {name: primary-to-backup, source: primary, target: backup, topics: [x]}\n"),
     "routes[1].name: duplicate route name 'primary-to-backup'"),
    ("invalid regex", GOOD.replace('"orders"', '"ord(ers"'), "routes[0].topics[0]: invalid regex 'ord(ers'"),
    ("invalid exclude regex", GOOD.replace('"__.*"', '"*x"'), "routes[0].exclude[0]: invalid regex '*x'"),
    ("missing bootstrap", GOOD.replace('{bootstrap.servers: "127.0.0.1:19092"}', "{client.id: x}"),
     "clusters.primary: missing required key 'bootstrap.servers'"),
    ("unknown policy", GOOD.replace("policy: prefix", "policy: mirror"), "routes[0].policy: unknown policy 'mirror'"),
    ("yaml syntax", GOOD.replace("routes:", "routes: [\n"), "mirrorflow.yaml:6:3: YAML syntax error"),
    ("unknown key", GOOD.replace("policy: prefix", "polcy: prefix"), "routes[0].polcy: unknown key"),
    ("missing source", GOOD.replace("    source: primary\n", ""), "routes[0].source: missing required key"),
    ("unset env var", GOOD, "clusters.backup.sasl.password: environment variable PW is not set"),
    ("identity onto itself",
     GOOD.replace("target: backup", "target: primary").replace("policy: prefix", "policy: identity"),
     "routes[0].policy: identity would replicate 'primary' onto itself"),
    ("no clusters", "routes: []", "clusters: missing required key"),
    ("not a mapping", "- a\n", "must be a YAML mapping"),
    ("nested property value", GOOD.replace("linger.ms: 5", "linger.ms: [5]"),
     "routes[0].producer.linger.ms: must be a string, number or boolean"),
]


@pytest.mark.parametrize(("case", "text", "expected"), BAD, ids=[case for case, _, _ in BAD])
def test_bad_config_names_key_path_and_problem(case: str, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, environ={} if case == "unset env var" else ENV)
    message = str(caught.value)
    assert expected in message
    assert "Traceback" not in message and "hunter2" not in message
    assert caught.value.exit_code == 2


def test_a_secret_comes_from_a_file_named_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "backup.password").write_text("s3cr3t-from-file\n")
    text = GOOD.replace('"${PW}"', '"${file:secrets/backup.password}"')
    (tmp_path / "m.yaml").write_text(text)
    config = load_config(tmp_path / "m.yaml", {})
    assert config.cluster("backup").client_properties()["sasl.password"] == "s3cr3t-from-file"
    assert "s3cr3t" not in str(config.cluster("backup").redacted())


def test_a_secret_file_that_cannot_be_read_is_named_without_its_contents(tmp_path: Path) -> None:
    text = GOOD.replace('"${PW}"', f'"${{file:{tmp_path}/nope}}"')
    with pytest.raises(ConfigError) as caught:
        parse_config(text, environ={})
    assert f"clusters.backup.sasl.password: cannot read the file {tmp_path}/nope: No such file or directory" in (
        str(caught.value))
    assert caught.value.exit_code == 2


def test_missing_file_and_unknown_route(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config file not found: .*nope.yaml"):
        load_config(tmp_path / "nope.yaml", {})
    (tmp_path / "m.yaml").write_text(GOOD)
    with pytest.raises(ConfigError, match="unknown route 'x' \\(known: primary-to-backup\\)"):
        load_config(tmp_path / "m.yaml", ENV).route("x")


def test_config_path_comes_from_environment_when_not_given(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(GOOD)
    config = load_config(None, {"MIRRORFLOW_CONFIG": str(tmp_path / "m.yaml"), **ENV})
    assert [r.name for r in config.routes] == ["primary-to-backup"]


@pytest.mark.parametrize(("where", "override", "named"), [
    ("consumer", "enable.auto.commit: true",
     "routes[0].consumer.enable.auto.commit: MirrorFlow sets enable.auto.commit=false"),
    ("consumer", "auto.commit.interval.ms: soon",
     "routes[0].consumer.auto.commit.interval.ms: 'soon': the worker commits what it stored this often; give a "
     "whole number of milliseconds, 0 or more"),
    ("consumer", "auto.commit.interval.ms: -5", "routes[0].consumer.auto.commit.interval.ms: '-5'"),
    ("consumer", "auto.offset.reset: earliest",
     "routes[0].consumer.auto.offset.reset: MirrorFlow sets auto.offset.reset=error (replication without loss "
     "depends on it); remove it (where a route starts without committed offsets is its `start:`"),
    ("consumer", "group.id: mine", "routes[0].consumer.group.id: set by MirrorFlow (every worker of a route joins"),
    ("consumer", "group.instance.id: w1", "routes[0].consumer.group.instance.id: set by MirrorFlow (a static identity"),
    ("producer", "acks: 1", "routes[0].producer.acks: MirrorFlow sets acks=all"),
    ("producer", "message.timeout.ms: 30000",
     "routes[0].producer.message.timeout.ms: MirrorFlow sets message.timeout.ms=0"),
    ("consumer", "statistics.interval.ms: 1000",
     "routes[0].consumer.statistics.interval.ms: not used: MirrorFlow reads no librdkafka statistics"),
])
def test_an_override_the_worker_would_ignore_is_refused(where: str, override: str, named: str) -> None:
    text = ("clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
            f"routes: [{{name: r, source: a, target: b, topics: [t], {where}: {{{override}}}}}]\n")
    with pytest.raises(ConfigError) as refused:
        parse_config(text)
    assert named in str(refused.value)


def test_an_override_that_agrees_with_the_worker_is_accepted() -> None:
    config = parse_config("clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
                          "routes: [{name: r, source: a, target: b, topics: [t], producer: {acks: all, "
                          "enable.idempotence: true, client.id: billing-mirror}}]\n")
    assert config.routes[0].producer["client.id"] == "billing-mirror"


def test_a_cluster_property_the_worker_would_ignore_is_refused() -> None:
    with pytest.raises(ConfigError,
                       match=r"clusters\.a\.isolation\.level: MirrorFlow sets isolation.level=read_committed"):
        parse_config("clusters: {a: {bootstrap.servers: 'h:1', isolation.level: read_uncommitted}}\n")


def test_a_cluster_commit_interval_the_worker_cannot_use_is_refused_at_load() -> None:
    """A cluster's properties reach its routes' consumers too: the interval is checked there as in a route's."""
    with pytest.raises(ConfigError, match=r"clusters\.a\.auto\.commit\.interval\.ms: '1\.5': the worker commits "
                                          r"what it stored this often"):
        parse_config("clusters: {a: {bootstrap.servers: 'h:1', auto.commit.interval.ms: '1.5'}}\n")


def test_a_cluster_setting_nothing_reads_is_refused() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config("clusters: {a: {bootstrap.servers: 'h:1', statistics.interval.ms: '5000'}}\n")
    assert "clusters.a.statistics.interval.ms: not used" in str(refused.value)


ROUTE_EOS = ("clusters: {a: {bootstrap.servers: 'h:1'}, b: {bootstrap.servers: 'h:2'}}\n"
             "routes: [{name: r, source: a, target: b, topics: [t], %s}]\n")


def test_an_exactly_once_route_takes_its_transaction_settings() -> None:
    route = parse_config(ROUTE_EOS % "guarantee: exactly-once, transactions: {interval_ms: 250}").routes[0]
    assert (route.guarantee, route.transactions.interval_ms, route.transactions.max_records) == \
        ("exactly-once", 250, 100_000)


@pytest.mark.parametrize(("fields", "named"), [
    ("transactions: {interval_ms: 250}", "routes[0].transactions: only an exactly-once route has transactions"),
    ("guarantee: exactly-once, transactions: {interval_ms: 0}", "routes[0].transactions.interval_ms"),
    ("guarantee: exactly-twice", "routes[0].guarantee"),
    ("producer: {transactional.id: mine}", "routes[0].producer.transactional.id: set by MirrorFlow"),
])
def test_a_guarantee_setting_that_cannot_be_honoured_is_refused(fields: str, named: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(ROUTE_EOS % fields)
    assert named in str(refused.value)


def test_a_tls_file_that_cannot_be_read_is_refused_at_load_naming_the_key(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    text = GOOD.replace('sasl.password: "${PW}"', f'sasl.password: "${{PW}}", ssl.ca.location: "{ca}", '
                        f'ssl.key.location: "{tmp_path}/client.key"')
    with pytest.raises(ConfigError) as caught:
        parse_config(text, environ=ENV)
    assert str(caught.value).endswith(
        f"clusters.backup.ssl.key.location: cannot read {tmp_path}/client.key: No such file or directory")
    assert caught.value.exit_code == 2 and "hunter2" not in str(caught.value)
    parse_config(text.replace(f', ssl.key.location: "{tmp_path}/client.key"', ""), environ=ENV)  # the CA is read


def test_an_encrypted_client_key_needs_the_password_that_decrypts_it_said_at_load(tmp_path: Path) -> None:
    """librdkafka says "ssl.key.location failed: ... PEM lib" for a missing and a wrong ssl.key.password alike."""
    from replicator.dev.tls import LocalCA

    issued = LocalCA(tmp_path / "ca").issue("client", client=True, key_password="K3y-Pa55")
    (tmp_path / "key.password").write_text("K3y-Pa55\n")
    base = (f'sasl.password: "${{PW}}", ssl.certificate.location: "{issued.cert}", '
            f'ssl.key.location: "{issued.key}"')
    cases = {"": "clusters.backup.ssl.key.password: the key " + f"{issued.key} (ssl.key.location) is encrypted: "
                 "set ssl.key.password",
             ', ssl.key.password: "not-it"': f"clusters.backup.ssl.key.password: does not decrypt the key "
                                              f"{issued.key} (ssl.key.location)"}
    for extra, said in cases.items():
        with pytest.raises(ConfigError) as caught:
            parse_config(GOOD.replace('sasl.password: "${PW}"', base + extra), environ=ENV)
        assert str(caught.value).endswith(said) and caught.value.exit_code == 2
        assert "not-it" not in str(caught.value)
    config_file = tmp_path / "mirrorflow.yaml"
    config_file.write_text(GOOD.replace('sasl.password: "${PW}"', base + ', ssl.key.password: "${file:key.password}"'))
    loaded = load_config(config_file, ENV)
    assert loaded.cluster("backup").properties["ssl.key.password"] == "K3y-Pa55"
