"""The run's report (pure): one row per fault kind, the final account, and the verdict."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class WorkerExit:
    """A worker process that ended, and the last line it wrote (its reason)."""

    worker: str
    code: int | None
    reason: str
    at_s: float  # seconds since the run began
    expected: bool  # the harness stopped or killed it on purpose


@dataclass(frozen=True, slots=True)
class FaultOutcome:
    """One fault, from injection to the check after it healed."""

    index: int
    kind: str
    side: str | None
    detail: str
    duration_s: float
    flow_s: float | None  # heal -> a record produced after it is on the target, on every partition
    settle_s: float | None  # heal -> every record acknowledged before it is on the target
    missing: int  # records this check found missing for the first time (not reported by the route)
    duplicates: int  # extra copies that reached the target since the previous check
    exits: tuple[WorkerExit, ...] = ()
    traceback: bool = False
    at_s: float = 0.0  # when it was injected, seconds since the run began
    lost: int = 0  # of those found missing here, how many were still missing at the end
    duplicates_by_partition: tuple[tuple[str, int], ...] = ()  # (stream, new extra copies), most first
    # From injection to the heal, the longest time no record of some steady partition arrived on the target (the
    # source's own unavailability included): what the fault cost while it lasted, beside ``flow_s`` after it.
    pause_s: float | None = None
    # The longest a record the source acknowledged while the fault lasted waited until it arrived on the target: the
    # route's own delay (a pause the source caused is not in it).
    wait_s: float | None = None
    # A fault that struck one node: the pause of the partitions it did not lead (on the side it struck), which the
    # route must go on copying; None for other faults.
    pause_others_s: float | None = None
    # The harness's own reader stood still and was made anew between injection and the end of the check: the
    # figures above then include up to two of its 5 s looks, which are not the route's.
    reader_renewed: int = 0


@dataclass(frozen=True, slots=True)
class Final:
    """The account after the last fault healed and everything settled."""

    seed: int
    produced: int  # acknowledged by the source
    lost: int  # missing on the target, not reported by the route
    reported_lost: int  # missing, inside a range the route reported (retention)
    over_reported: int  # reported lost, yet on the target
    duplicates: int
    out_of_order: int
    mismatched: int
    unexpected: int
    foreign: int
    late: int = 0  # found missing at a fault's check, on the target by the end
    retention_differences: tuple[str, ...] = ()
    harness_errors: tuple[str, ...] = ()  # faults the harness could not inject or heal
    lost_examples: tuple[str, ...] = ()
    lost_evidence: tuple[str, ...] = ()  # the workers' log lines naming the partitions of lost records
    traceback_logs: tuple[str, ...] = ()
    exits: tuple[WorkerExit, ...] = field(default_factory=tuple)
    guarantee: str = "at-least-once"  # the route's: on exactly-once a duplicate fails the run
    reader_renewals: int = 0  # the harness's target reader replaced: a position stood below the target's end
    transactions: tuple[int, int, int] | None = None  # --source-transactions: committed, aborted, records aborted


def _p50(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def kind_rows(outcomes: Sequence[FaultOutcome]) -> list[dict[str, Any]]:
    """Per fault kind, in order of first appearance: the table's figures."""
    rows = []
    for kind in dict.fromkeys(o.kind for o in outcomes):
        mine = [o for o in outcomes if o.kind == kind]
        flows = [o.flow_s for o in mine if o.flow_s is not None]
        pauses = [o.pause_s for o in mine if o.pause_s is not None]
        waits = [o.wait_s for o in mine if o.wait_s is not None]
        others = [o.pause_others_s for o in mine if o.pause_others_s is not None]
        dups = [o.duplicates for o in mine]
        rows.append({
            "kind": kind, "count": len(mine), "lost": sum(o.lost for o in mine),
            "missing": sum(o.missing for o in mine),
            "dups_max": max(dups), "dups_mean": sum(dups) / len(dups),
            "flow_p50_s": _p50(flows), "flow_max_s": max(flows) if flows else None,
            "pause_max_s": max(pauses) if pauses else None, "wait_max_s": max(waits) if waits else None,
            "pause_others_max_s": max(others) if others else None,
            "no_flow": sum(o.flow_s is None for o in mine), "unsettled": sum(o.settle_s is None for o in mine),
            "exits": sum(1 for o in mine for e in o.exits if not e.expected),
            "traceback": any(o.traceback for o in mine),
        })
    return rows


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def table(outcomes: Sequence[FaultOutcome]) -> str:
    """The per-kind table as text."""
    head = ("kind", "count", "lost", "missing", "dups max", "dups mean", "flow p50 s", "flow max s", "pause max s",
            "wait max s", "others' pause max s", "no flow", "unsettled", "exits", "traceback")
    lines = [head]
    for row in kind_rows(outcomes):
        lines.append((row["kind"], str(row["count"]), str(row["lost"]), str(row["missing"]), str(row["dups_max"]),
                      f"{row['dups_mean']:.1f}", _seconds(row["flow_p50_s"]), _seconds(row["flow_max_s"]),
                      _seconds(row["pause_max_s"]), _seconds(row["wait_max_s"]),
                      _seconds(row["pause_others_max_s"]), str(row["no_flow"]),
                      str(row["unsettled"]), str(row["exits"]), "yes" if row["traceback"] else "no"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                     for i, (cell, w) in enumerate(zip(line, widths, strict=True)))
           for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def failures(final: Final) -> list[str]:
    """Why the run failed, one line each; [] when nothing was lost, changed or crashed."""
    found = []
    if final.lost:
        found.append(f"{final.lost} records lost without a report")
    if final.mismatched:
        found.append(f"{final.mismatched} records changed on the way (fingerprint differs)")
    if final.duplicates and final.guarantee == "exactly-once":
        found.append(f"{final.duplicates} duplicates on an exactly-once route (as a read_committed consumer sees it)")
    if final.out_of_order:
        found.append(f"{final.out_of_order} records out of order (first copies, per partition)")
    if final.harness_errors:
        found.append(f"{len(final.harness_errors)} faults could not be injected or healed")
    if final.traceback_logs:
        found.append(f"a traceback in {', '.join(final.traceback_logs)}")
    return found


def summary(final: Final, outcomes: Sequence[FaultOutcome]) -> str:
    """The whole report: table, account, worker exits, verdict."""
    exits = [e for e in final.exits if not e.expected]
    lines = [table(outcomes), "",
             f"seed {final.seed}: {len(outcomes)} faults on an {final.guarantee} route, {final.produced} records "
             "acknowledged by the source; "
             f"lost {final.lost}, lost to retention as reported {final.reported_lost} "
             f"(reported but present {final.over_reported}), duplicates {final.duplicates}, "
             f"out of order {final.out_of_order}, changed {final.mismatched}, unexpected {final.unexpected}, "
             f"foreign {final.foreign}, late (missing at a check, there by the end) {final.late}"]
    lines += [f"  lost: {example}" for example in final.lost_examples]
    lines += ["  what the workers logged of those partitions:"] * bool(final.lost_evidence)
    lines += [f"    {line}" for line in final.lost_evidence]
    lines += [f"  retention report differs: {line}" for line in final.retention_differences]
    lines += [f"  harness error: {line}" for line in final.harness_errors]
    lines += [f"  worker {e.worker} exited at {e.at_s:.0f}s with code {e.code}: {e.reason}" for e in exits]
    if final.transactions is not None:
        committed, aborted, records = final.transactions
        lines.append(f"  the source's steady records went in {committed} committed transactions; {aborted} more "
                     f"were aborted with {records} records in them, never to arrive (foreign if they did)")
    if final.reader_renewals:
        lines.append(f"  the harness's target reader was made anew {final.reader_renewals} times (a position stood "
                     "a whole look below the target's end: stopped reading, or waiting on an open transaction)")
    problems = failures(final)
    lines.append("FAILED: " + "; ".join(problems) if problems else "PASSED: every record accounted for" + _but(final))
    return "\n".join(lines)


def caveats(final: Final) -> list[str]:
    """What a pass does not say by itself: crashes, and records that came only after a whole check (stalled)."""
    notes = [f"{n} worker exits the harness did not cause" for n in [sum(not e.expected for e in final.exits)] if n]
    notes += [f"{final.late} records late (missing at a check)"] if final.late else []
    return notes


def keeps_logs(final: Final | None, asked: bool) -> bool:
    """Whether the run's logs stay: when asked to, and whenever the run failed or passed with caveats (a stall or a
    crash is investigated from them; seed 26's stall of 2026-11-29 could not be, its logs were gone)."""
    return asked or final is None or bool(failures(final) or caveats(final))


def _but(final: Final) -> str:
    notes = caveats(final)
    return f" (but: {'; '.join(notes)})" if notes else ""


def as_json(settings: dict[str, Any], outcomes: Sequence[FaultOutcome], final: Final) -> dict[str, Any]:
    """Everything, for ``--report``."""
    return {"settings": settings, "kinds": kind_rows(outcomes), "faults": [asdict(o) for o in outcomes],
            "final": asdict(final), "failures": failures(final)}
