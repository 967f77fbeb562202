"""Heartbeat records, and which route copies which heartbeat topic."""

from __future__ import annotations

import pytest

from replicator.config import parse_config
from replicator.domain.heartbeat import (
    Heartbeat,
    decode_heartbeat,
    encode_heartbeat,
    heartbeat_topic,
    latest_heartbeat,
)


def test_a_heartbeat_reads_back_and_is_keyed_by_its_source_cluster() -> None:
    beat = Heartbeat("primary", "p2b", 1_790_000_000_123)
    key, value = encode_heartbeat(beat)
    assert key == b"primary" and decode_heartbeat(value) == beat
    assert value == b'{"source":"primary","route":"p2b","emitted_at_ms":1790000000123}'


@pytest.mark.parametrize("value", [None, b"", b"not json", b"[1]", b'{"source":"a"}',
                                   b'{"source":"a","route":"r","emitted_at_ms":"soon"}'])
def test_a_foreign_record_is_no_heartbeat(value: bytes | None) -> None:
    assert decode_heartbeat(value) is None


def test_the_latest_heartbeat_is_the_routes_newest_from_its_source() -> None:
    values = [encode_heartbeat(b)[1] for b in (
        Heartbeat("primary", "p2b", 30), Heartbeat("primary", "p2b", 50), Heartbeat("primary", "p2b", 40),
        Heartbeat("primary", "other", 90), Heartbeat("dr", "p2b", 99))] + [b"junk", None]
    assert latest_heartbeat(values, "primary", "p2b") == Heartbeat("primary", "p2b", 50)
    assert latest_heartbeat(values, "primary", "nope") is None


CONFIG = """
clusters: {primary: {bootstrap.servers: "a:1"}, backup: {bootstrap.servers: "b:1"}}
routes:
  - {name: p2b, source: primary, target: backup, topics: [".*"]}
  - {name: quiet, source: primary, target: backup, topics: [orders], sla: {heartbeats: false}}
"""
TOPICS = ["orders", "mirrorflow-heartbeats.p2b", "mirrorflow-heartbeats.quiet", "mirrorflow-heartbeats.p2bx",
          "mirrorflow-heartbeats", "dr.mirrorflow-heartbeats.x", "__consumer_offsets"]


def test_a_route_copies_its_own_heartbeat_topic_and_no_other_routes() -> None:
    config = parse_config(CONFIG)
    assert heartbeat_topic("p2b") == "mirrorflow-heartbeats.p2b"
    # .* matches every topic, but not another route's heartbeats (nor Kafka's internals)
    assert config.route("p2b").topic_filter.select(TOPICS) == [
        "dr.mirrorflow-heartbeats.x", "mirrorflow-heartbeats", "mirrorflow-heartbeats.p2b", "orders"]
    assert config.route("quiet").topic_filter.select(TOPICS) == ["orders"]  # sla.heartbeats: false


def test_sla_settings_defaults_and_bad_values_name_their_key() -> None:
    from replicator.errors import ConfigError

    sla = parse_config(CONFIG).route("p2b").sla
    assert (sla.heartbeat_age, sla.max_lag, sla.audit_must_be_clean, sla.webhook) == (30, 100_000, True, None)
    bad = CONFIG.replace("sla: {heartbeats: false}", "sla: {max_lag: -1, webhook: 'ftp://x', lag: 3}")
    with pytest.raises(ConfigError) as caught:
        parse_config(bad)
    assert caught.value.problems == [
        "routes[1].sla.max_lag: Input should be greater than or equal to 0",
        "routes[1].sla.webhook: must be an http:// or https:// URL",
        "routes[1].sla.lag: unknown key",
    ]


def test_a_webhook_token_is_never_shown_in_the_config_dump() -> None:
    text = CONFIG.replace("sla: {heartbeats: false}", "sla: {webhook: 'https://hooks.example/T0/s3cret'}")
    config = parse_config(text)
    assert "s3cret" not in repr(config) and "s3cret" not in str(config.model_dump(mode="json"))
    assert config.route("quiet").sla.webhook.get_secret_value() == "https://hooks.example/T0/s3cret"  # type: ignore[union-attr]
