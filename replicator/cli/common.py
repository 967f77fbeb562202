"""What several commands share: their parsers (with --config), arguments with their environment fallbacks, routes."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from replicator.config import CONFIG_ENV, Config, RouteConfig, load_config
from replicator.dev.devenv import DEFAULT_HOME, HOME_ENV, PORTS_ENV, parse_ports


def add_config_arg(parser: argparse.ArgumentParser) -> None:
    """``--config``: falls back to $MIRRORFLOW_CONFIG, then ./mirrorflow.yaml."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        default=None,
        help=f"mirrorflow.yaml to use (env {CONFIG_ENV}; default: ./mirrorflow.yaml)",
    )


def add_command(commands: Any, name: str, handler: Callable[[argparse.Namespace], int], *, help: str,
                description: str | None = None) -> argparse.ArgumentParser:
    """A command that reads the config: its parser, with ``--config``, run by ``handler``."""
    parser: argparse.ArgumentParser = commands.add_parser(name, help=help, description=description)
    add_config_arg(parser)
    parser.set_defaults(handler=handler)
    return parser


def add_group(commands: Any, name: str, help: str) -> Any:
    """A command group (``mirrorflow NAME ACTION``): the subparsers to add its actions to."""
    return commands.add_parser(name, help=help).add_subparsers(dest="action", metavar="ACTION", required=True)


def config_of(args: argparse.Namespace) -> Config:
    """Load the config the arguments (or the environment) name."""
    return load_config(args.config, os.environ)


def routes_of(config: Config, names: Collection[str] | None) -> list[RouteConfig]:
    """The routes ``--route`` names, in that order (an unknown name is bad input), else every route of the config."""
    return [config.route(name) for name in names] if names else list(config.routes)


def add_home_arg(parser: argparse.ArgumentParser) -> None:
    """``--home``: where the local clusters and the demo's files live."""
    parser.add_argument(
        "--home",
        type=Path,
        default=Path(os.environ.get(HOME_ENV) or DEFAULT_HOME),
        help=f"folder of the local clusters' data and config (env {HOME_ENV}; default: {DEFAULT_HOME}); "
        f"ports: env {PORTS_ENV}, default primary=19092,backup=29092",
    )


def dev_ports() -> dict[str, int]:
    """The local clusters' broker ports ($MIRRORFLOW_DEV_PORTS or 19092 and 29092)."""
    return parse_ports(os.environ.get(PORTS_ENV))
