"""Longest modules first, so the processes of ``make test``'s first part finish together.

pytest-xdist's ``--dist loadfile`` hands out whole modules in collection order, a new one to a
process as it runs dry; by default it first reorders them by their number of tests, which puts the
long integration modules (few tests, minutes each) last, and the run then ends on one of them with
the other process idle. ``tests/module_seconds.json`` holds what each module took in a measured run
(rewrite it with ``--module-seconds-out``); a module not in it counts as ``UNKNOWN_S``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

SECONDS_FILE = Path(__file__).resolve().parent / "module_seconds.json"
UNKNOWN_S = 30.0  # a new module: as long as a middling integration module, so it does not end the run

T = TypeVar("T")


def load_seconds(path: Path = SECONDS_FILE) -> dict[str, float]:
    """The measured seconds per module path; empty when the file is missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}


def longest_first(items: Sequence[T], modules: Sequence[str], seconds: Mapping[str, float]) -> list[T]:
    """``items`` (``modules[i]`` the module of ``items[i]``) with whole modules ordered by their seconds,
    longest first (pure). Within a module the order is kept; modules of equal seconds keep theirs."""
    first_seen: dict[str, int] = {}
    for i, module in enumerate(modules):
        first_seen.setdefault(module, i)

    def rank(i: int) -> tuple[float, int, int]:
        return -seconds.get(modules[i], UNKNOWN_S), first_seen[modules[i]], i

    return [items[i] for i in sorted(range(len(items)), key=rank)]


def module_totals(durations: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Seconds per module from (node id, seconds) of every setup, call and teardown (pure)."""
    totals: dict[str, float] = defaultdict(float)
    for nodeid, seconds in durations:
        totals[nodeid.split("::", 1)[0]] += seconds
    return {module: round(total, 1) for module, total in sorted(totals.items())}
