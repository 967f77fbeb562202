"""Checks before a route starts: both clusters answer, it cannot copy onto itself.

(That it was not failed over is asked first, of the state DB: see replicator.worker.startup.)
"""

from __future__ import annotations

import threading

from replicator.config import Config, RouteConfig
from replicator.errors import ClusterError, ConfigError
from replicator.kafka.admin import cluster_metadata
from replicator.kafka.clients import admin_settings
from replicator.waiting import until_answers


def wait_for_clusters(config: Config, route: RouteConfig, stop: threading.Event) -> bool:
    """``check_clusters`` until both clusters answer (a cluster restarting or cut off is waited for, a
    refused login or bad config is raised at once); False when ``stop`` came first."""
    where = (f"source={config.cluster(route.source).bootstrap_servers} "
             f"target={config.cluster(route.target).bootstrap_servers}")
    ids = until_answers(lambda: check_clusters(config, route), stop, what=f"a cluster of route {route.name}",
                        where=where, routes=[route.name])
    return ids is not None


def check_clusters(config: Config, route: RouteConfig, timeout: float = 5.0) -> dict[str, str | None]:
    """Both clusters' ids; a clear error (no secrets) when a cluster does not answer (``retriable``), refuses
    us, or the route would loop on itself."""
    ids: dict[str, str | None] = {}
    for side in ("source", "target"):
        name = getattr(route, side)
        try:
            meta = cluster_metadata(admin_settings(config.cluster(name).client_properties()), timeout)
        except ClusterError as exc:
            raise ClusterError(f"route {route.name}: {side} cluster {name!r} "
                               f"({config.cluster(name).bootstrap_servers}): {exc}", retriable=exc.retriable) from None
        ids[side] = meta.cluster_id
    if ids["source"] == ids["target"] and route.policy == "identity":
        raise ConfigError(
            f"route {route.name}: source {route.source!r} and target {route.target!r} are the same cluster "
            f"(id {ids['source']}); with policy identity it would copy every topic onto itself"
        )
    return ids
