"""``mirrorflow status``: a table per route, topic and partition."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING

from replicator.cli.commands import Command, Option
from replicator.cli.common import CONFIG, JSON, config_of, routes_of
from replicator.cli.output import as_json, table

if TYPE_CHECKING:
    from replicator.kafka.route_status import PartitionStatus
    from replicator.state.transaction_counts import TransactionTotals


def show_status(args: argparse.Namespace) -> int:
    """Print the routes' partitions (with what retention deleted before they were copied), and each exactly-once
    route's transactions; exit 0 even when lagging (it is a report, not a check)."""
    from replicator.kafka.route_status import (
        partition_owners,
        partition_states,
        retention_losses,
        route_status,
        transaction_totals,
    )

    config = config_of(args)
    routes = routes_of(config, args.route)
    by_route = {route.name: route_status(config, route) for route in routes}
    rows = [s for found in by_route.values() for s in found]
    losses = {route.name: retention_losses(config, route) for route in routes}
    states = {(route.name, *key): state for route in routes
              for key, state in partition_states(config, route, by_route[route.name], losses[route.name]).items()}
    totals = {route.name: transaction_totals(config, route) for route in routes if route.guarantee == "exactly-once"}
    owners = {(route.name, *key): worker for route in routes for key, worker in partition_owners(config, route).items()}
    if args.json:
        print(as_json([{**dataclasses.asdict(s), "lag": s.lag, "state": states[(s.route, s.topic, s.partition)][0],
                        "state_detail": states[(s.route, s.topic, s.partition)][1],
                        "worker": owners.get((s.route, s.topic, s.partition)), **_losses_json(losses, s),
                        **_transactions_json(totals, s.route)} for s in rows]))
        return 0
    print(table(
        ["route", "guarantee", "topic", "partition", "state", "worker", "source end", "committed", "lag",
         "last replicated (UTC)", "lost to retention"],
        [[s.route, s.guarantee, s.topic, s.partition, states[(s.route, s.topic, s.partition)][0].value,
          owners.get((s.route, s.topic, s.partition)), s.end_offset, s.committed, s.lag,
          s.last_replicated.strftime("%Y-%m-%d %H:%M:%S") if s.last_replicated else None, _lost(losses, s)]
         for s in rows],
    ))
    # A detail once per route and state (a failover holds every partition of its route alike).
    said: dict[tuple[str, str, str], list[str]] = {}
    for (route, topic, partition), (state, detail) in states.items():
        if detail and state.value not in ("LOST_RECORDS", "CATCHING_UP"):
            said.setdefault((route, state.value, detail), []).append(f"{topic}[{partition}]")
    for (route, word, detail), where in said.items():
        shown = ", ".join(where[:8]) + (f" and {len(where) - 8} more" if len(where) > 8 else "")
        print(f"{route}: {word} {shown}: {detail}")
    unknown = sorted(name for name, found in losses.items() if found is None)
    if unknown:
        print(f"lost to retention: unknown for {', '.join(unknown)} (state database away)")
    if totals:
        print()
        print(table(["route", "transactions committed", "aborted", "since (UTC)"],
                    [[name, t.committed, t.aborted, t.since.strftime("%Y-%m-%d %H:%M:%S") if t.since else None]
                     if t is not None else [name, "unknown: state database away", None, None]
                     for name, t in totals.items()]))
    return 0


def _lost(losses: dict[str, dict[tuple[str, int], list[tuple[int, int]]] | None], row: PartitionStatus) -> str | None:
    """``150 at [100,250)``: how many records retention deleted before they were copied, and where."""
    ranges = (losses.get(row.route) or {}).get((row.topic, row.partition))
    if not ranges:
        return None
    count = sum(to - start for start, to in ranges)
    return f"{count} at " + " ".join(f"[{start},{to})" for start, to in ranges)


def _losses_json(losses: dict[str, dict[tuple[str, int], list[tuple[int, int]]] | None],
                 row: PartitionStatus) -> dict[str, list[list[int]] | None]:
    """The partition's lost ranges as ``[[from, to], ...]`` (empty: none; null: the state database is away)."""
    found = losses.get(row.route)
    if found is None:
        return {"lost_to_retention": None}
    return {"lost_to_retention": [[start, to] for start, to in found.get((row.topic, row.partition), [])]}


def _transactions_json(totals: dict[str, TransactionTotals | None], route: str) -> dict[str, int | None]:
    """An exactly-once route's transaction counts on each of its rows (null: not known, or no transactions)."""
    found = totals.get(route)
    return {"transactions_committed": found.committed if found else None,
            "transactions_aborted": found.aborted if found else None}


STATUS = Command(
    "status", show_status,
    help="per route and partition: guarantee, state (COPYING, CATCHING_UP, PAUSED, STUCK, FAULTED, LOST_RECORDS, "
         "RECREATED, FAILED_OVER), end offset, committed, lag, last copy, records lost to retention; exactly-once "
         "routes' transactions",
    options=(
        CONFIG,
        Option("--route", action="append", metavar="NAME", help="only this route (repeatable)"),
        JSON,
    ),
)
