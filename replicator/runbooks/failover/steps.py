"""One function per failover step: ``(ctx, run) -> StepResult``; :mod:`replicator.runbooks.engine` runs them.

A step decides from the run (what earlier steps found) and the clusters now, and
returns the run with what it learned, its status and a readable detail. In a dry
run it reads what it needs and writes nothing. Each is safe to run again: a
recorded hold, an up-to-date target group, a checkpoint taken twice change nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable

import pendulum

from replicator.domain.failover import DrainState, FailoverMode, Step, StepStatus, drain_decision, plan_steps
from replicator.domain.failover_run import FailoverRun, PartitionLag, rpo_from_points, rpo_measured
from replicator.domain.resume_point import Basis, verify_commits
from replicator.domain.runbook import acting
from replicator.domain.target_group import TargetOutcome
from replicator.errors import ClusterError
from replicator.runbooks import engine
from replicator.runbooks.context import Ctx as RunbookCtx
from replicator.runbooks.engine import StepFailed
from replicator.runbooks.failover import commits, fencing, points, source
from replicator.state.store import StateStore
from replicator.worker.subscription import REFRESH_SECONDS

log = logging.getLogger(__name__)


Ctx = RunbookCtx[FailoverRun]
# A running worker sees the route held at its next topic refresh and leaves its group: only past this long is the
# operator asked to stop it (#15: the run asked to SIGTERM workers already stopping by themselves).
HOLD_SEEN_S = 3 * REFRESH_SECONDS
StepResult = engine.StepResult[FailoverRun]


def _plan(ctx: Ctx, run: FailoverRun, step: Step) -> tuple[StepStatus, str]:
    return plan_steps(run.request, ctx.route.source, ctx.route.target, run.route_group,
                      bool(run.source_reachable), source.workers_group(ctx.route)[0])[step]


def check_source(ctx: Ctx, run: FailoverRun) -> StepResult:
    """Is the source reachable (decides the drain and the final checkpoint)? The target must be."""
    why_not = source.unreachable(ctx.config, ctx.route.target)
    if why_not:
        raise StepFailed(f"route {ctx.route.name}: target {ctx.route.target!r} is unreachable, nothing can move "
                         f"to it: {why_not}")
    why_not = source.unreachable(ctx.config, ctx.route.source)
    run = dataclasses.replace(run, source_reachable=why_not is None)
    detail = _plan(ctx, run, Step.CHECK_SOURCE)[1] + (f" ({why_not}): going on without it" if why_not else "")
    return StepResult(run, acting(run), detail)


def fence(ctx: Ctx, run: FailoverRun) -> StepResult:
    """Deny writes on the route's source topics (``--fence``) and watch that none gets past."""
    status, detail = _plan(ctx, run, Step.FENCE)
    if status == StepStatus.SKIPPED:
        return StepResult(run, status, detail)
    try:
        return fencing.fence(ctx, run)
    except ClusterError as exc:
        return _source_lost(ctx, run, exc, f"while fencing ({exc})")


def drain(ctx: Ctx, run: FailoverRun) -> StepResult:
    """Wait until nothing visible is left to copy, the timeout, or no worker is left to copy it."""
    status, detail = _plan(ctx, run, Step.DRAIN)
    if status == StepStatus.SKIPPED:
        return StepResult(run, status, detail)
    began, timeout, told = time.monotonic(), run.request.drain_timeout_seconds, 0.0
    while True:
        try:
            lags = source.measure_lags(ctx.config, ctx.route, run.request.topics)
            workers = source.route_workers(ctx.config, ctx.route)
        except ClusterError as exc:
            return _source_lost(ctx, run, exc, f"while draining ({exc})")
        left = sum(lag.not_replicated for lag in lags)
        state = drain_decision(left, workers, time.monotonic() - began, timeout)
        if run.request.dry_run:
            return StepResult(dataclasses.replace(run, lags=lags), StepStatus.PLANNED,
                              f"{detail}; now: {_left(lags)}, {workers} worker(s) running")
        if state != DrainState.WAIT:
            return StepResult(dataclasses.replace(run, lags=lags), StepStatus.DONE,
                              _drained(state, lags, time.monotonic() - began, run.route_group))
        if time.monotonic() - told >= 5.0:  # a line every 5 s, not every poll
            told = time.monotonic()
            ctx.say(f"  drain: {_left(lags)}, {workers} worker(s) copying, {told - began:.0f} s")
        time.sleep(1.0)


def _left(lags: tuple[PartitionLag, ...]) -> str:
    left = [lag for lag in lags if lag.not_replicated]
    if not left:
        return "nothing left to copy"
    still_open = sum(lag.open_records for lag in left)
    return (f"{sum(lag.not_replicated for lag in left)} offsets left on {len(left)} partition(s)"
            + (f" ({still_open} records in transactions still open on the source)" if still_open else ""))


def _drained(state: DrainState, lags: tuple[PartitionLag, ...], took: float, group: str) -> str:
    if state == DrainState.DRAINED:
        return f"drained: nothing left to copy after {took:.1f} s"
    if state == DrainState.NO_WORKERS:
        return f"not drained: {_left(lags)} and group {group!r} has no member to copy them: going on (RPO)"
    return f"not drained after {took:.0f} s: {_left(lags)}: going on (they count in the RPO)"


def _source_lost(ctx: Ctx, run: FailoverRun, exc: ClusterError, when: str) -> StepResult:
    """The source stopped answering mid-step: go on as with an unreachable source, or fail if it does answer."""
    if source.unreachable(ctx.config, ctx.route.source) is None:
        raise exc
    run = dataclasses.replace(run, source_reachable=False)
    return StepResult(run, acting(run), f"source {ctx.route.source!r} became unreachable {when}: going on")


def stop_route(ctx: Ctx, run: FailoverRun) -> StepResult:
    """Hold the route (``mirrorflow run`` refuses it), then wait until its group has no member."""
    detail = _plan(ctx, run, Step.STOP_ROUTE)[1]
    if run.request.topics:
        return _stop_topics(ctx, run, detail)
    if run.request.dry_run:
        workers = source.route_workers(ctx.config, ctx.route) if run.source_reachable else None
        return StepResult(run, StepStatus.PLANNED, detail + ("" if workers is None else f"; {workers} running now"))
    if run.route_stopped_at is None:
        run = ctx.save(dataclasses.replace(run, route_stopped_at=pendulum.now("UTC")))
        ctx.say(f"  stop-route: route {ctx.route.name} marked failed over: `mirrorflow run` refuses it from now on")
    if not run.source_reachable:
        return StepResult(run, StepStatus.DONE, f"route marked failed over; its workers cannot be seen while "
                                                f"{ctx.route.source!r} is down: stop them before it comes back")
    began, timeout = time.monotonic(), run.request.stop_timeout_seconds
    try:
        while (workers := source.route_workers(ctx.config, ctx.route)) and time.monotonic() - began < timeout:
            waited = time.monotonic() - began
            ctx.say(f"  stop-route: {workers} worker(s) still in group {run.route_group!r}: "
                    + (f"they stop by themselves once they see the route held (their next topic refresh, "
                       f"{REFRESH_SECONDS:g} s)" if waited < HOLD_SEEN_S else "stop them (SIGTERM)"))
            time.sleep(2.0)
        if workers:
            raise StepFailed(f"route {ctx.route.name}: {workers} worker(s) still in group {run.route_group!r} on "
                             f"{source.workers_group(ctx.route)[0]!r} after {timeout} s: stop them (SIGTERM to each "
                             f"`mirrorflow run --route {ctx.route.name}`), then run the failover again to go on")
        lags = source.measure_lags(ctx.config, ctx.route)
    except ClusterError as exc:
        return _source_lost(ctx, run, exc, f"while stopping the route ({exc})")
    run = dataclasses.replace(run, lags=lags, rpo=rpo_measured(lags, pendulum.now("UTC")))
    return StepResult(run, StepStatus.DONE, f"route marked failed over; group {run.route_group!r} has no member; "
                                            f"{_left(lags)}")


def _stop_topics(ctx: Ctx, run: FailoverRun, detail: str) -> StepResult:
    """A per-topic failover: its topics marked failed over (the route's workers hold them as paused, the rest
    copies on); once every worker has looked (two looks), their lags are the RPO."""
    from replicator.state.repository import hold_topics

    topics = run.request.topics or ()
    if run.request.dry_run:
        return StepResult(run, StepStatus.PLANNED, detail)
    with StateStore(ctx.config.state.url) as store:
        store.run(lambda session: hold_topics(session, ctx.route, topics))
    ctx.say(f"  stop-route: topic(s) {', '.join(topics)} marked failed over: the route's workers stop fetching them "
            f"at their next look ({REFRESH_SECONDS:g} s)")
    if not run.source_reachable:
        return StepResult(run, StepStatus.DONE, f"topic(s) {', '.join(topics)} marked failed over")
    time.sleep(2 * REFRESH_SECONDS)  # every worker looked at the state DB since: none fetches them any more
    try:
        lags = source.measure_lags(ctx.config, ctx.route, topics)
    except ClusterError as exc:
        return _source_lost(ctx, run, exc, f"while stopping the topics ({exc})")
    run = dataclasses.replace(run, lags=lags, rpo=rpo_measured(lags, pendulum.now("UTC")))
    return StepResult(run, StepStatus.DONE, f"topic(s) {', '.join(topics)} marked failed over; the route copies "
                                            f"its other topics on; {_left(lags)}")


def final_checkpoint(ctx: Ctx, run: FailoverRun) -> StepResult:
    """Fix where each group resumes: a final checkpoint, the stored checkpoints, or offsets-for-times."""
    status, detail = _plan(ctx, run, Step.FINAL_CHECKPOINT)
    request, notes = run.request, list(run.notes)
    if request.mode == FailoverMode.TIMESTAMP:
        assert request.resume_instant is not None and request.groups  # FailoverRequest.problems() checked
        found = points.by_timestamp(ctx.config, ctx.route, request.groups, request.resume_instant)
        status = acting(run)
    elif run.source_reachable:
        try:
            found, more = points.final_checkpoint(ctx.config, ctx.route, request.groups, request.dry_run)
            notes += more
            status = acting(run)
            detail = "final checkpoint taken" if status == StepStatus.DONE else detail
        except ClusterError as exc:
            lost = _source_lost(ctx, run, exc, f"during the final checkpoint ({exc})")
            run, detail = lost.run, lost.detail + "; resuming from the stored checkpoints"
            found, status = points.stored_checkpoints(ctx.config, ctx.route, request.groups), StepStatus.SKIPPED
    else:
        found = points.stored_checkpoints(ctx.config, ctx.route, request.groups)
    found = tuple(p for p in found if request.moves(p.topic))  # a per-topic failover moves only its topics
    missing = sorted(set(request.groups or ()) - {p.group for p in found})
    notes += [f"group {g}: no checkpoint of it on the route's topics: nothing to move" for g in missing]
    if not found:
        notes.append("no group to move: no checkpoint of the route is stored (is the checkpoint DAG running?)")
    rpo = run.rpo if run.rpo is not None else rpo_from_points(found)
    run = dataclasses.replace(run, points=found, rpo=rpo, notes=tuple(dict.fromkeys(notes)))
    groups = len({p.group for p in found})
    return StepResult(run, status, f"{detail}: {groups} group(s), {len(found)} partition(s) ({_bases(run)})")


def _bases(run: FailoverRun) -> str:
    counts = Counter(p.basis.value for p in run.points)
    repeats = sum(p.max_repeats or 0 for p in run.points if p.basis == Basis.BEHIND)
    return ", ".join(f"{n} {basis}" + (f" (≤{repeats} may repeat)" if basis == Basis.BEHIND else "")
                     for basis, n in sorted(counts.items())) or "none"


def commit_offsets(ctx: Ctx, run: FailoverRun) -> StepResult:
    """Commit the resume offsets into the target's idle groups (by the checkpoints' rules)."""
    planned = commits.plan(ctx.config, ctx.route, run.points)
    done = planned if run.request.dry_run else commits.write(ctx.config, ctx.route, planned)
    run = dataclasses.replace(run, commits=done)
    counts = {o.value: sum(c.outcome == o for c in done) for o in TargetOutcome}
    detail = ", ".join(f"{n} {o}" for o, n in counts.items() if n) or "nothing to commit"
    kept = run.kept_groups()
    detail += "".join(f"; group {g} left as it is: {why}" for g, why in sorted(kept.items()))
    failed = [f"group {c.point.group}: {c.error}" for c in done if c.outcome == TargetOutcome.FAILED]
    if failed:
        return StepResult(run, StepStatus.FAILED, detail, "\n".join(dict.fromkeys(failed)))
    return StepResult(run, acting(run), detail)


def verify(ctx: Ctx, run: FailoverRun) -> StepResult:
    """Read the target groups' committed offsets back: each must be what was committed."""
    checked = [c for c in run.commits if c.outcome in (TargetOutcome.WRITTEN, TargetOutcome.UP_TO_DATE,
                                                        TargetOutcome.TARGET_AHEAD, TargetOutcome.PLANNED)]
    if run.request.dry_run:
        return StepResult(run, StepStatus.PLANNED, f"would read back {len(checked)} committed offset(s)")
    found = commits.read_back(ctx.config, ctx.route, run.commits)
    verified, problems = verify_commits(run.commits, found)
    run = dataclasses.replace(run, commits=verified)
    if problems:
        return StepResult(run, StepStatus.FAILED, f"{len(problems)} of {len(checked)} offset(s) not as committed",
                          "\n".join(problems))
    return StepResult(run, StepStatus.DONE, f"{len(checked)} committed offset(s) read back as planned")


def finish(ctx: Ctx, run: FailoverRun) -> StepResult:
    """Record the end: RTO from the trigger, RPO, notes for the operator."""
    rpo = run.rpo if run.rpo is not None else rpo_from_points(run.points)
    writable = fencing.lift_read_only(ctx.config, ctx.route, run.request.dry_run,  # sync.read_only replicas
                                      run.request.topics)
    if writable:
        run = dataclasses.replace(run, notes=(*run.notes, f"replicas writable again: {writable}"))
    run = dataclasses.replace(run, rpo=rpo, finished_at=None if run.request.dry_run else pendulum.now("UTC"))
    if run.request.dry_run:
        return StepResult(run, StepStatus.PLANNED, f"would record the run; {rpo.describe()}")
    return StepResult(run, StepStatus.DONE, f"RTO {run.rto_seconds:.1f} s; {rpo.describe()}")


STEPS: dict[Step, Callable[[Ctx, FailoverRun], StepResult]] = {
    Step.CHECK_SOURCE: check_source,
    Step.FENCE: fence,
    Step.DRAIN: drain,
    Step.STOP_ROUTE: stop_route,
    Step.FINAL_CHECKPOINT: final_checkpoint,
    Step.COMMIT_OFFSETS: commit_offsets,
    Step.VERIFY: verify,
    Step.FINISH: finish,
}
