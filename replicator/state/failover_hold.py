"""A failed-over route does not run again: ``mirrorflow run`` asks here first.

Its target now serves the applications; a worker copying the old source onto it
again would mix old records into what they read. The hold lasts until the run that
set it is released (``mirrorflow failover --route R --release``, after a drill) --
a failback will release it when it reverses the route.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from replicator.config import Config, RouteConfig
from replicator.errors import MirrorFlowError

if TYPE_CHECKING:
    from replicator.state.store import StateStore


class RouteFailedOver(MirrorFlowError):
    """The route was failed over: its workers must not start."""

    exit_code = 2


def refuse_if_failed_over(config: Config, route: RouteConfig, store: StateStore | None = None) -> None:
    """Raise :class:`RouteFailedOver` naming the failover run when ``route`` is held.

    ``store``: the caller's open state DB (else one is opened for this question). A DB
    that does not answer raises its :class:`StateStoreError`: silence never means "not held".
    """
    from replicator.state.failovers import route_hold

    if store is None:
        from replicator.state.store import StateStore

        with StateStore(config.state.url) as own:
            return refuse_if_failed_over(config, route, own)
    hold = store.run(lambda session: route_hold(session, route.name))
    if hold is not None:
        stopped = hold.stopped_at.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        raise RouteFailedOver(
            f"route {route.name} was failed over to {hold.target!r} by failover run {hold.run_id} (stopped at "
            f"{stopped}, run {hold.status}): it does not run again, or it would copy {route.source!r} onto "
            f"{hold.target!r} while the applications use it. Fail back instead; after a drill, "
            f"`mirrorflow failover --route {route.name} --release` lets it run again.")


def release(config: Config, route: RouteConfig, now: dt.datetime) -> list[int]:
    """Let ``route`` run again; returns the ids of the runs that held it (empty: it was not held)."""
    from replicator.state.failovers import release_route
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        with store.session() as session:
            return release_route(session, route.name, now)
