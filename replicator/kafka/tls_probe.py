"""One TLS handshake with a broker's listener, with the client's own trust settings, to say *why* a
connection failed where librdkafka only says "certificate verify failed" or nothing at all:

- the broker's certificate expired, names another host, or was signed by a CA the client does not trust;
- a client configured for plaintext met a listener that speaks TLS.

Only called after a connection failed (never on the hot path); it sends no Kafka request and no credential.
"""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True, slots=True)
class Probe:
    """What one handshake showed."""

    address: str
    tls: bool | None  # True: the listener completed a TLS handshake; False: it does not speak TLS; None: unknown
    problem: str | None = None  # the verification failure, in OpenSSL's words


def first_address(bootstrap_servers: str) -> tuple[str, int] | None:
    """``(host, port)`` of the first entry of a ``bootstrap.servers`` list (``PROTO://`` prefixes allowed)."""
    entry = bootstrap_servers.split(",")[0].strip().split("://")[-1]
    host, _, port = entry.rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _context(properties: Mapping[str, str], verify: bool) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if not verify or properties.get("enable.ssl.certificate.verification", "true").lower() == "false":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    context.check_hostname = properties.get("ssl.endpoint.identification.algorithm", "https").lower() != "none"
    location = properties.get("ssl.ca.location")
    if properties.get("ssl.ca.pem"):
        context.load_verify_locations(cadata=properties["ssl.ca.pem"])
    elif location and location != "probe":
        if os.path.isdir(location):
            context.load_verify_locations(capath=location)
        else:
            context.load_verify_locations(cafile=location)
    else:
        context.load_default_certs()
    return context


def probe(bootstrap_servers: str, properties: Mapping[str, str], *, verify: bool = True,
          timeout: float = PROBE_TIMEOUT_S) -> Probe:
    """A TLS handshake with the first bootstrap address, verifying the broker as the client would (``verify``),
    or only asking whether it speaks TLS at all."""
    address = first_address(bootstrap_servers)
    if address is None:
        return Probe(bootstrap_servers, None)
    where = f"{address[0]}:{address[1]}"
    try:
        context = _context(properties, verify)
    except (OSError, ssl.SSLError, ValueError):
        return Probe(where, None)  # trust settings the client itself reports on
    try:
        with socket.create_connection(address, timeout=timeout) as raw:
            with context.wrap_socket(raw, server_hostname=address[0]):
                return Probe(where, True)
    except ssl.SSLCertVerificationError as exc:
        return Probe(where, True, exc.verify_message or str(exc))
    except ssl.SSLError as exc:
        # A plaintext listener answers a ClientHello with a Kafka-sized reply or closes: no TLS record.
        plain = any(s in str(exc) for s in ("WRONG_VERSION_NUMBER", "wrong version number", "record layer failure",
                                            "packet length too long", "UNEXPECTED_EOF", "EOF occurred"))
        return Probe(where, False if plain else None)
    except (ConnectionResetError, BrokenPipeError):
        return Probe(where, False)
    except OSError:
        return Probe(where, None)  # refused, unreachable, timed out: nothing learned

