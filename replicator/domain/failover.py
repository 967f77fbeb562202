"""Failover of a route: the steps, the decisions each takes, and where each group resumes.

A failover moves the applications of a route's source cluster to its target. The
steps, in order (each idempotent; a run that stopped midway resumes at its first
step not done):

1. ``check-source``: is the source reachable? Reachable: the route can still
   drain. Unreachable: go on without it; what was not copied is counted from the
   last checkpoint (the RPO is then "as of" that checkpoint).
1. ``fence`` (``--fence``): deny WRITE on the route's source topics to their
   writers (:mod:`replicator.domain.fence`), then watch their ends: records
   written past the fence lift it again and stop the run, naming them, the route
   left as it was -- unless ``--accept-bypass``. Skipped without ``--fence``.
2. ``drain``: wait until nothing visible is left to copy (``lag`` below), up to a
   timeout; skipped when the source is unreachable; cut short when no worker of
   the route runs (nothing would ever drain).
3. ``stop-route``: record the route as failed over (``mirrorflow run`` refuses
   it from then on) and wait until its consumer group has no member.
4. ``final-checkpoint``: fix where each group resumes on the target. Mode
   ``checkpoint``: a last checkpoint when the source is reachable, else the
   stored ones. Mode ``timestamp`` (groups never checkpointed): the first record
   at or after an instant minus a safety margin, on each replica partition.
5. ``commit-offsets``: commit them into the target's groups, by the rules of
   :mod:`replicator.domain.target_group` (never a group with active members, never
   backwards); resume points and commits: :mod:`replicator.domain.resume_point`.
6. ``verify``: read the committed offsets back.
7. ``finish``: record RPO and RTO, and say what the applications do next.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from enum import StrEnum

# Re-exported: a failover's step records are any runbook's.
from replicator.domain.runbook import FINISHED_STEP as FINISHED_STEP
from replicator.domain.runbook import StepRecord as StepRecord
from replicator.domain.runbook import StepStatus as StepStatus


class FailoverMode(StrEnum):
    """Where groups resume: translated checkpoints, or offsets-for-times."""

    CHECKPOINT = "checkpoint"
    TIMESTAMP = "timestamp"


class Step(StrEnum):
    """The steps of a failover, in order."""

    CHECK_SOURCE = "check-source"
    FENCE = "fence"
    DRAIN = "drain"
    STOP_ROUTE = "stop-route"
    FINAL_CHECKPOINT = "final-checkpoint"
    COMMIT_OFFSETS = "commit-offsets"
    VERIFY = "verify"
    FINISH = "finish"


_DURATION = re.compile(r"^\s*(\d+)\s*([smh]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600}


def parse_duration(text: str | int, what: str = "duration") -> int:
    """Whole seconds of ``60``, ``60s``, ``5m``, ``1h``; ValueError naming ``what`` otherwise."""
    match = _DURATION.match(str(text))
    if not match:
        raise ValueError(f"{what}: expected seconds like 60, 60s, 5m or 1h, got {text!r}")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def parse_instant(text: str, what: str = "at") -> dt.datetime:
    """An ISO 8601 instant (``2026-11-01T12:00:00Z``; no zone means UTC), in UTC."""
    try:
        value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"{what}: expected an ISO 8601 instant like 2026-11-01T12:00:00Z, got {text!r}") from None
    return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)


@dataclass(frozen=True, slots=True)
class FailoverRequest:
    """What the operator asked for (``groups`` None: every group with a checkpoint)."""

    route: str
    groups: tuple[str, ...] | None = None
    mode: FailoverMode = FailoverMode.CHECKPOINT
    at: dt.datetime | None = None
    margin_seconds: int = 60
    drain_timeout_seconds: int = 60
    stop_timeout_seconds: int = 30
    dry_run: bool = False
    fence: bool = False  # deny writes on the source topics before the drain
    accept_bypass: bool = False  # go on when records got past the fence (they count in the RPO)
    topics: tuple[str, ...] | None = None  # only these topics (and their groups' positions); the route copies on

    def problems(self) -> list[str]:
        """Why the request cannot run (empty when it can)."""
        out = []
        if self.mode == FailoverMode.TIMESTAMP and self.at is None:
            out.append("mode timestamp needs --at: the instant the groups had consumed up to")
        if self.mode == FailoverMode.TIMESTAMP and not self.groups:
            out.append("mode timestamp needs the groups by name (--group): they have no checkpoint to find them by")
        if self.mode == FailoverMode.CHECKPOINT and self.at is not None:
            out.append("--at is for mode timestamp; mode checkpoint resumes where the checkpoints say")
        if self.accept_bypass and not self.fence:
            out.append("--accept-bypass is for a fenced failover: add --fence")
        for name, value in (("margin", self.margin_seconds), ("drain timeout", self.drain_timeout_seconds),
                            ("stop timeout", self.stop_timeout_seconds)):
            if value < 0:
                out.append(f"{name}: must be >= 0 seconds, got {value}")
        return out

    @property
    def resume_instant(self) -> dt.datetime | None:
        """Mode timestamp: groups resume at the first record at or after this instant."""
        return None if self.at is None else self.at - dt.timedelta(seconds=self.margin_seconds)

    def same_work(self, other: FailoverRequest) -> bool:
        """True when ``other`` asks for the same failover (so it may resume this one's run)."""
        return (self.route, self.mode, self.at, self.margin_seconds, self.fence, self.accept_bypass) == (
            other.route, other.mode, other.at, other.margin_seconds, other.fence, other.accept_bypass) and \
            _groups(self) == _groups(other) and _set(self.topics) == _set(other.topics)

    def moves(self, topic: str) -> bool:
        """True when ``topic`` moves (every topic of the route, unless the request names some)."""
        return self.topics is None or topic in self.topics


def _groups(request: FailoverRequest) -> frozenset[str] | None:
    return _set(request.groups)


def _set(names: tuple[str, ...] | None) -> frozenset[str] | None:
    return None if names is None else frozenset(names)


def plan_steps(request: FailoverRequest, source: str, target: str, route_group: str,
               source_reachable: bool, group_cluster: str | None = None) -> dict[Step, tuple[StepStatus, str]]:
    """What each step will do, as (PENDING or SKIPPED, readable decision), given the source's state.
    ``group_cluster``: where ``route_group`` lives (the source, unless the route is exactly-once)."""
    skip, run = StepStatus.SKIPPED, StepStatus.PENDING
    if not request.fence:
        fence = (skip, "no --fence: producers still writing to the source after the route stops count in no RPO")
    elif source_reachable:
        fence = (run, f"deny WRITE on the route's topics of {source!r} to their writers, then watch that nothing "
                      "more is written")
    else:
        fence = (skip, f"source {source!r} unreachable: nobody can write to it now; fence it (or stop its "
                       "producers) before it comes back")
    if request.topics:
        drain = (run if source_reachable else skip,
                 f"wait up to {request.drain_timeout_seconds} s until nothing of {', '.join(request.topics)} is left "
                 "to copy" if source_reachable else f"source {source!r} unreachable: nothing can drain; going on")
        stop = (run, f"mark topic(s) {', '.join(request.topics)} failed over: the route's workers stop fetching them "
                     "at their next look (every 5 s) and copy the others on")
    elif source_reachable:
        drain = (run, f"wait up to {request.drain_timeout_seconds} s until nothing is left to copy")
        stop = (run, (f"mark the route failed over and wait up to {request.stop_timeout_seconds} s until group "
                      f"{route_group!r} on {group_cluster or source!r} has no member"))
    else:
        drain = (skip, f"source {source!r} unreachable: nothing can drain; going on")
        stop = (run, (f"mark the route failed over; its workers cannot be seen while {source!r} is down: stop them "
                      "before it comes back (until then they copy nothing)"))
    commit = f"commit the resume offsets into the groups on {target!r} that have no active member, never backwards"
    return {
        Step.CHECK_SOURCE: (run, f"source {source!r} is {'reachable' if source_reachable else 'unreachable'}"),
        Step.FENCE: fence,
        Step.DRAIN: drain,
        Step.STOP_ROUTE: stop,
        Step.FINAL_CHECKPOINT: _final_checkpoint_plan(request, source, source_reachable),
        Step.COMMIT_OFFSETS: (run, commit),
        Step.VERIFY: (run, f"read the groups' committed offsets back from {target!r}"),
        Step.FINISH: (run, "record RPO and RTO; say what the applications do next"),
    }


def _final_checkpoint_plan(request: FailoverRequest, source: str, reachable: bool) -> tuple[StepStatus, str]:
    if request.mode == FailoverMode.TIMESTAMP:
        return StepStatus.PENDING, (f"resume at the first record at or after {_iso(request.resume_instant)} "
                                    f"(--at minus {request.margin_seconds} s) on each replica partition")
    if reachable:
        return StepStatus.PENDING, "take a final checkpoint of the groups, once the route has stopped"
    return StepStatus.SKIPPED, f"source {source!r} unreachable: resume from the stored checkpoints"


def _iso(value: dt.datetime | None) -> str:
    return "-" if value is None else value.isoformat().replace("+00:00", "Z")


# MirrorFlow's own topics (the workers' heartbeats on the source, offset syncs and
# checkpoints on the target) carry nothing an application reads: never a resume
# point, never lag that counts (as the group filter leaves out ``mirrorflow-.*``).
OWN_TOPIC_PREFIX = "mirrorflow-"


def is_application_topic(topic: str) -> bool:
    """False for MirrorFlow's own topics (by their source name)."""
    return not topic.startswith(OWN_TOPIC_PREFIX)


class DrainState(StrEnum):
    """What the drain loop does next."""

    DRAINED = "drained"
    WAIT = "wait"
    TIMED_OUT = "timed-out"
    NO_WORKERS = "no-workers"  # lag left and nobody to copy it: waiting is pointless


def drain_decision(pending: int, workers: int, elapsed: float, timeout: float) -> DrainState:
    """After ``elapsed`` s: drained (nothing visible left), wait on, or stop waiting (and why)."""
    if pending == 0:
        return DrainState.DRAINED
    if workers == 0:
        return DrainState.NO_WORKERS
    return DrainState.TIMED_OUT if elapsed >= timeout else DrainState.WAIT
