"""The record of one failover run: its steps, resume points, commits, RPO and RTO.

What the state DB stores (``mf_failover_run`` and its steps and offsets), what the
DAG's tasks hand each other (:meth:`FailoverRun.to_dict`, plain JSON) and what
``mirrorflow failover --json`` prints.

- **RPO** (records known not replicated): with the source reachable, measured when
  the route stopped -- per partition, the offsets between the route's committed
  offset and the end, counted only where a visible record is left (a partition
  ending with a transaction marker has nothing left); an upper bound, as those
  offsets may include markers. With the source unreachable, known only from the
  latest checkpoints: per partition, the most records a group had consumed on the
  source beyond what the route had copied ("as of" that checkpoint).
- **RTO**: seconds from the trigger (the run's creation) to the end of ``finish``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any

from replicator.domain.failover import FailoverMode, FailoverRequest, Step, StepRecord
from replicator.domain.fence import FenceRecord
from replicator.domain.resume_point import Basis, GroupCommit, ResumePoint
from replicator.domain.run_json import iso, parse_time, plain, point_from, required_time
from replicator.domain.runbook import RunStatus as RunStatus  # re-exported: where it was first defined
from replicator.domain.runbook import RunSteps, steps_from
from replicator.domain.target_group import TargetOutcome


class RpoBasis(StrEnum):
    """Where the RPO figure comes from."""

    MEASURED = "measured"
    LAST_CHECKPOINT = "last-checkpoint"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One source partition when measured: its end, the route's committed offset, and whether records are left."""

    topic: str
    partition: int
    end_offset: int
    replicated: int | None
    pending: bool  # a visible record (not a marker) is at or after ``replicated``
    # Records at or after the last stable offset: a transaction still open there (and what follows it). Not
    # visible to the route (it reads committed records) until it commits; a commit after the cutover is lost.
    open_records: int = 0
    stable_end: int | None = None  # the last stable offset, when below the end

    @property
    def not_replicated(self) -> int:
        """Offsets not copied, 0 when only markers are left."""
        return max(0, self.end_offset - (self.replicated or 0)) if self.pending else 0


@dataclass(frozen=True, slots=True)
class Rpo:
    """Records known not replicated (None: unknown), where the figure comes from and as of when."""

    records: int | None
    basis: RpoBasis
    as_of: dt.datetime | None = None
    partitions: tuple[tuple[str, int, int], ...] = ()  # (topic, partition, records) where records > 0
    # (topic, partition, last stable offset, records from it): transactions still open on the source
    open_transactions: tuple[tuple[str, int, int, int], ...] = ()

    def describe(self) -> str:
        """One line for the operator."""
        if self.records is None:
            # Not "the source was unreachable": a dry run measures nothing either (#15: a dry run said so right
            # after "source 'primary' is reachable").
            return ("RPO unknown: the route's lag was not measured (the source unreachable, or a dry run) and no "
                    "checkpoint of it is stored")
        where = ", ".join(f"{t}-{p}: {n}" for t, p, n in self.partitions)
        if self.basis == RpoBasis.MEASURED and not self.records:
            return "RPO: 0 records: everything was copied when the route stopped"
        if self.basis == RpoBasis.MEASURED:
            return (f"RPO: at most {self.records} records not replicated" + (f" ({where})" if where else "")
                    + self._open_words())
        return (f"RPO: {self.records} records known not replicated as of the checkpoint of {iso(self.as_of)}"
                + (f" ({where})" if where else "") + "; later records of the source are not known")


    def _open_words(self) -> str:
        if not self.open_transactions:
            return ""
        n = sum(records for *_, records in self.open_transactions)
        where = ", ".join(f"{t}-{p}: {records} from offset {first}" for t, p, first, records in self.open_transactions)
        return (f"; {n} of them in transactions still open on the source ({where}): not visible to the route; "
                "if they commit there after the cutover they are not copied")


def rpo_measured(lags: tuple[PartitionLag, ...], at: dt.datetime) -> Rpo:
    """The RPO of a route stopped with these lags."""
    left = tuple((lag.topic, lag.partition, lag.not_replicated) for lag in lags if lag.not_replicated)
    return Rpo(sum(n for _, _, n in left), RpoBasis.MEASURED, at, left, open_transactions(lags))


def open_transactions(lags: tuple[PartitionLag, ...]) -> tuple[tuple[str, int, int, int], ...]:
    """(topic, partition, last stable offset, records from it) where a transaction is still open."""
    return tuple((lag.topic, lag.partition, lag.stable_end, lag.open_records) for lag in lags
                 if lag.open_records and lag.stable_end is not None and lag.not_replicated)


def rpo_from_points(points: tuple[ResumePoint, ...]) -> Rpo:
    """The RPO known from checkpoints: per partition, the furthest a group read beyond what was copied."""
    checkpointed = [p for p in points if p.basis != Basis.TIMESTAMP and p.as_of is not None]
    if not checkpointed:
        return Rpo(None, RpoBasis.UNKNOWN)
    worst: dict[tuple[str, int], int] = {}
    for p in checkpointed:
        if p.basis == Basis.BEHIND and p.max_repeats:
            worst[(p.topic, p.partition)] = max(worst.get((p.topic, p.partition), 0), p.max_repeats)
    left = tuple((t, n, worst[(t, n)]) for t, n in sorted(worst))
    return Rpo(sum(worst.values()), RpoBasis.LAST_CHECKPOINT, max(p.as_of for p in checkpointed if p.as_of), left)


@dataclass(frozen=True, slots=True)
class FailoverRun(RunSteps[Step]):
    """One failover of a route (``run_id`` None until stored; a dry run is never stored)."""

    request: FailoverRequest
    source: str
    target: str
    route_group: str
    triggered_at: dt.datetime
    steps: tuple[StepRecord[Step], ...]
    run_id: int | None = None
    source_reachable: bool | None = None
    points: tuple[ResumePoint, ...] = ()
    commits: tuple[GroupCommit, ...] = ()
    lags: tuple[PartitionLag, ...] = ()
    rpo: Rpo | None = None
    route_stopped_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    abandoned_at: dt.datetime | None = None
    notes: tuple[str, ...] = ()  # warnings for the operator, in order
    fence: FenceRecord | None = None  # the write fence it raised on the source (--fence)

    @classmethod
    def new(cls, request: FailoverRequest, source: str, target: str, route_group: str,
            now: dt.datetime) -> FailoverRun:
        """A run triggered ``now``, every step pending."""
        return cls(request, source, target, route_group, now, tuple(StepRecord(s) for s in Step))

    @property
    def groups(self) -> tuple[str, ...]:
        """The groups moved (those with resume points), sorted."""
        return tuple(sorted({p.group for p in self.points}))

    def kept_groups(self) -> dict[str, str]:
        """Groups left as they are on the target -> why (active members, untranslated partitions)."""
        out: dict[str, str] = {}
        for c in self.commits:
            if c.outcome == TargetOutcome.ACTIVE_MEMBERS:
                out[c.point.group] = f"it has active members on {self.target!r}: never overwritten"
        return out

    def to_dict(self) -> dict[str, Any]:
        """The run as plain JSON (the DAG's tasks pass it on; :meth:`from_dict` reads it back)."""
        return {
            **{f.name: plain(getattr(self, f.name)) for f in fields(self)},
            "status": self.status.value, "stopped_at": plain(self.stopped_at), "rto_seconds": self.rto_seconds,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FailoverRun:
        """The run :meth:`to_dict` wrote."""
        req = data["request"]
        request = FailoverRequest(req["route"], None if req["groups"] is None else tuple(req["groups"]),
                                  FailoverMode(req["mode"]), parse_time(req["at"]), req["margin_seconds"],
                                  req["drain_timeout_seconds"], req["stop_timeout_seconds"], req["dry_run"],
                                  req["fence"], req["accept_bypass"],
                                  None if req.get("topics") is None else tuple(req["topics"]))
        rpo = data["rpo"]
        return cls(
            request, data["source"], data["target"], data["route_group"],
            required_time(data["triggered_at"], "failover run: triggered_at"),
            steps_from(data["steps"], Step),
            data["run_id"], data["source_reachable"],
            tuple(point_from(p) for p in data["points"]),
            tuple(GroupCommit(point_from(c["point"]), TargetOutcome(c["outcome"]), c["current"], c["error"],
                              c["verified"]) for c in data["commits"]),
            tuple(PartitionLag(**lag) for lag in data["lags"]),
            None if rpo is None else Rpo(rpo["records"], RpoBasis(rpo["basis"]), parse_time(rpo["as_of"]),
                                         tuple((t, p, n) for t, p, n in rpo["partitions"]),
                                         tuple((t, p, f, n) for t, p, f, n in rpo["open_transactions"])),
            parse_time(data["route_stopped_at"]), parse_time(data["finished_at"]), parse_time(data["abandoned_at"]),
            tuple(data["notes"]), None if data["fence"] is None else FenceRecord.from_dict(data["fence"]),
        )


def next_steps(run: FailoverRun) -> str:
    """What the applications (and the operator) do now, as readable text."""
    moved = "" if not run.request.topics else f"Topic(s) {', '.join(run.request.topics)} of r"
    head = (f"{moved or 'R'}oute {run.request.route} failed over from {run.source!r} to {run.target!r}"
            + ("" if run.rto_seconds is None else f" in {run.rto_seconds:.1f} s") + ".")
    if run.request.dry_run:
        head = f"Dry run of the failover of route {run.request.route}: nothing was changed."
    lines = [head, *(f"- {line}" for line in _group_lines(run))]
    replicas = sorted({(p.topic, p.target_topic) for p in run.points if p.topic != p.target_topic})
    lines.append(f"- producers: write to {run.target!r} from now on.")
    if run.fence is not None and run.fence.lifted_at is None:
        lines.append(f"  Writes to the route's topics on {run.source!r} are denied by the fence (ACLs "
                     f"{', '.join(sorted({a.principal for a in run.fence.acls})) or 'none added'}): a failback lifts "
                     "it, and so does --release.")
    if replicas:
        shown = ", ".join(f"{r} (copy of {t})" for t, r in replicas)
        lines.append(f"  The replicas {shown} hold what {run.source!r} had; records produced on {run.target!r} "
                     "go to topics of their own, so consumers subscribe to both (the replica and the topic "
                     "of the same name).")
    ref = "" if run.run_id is None else f" (failover run {run.run_id})"
    if run.request.topics:
        lines.append(f"- route {run.request.route}: copies its other topics on; {', '.join(run.request.topics)} "
                     f"stay failed over{ref}: its workers do not fetch them. After a drill, `mirrorflow failover "
                     f"--route {run.request.route} --release` lets them be copied again.")
    else:
        lines.append(f"- route {run.request.route}: stopped; `mirrorflow run` refuses it while it is failed "
                     f"over{ref}. When {run.source!r} is back, fail back to it; after a drill, `mirrorflow failover "
                     f"--route {run.request.route} --release` lets the route run again.")
    if run.rpo is not None:
        lines.append(f"- {run.rpo.describe()}.")
    lines += [f"- note: {note}" for note in run.notes]
    return "\n".join(lines)


def _group_lines(run: FailoverRun) -> list[str]:
    out = []
    kept = run.kept_groups()
    for group in run.groups:
        if group in kept:
            out.append(f"group {group}: left as it is on {run.target!r}: {kept[group]}; its consumers keep "
                       "their own positions.")
            continue
        mine = [c for c in run.commits if c.point.group == group] or [
            GroupCommit(p, TargetOutcome.PLANNED) for p in run.points if p.group == group]
        topics = sorted({c.point.target_topic for c in mine if c.point.target_offset is not None})
        out.append(f"group {group}: start its consumers on {run.target!r}, subscribed to {', '.join(topics) or '-'}; "
                   f"they resume {_resume_words(mine)}.")
        out += [f"group {group}, {c.point.topic}-{c.point.partition}: no offset sync (the route never copied it): "
                "not moved; the group starts there as its auto.offset.reset says." for c in mine
                if c.outcome == TargetOutcome.UNTRANSLATED]
    return out


def _resume_words(commits: list[GroupCommit]) -> str:
    points = [c.point for c in commits if c.point.target_offset is not None]
    if any(p.basis == Basis.TIMESTAMP for p in points):
        instant = next(p.as_of for p in points if p.basis == Basis.TIMESTAMP)
        return f"at the first record at or after {iso(instant)}: records from then on may be read again"
    repeats = sum(p.max_repeats or 0 for p in points)
    if repeats:
        return f"without skipping any record; at most {repeats} records may be read again"
    return "exactly after the last record they consumed: none repeated, none skipped"
