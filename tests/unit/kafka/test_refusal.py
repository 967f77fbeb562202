"""Which librdkafka errors mean "refused" (final, said at once) and how each is named; the TLS probe's words."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from replicator.kafka.refusal import certificate_hint, refusal, speaks_tls_hint
from replicator.kafka.tls_probe import first_address

# librdkafka 2.16's own texts, as seen against a broker with TLS listeners.
CASES = [
    (KafkaError._AUTHENTICATION, "sasl_ssl://h:1/bootstrap: SASL authentication error: Authentication failed during "
     "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256", "authentication failed (check"),
    (KafkaError._SSL, "ssl://h:1/bootstrap: SSL handshake failed: error:0A000086:SSL routines::certificate verify "
     "failed", "TLS handshake failed (check ssl.* and security.protocol)"),
    (KafkaError._TRANSPORT, "ssl://h:1/bootstrap: SSL handshake failed: Disconnected: SSL connection closed by peer: "
     "connecting to a PLAINTEXT broker listener? (after 4ms in state SSL_HANDSHAKE)",
     "the listener does not speak TLS: security.protocol is SSL or SASL_SSL"),
    (KafkaError._TRANSPORT, "ssl://h:1/bootstrap: Receive failed: error:0A000412:SSL routines::ssl/tls alert bad "
     "certificate: SSL alert number 42 (after 22ms in state APIVERSION_QUERY)",
     "the broker refused the client certificate"),
    (KafkaError._TRANSPORT, "ssl://h:1/bootstrap: Receive failed: ssl/tls alert certificate expired",
     "the broker refused the client certificate"),
    (KafkaError._TRANSPORT, "ssl://h:1/bootstrap: SSL handshake failed: tlsv1 alert protocol version",
     "the broker refused the TLS handshake"),
]


@pytest.mark.parametrize(("code", "text", "named"), CASES, ids=[c[2][:30] for c in CASES])
def test_a_refusal_is_named_with_librdkafka_s_own_words(code: int, text: str, named: str) -> None:
    said = refusal(KafkaError(code, text))
    assert said is not None and said.startswith(named) and said.endswith(text)


@pytest.mark.parametrize("text", [
    "127.0.0.1:9092/bootstrap: Connect to ipv4#127.0.0.1:9092 failed: Connection refused",
    "127.0.0.1:9092/1: Disconnected (after 40ms in state UP)",
    "sasl_plaintext://127.0.0.1:1/bootstrap: Disconnected: connection closed by peer: receive 0 after POLLIN",
])
def test_a_cluster_that_is_down_or_cut_off_is_not_a_refusal(text: str) -> None:
    assert refusal(KafkaError(KafkaError._TRANSPORT, text)) is None
    assert refusal(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down")) is None


def test_a_fatal_error_is_final() -> None:
    assert refusal(KafkaError(KafkaError._FENCED, "fenced", fatal=True)) == "fenced"


@pytest.mark.parametrize(("problem", "named"), [
    ("certificate has expired", "the broker's certificate has expired"),
    ("IP address mismatch, certificate is not valid for '127.0.0.1'.", "does not name the address"),
    ("Hostname mismatch, certificate is not valid for 'kafka-1'.", "does not name the address"),
    ("unable to get local issuer certificate", "not signed by a CA the client trusts"),
    ("self-signed certificate in certificate chain", "not signed by a CA the client trusts"),
    ("certificate is not yet valid", "not valid yet"),
    ("certificate revoked", "was refused: certificate revoked"),
])
def test_a_broker_certificate_that_fails_verification_says_which_way(problem: str, named: str) -> None:
    assert named in certificate_hint(problem)


def test_the_hint_for_a_plaintext_client_at_a_tls_listener_names_the_protocol_to_set() -> None:
    assert "set security.protocol: SASL_SSL" in speaks_tls_hint("sasl_plaintext", "h:1")
    assert "set security.protocol: SSL" in speaks_tls_hint("PLAINTEXT", "h:1")


@pytest.mark.parametrize(("servers", "address"), [
    ("127.0.0.1:9092", ("127.0.0.1", 9092)), ("b1:9093,b2:9093", ("b1", 9093)),
    ("SASL_SSL://kafka:9094", ("kafka", 9094)), ("[::1]:9092", ("::1", 9092)), ("nohost", None),
])
def test_the_probe_tries_the_first_bootstrap_address(servers: str, address: tuple[str, int] | None) -> None:
    assert first_address(servers) == address
