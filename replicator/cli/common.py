"""What several commands share: options declared once (with their environment fallbacks), config, routes."""

from __future__ import annotations

import argparse
import os
from collections.abc import Collection
from pathlib import Path

from replicator.cli.commands import Option
from replicator.config import CONFIG_ENV, Config, RouteConfig, load_config
from replicator.dev.devenv import DEFAULT_HOME, HOME_ENV, PORTS_ENV, parse_ports

SPARK_MASTER_ENV = "MIRRORFLOW_SPARK_MASTER"

CONFIG = Option("--config", metavar="FILE",
                help=f"mirrorflow.yaml to use (env {CONFIG_ENV}; default: ./mirrorflow.yaml)")
"""``--config``: falls back to $MIRRORFLOW_CONFIG (read by ``config_of``), then ./mirrorflow.yaml."""

HOME = Option("--home", type=Path, default=DEFAULT_HOME, env=HOME_ENV,
              help=f"folder of the local clusters' data and config (env {HOME_ENV}; default: {DEFAULT_HOME}); "
              f"ports: env {PORTS_ENV}, default primary=19092,backup=29092")
"""``--home``: where the local clusters and the demo's files live."""

MASTER = Option("--master", env=SPARK_MASTER_ENV, help=f"Spark master (env {SPARK_MASTER_ENV}; default: local[2])")
"""``--master``: the Spark master of the commands that run a local Spark job."""

JSON = Option("--json", action="store_true", help="machine-readable output")
"""``--json`` of the reports (status): the rows as JSON."""


def every_route(verb: str) -> Option:
    """``--route`` of a command that, unless told which, works on every route of the config."""
    return Option("--route", action="append", metavar="NAME",
                  help=f"route to {verb} (repeatable; default: every route of the config)")


def config_of(args: argparse.Namespace) -> Config:
    """Load the config the arguments (or the environment) name."""
    return load_config(args.config, os.environ)


def routes_of(config: Config, names: Collection[str] | None) -> list[RouteConfig]:
    """The routes ``--route`` names, in that order (an unknown name is bad input), else every route of the config."""
    return [config.route(name) for name in names] if names else list(config.routes)


def dev_ports() -> dict[str, int]:
    """The local clusters' broker ports ($MIRRORFLOW_DEV_PORTS or 19092 and 29092)."""
    return parse_ports(os.environ.get(PORTS_ENV))
