"""The scale bench's split of a start-up: the target broker creating the replicas' logs, then the peer (pure)."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))  # the bench's scripts import by file name

from scale_load import replica_log_figures, replica_logs

LOG = """\
[2026-11-28 05:09:12,694] INFO Created log for partition mfsource.s-t0901-0 in /tmp/x/target/data/mfsource.s-t0901-0 \
with properties {} (kafka.log.LogManager)
[2026-11-28 05:09:12,700] INFO [Partition mfsource.s-t0901-0 broker=1] Log loaded for partition
[2026-11-28 05:09:11,001] INFO Created log for partition mirrorflow-heartbeats.r-0 in /tmp/x (kafka.log.LogManager)
[2026-11-28 05:09:46,269] INFO Created log for partition mfsource.s-t0078-0 in /tmp/x (kafka.log.LogManager)
[2026-11-28 05:10:01,000] INFO Created log for partition source.s-t0078-0 in /tmp/x (kafka.log.LogManager)
[2026-11-28 05:09:30,500] WARN Created log for partition mfsource.not-info-0 in /tmp/x (kafka.log.LogManager)
"""


def test_only_the_logs_of_the_peers_replicas_count_in_time_order() -> None:
    assert replica_logs(LOG, "mfsource.") == [datetime(2026, 11, 28, 5, 9, 12, 694000),
                                              datetime(2026, 11, 28, 5, 9, 46, 269000)]
    assert replica_logs(LOG, "source.") == [datetime(2026, 11, 28, 5, 10, 1)]
    assert replica_logs("", "mfsource.") == []


def test_the_start_up_is_split_at_the_last_replica_log() -> None:
    times = replica_logs(LOG, "mfsource.")
    figures = replica_log_figures(times, launched=datetime(2026, 11, 28, 5, 9, 7, 694000), startup_s=45.7)
    assert figures == {"replica_logs": 2, "first_log_s": 5.0, "last_log_s": 38.58, "after_last_log_s": 7.12}


def test_no_replica_log_seen_says_so() -> None:
    assert replica_log_figures([], launched=datetime(2026, 11, 28), startup_s=3.0) == {"replica_logs": 0}
