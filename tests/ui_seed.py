"""State-DB rows for the Replication page's tests, written by the repository functions that
the audit, SLA, checkpoint, failover, failback and backfill runs themselves call (no Kafka, Spark or Airflow)."""

from __future__ import annotations

import dataclasses
import datetime as dt

from replicator.domain.audit import BucketKey, BucketResult
from replicator.domain.audit_report import AuditReport, AuditWindow
from replicator.domain.backfill_run import BackfillMode, BackfillRun, BackfillStatus, PartitionRange
from replicator.domain.checkpoint import Checkpoint, CheckpointStatus
from replicator.domain.failback import (
    FailbackMode,
    FailbackRequest,
    FailbackRun,
    FailbackStep,
    FailbackStepRecord,
)
from replicator.domain.failover import FailoverRequest, Step, StepRecord, StepStatus
from replicator.domain.failover_run import FailoverRun
from replicator.domain.offset_ranges import to_ranges
from replicator.domain.sla import Check, CheckState, EventKind, SlaEvent, State
from replicator.domain.sync_run import Outcome, SyncChange, SyncRun
from replicator.state.audits import record_audit
from replicator.state.backfills import save_run as save_backfill
from replicator.state.checkpoints import save_checkpoints
from replicator.state.failbacks import save_run as save_failback
from replicator.state.failovers import save_run
from replicator.state.repository import record_data_loss, record_owner, record_partition_state, record_sync_run
from replicator.state.sla import record_lag_samples, record_route_sample, record_step
from replicator.state.store import StateStore

ROUTE = "primary-to-backup"
TOPIC, REPLICA, OTHER = "orders", "primary.orders", "payments.eu"
BACKFILL_KEY = "mirrorflow_backfill_topic/manual__1"
LAG_DETAIL = "lag 1234 records (limit 1000, largest orders[1]: 1200)"


def _hour(now: dt.datetime) -> int:
    ms = int(now.timestamp() * 1000)
    return ms - ms % 3_600_000 - 3_600_000  # the previous full hour


def audit_report(now: dt.datetime, run_key: str = "audit-ui-1") -> AuditReport:
    """An hour of ``orders`` and ``payments.eu``: a loss (offsets 40-41) and a duplicate (44)."""
    hour = _hour(now)
    results = (
        BucketResult(BucketKey(TOPIC, 0, hour), 10, 10, 0),
        BucketResult(BucketKey(TOPIC, 0, hour + 60_000), 14, 14, 0),
        BucketResult(BucketKey(TOPIC, 1, hour + 60_000), 12, 11, 0, 2, 1, 0,
                     to_ranges([40, 41]), to_ranges([44]), ()),
        BucketResult(BucketKey(TOPIC, 0, hour + 120_000), 9, 9, 0),
        BucketResult(BucketKey(OTHER, 0, hour), 5, 5, 0),
    )
    ms = int(now.timestamp() * 1000)
    return AuditReport(run_key, ROUTE, AuditWindow(hour, hour + 3_600_000, 60_000),
                       {TOPIC: REPLICA, OTHER: f"primary.{OTHER}"}, results, ms - 20_000, ms - 5_000)


def seed(state_url: str, now: dt.datetime) -> None:
    """One audit with findings, an SLA lag breach, two checkpoints, a failover, a failback and a backfill
    run of ROUTE; a partition of it found stuck, another that lost records to retention."""
    ms = int(now.timestamp() * 1000)
    checkpoints = [Checkpoint("billing", TOPIC, 0, 120, REPLICA, 118, CheckpointStatus.EXACT),
                   Checkpoint("billing", TOPIC, 1, 80, REPLICA, 77, CheckpointStatus.BEHIND, 3)]
    states = [CheckState(ROUTE, Check.LAG, State.BREACHED, ms - 60_000, LAG_DETAIL),
              CheckState(ROUTE, Check.HEARTBEAT, State.OK, ms - 600_000, "heartbeat age 1.2 s (limit 30 s)")]
    events = [SlaEvent(ROUTE, Check.LAG, EventKind.BREACH, ms - 60_000, LAG_DETAIL)]
    run = FailoverRun.new(FailoverRequest(ROUTE), "primary", "backup", f"mirrorflow-{ROUTE}",
                          now - dt.timedelta(minutes=30))
    for step in Step:
        run = run.with_step(StepRecord(step, StepStatus.DONE, None, None, run.triggered_at, run.triggered_at))
    run = dataclasses.replace(run, finished_at=now - dt.timedelta(minutes=29))
    back = FailbackRun.new(FailbackRequest(ROUTE, FailbackMode.RESYNC), "primary", "backup",
                           now - dt.timedelta(minutes=10))
    for back_step in FailbackStep:
        back = back.with_step(FailbackStepRecord(back_step, StepStatus.DONE, None, None, back.triggered_at,
                                                 back.triggered_at))
    back = dataclasses.replace(back, copied=4321, not_copied=0, finished_at=now - dt.timedelta(minutes=8))
    backfill = BackfillRun(BACKFILL_KEY, ROUTE, TOPIC, REPLICA, BackfillMode.TIME,
                           (PartitionRange(0, 0, 40, True), PartitionRange(1, 0, 0, True)),
                           now - dt.timedelta(minutes=50), BackfillStatus.DONE, written=40,
                           finished_at=now - dt.timedelta(minutes=49))
    with StateStore(state_url) as store:
        store.run(lambda s: record_audit(s, audit_report(now)))
        store.run(lambda s: record_step(s, states, events, ms))
        store.run(lambda s: save_checkpoints(s, ROUTE, checkpoints, now - dt.timedelta(minutes=2),
                                             {(TOPIC, 0): 150, (TOPIC, 1): 80}, {(REPLICA, 0): 140}))
        store.run(lambda s: save_run(s, run))
        store.run(lambda s: save_failback(s, back))
        store.run(lambda s: save_backfill(s, backfill))
        store.run(lambda s: record_partition_state(s, ROUTE, TOPIC, 2, "STUCK", "fetch position 7 still for 130 s"))
        store.run(lambda s: record_data_loss(s, ROUTE, TOPIC, 0, (5, 9)))
        store.run(lambda s: record_owner(s, ROUTE, "w1@host-a:4242", [(TOPIC, 0), (TOPIC, 1), (TOPIC, 3)]))
        store.run(lambda s: record_owner(s, ROUTE, "w2@host-b:77", [(TOPIC, 2)]))
        store.run(lambda s: record_sync_run(s, SyncRun(ROUTE, "metadata", now - dt.timedelta(minutes=4),
                                                       now - dt.timedelta(minutes=4), (
            SyncChange("config", REPLICA, "retention.ms: 86400000 -> 604800000", Outcome.APPLIED),
            SyncChange("acl", REPLICA, "+ ALLOW User:reader READ", Outcome.FAILED, "CLUSTER_AUTHORIZATION_FAILED"),
        ))))
        for minutes, copied in ((3, 1000), (2, 4000), (1, 4600)):  # records copied so far, latency
            store.run(lambda s, m=minutes, n=copied: record_route_sample(s, ROUTE, ms - m * 60_000, n, 100 * m))
        for minutes, lag in ((3, 40), (2, 1234), (1, 7)):  # the SLA DAG's samples of the topic's lag
            store.run(lambda s, m=minutes, n=lag: record_lag_samples(s, ROUTE, ms - m * 60_000, [(TOPIC, n)]))
