"""``mirrorflow config check``: validate mirrorflow.yaml and show what it means."""

from __future__ import annotations

import argparse

from replicator.cli.commands import Command, Group, Option
from replicator.cli.common import CONFIG, config_of
from replicator.cli.output import as_json, table
from replicator.domain.secrets import redact_url


def check_config(args: argparse.Namespace) -> int:
    """Print the clusters and routes (secrets masked), or fail with exit code 2."""
    config = config_of(args)
    if args.json:
        data = config.model_dump(mode="json")
        data["clusters"] = {name: c.redacted() for name, c in config.clusters.items()}
        data["state"]["url"] = redact_url(config.state.url)
        print(as_json(data))
        return 0
    print(table(
        ["cluster", "bootstrap.servers", "other properties"],
        [[c.name, c.bootstrap_servers, len(c.properties) - 1] for c in config.clusters.values()],
    ))
    print()
    print(table(
        ["route", "source", "target", "policy", "topics", "exclude"],
        [
            [r.name, r.source, r.target, r.policy if isinstance(r.policy, str) else "mapping",
             " ".join(r.topics), " ".join(r.exclude) or "-"]
            for r in config.routes
        ],
    ))
    print(f"\nstate: {redact_url(config.state.url)}")
    return 0


CONFIG_GROUP = Group("config", help="validate the configuration file", commands=(
    Command("check", check_config, help="validate mirrorflow.yaml; exit 2 naming every bad key", options=(
        CONFIG,
        Option("--json", action="store_true", help="print the effective config as JSON"),
    )),
))
