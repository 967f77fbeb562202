"""Every fault kind by name, which of them a run may use, and pairs of them at once."""

from __future__ import annotations

import random
from collections.abc import Sequence

from bench.chaoslib import faults_network, faults_process, faults_transactions, faults_workload
from bench.chaoslib.context import Chaos, FaultFn, Injected

FAULTS: dict[str, FaultFn] = {**faults_process.KINDS, **faults_network.KINDS, **faults_workload.KINDS,
                              **faults_transactions.KINDS}
POSTGRES_ONLY = frozenset({"statedb-stop"})
TRANSACTIONS_ONLY = frozenset(faults_transactions.KINDS)  # with --source-transactions
# A pair ("MOVER+TROUBLE") is a fault that moves partitions between the route's workers, injected during one that
# troubles a cluster, the network or the state DB: rebalances in the middle of other trouble.
MOVERS = ("worker-kill", "worker-freeze", "worker-join", "worker-leave", "workers-start-together", "topic-add",
          "partitions-add", "topic-recreate")
TROUBLES = ("source-freeze", "target-freeze", "source-kill", "target-kill", "source-restart", "target-restart",
            "statedb-stop", "statedb-lock", "net-latency", "net-bandwidth", "net-reset", "net-partition",
            "node-partition", "source-txn-hang")
PAIR_TAIL_S = 1.0  # the trouble outlasts the mover at least this long: the mover heals in the middle of it


class UnknownKind(ValueError):
    """A fault kind the harness does not have, or cannot use with this state database."""


def _check_pair(kind: str) -> None:
    parts = kind.split("+")
    if len(parts) != 2 or parts[0] not in MOVERS or parts[1] not in TROUBLES:
        raise UnknownKind(f"fault pair {kind!r}: a pair is MOVER+TROUBLE, a mover one of {', '.join(MOVERS)}, a "
                          f"trouble one of {', '.join(TROUBLES)}")


def choose_kinds(requested: Sequence[str], state: str, transactions: bool = False) -> tuple[str, ...]:
    """The kinds of a run: those requested (all that apply by default), checked; "MOVER+TROUBLE" is a pair.
    ``transactions``: the source's steady records are written in transactions (``--source-transactions``)."""
    unknown = [kind for kind in requested if any(part not in FAULTS for part in kind.split("+"))]
    if unknown:
        raise UnknownKind(f"unknown fault kind {', '.join(map(repr, unknown))} (known: {', '.join(sorted(FAULTS))})")
    for kind in requested:
        if "+" in kind:
            _check_pair(kind)
    parts = {part for kind in requested for part in kind.split("+")}
    if state != "postgres" and POSTGRES_ONLY & parts:
        raise UnknownKind(f"{', '.join(sorted(POSTGRES_ONLY & parts))} needs --state postgres")
    if not transactions and TRANSACTIONS_ONLY & parts:
        raise UnknownKind(f"{', '.join(sorted(TRANSACTIONS_ONLY & parts))} needs --source-transactions")
    if requested:
        return tuple(dict.fromkeys(requested))
    return tuple(kind for kind in FAULTS if (state == "postgres" or kind not in POSTGRES_ONLY)
                 and (transactions or kind not in TRANSACTIONS_ONLY))


def fault_of(kind: str) -> FaultFn:
    """The fault a kind names: one of FAULTS, or a pair of them (``together``)."""
    if "+" not in kind:
        return FAULTS[kind]
    mover, trouble = kind.split("+")
    return together(FAULTS[mover], FAULTS[trouble])


def together(mover: FaultFn, trouble: FaultFn) -> FaultFn:
    """``mover`` injected first (a worker or topic change, whose rebalance follows), then ``trouble`` at once;
    the mover heals after its own hold, while the trouble stays at least PAIR_TAIL_S longer (a killed worker
    starts again into a frozen source, say), then the trouble heals. The mover first: a topic is added while the
    source still answers the harness."""

    def inject(chaos: Chaos) -> Injected:
        moved = mover(chaos)
        try:
            troubled = trouble(chaos)
        except Exception:
            moved.heal()
            raise

        def heal() -> None:
            try:
                moved.heal()
            finally:
                try:
                    chaos.stand(max(troubled.hold_s - moved.hold_s, PAIR_TAIL_S))
                finally:
                    troubled.heal()

        return Injected(troubled.side, f"{moved.detail}, during {troubled.detail}", moved.hold_s, heal,
                        moved.loss_topic)

    return inject


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


class PairDeck:
    """``--overlap``: every fault a pair, a mover of the run's kinds during a trouble of them, each drawn from a
    deck of its own (every mover and every trouble once per round of each)."""

    def __init__(self, kinds: Sequence[str], rng: random.Random) -> None:
        movers, troubles = pairable(kinds)
        self._movers, self._troubles = Deck(movers, rng), Deck(troubles, rng)

    def draw(self) -> str:
        """The next pair, as its kind name."""
        return f"{self._movers.draw()}+{self._troubles.draw()}"


def pairable(kinds: Sequence[str]) -> tuple[list[str], list[str]]:
    """The movers and the troubles among ``kinds``; UnknownKind when either is missing."""
    movers, troubles = [k for k in kinds if k in MOVERS], [k for k in kinds if k in TROUBLES]
    if not movers or not troubles:
        raise UnknownKind(f"--overlap pairs a mover ({', '.join(MOVERS)}) with a trouble ({', '.join(TROUBLES)}): "
                          f"the kinds have {'no mover' if not movers else 'no trouble'}")
    return movers, troubles
