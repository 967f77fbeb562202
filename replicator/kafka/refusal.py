"""Which client errors mean "this cluster refuses us" (wrong password, certificate, protocol), and how each is
said: one line naming the cause, from what librdkafka reported (it never includes a password).

A refused connection is final: asking again gets the same answer, so a worker stops at once instead of
waiting for a cluster that is up. Everything else (down, restarting, cut off) may answer later.
"""

from __future__ import annotations

import re

from confluent_kafka import KafkaError

# TLS alerts a broker sends when it does not accept the client's certificate (or got none).
_CERT_ALERT = re.compile(r"alert (bad certificate|certificate required|unknown ca|certificate expired|"
                         r"certificate revoked|certificate unknown|unsupported certificate|access denied)")
_OTHER_ALERT = re.compile(r"alert (handshake failure|protocol version|insufficient security|decrypt error)")


def refusal(error: KafkaError) -> str | None:
    """The cause, when ``error`` (from an ``error_cb``) means the cluster refuses this client; None otherwise."""
    code, text = error.code(), error.str()
    if code == KafkaError._AUTHENTICATION:
        return f"authentication failed (check sasl.username / sasl.password / sasl.mechanism): {text}"
    if code == KafkaError._SSL:
        return f"TLS handshake failed (check ssl.* and security.protocol): {text}"
    if code == KafkaError._TRANSPORT:
        if "connecting to a PLAINTEXT broker listener" in text:
            return ("the listener does not speak TLS: security.protocol is SSL or SASL_SSL but the broker's "
                    f"listener is plaintext (use PLAINTEXT or SASL_PLAINTEXT, or the broker's TLS port): {text}")
        if _CERT_ALERT.search(text):
            return ("the broker refused the client certificate (check ssl.certificate.location / "
                    f"ssl.key.location, that it has not expired, and that the broker trusts its CA): {text}")
        if _OTHER_ALERT.search(text):
            return f"the broker refused the TLS handshake (check ssl.* and security.protocol): {text}"
    if error.fatal():
        return text
    return None


def speaks_tls_hint(protocol: str, where: str) -> str:
    """What to say when a plaintext client met a listener that answered a TLS handshake."""
    wanted = "SASL_SSL" if protocol.upper().startswith("SASL") else "SSL"
    return (f"the listener at {where} speaks TLS but security.protocol is {protocol.upper()}: set "
            f"security.protocol: {wanted} (and ssl.ca.location to the CA that signed the broker's certificate)")


def certificate_hint(problem: str) -> str:
    """What to do about a failed verification of the broker's certificate, from OpenSSL's words."""
    lowered = problem.lower()
    if "expired" in lowered:
        return "the broker's certificate has expired (renew it on the broker)"
    if "not yet valid" in lowered:
        return "the broker's certificate is not valid yet (check the clocks)"
    if "hostname mismatch" in lowered or "ip address mismatch" in lowered:
        return (f"the broker's certificate does not name the address the client connected to ({problem}); "
                "connect by a name it lists, or reissue it with that name")
    if "issuer" in lowered or "self-signed" in lowered or "self signed" in lowered:
        return ("the broker's certificate is not signed by a CA the client trusts (set ssl.ca.location to the CA "
                f"that signed it): {problem}")
    return f"the broker's certificate was refused: {problem}"
