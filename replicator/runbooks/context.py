"""What every step of a MirrorFlow runbook gets: the config, the route, a progress printer, the run's saver."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from replicator.config import Config, RouteConfig

R = TypeVar("R")


@dataclass(frozen=True)
class Ctx(Generic[R]):
    """The config, the route, a progress printer and the run's saver (a dry run: returns the run as it is).

    A step saves the run itself only when what it did must survive its own failure
    (a route marked failed over); the engine saves it after every step anyway.
    """

    config: Config
    route: RouteConfig
    say: Callable[[str], None]
    save: Callable[[R], R]
