"""Which routes a scheduled DAG run works on: the one its ``route`` param names, now; else every due one."""

from __future__ import annotations

from collections.abc import Callable

from replicator.config import ConfigRef, as_config


def chosen_routes(config: ConfigRef, only: object = None,
                  due: Callable[[ConfigRef, str], bool] | None = None) -> list[str]:
    """``only`` (checked to exist: ConfigError naming the known routes), else every route for which
    ``due(config, route)`` holds (every route when ``due`` is None)."""
    loaded = as_config(config)
    if only:
        return [loaded.route(str(only)).name]
    names = [r.name for r in loaded.routes]
    return names if due is None else [name for name in names if due(loaded, name)]
