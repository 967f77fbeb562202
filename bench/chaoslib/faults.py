"""Every fault kind by name, and which of them a run may use."""

from __future__ import annotations

import random
from collections.abc import Sequence

from bench.chaoslib import faults_network, faults_process, faults_workload
from bench.chaoslib.context import FaultFn

FAULTS: dict[str, FaultFn] = {**faults_process.KINDS, **faults_network.KINDS, **faults_workload.KINDS}
POSTGRES_ONLY = frozenset({"statedb-stop"})


class UnknownKind(ValueError):
    """A fault kind the harness does not have, or cannot use with this state database."""


def choose_kinds(requested: Sequence[str], state: str) -> tuple[str, ...]:
    """The kinds of a run: those requested (all that apply by default), checked."""
    unknown = [kind for kind in requested if kind not in FAULTS]
    if unknown:
        raise UnknownKind(f"unknown fault kind {', '.join(map(repr, unknown))} (known: {', '.join(sorted(FAULTS))})")
    if state != "postgres" and POSTGRES_ONLY & set(requested):
        raise UnknownKind(f"{', '.join(sorted(POSTGRES_ONLY & set(requested)))} needs --state postgres")
    if requested:
        return tuple(dict.fromkeys(requested))
    return tuple(kind for kind in FAULTS if state == "postgres" or kind not in POSTGRES_ONLY)


class Deck:
    """Faults drawn like cards: each kind once per round, in an order shuffled from the seed,
    so any run of at least as many cycles as kinds covers them all."""

    def __init__(self, kinds: Sequence[str], rng: random.Random) -> None:
        self._kinds, self._rng, self._left = list(kinds), rng, list[str]()

    def draw(self) -> str:
        """The next kind."""
        if not self._left:
            self._left = list(self._kinds)
            self._rng.shuffle(self._left)
        return self._left.pop()
