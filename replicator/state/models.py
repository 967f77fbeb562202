"""SQLAlchemy 2 models of the state database.

Schema changes go through an Alembic migration in ``sql/migrations/versions``; a
test compares these models with the migrated schema.
"""

from __future__ import annotations

import datetime as dt
from typing import ClassVar

from sqlalchemy import BigInteger, DateTime, ForeignKey, Index, MetaData, String, Text, UniqueConstraint, func
from sqlalchemy.orm import DeclarativeBase, Mapped, declared_attr, mapped_column, relationship

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


# Columns a table inherits come after its own unless sorted lower (default 0): the
# migrations put ``id`` first and a parent key second, and the models must match them.
_FIRST, _SECOND = -2, -1


class Base(DeclarativeBase):
    """Declarative base of every MirrorFlow table (prefix ``mf_``): each has an integer key ``id``, first."""

    metadata = MetaData(naming_convention=NAMING)

    id: Mapped[int] = mapped_column(primary_key=True, sort_order=_FIRST)


def _now() -> Mapped[dt.datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


def _parent_key(table: str) -> Mapped[int]:
    """A key to a row of ``table`` that is deleted with that row; indexed, as children are read by it."""
    return mapped_column(ForeignKey(f"{table}.id", ondelete="CASCADE"), index=True, sort_order=_SECOND)


class Timestamped:
    """``created_at`` and ``updated_at`` (the database's clock at insert), the table's last columns."""

    created_at: Mapped[dt.datetime] = _now()
    updated_at: Mapped[dt.datetime] = _now()


class RunPart:
    """A row of one run (a step, a change, a result...): ``run_id`` refers to the run in ``__run_table__``
    and the row goes when the run is deleted."""

    __run_table__: ClassVar[str]

    @declared_attr
    def run_id(cls) -> Mapped[int]:
        """The run the row belongs to (second column)."""
        return _parent_key(cls.__run_table__)


class RouteRow(Timestamped, Base):
    """A route as last loaded from the config (name is the identity)."""

    __tablename__ = "mf_route"

    name: Mapped[str] = mapped_column(String(200), unique=True)
    source_cluster: Mapped[str] = mapped_column(String(200))
    target_cluster: Mapped[str] = mapped_column(String(200))
    policy: Mapped[str] = mapped_column(String(50))

    topics: Mapped[list[RouteTopicRow]] = relationship(
        back_populates="route", cascade="all, delete-orphan"
    )


class RouteTopicRow(Timestamped, Base):
    """One source topic of a route: what the operator wants and what the workers report."""

    __tablename__ = "mf_route_topic"
    __table_args__ = (UniqueConstraint("route_id", "topic", name="uq_mf_route_topic_route_topic"),)

    route_id: Mapped[int] = _parent_key("mf_route")
    topic: Mapped[str] = mapped_column(String(249))
    desired_state: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20))
    status_detail: Mapped[str | None] = mapped_column(Text)
    added_by: Mapped[str] = mapped_column(String(20))

    route: Mapped[RouteRow] = relationship(back_populates="topics")


class DataLossRow(Base):
    """Source records deleted (retention) before the route copied them: the exact range."""

    __tablename__ = "mf_data_loss"

    route: Mapped[str] = mapped_column(String(200), index=True)
    topic: Mapped[str] = mapped_column(String(249))
    partition: Mapped[int] = mapped_column()
    from_offset: Mapped[int] = mapped_column(BigInteger)
    to_offset: Mapped[int] = mapped_column(BigInteger)
    detected_at: Mapped[dt.datetime] = _now()


class PartitionOwnerRow(Base):
    """The worker that placed a partition last: its owner while that worker runs (a worker that stops deletes
    its rows; one that crashed is replaced by the next worker the group gives the partition)."""

    __tablename__ = "mf_partition_owner"
    __table_args__ = (UniqueConstraint("route", "topic", "partition", name="uq_mf_partition_owner_partition"),)

    route: Mapped[str] = mapped_column(String(200), index=True)
    topic: Mapped[str] = mapped_column(String(249))
    partition: Mapped[int] = mapped_column()
    worker: Mapped[str] = mapped_column(String(300))
    since: Mapped[dt.datetime] = _now()


class PartitionStateRow(Base):
    """A state a worker found a partition in (FAULTED, STUCK) and its detail, until it copies it again."""

    __tablename__ = "mf_partition_state"
    __table_args__ = (UniqueConstraint("route", "topic", "partition", name="uq_mf_partition_state_partition"),)

    route: Mapped[str] = mapped_column(String(200), index=True)
    topic: Mapped[str] = mapped_column(String(249))
    partition: Mapped[int] = mapped_column()
    state: Mapped[str] = mapped_column(String(20))
    detail: Mapped[str | None] = mapped_column(Text)
    since: Mapped[dt.datetime] = _now()


class SyncRunRow(Base):
    """One applied sync run of a route (discovery, metadata or full) and how it went."""

    __tablename__ = "mf_sync_run"

    route: Mapped[str] = mapped_column(String(200), index=True)
    step: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20))
    started_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    notes: Mapped[str | None] = mapped_column(Text)

    changes: Mapped[list[SyncChangeRow]] = relationship(
        back_populates="run", cascade="all, delete-orphan", order_by="SyncChangeRow.position"
    )


class SyncChangeRow(RunPart, Base):
    """One change of a sync run: kind, resource, ``old -> new`` detail, outcome and error."""

    __tablename__ = "mf_sync_change"
    __run_table__ = "mf_sync_run"

    position: Mapped[int] = mapped_column()
    kind: Mapped[str] = mapped_column(String(30))
    resource: Mapped[str] = mapped_column(Text)
    detail: Mapped[str] = mapped_column(Text)
    outcome: Mapped[str] = mapped_column(String(20))
    error: Mapped[str | None] = mapped_column(Text)

    run: Mapped[SyncRunRow] = relationship(back_populates="changes")


class CheckpointRow(Base):
    """The latest checkpoint of one group on one source partition of a route (updated in place)."""

    __tablename__ = "mf_checkpoint"
    __table_args__ = (
        UniqueConstraint("route", "group_id", "topic", "partition", name="uq_mf_checkpoint_route_group_partition"),
    )

    route: Mapped[str] = mapped_column(String(200))
    group_id: Mapped[str] = mapped_column(Text)  # Kafka sets no useful bound on a group id's length
    topic: Mapped[str] = mapped_column(String(249))
    partition: Mapped[int] = mapped_column()
    source_offset: Mapped[int] = mapped_column(BigInteger)
    target_topic: Mapped[str] = mapped_column(String(249))
    target_offset: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(20))
    max_repeats: Mapped[int] = mapped_column(BigInteger)
    checkpointed_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    # The ends the run read beside it (None: not read): the group's lag on the source, and on the target if it
    # moved now.
    source_end: Mapped[int | None] = mapped_column(BigInteger)
    target_end: Mapped[int | None] = mapped_column(BigInteger)


class CheckpointRunRow(Base):
    """One checkpoint run of a route: how it went and its figures."""

    __tablename__ = "mf_checkpoint_run"

    route: Mapped[str] = mapped_column(String(200), index=True)
    status: Mapped[str] = mapped_column(String(20))
    started_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    groups: Mapped[int] = mapped_column()
    checkpoints: Mapped[int] = mapped_column()  # translated, stored
    untranslated: Mapped[int] = mapped_column()
    target_commits: Mapped[int] = mapped_column()  # partitions committed into target groups
    skipped_groups: Mapped[str | None] = mapped_column(Text)  # one "group: why" per line
    error: Mapped[str | None] = mapped_column(Text)


class AuditRunRow(Base):
    """One audit of a route over a time window: its figures and worst finding (``run_key``: upsert key)."""

    __tablename__ = "mf_audit_run"

    run_key: Mapped[str] = mapped_column(String(200), unique=True)
    route: Mapped[str] = mapped_column(String(200), index=True)
    status: Mapped[str] = mapped_column(String(20))  # clean | duplicates | extra | missing
    window_start: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    window_end: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    bucket_seconds: Mapped[int] = mapped_column()
    topics: Mapped[str] = mapped_column(Text)  # JSON {source topic: target topic}
    source_records: Mapped[int] = mapped_column(BigInteger)
    target_records: Mapped[int] = mapped_column(BigInteger)
    pending: Mapped[int] = mapped_column(BigInteger)
    missing: Mapped[int] = mapped_column(BigInteger)
    duplicates: Mapped[int] = mapped_column(BigInteger)
    extra: Mapped[int] = mapped_column(BigInteger)
    notes: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))

    results: Mapped[list[AuditResultRow]] = relationship(
        back_populates="run", cascade="all, delete-orphan", passive_deletes=True
    )


class AuditResultRow(RunPart, Base):
    """One (topic, partition, bucket) of an audit run: counts, status, first offsets found ("5-9,12")."""

    __tablename__ = "mf_audit_result"
    __table_args__ = (
        UniqueConstraint("run_id", "topic", "partition", "bucket_start", name="uq_mf_audit_result_bucket"),
        Index("ix_mf_audit_result_route_topic_bucket", "route", "topic", "bucket_start"),
    )
    __run_table__ = "mf_audit_run"

    route: Mapped[str] = mapped_column(String(200))
    topic: Mapped[str] = mapped_column(String(249))
    target_topic: Mapped[str] = mapped_column(String(249))
    partition: Mapped[int] = mapped_column()
    bucket_start: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    status: Mapped[str] = mapped_column(String(20))
    source_count: Mapped[int] = mapped_column(BigInteger)
    target_count: Mapped[int] = mapped_column(BigInteger)
    pending: Mapped[int] = mapped_column(BigInteger)
    missing_count: Mapped[int] = mapped_column(BigInteger)
    duplicate_count: Mapped[int] = mapped_column(BigInteger)
    extra_count: Mapped[int] = mapped_column(BigInteger)
    missing_offsets: Mapped[str | None] = mapped_column(Text)  # source offsets
    duplicate_offsets: Mapped[str | None] = mapped_column(Text)  # source offsets
    extra_offsets: Mapped[str | None] = mapped_column(Text)  # target offsets

    run: Mapped[AuditRunRow] = relationship(back_populates="results")


class FailoverRunRow(Base):
    """One failover of a route: what was asked, where it stands, its figures (RPO, RTO)."""

    __tablename__ = "mf_failover_run"

    route: Mapped[str] = mapped_column(String(200), index=True)
    source_cluster: Mapped[str] = mapped_column(String(200))
    target_cluster: Mapped[str] = mapped_column(String(200))
    route_group: Mapped[str] = mapped_column(Text)
    mode: Mapped[str] = mapped_column(String(20))  # checkpoint | timestamp
    groups: Mapped[str | None] = mapped_column(Text)  # JSON list; null: every checkpointed group
    at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    margin_seconds: Mapped[int] = mapped_column()
    drain_timeout_seconds: Mapped[int] = mapped_column()
    stop_timeout_seconds: Mapped[int] = mapped_column()
    status: Mapped[str] = mapped_column(String(20))  # running | done | failed | abandoned
    stopped_at_step: Mapped[str | None] = mapped_column(String(30))  # first step not done
    source_reachable: Mapped[bool | None] = mapped_column()
    rpo_records: Mapped[int | None] = mapped_column(BigInteger)
    rpo_basis: Mapped[str | None] = mapped_column(String(30))
    rpo_as_of: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    rpo_partitions: Mapped[str | None] = mapped_column(Text)  # JSON [[topic, partition, records], ...]
    rto_seconds: Mapped[float | None] = mapped_column()
    lags: Mapped[str | None] = mapped_column(Text)  # JSON: the source partitions as last measured
    notes: Mapped[str | None] = mapped_column(Text)  # one per line
    triggered_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    route_stopped_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    abandoned_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    released_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))  # route may run again
    fence: Mapped[bool] = mapped_column(default=False)  # --fence: writes denied on the source topics first
    accept_bypass: Mapped[bool] = mapped_column(default=False)
    fence_record: Mapped[str | None] = mapped_column(Text)  # JSON: the fence raised (ACLs, bypass, lifted_at)
    topics: Mapped[str | None] = mapped_column(Text)  # JSON list: a per-topic failover's topics; null: the route

    steps: Mapped[list[FailoverStepRow]] = relationship(
        back_populates="run", cascade="all, delete-orphan", passive_deletes=True, order_by="FailoverStepRow.position"
    )
    offsets: Mapped[list[FailoverOffsetRow]] = relationship(
        back_populates="run", cascade="all, delete-orphan", passive_deletes=True
    )


class FailoverStepRow(RunPart, Base):
    """One step of a failover run: status, the decision it took, its error and times."""

    __tablename__ = "mf_failover_step"
    __table_args__ = (UniqueConstraint("run_id", "step", name="uq_mf_failover_step_run_step"),)
    __run_table__ = "mf_failover_run"

    position: Mapped[int] = mapped_column()
    step: Mapped[str] = mapped_column(String(30))
    status: Mapped[str] = mapped_column(String(20))
    detail: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))

    run: Mapped[FailoverRunRow] = relationship(back_populates="steps")


class FailoverOffsetRow(RunPart, Base):
    """Where one group resumes on one replica partition, and what became of it in the target group."""

    __tablename__ = "mf_failover_offset"
    __table_args__ = (
        UniqueConstraint("run_id", "group_id", "target_topic", "partition", name="uq_mf_failover_offset_point"),
    )
    __run_table__ = "mf_failover_run"

    group_id: Mapped[str] = mapped_column(Text)
    topic: Mapped[str] = mapped_column(String(249))
    partition: Mapped[int] = mapped_column()
    target_topic: Mapped[str] = mapped_column(String(249))
    target_offset: Mapped[int | None] = mapped_column(BigInteger)
    basis: Mapped[str] = mapped_column(String(30))  # exact | behind | before-first-sync | unknown | timestamp
    source_offset: Mapped[int | None] = mapped_column(BigInteger)
    max_repeats: Mapped[int | None] = mapped_column(BigInteger)
    as_of: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    outcome: Mapped[str | None] = mapped_column(String(20))  # null until the commit step planned it
    current_offset: Mapped[int | None] = mapped_column(BigInteger)
    verified_offset: Mapped[int | None] = mapped_column(BigInteger)
    error: Mapped[str | None] = mapped_column(Text)

    run: Mapped[FailoverRunRow] = relationship(back_populates="offsets")


class SlaStateRow(Base):
    """Where one SLA check of a route stands (ok | breached) and since when: one row per (route, check)."""

    __tablename__ = "mf_sla_state"
    __table_args__ = (UniqueConstraint("route", "check", name="uq_mf_sla_state_route_check"),)

    route: Mapped[str] = mapped_column(String(200))
    check: Mapped[str] = mapped_column(String(20))  # heartbeat | lag | audit
    state: Mapped[str] = mapped_column(String(20))  # ok | breached
    since: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    detail: Mapped[str] = mapped_column(Text)  # the latest finding
    checked_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class RouteSampleRow(Base):
    """What one SLA check measured of a route beyond its lag: records copied so far (their rate over time) and
    the replication latency (its newest heartbeat's age). Kept ``LAG_HISTORY_DAYS`` (replicator.state.sla)."""

    __tablename__ = "mf_route_sample"
    __table_args__ = (Index("ix_mf_route_sample_route_at", "route", "at"),)

    route: Mapped[str] = mapped_column(String(200))
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    copied: Mapped[int | None] = mapped_column(BigInteger)  # the route's committed offsets summed (None: unknown)
    latency_ms: Mapped[int | None] = mapped_column(BigInteger)


class LagSampleRow(Base):
    """A topic's lag (records not yet copied, all its partitions) as one SLA check measured it: the page's lag
    over time. Kept ``LAG_HISTORY_DAYS`` (replicator.state.sla)."""

    __tablename__ = "mf_lag_sample"
    __table_args__ = (Index("ix_mf_lag_sample_route_at", "route", "at"),)

    route: Mapped[str] = mapped_column(String(200))
    topic: Mapped[str] = mapped_column(String(249))
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    lag: Mapped[int] = mapped_column(BigInteger)


class SlaEventRow(Base):
    """A breach or recovery of a route's SLA check (the alert history); notified_at once alerted."""

    __tablename__ = "mf_sla_event"

    route: Mapped[str] = mapped_column(String(200), index=True)
    check: Mapped[str] = mapped_column(String(20))
    kind: Mapped[str] = mapped_column(String(20))  # breach | recovery
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    detail: Mapped[str] = mapped_column(Text)
    notified_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    notify_error: Mapped[str | None] = mapped_column(Text)  # the last failed attempt (no secret in it)


class FailbackRunRow(Base):
    """One failback of a route: its figures, where it stopped, and the whole run as JSON (its steps,
    reverse-route starts, resume points and commits) so a re-run resumes it."""

    __tablename__ = "mf_failback_run"

    route: Mapped[str] = mapped_column(String(200), index=True)
    mode: Mapped[str] = mapped_column(String(20))  # incremental | resync
    primary_cluster: Mapped[str] = mapped_column(String(200))
    backup_cluster: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20))  # running | done | failed
    stopped_at_step: Mapped[str | None] = mapped_column(String(30))
    failover_run_id: Mapped[int | None] = mapped_column()
    records_copied: Mapped[int] = mapped_column(BigInteger)
    unreplicated_records: Mapped[int] = mapped_column(BigInteger)
    not_copied_records: Mapped[int | None] = mapped_column(BigInteger)
    rto_seconds: Mapped[float | None] = mapped_column()
    triggered_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    error: Mapped[str | None] = mapped_column(Text)
    run_json: Mapped[str] = mapped_column(Text)


class BackfillRunRow(Base):
    """One backfill of a route's topic: its planned source ranges, status and figures (``run_key``: upsert key)."""

    __tablename__ = "mf_backfill_run"
    __table_args__ = (Index("ix_mf_backfill_run_route_topic", "route", "topic"),)

    run_key: Mapped[str] = mapped_column(String(200), unique=True)
    route: Mapped[str] = mapped_column(String(200))
    topic: Mapped[str] = mapped_column(String(249))
    target_topic: Mapped[str] = mapped_column(String(249))
    mode: Mapped[str] = mapped_column(String(20))  # time | offsets
    ranges: Mapped[str] = mapped_column(Text)  # JSON [{partition, start, end, clamped}, ...]: source offsets
    status: Mapped[str] = mapped_column(String(20))  # running | done | failed
    records_written: Mapped[int | None] = mapped_column(BigInteger)  # null: not known
    records_total: Mapped[int] = mapped_column(BigInteger)
    overlap_ok: Mapped[bool] = mapped_column()
    started_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    error: Mapped[str | None] = mapped_column(Text)


class TransactionCountRow(Base):
    """How many transactions one run of a worker (one process) committed and aborted on an exactly-once route:
    absolute counts, so a write stored twice is harmless; a route's totals are the sums of its rows."""

    __tablename__ = "mf_transaction_count"

    run_key: Mapped[str] = mapped_column(String(64), unique=True)  # the worker process's run
    route: Mapped[str] = mapped_column(String(200), index=True)
    worker: Mapped[str] = mapped_column(String(200))
    committed: Mapped[int] = mapped_column(BigInteger)
    aborted: Mapped[int] = mapped_column(BigInteger)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
