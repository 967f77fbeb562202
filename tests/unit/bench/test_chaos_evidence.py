"""A failed fault run quotes what the workers logged of the partitions it lost records of (CI keeps no logs)."""

from __future__ import annotations

from pathlib import Path

from bench.chaoslib.evidence import partition_lines


def test_the_lines_naming_a_lost_partition_are_quoted_in_time_order_across_workers(tmp_path: Path) -> None:
    (tmp_path / "worker-w1.log").write_text(
        "mirrorflow run: route chaos: src -> dst, topics ['chaos-.*'] chaos-t1[0]\n"  # a banner: no time
        "ts=2026-12-02T19:29:01 level=info msg='placed route=chaos partitions=chaos-t1[0]@3729,chaos-t1[1]@3728'\n"
        "ts=2026-12-02T19:29:03 level=info msg='placed route=chaos partitions=chaos-t1[10]@5'\n"
        "ts=2026-12-02T19:29:05 level=warning msg='source consumer went back route=chaos topic=chaos-t1 "
        "partition=0 offset=3890 expected=3895'\n")
    (tmp_path / "worker-w2.log").write_text(
        "ts=2026-12-02T19:29:02 level=info msg='revoked route=chaos partitions=chaos-t0[0],chaos-t1[0]'\n"
        "ts=2026-12-02T19:29:04 level=warning msg='x route=chaos topic=chaos-t1 partition=01'\n")
    lines = partition_lines(sorted(tmp_path.glob("*.log")), {("chaos-t1", 0)})
    assert [line.split(" level=")[0] for line in lines] == [
        "worker-w1: ts=2026-12-02T19:29:01", "worker-w2: ts=2026-12-02T19:29:02", "worker-w1: ts=2026-12-02T19:29:05"]


def test_past_the_limit_the_rest_is_counted_and_nothing_is_quoted_for_no_partition(tmp_path: Path) -> None:
    log = tmp_path / "worker-w1.log"
    log.write_text("".join(f"ts=2026-12-02T19:29:{n:02d} level=info msg='placed partitions=t[0]@{n}'\n"
                           for n in range(10)))
    assert partition_lines([log], {("t", 0)}, limit=3)[-1] == "... 7 more lines in the workers' logs"
    assert len(partition_lines([log], {("t", 0)}, limit=3)) == 4
    assert partition_lines([log], set()) == []
    assert partition_lines([tmp_path / "missing.log"], {("t", 0)}) == []
