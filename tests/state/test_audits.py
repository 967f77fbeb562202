"""Audit runs in the state DB: stored and read back exactly, upserted by run key, listed newest first."""

from __future__ import annotations

from replicator.domain.audit import BucketKey, BucketResult, Status
from replicator.domain.audit_report import AuditReport, AuditWindow
from replicator.domain.offset_ranges import OffsetRange, to_ranges
from replicator.state import audits
from replicator.state.store import StateStore

HOUR = 1_790_000_000_000 - 1_790_000_000_000 % 3_600_000
WINDOW = AuditWindow(HOUR, HOUR + 3_600_000, 60_000)


def _report(key: str, started: int, results: tuple[BucketResult, ...]) -> AuditReport:
    return AuditReport(key, "p2b", WINDOW, {"orders": "primary.orders", "pay": "primary.pay"}, results,
                       started, started + 5_000, ("2 topics",))


CLEAN = BucketResult(BucketKey("orders", 0, HOUR), 10, 10, 0)
LOSS = BucketResult(BucketKey("orders", 1, HOUR + 60_000), 12, 13, 2, 2, 1, 2,
                    to_ranges([40, 41]), to_ranges([44]), to_ranges([7, 90]))
PENDING = BucketResult(BucketKey("pay", 0, HOUR + 120_000), 5, 3, 2)


def test_a_report_reads_back_exactly_and_a_retry_replaces_it(state_url: str) -> None:
    with StateStore(state_url) as store:
        report = _report("run-1", HOUR + 4_000_000, (CLEAN, LOSS, PENDING))
        for _ in range(2):  # a retried task stores the same run again
            with store.session() as session:
                audits.record_audit(session, report)
        with store.session() as session:
            assert audits.audit_report(session, "run-1") == report
            assert audits.audit_report(session, "nope") is None
            [info] = audits.audit_runs(session, "p2b")
        assert info == report.info
        assert (info.status, info.counts.missing, info.counts.source) == (Status.MISSING, 2, 27)
        with store.session() as session:  # the same key with other findings replaces the run
            audits.record_audit(session, _report("run-1", HOUR + 4_000_000, (CLEAN,)))
        with store.session() as session:
            assert audits.audit_report(session, "run-1").results == (CLEAN,)  # type: ignore[union-attr]
            assert len(audits.audit_runs(session, "p2b")) == 1


def test_runs_are_listed_newest_first_per_route(state_url: str) -> None:
    with StateStore(state_url) as store:
        with store.session() as session:
            for n in range(3):
                audits.record_audit(session, _report(f"run-{n}", HOUR + 4_000_000 + n * 60_000, (CLEAN,)))
        with store.session() as session:
            assert [r.run_key for r in audits.audit_runs(session, "p2b", limit=2)] == ["run-2", "run-1"]
            assert audits.audit_runs(session, "other") == []


def test_long_offset_lists_keep_their_first_ranges_and_exact_counts(state_url: str) -> None:
    every_other = to_ranges(range(0, 1_000, 2))  # 500 ranges
    lossy = BucketResult(BucketKey("orders", 0, HOUR), 1_000, 500, 0, 500, 0, 0, every_other)
    with StateStore(state_url) as store:
        with store.session() as session:
            audits.record_audit(session, _report("big", HOUR + 4_000_000, (lossy,)))
        with store.session() as session:
            [stored] = audits.audit_report(session, "big").results  # type: ignore[union-attr]
        assert stored.missing == every_other[: audits.RANGES_STORED]
        assert stored.missing[-1] == OffsetRange(198, 198) and stored.missing_count == 500
