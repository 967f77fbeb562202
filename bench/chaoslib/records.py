"""The verifier's records: numbered, and every byte a function of where and which one it is.

A record of stream (topic, incarnation, partition) number ``seq`` has the key
``incarnation/partition/seq``, a value derived from all four plus padding, and one header
naming it, so a reader on the target can tell which record it holds and whether any byte
changed. Accounting compares 16-byte fingerprints of (key, value, headers, timestamp)
rather than the bytes themselves: a run of an hour holds a million records, and a changed
byte changes the fingerprint all the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

HEADER = "chaos.record"
Headers = Sequence[tuple[str, bytes | None]]


@dataclass(frozen=True, slots=True, order=True)
class Stream:
    """One numbered sequence: a partition of one incarnation of a source topic."""

    topic: str
    incarnation: int  # bumped when the topic is deleted and created again
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}#{self.incarnation}[{self.partition}]"


def key_of(stream: Stream, seq: int) -> bytes:
    """The record's key: enough to find its stream within a replica topic."""
    return f"{stream.incarnation}/{stream.partition}/{seq}".encode()


def parse_key(key: bytes | None) -> tuple[int, int, int] | None:
    """(incarnation, partition, seq) of a key written by ``key_of``; None for anything else."""
    try:
        incarnation, partition, seq = (int(part) for part in (key or b"").decode().split("/"))
    except (UnicodeDecodeError, ValueError):
        return None
    return incarnation, partition, seq


def value_of(stream: Stream, seq: int, padding: int) -> bytes:
    """A value that differs in every byte position from stream to stream and record to record."""
    digest = hashlib.blake2b(f"{stream}/{seq}".encode(), digest_size=32).digest()
    return (digest * (padding // 32 + 1))[: max(padding, 16)]


def headers_of(stream: Stream, seq: int) -> list[tuple[str, bytes | None]]:
    """One header naming the record in full."""
    return [(HEADER, f"{stream.topic}/{stream.incarnation}/{stream.partition}/{seq}".encode())]


def fingerprint(key: bytes | None, value: bytes | None, headers: Headers | None, timestamp: int) -> bytes:
    """16 bytes that change when any byte of key, value, headers or the timestamp does."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (key, value, *(item for name, data in headers or () for item in (name.encode(), data))):
        digest.update(b"N" if part is None else b"B" + len(part).to_bytes(4, "big") + part)
    digest.update(timestamp.to_bytes(8, "big", signed=True))
    return digest.digest()
