"""Loop prevention by record provenance: a header naming the cluster a record was born on.

Names cannot stop loops under ``identity`` or a mapping (``orders`` on both sides
of an active-active pair), so every replicated record carries ``mirrorflow.origin``:
the first route that copies a record stamps its source cluster, later hops keep that
stamp, and a route never writes a record back onto the cluster it was born on.
Under ``prefix`` the same check is belt and braces behind ``is_cycle``.

These functions run once per record on the hot path: they return early on records
without headers (the common case) and never copy or reorder user headers — a
record's headers must reach the target byte for byte, in order, duplicates kept.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final, TypeAlias

ORIGIN_HEADER: Final = "mirrorflow.origin"

Header: TypeAlias = tuple[str, bytes | None]
# What confluent-kafka's Message.headers() returns.
Headers: TypeAlias = list[Header] | None


@lru_cache(maxsize=64)
def _origin_header(source_cluster: str) -> Header:
    # One tuple per cluster for the life of the process, not one bytes per record.
    return (ORIGIN_HEADER, source_cluster.encode("utf-8"))


def origin_of(headers: Headers) -> str | None:
    """The cluster a record was born on: its first non-empty origin header, else None.

    A null or empty origin header (a foreign producer's, not ours) counts as none,
    so ``with_origin`` stamps the record and the loop check keeps working.
    """
    if not headers:
        return None
    for key, value in headers:
        if key == ORIGIN_HEADER and value:
            # ``replace``: a malformed header from a foreign producer must not stop
            # the route; it matches no cluster name, so the record is not skipped.
            return value.decode("utf-8", errors="replace")
    return None


def should_skip(headers: Headers, target_cluster: str) -> bool:
    """True when the record was born on ``target_cluster``: copying it there would loop."""
    return bool(headers) and origin_of(headers) == target_cluster


def with_origin(headers: Headers, source_cluster: str) -> list[Header]:
    """``headers`` with an origin header naming ``source_cluster`` appended if it has none.

    A record keeps its first origin across hops. When it already has one,
    ``headers`` itself is returned, not a copy (so do not mutate the result);
    otherwise a new list: the original headers in order, then the origin.
    """
    if not headers:
        return [_origin_header(source_cluster)]
    if origin_of(headers) is not None:
        return headers
    return [*headers, _origin_header(source_cluster)]


def without_origin(headers: Headers, cluster: str) -> Headers:
    """``headers`` without the origin header naming ``cluster`` (a record back home, as first written).

    ``headers`` itself when there is none to drop (the common case: no copy).
    """
    if not headers or origin_of(headers) != cluster:
        return headers
    return [(key, value) for key, value in headers if key != ORIGIN_HEADER]
