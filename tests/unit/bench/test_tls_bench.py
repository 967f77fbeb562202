"""The TLS bench's pure parts: each peer's settings for a mode, and its table."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from tls import librdkafka_props, mm2_props, parse_args, table

from replicator.dev.localcluster import LocalCluster, LocalClusterSpec, TlsListener


def _cluster() -> LocalCluster:
    listener = TlsListener("SECURE", 9094, "SASL_SSL", Path("/k.pem"), Path("/ca.pem"))
    return LocalCluster(LocalClusterSpec("s", Path("/x"), 9092, 9093, tls_listeners=(listener,)))


def test_both_peers_log_in_with_scram_over_the_tls_listener_in_tls_mode_only() -> None:
    cluster = _cluster()
    assert librdkafka_props(cluster, "plaintext", "pw", "/ca.pem") == {"bootstrap.servers": "127.0.0.1:9092"}
    assert librdkafka_props(cluster, "tls", "pw", "/ca.pem") == {
        "bootstrap.servers": "127.0.0.1:9094", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "bench", "sasl.password": "pw", "ssl.ca.location": "/ca.pem"}
    java = mm2_props("src", cluster, "tls", "pw", "/ca.pem")
    assert java["src.bootstrap.servers"] == "127.0.0.1:9094" and java["src.ssl.truststore.type"] == "PEM"
    assert java["src.sasl.jaas.config"] == ('org.apache.kafka.common.security.scram.ScramLoginModule required '
                                            'username="bench" password="pw";')
    assert mm2_props("src", cluster, "plaintext", "pw", "/ca.pem") == {"src.bootstrap.servers": "127.0.0.1:9092"}


def test_the_table_shows_what_tls_costs_each_peer_and_their_ratio() -> None:
    def copy(rate: float, cpu: float) -> dict[str, float]:
        return {"records_per_s": rate, "cpu_s_per_gib": cpu}

    report = {"settings": {"records": 1000, "size": 1024}, "machine": {"cpus": 2}, "wall_s": 60,
              "backlog": {"records_per_s": 20_000}, "runs": [
                  {"mode": "plaintext", "mirrorflow": copy(40_000, 15), "mm2": copy(10_000, 70)},
                  {"mode": "tls", "mirrorflow": copy(30_000, 19), "mm2": {"label": "MirrorMaker 2 (tls)",
                                                                           "error": "stalled"}}]}
    lines = table(report).splitlines()
    assert lines[3].split() == ["MirrorFlow", "39.1", "29.3", "0.75", "15.0", "19.0"]
    assert lines[4].split() == ["MirrorMaker", "2", "9.8", "-", "-", "70.0", "-"]
    assert "MirrorFlow / MirrorMaker 2 over plaintext: 4.00" in lines
    assert "MirrorMaker 2 (tls) FAILED: stalled" in lines
    assert parse_args(["--quick"]).records == 100_000 and parse_args([]).records == 500_000
