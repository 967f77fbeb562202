"""A worker's first words with the state database, waited for while it is away.

Before any route copies, the state DB must have said that none was failed over
(copying onto a target the applications now use would mix old records into what
they read), and the routes are registered. A database that is down, restarting or
locked at that moment is waited for (see :mod:`replicator.waiting`); bad
configuration and a failed-over route end the start at once.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from replicator.config import Config, RouteConfig
from replicator.domain.secrets import redact_url
from replicator.state.failover_hold import refuse_if_failed_over
from replicator.state.repository import register_routes
from replicator.state.store import StateStore
from replicator.waiting import until_answers


def open_state(config: Config, routes: Sequence[RouteConfig], stop: threading.Event) -> StateStore | None:
    """The migrated state DB, every route checked and registered; None when ``stop`` came first."""
    store = until_answers(lambda: _checked(config, routes), stop, what="state database",
                          where=f"url={redact_url(config.state.url)}", routes=[route.name for route in routes])
    if store is not None and stop.is_set():  # the stop came while the database answered: start nothing
        store.close()
        return None
    return store


def _checked(config: Config, routes: Sequence[RouteConfig]) -> StateStore:
    store = StateStore(config.state.url)
    try:
        for route in routes:
            refuse_if_failed_over(config, route, store)
        store.run(lambda session: register_routes(session, routes))
    except BaseException:
        store.close()
        raise
    return store
