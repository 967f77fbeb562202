"""Checks before a route starts: both clusters answer, it cannot copy onto itself.

(That it was not failed over is asked first, of the state DB: see replicator.worker.startup.)
"""

from __future__ import annotations

from replicator.config import Config, RouteConfig
from replicator.errors import ClusterError, ConfigError
from replicator.kafka.admin import cluster_metadata
from replicator.worker.clients import admin_settings


def check_clusters(config: Config, route: RouteConfig, timeout: float = 15.0) -> None:
    """Raise a clear error (no secrets) when a cluster is unreachable or the route would loop on itself."""
    ids = {}
    for side in ("source", "target"):
        name = getattr(route, side)
        try:
            meta = cluster_metadata(admin_settings(config.cluster(name).client_properties()), timeout)
        except ClusterError as exc:
            raise ClusterError(f"route {route.name}: {side} cluster {name!r} "
                               f"({config.cluster(name).bootstrap_servers}): {exc}") from None
        ids[side] = meta.cluster_id
    if ids["source"] == ids["target"] and route.policy == "identity":
        raise ConfigError(
            f"route {route.name}: source {route.source!r} and target {route.target!r} are the same cluster "
            f"(id {ids['source']}); with policy identity it would copy every topic onto itself"
        )
