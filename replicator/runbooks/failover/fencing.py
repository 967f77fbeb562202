"""The failover's ``fence`` step, and lifting the fences of a route's runs (failback, ``--release``).

The fence is raised on the source before the drain, so the drain ends at the
source's last record and the RPO is what it says; records written past it (a
producer the ACLs do not cover, a super user) lift it again and fail the step, the
route left as it was and still copying -- unless the run accepts them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from typing import Any, Protocol, TypeVar

import pendulum

from replicator.config import Config, RouteConfig
from replicator.domain.failover import StepStatus
from replicator.domain.failover_run import FailoverRun
from replicator.domain.fence import FenceRecord, describe_bypass
from replicator.kafka.clients import admin_settings
from replicator.runbooks import engine
from replicator.runbooks import fence as fences
from replicator.runbooks.context import Ctx
from replicator.runbooks.engine import StepFailed
from replicator.runbooks.failover.source import route_topics

StepResult = engine.StepResult[FailoverRun]


def check(config: Config, route: RouteConfig) -> str:
    """What the fence would add (UsageError naming the cluster and the missing right when it cannot be raised)."""
    return fences.plan(config, route.source, route_topics(config, route), route.fence.exempt).describe()


class Fenced(Protocol):
    """A run that may raise a fence: a failover's (on its source) or a failback's (on the backup)."""

    @property
    def fence(self) -> FenceRecord | None: ...  # noqa: D102 - the run's field
    @property
    def notes(self) -> tuple[str, ...]: ...  # noqa: D102


R = TypeVar("R", bound=Fenced)


def fence(ctx: Ctx[FailoverRun], run: FailoverRun) -> StepResult:
    """The failover's fence: on the source, its route's topics."""
    route = ctx.route
    topics = [t for t in route_topics(ctx.config, route) if run.request.moves(t)]
    done, status, detail = fence_run(ctx, run, route.source, topics)
    return StepResult(done, status, detail)


def fence_run(ctx: Ctx[R], run: R, cluster: str, topics: list[str]) -> tuple[R, StepStatus, str]:
    """Raise the fence on ``cluster``'s ``topics`` and watch it; roll it back (StepFailed) when records got past
    it, unless the run's request accepts a bypass. The run with its fence, the step's status and detail."""
    route, watch = ctx.route, ctx.route.fence.watch
    request: Any = getattr(run, "request")  # noqa: B009 - both runbooks' requests carry the fence flags
    planned = fences.plan(ctx.config, cluster, topics, route.fence.exempt)
    unguarded = (f"; {', '.join(planned.unguarded)}: no ACL lets anyone but super users write them, the watch "
                 "covers them" if planned.unguarded else "")
    if request.dry_run:
        return run, StepStatus.PLANNED, (f"would fence {cluster!r}: {planned.describe()}; then watch {watch:g} s "
                                         f"that nothing more is written{unguarded}")
    # Recorded before it is raised: a run that dies in between still knows which ACLs to lift.
    earlier = run.fence.acls if run.fence is not None and run.fence.lifted_at is None else ()
    record = FenceRecord(cluster, tuple(dict.fromkeys(earlier + planned.acls)), pendulum.now("UTC"))
    run = ctx.save(dataclasses.replace(run, fence=record))  # type: ignore[type-var]
    fences.raise_fence(ctx.config, cluster, planned.acls)
    ctx.say(f"  fence: {planned.describe()} on {cluster!r}{unguarded}; watching {watch:g} s")
    found = fences.watch(ctx.config, cluster, topics, watch, ctx.say)
    if not found:
        return run, StepStatus.DONE, f"fenced: {planned.describe()}{unguarded}; nothing written in {watch:g} s after it"
    record = dataclasses.replace(record, bypass=found)
    if request.accept_bypass:
        note = (f"records were written past the fence ({describe_bypass(found)}): accepted (--accept-bypass); "
                "the drain copies those written before the route stops, later ones count in no RPO")
        run = dataclasses.replace(run, fence=record, notes=(*run.notes, note))  # type: ignore[type-var]
        return run, StepStatus.DONE, f"fenced, bypassed: {describe_bypass(found)}; going on (--accept-bypass)"
    fences.lift_fence(ctx.config, cluster, record.acls)
    ctx.save(dataclasses.replace(run, fence=dataclasses.replace(record, lifted_at=pendulum.now("UTC"))))  # type: ignore[type-var]
    raise StepFailed(f"route {route.name}: records were written to {cluster!r} past the fence: "
                     f"{describe_bypass(found)} (a producer the ACLs do not cover, or a super user). The fence is "
                     "lifted and the route left as it was, still copying. Stop that writer and run the "
                     f"{'failover' if isinstance(run, FailoverRun) else 'failback'} again, or add --accept-bypass to "
                     "go on with those records in the RPO")


def lift_own(ctx: Ctx[R], run: R) -> tuple[R, str | None]:
    """Lift the fence ``run`` raised (a failback's on the backup, once the applications go back)."""
    record = run.fence
    if record is None or record.lifted_at is not None:
        return run, None
    request: Any = getattr(run, "request")  # noqa: B009
    if request.dry_run:
        return run, f"would lift the fence on {record.cluster!r}"
    gone = fences.lift_fence(ctx.config, record.cluster, record.acls)
    lifted = dataclasses.replace(record, lifted_at=pendulum.now("UTC"))
    return dataclasses.replace(run, fence=lifted), f"fence on {record.cluster!r} lifted ({gone} ACL(s))"  # type: ignore[type-var]


def lift_held(config: Config, route: RouteConfig, say: Callable[[str], None], dry_run: bool = False,
              topics: Collection[str] | None = None) -> list[str]:
    """Lift the fences the route's failover runs left raised (on ``topics`` only, when given: a per-topic
    failback; the run keeps the rest of its fence raised and recorded); a line for each."""
    from replicator.state import failovers
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        raised = store.run(lambda session: failovers.raised_fences(session, route.name))
    lines = []
    for run_id, record in raised:
        acls, rest = record.split(topics)
        if not acls:
            continue
        if dry_run:
            lines.append(f"would lift the fence of failover run {run_id} on {record.cluster!r} ({len(acls)} ACL(s))")
            continue
        gone = fences.lift_fence(config, record.cluster, acls)
        kept = rest or dataclasses.replace(record, lifted_at=pendulum.now("UTC"))
        with StateStore(config.state.url) as store:
            with store.session() as session:
                failovers.save_fence(session, run_id, kept)
        lines.append(f"fence of failover run {run_id} lifted on {record.cluster!r}: {gone} ACL(s) deleted"
                     + (f" ({len(rest.acls)} on other topics stay)" if rest else ""))
        say(lines[-1])
    return lines


def lift_read_only(config: Config, route: RouteConfig, dry_run: bool,
                   topics: tuple[str, ...] | None = None) -> str | None:
    """Make the route's replicas writable again (``sync.read_only``): the applications write them from now on.
    What was lifted, in words (None: nothing to lift)."""
    from replicator.domain.fence import plan_fence
    from replicator.kafka.admin import admin_client
    from replicator.runbooks.sync.read import read_acls
    from replicator.state.repository import route_topics
    from replicator.state.store import StateStore

    if not route.sync.read_only:
        return None
    admin = admin_client(admin_settings(config.cluster(route.target).client_properties()))
    acls, why_not = read_acls(admin, fences.TIMEOUT_S)
    if acls is None:
        return None if why_not is None else f"not lifted: the target's ACLs cannot be read ({why_not})"
    # The replicas of the topics the route copied (the state DB's rows: the source may be down).
    with StateStore(config.state.url) as store:
        rows = store.run(lambda session: route_topics(session, route.name))
    policy = config.policy(route)
    replicas = sorted({policy.format_remote_topic(route.source, r.topic) for r in rows
                       if topics is None or r.topic in topics})
    denies = [a for a in plan_fence("target", replicas, acls, route.sync.writers, everyone_if_no_acl=True,
                                    new_only=False).acls if a in acls]
    if not denies:
        return None
    if not dry_run:
        fences.lift_fence(config, route.target, denies)
    return f"{'would lift' if dry_run else 'lifted'} {len(denies)} DENY WRITE ACL(s) of the read-only replicas"
