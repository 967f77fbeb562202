"""Fault-injection run ("Proven under faults"): MirrorFlow workers copy numbered records between two
local clusters while faults are injected one after another; every record is accounted for.

    .venv/bin/python bench/chaos.py --cycles 100 --seed 7
    .venv/bin/python bench/chaos.py --cycles 20 --kinds worker-kill,net-partition --keep
    .venv/bin/python bench/chaos.py --cycles 30 --overlap   # rebalances in the middle of other trouble
    .venv/bin/python bench/chaos.py --cycles 5 --kinds worker-kill+source-freeze

Exit codes: 0 every record accounted for, 1 records lost/changed/reordered, a worker
traceback or a fault the harness could not inject, 2 bad input (an unknown fault kind, a
missing or broken Toxiproxy binary). See bench/README.md.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.chaoslib.context import Settings  # noqa: E402
from bench.chaoslib.faults import FAULTS, UnknownKind, choose_kinds, pairable  # noqa: E402
from bench.chaoslib.report import failures  # noqa: E402
from bench.chaoslib.toxiproxy import ProxyError, check_binary  # noqa: E402
from replicator.dev.localpostgres import pg_bin  # noqa: E402

STARTED = time.monotonic()


class _Parser(argparse.ArgumentParser):
    """argparse, but bad usage exits 2 with one line instead of the whole usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = _Parser(prog="chaos.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=100, help="faults to inject (default 100)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the fault sequence (default 7)")
    parser.add_argument("--kinds", default="", help=f"comma-separated fault kinds (default: all that apply): "
                                                    f"{', '.join(FAULTS)}")
    parser.add_argument("--workers", type=int, default=2, help="mirrorflow run processes of the route (default 2)")
    parser.add_argument("--topics", type=int, default=3, help="source topics written steadily (default 3)")
    parser.add_argument("--partitions", type=int, default=2, help="partitions per topic (default 2)")
    parser.add_argument("--rate", type=float, default=200.0, help="records per second, all topics (default 200)")
    parser.add_argument("--fault-seconds", type=float, default=8.0, help="longest hold of a fault (default 8)")
    parser.add_argument("--state", choices=["sqlite", "postgres"], default=None,
                        help="state DB (default: postgres when its binaries are installed, else sqlite)")
    parser.add_argument("--guarantee", choices=["at-least-once", "exactly-once"], default="at-least-once",
                        help="the route's guarantee (exactly-once: a single duplicate fails the run)")
    parser.add_argument("--overlap", action="store_true",
                        help="each fault a pair: one that moves partitions (a worker or topic change) during one "
                             "that troubles a cluster, the network or the state DB (also as --kinds MOVER+TROUBLE)")
    parser.add_argument("--brokers", type=int, default=1,
                        help="nodes per cluster (default 1: a broker fault is an outage of the side; 3: topics with "
                             "three copies, a broker fault strikes one node and leaders move, a restart rolls)")
    parser.add_argument("--producer-queue", type=int, default=None, metavar="N",
                        help="the workers' producer queue, in records (queue.buffering.max.messages; default "
                             "MirrorFlow's 200,000): a small one makes the harness's rates fill it, so back-pressure "
                             "meets every fault")
    parser.add_argument("--records-age", type=float, default=0.0, metavar="HOURS",
                        help="every record's CreateTime this many hours back (default 0). Over 24: the target's "
                             "brokers forget the workers' producers within a second of each write (they look every "
                             "second), as they do every 10 minutes when a backfill copies records over a day old")
    parser.add_argument("--source-transactions", action="store_true",
                        help="write the steady records in transactions, one in five aborted (its records must never "
                             "arrive), and add the fault kind source-txn-hang: a producer that hangs with a "
                             "transaction open until the source aborts it")
    parser.add_argument("--report", type=Path, help="write every event as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir with every log")
    parser.add_argument("--toxiproxy", type=Path, default=REPO / ".cache" / "bin" / "toxiproxy-server",
                        help="the Toxiproxy server binary (default .cache/bin/toxiproxy-server, `make toxiproxy`)")
    return parser


def settings_of(args: argparse.Namespace) -> Settings:
    """Checked settings; UnknownKind, ProxyError or ValueError for bad input."""
    state = args.state or ("postgres" if pg_bin() else "sqlite")
    if state == "postgres" and pg_bin() is None:
        raise ValueError("--state postgres: PostgreSQL's binaries (initdb, pg_ctl) are not installed")
    for name in ("cycles", "workers", "topics", "partitions", "brokers"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} must be at least 1")
    if args.producer_queue is not None and args.producer_queue < 1:
        raise ValueError("--producer-queue must be at least 1")
    if not 0 <= args.records_age < 24 * 7:
        raise ValueError("--records-age must be at least 0 and under 168 hours (the source's retention)")
    if args.rate <= 0 or args.fault_seconds <= 0:
        raise ValueError("--rate and --fault-seconds must be positive")
    kinds = choose_kinds([k.strip() for k in args.kinds.split(",") if k.strip()], state, args.source_transactions)
    if args.overlap:
        pairable(kinds)
    check_binary(args.toxiproxy)
    return Settings(cycles=args.cycles, seed=args.seed, kinds=kinds, workers=args.workers, topics=args.topics,
                    partitions=args.partitions, rate=args.rate, fault_seconds=args.fault_seconds, state=state,
                    toxiproxy=args.toxiproxy, report=args.report, keep=args.keep, guarantee=args.guarantee,
                    overlap=args.overlap, brokers=args.brokers, producer_queue=args.producer_queue,
                    records_age_h=args.records_age, source_transactions=args.source_transactions)


def progress(message: str) -> None:
    print(f"[{time.monotonic() - STARTED:7.1f}s] {message}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run; 0 all accounted for, 1 failures found, 2 bad input."""
    args = build_parser().parse_args(argv)
    try:
        settings = settings_of(args)
    except (UnknownKind, ProxyError, ValueError) as exc:
        print(f"chaos.py: {exc}", file=sys.stderr)
        return 2
    from bench.chaoslib.run import run

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)  # tear down every process, as on Ctrl-C
    try:
        result = run(settings, progress)
    except KeyboardInterrupt:
        print("chaos.py: interrupted; every process it started was stopped", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the harness itself failed (a broker that would not start...)
        print(f"chaos.py: the run could not go on: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 1 if failures(result.final) else 0


if __name__ == "__main__":
    sys.exit(main())
