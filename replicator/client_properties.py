"""The client properties a config gives a cluster or a route: read as strings, and checked at load.

What a client would only find when it starts (a file it cannot read, an encrypted key without its
password, a commit interval it cannot use) is said at load, naming the key, never the value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from replicator.domain.commit_pace import INTERVAL_KEY, interval_of

Scalar = str | int | float | bool


class KeyProblem(ValueError):
    """A validation problem below the key pydantic reports, e.g. one list item."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem


def properties_of(raw: Any, where: str) -> dict[str, str]:
    """librdkafka properties as strings; YAML booleans become ``true``/``false``."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise KeyProblem(where, f"must be a mapping of client properties, got {type(raw).__name__}")
    out: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(value, Scalar):
            raise KeyProblem(f"{where}.{key}", "must be a string, number or boolean")
        out[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


# Client properties that name a file (or, for the CA, a folder) the client reads when it starts.
FILE_PROPERTIES = ("ssl.ca.location", "ssl.crl.location", "ssl.certificate.location", "ssl.key.location",
                   "ssl.keystore.location", "sasl.kerberos.keytab")


def unreadable_files(properties: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(key, problem)`` for each file a client would fail to read: said at load, naming the key and the path,
    not later as librdkafka's "ssl.key.location failed: system lib" from whichever command met it first."""
    out = []
    for key in FILE_PROPERTIES:
        path = properties.get(key)
        if not path or (key == "ssl.ca.location" and path == "probe"):  # probe: the system's CA store
            continue
        try:
            if os.path.isdir(path) and key in ("ssl.ca.location", "ssl.crl.location"):
                os.listdir(path)
            else:
                with open(path, "rb"):
                    pass
        except OSError as exc:
            out.append((key, f"cannot read {path}: {exc.strerror}"))
    return out


def client_key_problems(properties: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(key, problem)`` when the PEM key of ``ssl.key.location`` is encrypted and ``ssl.key.password`` is
    missing or does not decrypt it: librdkafka says only "ssl.key.location failed: ... PEM lib" for both."""
    path, password = properties.get("ssl.key.location"), properties.get("ssl.key.password")
    if not path:
        return []
    try:
        with open(path, "rb") as key_file:
            pem = key_file.read()
    except OSError:
        return []  # said by unreadable_files
    if b"BEGIN ENCRYPTED PRIVATE KEY" not in pem and b"Proc-Type: 4,ENCRYPTED" not in pem:  # PKCS#8, OpenSSL's
        return []
    if not password:
        return [("ssl.key.password", f"the key {path} (ssl.key.location) is encrypted: set ssl.key.password")]
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        load_pem_private_key(pem, password.encode())
    except (ValueError, TypeError):
        return [("ssl.key.password", f"does not decrypt the key {path} (ssl.key.location)")]
    return []


def commit_interval_problems(properties: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(key, problem)`` when the interval of the worker's own commits is not one it can use (a consumer's
    ``auto.commit.interval.ms``, in a route's or a cluster's properties; a producer ignores it)."""
    if INTERVAL_KEY not in properties:
        return []
    try:
        interval_of(properties[INTERVAL_KEY])
    except ValueError as exc:
        return [(INTERVAL_KEY, str(exc))]
    return []
