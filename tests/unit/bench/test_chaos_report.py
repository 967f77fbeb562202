"""The fault harness's report (pure): per-kind figures, the table, the verdict."""

from __future__ import annotations

import pytest

from bench.chaoslib.report import (
    FaultOutcome,
    Final,
    WorkerExit,
    as_json,
    failures,
    keeps_logs,
    kind_rows,
    summary,
    table,
)


def _fault(index: int, kind: str, *, lost: int = 0, missing: int = 0, dups: int = 0, flow: float | None = 1.0,
           exits: tuple[WorkerExit, ...] = (), traceback: bool = False, pause: float | None = None,
           wait: float | None = None, others: float | None = None) -> FaultOutcome:
    return FaultOutcome(index, kind, "source", "", 5.0, flow, 2.0, missing, dups, exits, traceback, lost=lost,
                        pause_s=pause, wait_s=wait, pause_others_s=others)


CRASH = WorkerExit("w1", 1, "mirrorflow: error: route chaos: boom", 12.0, expected=False)
KILLED = WorkerExit("w2", -9, "(killed by the harness)", 30.0, expected=True)
OUTCOMES = [
    _fault(1, "worker-kill", dups=10, flow=2.0, exits=(KILLED,), pause=6.5, wait=1.5),
    _fault(2, "net-latency", dups=0, flow=0.5),
    _fault(3, "worker-kill", dups=30, flow=4.0, exits=(CRASH,), pause=2.5, wait=3.25, others=0.75),
    _fault(4, "worker-kill", lost=3, missing=5, dups=2, flow=None, traceback=True),
]


def _final(**changes: object) -> Final:
    base = dict(seed=7, produced=1000, lost=0, reported_lost=5, over_reported=0, duplicates=42, out_of_order=0,
                mismatched=0, unexpected=0, foreign=0)
    return Final(**{**base, **changes})  # type: ignore[arg-type]


def test_per_kind_figures() -> None:
    rows = {row["kind"]: row for row in kind_rows(OUTCOMES)}
    assert list(rows) == ["worker-kill", "net-latency"]  # in order of first appearance
    kill = rows["worker-kill"]
    assert (kill["count"], kill["lost"], kill["missing"], kill["dups_max"], kill["dups_mean"]) == (3, 3, 5, 30, 14.0)
    assert (kill["flow_p50_s"], kill["flow_max_s"], kill["no_flow"]) == (3.0, 4.0, 1)
    assert kill["pause_max_s"] == 6.5 and rows["net-latency"]["pause_max_s"] is None
    assert kill["wait_max_s"] == 3.25 and rows["net-latency"]["wait_max_s"] is None
    assert kill["pause_others_max_s"] == 0.75 and rows["net-latency"]["pause_others_max_s"] is None
    assert (kill["exits"], kill["traceback"]) == (1, True)  # the harness's own kill is not an exit to report
    assert rows["net-latency"]["flow_p50_s"] == 0.5 and rows["net-latency"]["traceback"] is False


def test_table_has_a_line_per_kind() -> None:
    lines = table(OUTCOMES).splitlines()
    assert lines[0].split()[:3] == ["kind", "count", "lost"] and set(lines[1]) <= {"-", " "}
    assert lines[2].split() == ["worker-kill", "3", "3", "5", "30", "14.0", "3.0", "4.0", "6.5", "3.2", "0.8", "1",
                                "0", "1", "yes"]
    assert lines[3].split() == ["net-latency", "1", "0", "0", "0", "0.0", "0.5", "0.5", "-", "-", "-", "0", "0",
                                "0", "no"]


@pytest.mark.parametrize(("changes", "reason"), [
    ({}, None),
    ({"lost": 3}, "3 records lost without a report"),
    ({"mismatched": 1}, "1 records changed on the way (fingerprint differs)"),
    ({"out_of_order": 2}, "2 records out of order (first copies, per partition)"),
    ({"traceback_logs": ("worker-w1.log",)}, "a traceback in worker-w1.log"),
    ({"duplicates": 5}, None),  # at-least-once: repeats are allowed
    ({"duplicates": 5, "guarantee": "exactly-once"},
     "5 duplicates on an exactly-once route (as a read_committed consumer sees it)"),
])
def test_verdict(changes: dict[str, object], reason: str | None) -> None:
    final = _final(**changes)
    assert failures(final) == ([] if reason is None else [reason])
    assert summary(final, OUTCOMES).splitlines()[-1] == (f"FAILED: {reason}" if reason else
                                                         "PASSED: every record accounted for")


def test_summary_names_unexpected_exits_only() -> None:
    text = summary(_final(exits=(CRASH, KILLED), late=40), OUTCOMES)
    assert "worker w1 exited at 12s with code 1: mirrorflow: error: route chaos: boom" in text
    assert "w2" not in text.split("foreign")[1]
    assert text.splitlines()[-1] == ("PASSED: every record accounted for (but: 1 worker exits the harness did not "
                                     "cause; 40 records late (missing at a check))")


@pytest.mark.parametrize(("changes", "asked", "kept"), [
    ({}, False, False),  # a clean pass: the temp dir goes
    ({}, True, True),  # --keep
    ({"lost": 1}, False, True),
    ({"late": 40}, False, True),  # a stall: its logs are how it is found out
    ({"exits": (CRASH,)}, False, True),  # a crash the harness did not cause
    ({"exits": (KILLED,)}, False, False),  # one it caused
])
def test_a_run_that_failed_or_passed_with_caveats_keeps_its_logs(changes: dict[str, object], asked: bool,
                                                                  kept: bool) -> None:
    assert keeps_logs(_final(**changes), asked) is kept
    assert keeps_logs(None, False)  # the run itself broke off


def test_json_holds_every_fault() -> None:
    document = as_json({"seed": 7}, OUTCOMES, _final(lost=1))
    assert [f["kind"] for f in document["faults"]] == ["worker-kill", "net-latency", "worker-kill", "worker-kill"]
    assert document["faults"][0]["exits"][0]["reason"] == "(killed by the harness)"
    assert document["failures"] == ["1 records lost without a report"]
