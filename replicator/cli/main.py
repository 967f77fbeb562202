"""``mirrorflow``: the entry point. Exit codes: 0 ok, 1 failure, 2 bad input, 130 interrupted."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from replicator import __version__
from replicator.cli import (
    audit_cmd,
    backfill_cmd,
    checkpoint_cmd,
    config_cmd,
    db_cmd,
    dev_cmd,
    failback_cmd,
    failover_cmd,
    run_cmd,
    status_cmd,
    sync_cmd,
    topics_cmd,
)
from replicator.cli.commands import LOG_LEVELS, Command, Group, add_command
from replicator.errors import MirrorFlowError
from replicator.logs import LEVEL_ENV, setup_logging

COMMANDS: tuple[Command | Group, ...] = (
    dev_cmd.DEV, dev_cmd.DEMO, run_cmd.RUN, topics_cmd.TOPICS, status_cmd.STATUS, sync_cmd.SYNC,
    checkpoint_cmd.CHECKPOINT, failover_cmd.FAILOVER, failback_cmd.FAILBACK, audit_cmd.AUDIT, backfill_cmd.BACKFILL,
    config_cmd.CONFIG_GROUP, db_cmd.DB,
)
"""Every command, in the order ``mirrorflow --help`` lists them."""


class _Parser(argparse.ArgumentParser):
    """argparse, but bad usage exits 2 with one line instead of the whole usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The whole command tree."""
    parser = _Parser(
        prog="mirrorflow",
        description="Cross-cluster Apache Kafka replication and its runbooks.",
    )
    parser.add_argument("--version", action="version", version=f"mirrorflow {__version__}")
    parser.add_argument(
        "--log-level",
        default=os.environ.get(LEVEL_ENV, "warning"),
        choices=LOG_LEVELS,
        help=f"log verbosity on stderr (env {LEVEL_ENV}; default: warning)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    for declared in COMMANDS:
        add_command(commands, declared)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the process exit code."""
    args = build_parser().parse_args(argv)
    setup_logging(args.log_level)
    try:
        return int(args.handler(args))
    except MirrorFlowError as exc:
        sys.stderr.write(f"mirrorflow: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("mirrorflow: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
