"""Failback of a failed-over route: the steps, the reverse route, and where each group resumes.

After a failover of route ``R`` (``primary -> backup``) the applications use
``backup``. A failback brings them home once ``primary`` is back. The records
written on ``backup`` since the failover reach ``primary`` through a *reverse
route* (``backup -> primary``, each replica mapped back to the topic it copies),
then the groups move back with the drain-and-translate steps of a failover:

1. ``check``: both clusters answer, ``R`` was failed over and is held, none of
   its old workers is back in its group; the replicas of ``R`` on ``backup``.
2. ``prepare``: mode ``incremental``: the reverse route starts on each replica
   partition right after the last record ``R`` copied (its committed offset,
   translated through its offset syncs), so only what was written on ``backup``
   since goes back. Mode ``resync``: ``primary``'s topics are deleted and created
   again like the replicas, and the reverse route copies every record back
   (records on ``primary`` that never reached ``backup`` would be lost: refused
   unless the operator accepts it).
3. ``reverse-copy``: the reverse route copies up to the replicas' ends.
4. ``drain``: again, until nothing is left to copy (the applications stopped
   writing on ``backup``), up to a timeout; what is left counts as not copied.
5. ``translate``: where each group of ``backup`` resumes on ``primary``: through
   the reverse route's offset syncs for records it copied, through the inverse of
   ``R``'s syncs for records that came from ``primary`` in the first place.
6. ``commit-offsets`` / 7. ``verify``: into ``primary``'s groups, by the failover's
   rules (never a group with active members, never backwards); read back.
8. ``release``: ``R`` may run again. ``incremental``: it resumes where it stopped,
   so records of ``primary`` it never copied reach ``backup`` now, and it skips
   the records the reverse route brought (their origin header names ``backup``).
   ``resync``: ``R``'s offsets are set to the ends of the recreated topics: what
   they hold came from ``backup`` already.
9. ``finish``: figures stored, what the applications do next.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Any

from replicator.domain.fence import FenceRecord
from replicator.domain.offset_sync import BeforeFirstSync, Behind, Exact, OffsetSync, translate, translate_inverse
from replicator.domain.resume_point import Basis, GroupCommit, ResumePoint
from replicator.domain.run_json import parse_time, plain, point_from, required_time
from replicator.domain.runbook import RunStatus, RunSteps, StepRecord, steps_from
from replicator.domain.target_group import TargetOutcome

REVERSE_SUFFIX = ".failback"


class FailbackMode(StrEnum):
    """What goes back to the old primary."""

    INCREMENTAL = "incremental"  # only what was written on the backup since the failover
    RESYNC = "resync"  # everything: the old primary's topics are recreated first


class FailbackStep(StrEnum):
    """The steps of a failback, in order."""

    CHECK = "check"
    PREPARE = "prepare"
    REVERSE_COPY = "reverse-copy"
    FENCE = "fence"
    DRAIN = "drain"
    TRANSLATE = "translate"
    COMMIT_OFFSETS = "commit-offsets"
    VERIFY = "verify"
    RELEASE = "release"
    FINISH = "finish"


FailbackStatus = RunStatus  # where a failback run stands: as any runbook's run
FailbackStepRecord = StepRecord  # one step of a failback run: as any runbook's step


@dataclass(frozen=True, slots=True)
class FailbackRequest:
    """What the operator asked for (``groups`` None: every group the route checkpoints)."""

    route: str
    mode: FailbackMode = FailbackMode.INCREMENTAL
    groups: tuple[str, ...] | None = None
    drain_timeout_seconds: int = 60
    accept_loss: bool = False  # resync: records on the old primary never copied may be dropped
    dry_run: bool = False
    fence: bool = False  # deny writes on the backup's topics the reverse route copies, before its drain
    accept_bypass: bool = False  # go on when records got past that fence
    topics: tuple[str, ...] | None = None  # only these topics, failed over by topic (None: the whole route)

    def problems(self) -> list[str]:
        """Why the request cannot run (empty when it can)."""
        out = []
        if self.topics and self.mode == FailbackMode.RESYNC:
            out.append("--topic is for mode incremental: a resync deletes and recreates the old primary's topics, "
                       "which the route's workers still hold while they copy its other topics")
        if self.drain_timeout_seconds < 0:
            out.append(f"drain timeout: must be >= 0 seconds, got {self.drain_timeout_seconds}")
        if self.accept_loss and self.mode != FailbackMode.RESYNC:
            out.append("--accept-loss is for mode resync (incremental drops nothing)")
        if self.accept_bypass and not self.fence:
            out.append("--accept-bypass is for a fenced failback: add --fence")
        return out

    def same_work(self, other: FailbackRequest) -> bool:
        """True when ``other`` asks for the same failback (so it may resume this one's run)."""
        return (self.route, self.mode, self.fence, self.accept_bypass) == (
            other.route, other.mode, other.fence, other.accept_bypass) and _set(self.groups) == _set(other.groups) \
            and _set(self.topics) == _set(other.topics)

    def moves(self, topic: str) -> bool:
        """True when ``topic`` (of the old primary) goes back: every topic, unless the request names some."""
        return self.topics is None or topic in self.topics


def _set(names: tuple[str, ...] | None) -> frozenset[str] | None:
    return None if names is None else frozenset(names)


def reverse_route_name(route: str) -> str:
    """The name of the reverse route of ``route`` (a route name of its own, never a config's)."""
    return route + REVERSE_SUFFIX


@dataclass(frozen=True, slots=True)
class ReverseTopic:
    """A topic of the backup and the topic of the old primary its records go back to.

    ``copied`` True: the route's replica (it holds the route's copies, then what was
    written on it). False: the backup's own topic of the original's name, where the
    failover told producers to write under a ``prefix`` policy (copied whole: before
    the failover nothing writes it).
    """

    replica: str
    original: str
    partitions: int
    copied: bool = True


def reverse_route_settings(route: Mapping[str, Any], primary: str, backup: str,
                           topics: Sequence[ReverseTopic], mode: FailbackMode) -> dict[str, Any]:
    """The config of the reverse route of ``route`` (its settings as a mapping): backup -> primary.

    Exactly the replicas, each mapped back to its original name; clients, checkpoint
    groups and refused-record handling as the route's; no heartbeats, no metadata sync.
    ``resync`` turns the loop check off: records born on ``primary`` go back to it as
    they are (the incremental failback skips them instead, by their origin header).
    """
    return {
        "name": reverse_route_name(str(route["name"])), "source": backup, "target": primary,
        "topics": [re.escape(t.replica) for t in topics] or ["(?!)"],
        "policy": {"mapping": {t.replica: t.original for t in topics}, "merge": True},
        "start": "earliest", "on_data_loss": route.get("on_data_loss", "continue"),
        "on_refused_record": route.get("on_refused_record", "fail"),
        "consumer": dict(route.get("consumer") or {}), "producer": dict(route.get("producer") or {}),
        "checkpoints": {"groups": list(route["checkpoints"]["groups"]),
                        "exclude_groups": list(route["checkpoints"]["exclude_groups"])},
        "sla": {"heartbeats": False}, "sync": {"acls": False},
        "loop_check": mode == FailbackMode.INCREMENTAL,
    }


def translate_back(syncs: Sequence[OffsetSync], position: int, replicated_end: int | None) -> int | None:
    """The source position of a group at replica position ``position``: the inverse of the syncs.

    ``syncs`` are one partition's, source -> replica; ``replicated_end`` is the route's
    committed source offset (every record before it was copied). A position inside a
    run of copied records maps exactly; at the end of a run it maps to the source
    position after that run's last record. None: before the first copy, or after the
    last known one (nothing the route copied is there). The rules:
    :func:`~replicator.domain.offset_sync.translate_inverse`.
    """
    found = translate_inverse(syncs, position, replicated_end)
    return found.target_offset if isinstance(found, Exact) else None


def reverse_start(forward_syncs: Sequence[OffsetSync], forward_end: int | None, replica_end: int) -> tuple[int, str]:
    """Where the incremental reverse route starts on one replica partition, and why.

    Right after the last record the route copied: its committed offset translated
    through its syncs. A partition the route never copied to starts at 0 (every
    record on it was written on the backup); without a committed offset, at the
    replica's end as the failback found it (said so: later records only).
    """
    if not forward_syncs:
        return 0, "the route copied nothing here: every record"
    if forward_end is None:
        return replica_end, "no committed offset of the route: from the replica's end now"
    found = translate(forward_syncs, forward_end, forward_end)
    if isinstance(found, Exact | Behind | BeforeFirstSync):
        return min(found.target_offset, replica_end), "after the route's last copied record"
    return replica_end, "no offset sync of the route: from the replica's end now"


def resume_point(group: str, replica: str, original: str, partition: int, position: int, start: int,
                 reverse_syncs: Sequence[OffsetSync], reverse_end: int | None,
                 forward_syncs: Sequence[OffsetSync], forward_end: int | None) -> ResumePoint:
    """Where ``group``, at ``position`` on the replica partition, resumes on the original topic.

    Up to ``start`` (where the reverse route began) the group read records that came
    from the old primary: the inverse of the route's syncs says where they are there
    (at ``start`` itself: right after the route's last copy, so the group also reads
    the records the route never copied). Past it: the reverse route's syncs.
    ``forward_syncs`` empty (resync: the old topics are gone): the reverse syncs only.
    """
    if position <= start and forward_syncs:
        back = translate_back(forward_syncs, position, forward_end)
        if back is not None:
            return ResumePoint(group, replica, partition, original, back, Basis.EXACT, position)
    if reverse_syncs:
        found = translate(reverse_syncs, position, reverse_end)
        if isinstance(found, Exact):
            return ResumePoint(group, replica, partition, original, found.target_offset, Basis.EXACT, position)
        if isinstance(found, Behind):
            return ResumePoint(group, replica, partition, original, found.target_offset, Basis.BEHIND, position,
                               found.max_repeats)
        if isinstance(found, BeforeFirstSync):
            return ResumePoint(group, replica, partition, original, found.target_offset, Basis.BEFORE_FIRST_SYNC,
                               position)
    return ResumePoint(group, replica, partition, original, None, Basis.UNKNOWN, position)


def merge_points(points: Sequence[ResumePoint], starts: Mapping[tuple[str, int], int]) -> tuple[ResumePoint, ...]:
    """One point per group and partition of the old primary, where two topics of the backup feed it.

    Under ``prefix`` a group reads the replica (records from the old primary) and the
    backup's own topic (records written since the failover); on the old primary they
    are one log, the replica's part first. A group that had not read the replica's
    part to its end (``starts``: where the reverse route began on it) resumes there,
    and may read again the records of the other topic it had already read; one that
    had, resumes where the other topic's position says.
    """
    out: dict[tuple[str, str, int], ResumePoint] = {}
    for point in points:
        key = (point.group, point.target_topic, point.partition)
        kept = out.get(key)
        if kept is None:
            out[key] = point
            continue
        replica, local = (kept, point) if point.topic == point.target_topic else (point, kept)
        read = (local.source_offset or 0) - starts.get((local.topic, local.partition), 0)  # of the new records
        done = (replica.source_offset or 0) >= starts.get((replica.topic, replica.partition), 0)
        if local.target_offset is None or (read <= 0 and replica.target_offset is not None):
            out[key] = replica
        elif done or replica.target_offset is None:
            out[key] = local
        else:
            out[key] = replace(replica, basis=Basis.BEHIND, max_repeats=read + (replica.max_repeats or 0))
    return tuple(sorted(out.values(), key=lambda p: (p.group, p.target_topic, p.partition)))


@dataclass(frozen=True, slots=True)
class Unreplicated:
    """Records of the old primary its route never copied (``[first, end)``): they stayed there."""

    topic: str
    partition: int
    first: int
    end: int


@dataclass(frozen=True, slots=True)
class FailbackRun(RunSteps[FailbackStep]):
    """One failback of a route (``run_id`` None until stored; a dry run is never stored)."""

    request: FailbackRequest
    primary: str  # the route's source, where the applications go back to
    backup: str  # the route's target, where they are now
    triggered_at: dt.datetime
    steps: tuple[StepRecord[FailbackStep], ...]
    run_id: int | None = None
    failover_run_id: int | None = None
    topics: tuple[ReverseTopic, ...] = ()
    starts: tuple[tuple[str, int, int], ...] = ()  # (replica, partition, offset) the reverse route began at
    unreplicated: tuple[Unreplicated, ...] = ()
    copied: int = 0  # records the reverse route wrote onto the primary
    not_copied: int | None = None  # offsets left on the backup when the drain ended (the switch's RPO)
    points: tuple[ResumePoint, ...] = ()
    commits: tuple[GroupCommit, ...] = ()
    finished_at: dt.datetime | None = None
    notes: tuple[str, ...] = ()
    abandoned_at: dt.datetime | None = None  # --restart started another run
    fence: FenceRecord | None = None  # the write fence it raised on the backup (--fence), lifted at release

    @classmethod
    def new(cls, request: FailbackRequest, primary: str, backup: str, now: dt.datetime) -> FailbackRun:
        """A run triggered ``now``, every step pending."""
        return cls(request, primary, backup, now, tuple(StepRecord(s) for s in FailbackStep))

    @property
    def reverse_route(self) -> str:
        """The reverse route's name."""
        return reverse_route_name(self.request.route)

    @property
    def unreplicated_records(self) -> int:
        """Offsets of the old primary its route never copied (markers included: an upper bound)."""
        return sum(u.end - u.first for u in self.unreplicated)

    def to_dict(self) -> dict[str, Any]:
        """The run as plain JSON (the DAG's tasks pass it on; :func:`run_from_dict` reads it back)."""
        return {**{f.name: plain(getattr(self, f.name)) for f in fields(self)}, "status": self.status.value,
                "stopped_at": plain(self.stopped_at), "rto_seconds": self.rto_seconds,
                "unreplicated_records": self.unreplicated_records, "reverse_route": self.reverse_route}


def run_from_dict(data: Mapping[str, Any]) -> FailbackRun:
    """The run :meth:`FailbackRun.to_dict` wrote."""
    req = data["request"]
    request = FailbackRequest(req["route"], FailbackMode(req["mode"]),
                              None if req["groups"] is None else tuple(req["groups"]), req["drain_timeout_seconds"],
                              req["accept_loss"], req["dry_run"], req.get("fence", False),
                              req.get("accept_bypass", False),
                              None if req.get("topics") is None else tuple(req["topics"]))
    return FailbackRun(
        request, data["primary"], data["backup"],
        required_time(data["triggered_at"], "failback run: triggered_at"),
        steps_from(data["steps"], FailbackStep),
        data["run_id"], data["failover_run_id"], tuple(ReverseTopic(**t) for t in data["topics"]),
        tuple((r, p, o) for r, p, o in data["starts"]), tuple(Unreplicated(**u) for u in data["unreplicated"]),
        data["copied"], data["not_copied"], tuple(point_from(p) for p in data["points"]),
        tuple(GroupCommit(point_from(c["point"]), TargetOutcome(c["outcome"]), c["current"], c["error"], c["verified"])
              for c in data["commits"]),
        parse_time(data["finished_at"]), tuple(data["notes"]), parse_time(data.get("abandoned_at")),
        None if data.get("fence") is None else FenceRecord.from_dict(data["fence"]))


def _of(topics: tuple[str, ...] | None) -> str:
    return f" of {', '.join(topics)}" if topics else ""


def next_steps(run: FailbackRun) -> str:
    """What the operator and the applications do next, as the run stands."""
    route = run.request.route
    if run.status == FailbackStatus.DRY_RUN:
        return f"Dry run of the failback of route {route}: nothing was changed."
    if run.status != FailbackStatus.DONE:
        return (f"Failback run {run.run_id} of route {route} stopped at {run.stopped_at}: the applications stay on "
                f"{run.backup!r}. Fix the cause, then run the same failback again: it resumes there.")
    which = f"Failback of topic(s) {', '.join(run.request.topics)} of route {route}" if run.request.topics else \
        f"Failback of route {route}"
    lines = [(f"{which} done: {run.primary!r} holds what was written on {run.backup!r} "
              f"({run.copied} records copied back)."),
             f"1. Point the producers and consumers{_of(run.request.topics)} back to {run.primary!r}."]
    moved = sorted({c.point.group for c in run.commits if c.outcome in (TargetOutcome.WRITTEN,
                                                                         TargetOutcome.UP_TO_DATE)})
    if moved:
        lines.append(f"   Groups {', '.join(moved)} resume on {run.primary!r} where they stopped on {run.backup!r}.")
    for group in sorted({c.point.group for c in run.commits if c.outcome == TargetOutcome.ACTIVE_MEMBERS}):
        lines.append(f"   Group {group}: it has active members on {run.primary!r}: left as it is (stop them and "
                     "run the failback again to move it).")
    if run.not_copied:
        lines.append(f"   {run.not_copied} offsets written on {run.backup!r} after the drain did not go back: "
                     f"the applications wrote on {run.backup!r} during the switch.")
    if run.request.topics:
        lines.append(f"2. The route's workers copy {', '.join(run.request.topics)} again (they copied its other topics "
                     "all along): nothing to start.")
    else:
        lines.append(f"2. Start the route again: `mirrorflow run --route {route}`.")
    if run.request.mode == FailbackMode.INCREMENTAL and run.unreplicated_records:
        lines.append(f"   It copies the {run.unreplicated_records} offsets {run.primary!r} held that never reached "
                     f"{run.backup!r} before the failover.")
    return "\n".join(lines)

