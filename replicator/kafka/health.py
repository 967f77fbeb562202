"""Cluster health: can each configured cluster answer a metadata request?"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from replicator.config import Config
from replicator.errors import ClusterError
from replicator.kafka.admin import cluster_metadata

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ClusterHealth:
    """One cluster's answer (or its absence) to a metadata request."""

    name: str
    reachable: bool
    cluster_id: str | None = None
    brokers: int = 0
    topics: int = 0
    latency_ms: float | None = None
    error: str | None = None


def check_cluster(config: Config, name: str, timeout: float = 10.0) -> ClusterHealth:
    """Ask cluster ``name`` of ``config`` for its metadata and time the answer."""
    cluster = config.cluster(name)
    began = time.monotonic()
    try:
        meta = cluster_metadata(cluster.client_properties(), timeout=timeout)
    except ClusterError as exc:
        log.warning("cluster unreachable cluster=%s error=%s", name, exc)
        return ClusterHealth(name=name, reachable=False, error=str(exc))
    health = ClusterHealth(
        name=name,
        reachable=True,
        cluster_id=meta.cluster_id,
        brokers=meta.brokers,
        topics=len(meta.topics),
        latency_ms=round((time.monotonic() - began) * 1000, 1),
    )
    log.info("cluster healthy cluster=%s id=%s brokers=%s", name, meta.cluster_id, meta.brokers)
    return health


def require_healthy(results: list[ClusterHealth]) -> None:
    """Raise one ClusterError naming every unreachable cluster."""
    down = [f"{r.name} ({r.error})" for r in results if not r.reachable]
    if down:
        raise ClusterError("unreachable clusters: " + "; ".join(down), retriable=True)
