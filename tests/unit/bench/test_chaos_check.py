"""Where a fault's duplicates went: the partitions named per check, most first."""

from __future__ import annotations

from bench.chaoslib.accounting import StreamTally, Tally
from bench.chaoslib.check import Checker
from bench.chaoslib.records import Stream
from bench.chaoslib.report import FaultOutcome
from bench.chaoslib.run import _line

A, B, C = Stream("t0", 0, 0), Stream("t0", 0, 1), Stream("add-7", 1, 0)


def tally(**duplicates: int) -> Tally:
    streams = {"a": A, "b": B, "c": C}
    return Tally({streams[name]: StreamTally(duplicates=n) for name, n in duplicates.items()})


def test_each_check_names_the_partitions_that_got_new_duplicates_most_first() -> None:
    checker = Checker(chaos=None, began=0.0)  # type: ignore[arg-type]
    assert checker._new_duplicates(tally(a=2, b=0, c=0)) == (("t0#0[0]", 2),)
    assert checker._new_duplicates(tally(a=2, b=3, c=2815)) == (("add-7#1[0]", 2815), ("t0#0[1]", 3))
    assert checker._new_duplicates(tally(a=2, b=3, c=2815)) == ()


def test_a_fault_with_many_duplicates_names_their_partitions_on_its_line() -> None:
    checker = Checker(chaos=None, began=0.0)  # type: ignore[arg-type]
    many = FaultOutcome(94, "worker-leave", None, "worker x11 left", 4.4, 7.4, 7.5, 0, 5630,
                        duplicates_by_partition=(("add-7#1[0]", 2815), ("add-7#1[1]", 2815)))
    few = FaultOutcome(95, "worker-kill", None, "worker w1", 2.0, 8.0, 8.0, 0, 18,
                       duplicates_by_partition=(("t0#0[0]", 18),))
    assert "dups +5630 (total 0) [add-7#1[0] +2815, add-7#1[1] +2815]" in _line(many, checker, 100)
    assert "[" not in _line(few, checker, 100).split("dups")[1]
