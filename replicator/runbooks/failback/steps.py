"""One function per failback step: ``(ctx, run) -> StepResult``; :mod:`replicator.runbooks.engine` runs them.

The order and what each decides: :mod:`replicator.domain.failback`. In a dry run a
step reads what it needs and writes nothing. Each is safe to run again: the
reverse route's start is committed only where its group has none, a copy resumes
from the reverse route's own commits, a group already moved is up to date.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import pendulum
from confluent_kafka.admin import AdminClient

from replicator.config import RouteConfig
from replicator.domain.checkpoint import Partition
from replicator.domain.failback import (
    FailbackMode,
    FailbackRun,
    FailbackStep,
    ReverseTopic,
    Unreplicated,
    merge_points,
    resume_point,
    reverse_start,
)
from replicator.domain.failover import StepStatus
from replicator.domain.naming import group_id, sync_topic_name
from replicator.domain.offset_sync import OffsetSync
from replicator.domain.resume_point import Basis, verify_commits
from replicator.domain.runbook import acting
from replicator.kafka.clients import admin_settings
from replicator.kafka.group_offsets import commit, read_committed
from replicator.kafka.groups import list_groups
from replicator.runbooks import engine
from replicator.runbooks.checkpoints.syncs import SyncLog
from replicator.runbooks.context import Ctx as RunbookCtx
from replicator.runbooks.engine import StepFailed
from replicator.runbooks.failback import reverse as rev
from replicator.runbooks.failover import commits, source
from replicator.runbooks.failover.fencing import lift_own

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ctx(RunbookCtx[FailbackRun]):
    """What every step needs (the config with the reverse route once known), and the reverse route."""

    reverse: RouteConfig | None = None


StepResult = engine.StepResult[FailbackRun]


def _props(ctx: Ctx, cluster: str) -> dict[str, str]:
    return ctx.config.cluster(cluster).client_properties()


def _reverse(ctx: Ctx) -> RouteConfig:
    if ctx.reverse is None:
        raise StepFailed(f"route {ctx.route.name}: the failback found no replica to copy back (step check)")
    return ctx.reverse


def check(ctx: Ctx, run: FailbackRun) -> StepResult:
    """Both clusters answer, the route is held by a failover, none of its workers is back; its replicas."""
    from replicator.state.failovers import route_hold, topics_run
    from replicator.state.store import StateStore

    route, name = ctx.route, ctx.route.name
    for cluster in (route.source, route.target):
        why_not = source.unreachable(ctx.config, cluster)
        if why_not:
            raise StepFailed(f"route {name}: cluster {cluster!r} is unreachable ({why_not}): a failback needs both")
    with StateStore(ctx.config.state.url) as store:
        with store.session() as session:
            hold = route_hold(session, name)
            by_topic = topics_run(session, name, run.request.topics) if run.request.topics else None
    if run.request.topics:
        # The route's workers copy its other topics on; they hold these (the state DB says so) until the release.
        _check_topics_held(ctx, run.request.topics)
    elif hold is None and run.failover_run_id is None:
        raise StepFailed(f"route {name} is not failed over (no failover run holds it): there is nothing to fail "
                         "back; `mirrorflow failover` first")
    workers = 0 if run.request.topics else source.route_workers(ctx.config, route)
    if workers:
        cluster, group = source.workers_group(route)
        raise StepFailed(f"route {name}: {workers} worker(s) are in group {group!r} on {cluster!r} "
                         f"again: stop them (they would copy {route.source!r} onto {route.target!r} while the "
                         "applications use it), then run the failback again")
    topics = rev.reverse_topics(ctx.config, route, run.request.topics)
    if not topics:
        raise StepFailed(f"route {name}: no replica of {_its_topics(run)} is on {route.target!r}: nothing to copy "
                         "back")
    on_primary = rev.partitions_of(ctx.config, route.source)
    if run.request.mode == FailbackMode.INCREMENTAL:
        problems = [f"{t.original}: "
                    f"{'missing' if t.original not in on_primary else f'{on_primary[t.original]} partitions'}"
                    f" on {route.source!r}, {t.replica} on {route.target!r} has {t.partitions}" for t in topics
                    if on_primary.get(t.original, 0) < t.partitions]
        if problems:
            raise StepFailed(f"route {name}: mode incremental appends to the topics of {route.source!r}, but "
                             + "; ".join(problems) + ": use --mode resync")
    unreplicated = _unreplicated(ctx, run, on_primary)
    lost = sum(u.end - u.first for u in unreplicated)
    if run.request.mode == FailbackMode.RESYNC and lost and not run.request.accept_loss:
        where = ", ".join(f"{u.topic}-{u.partition} [{u.first}, {u.end})" for u in unreplicated[:5])
        raise StepFailed(f"route {name}: {lost} offsets of {route.source!r} never reached {route.target!r} ({where}"
                         f"{', ...' if len(unreplicated) > 5 else ''}); resync deletes them: use --mode incremental "
                         "(it keeps them and copies them on once the route runs again), or add --accept-loss")
    held_by = by_topic if run.request.topics else (hold.run_id if hold else None)
    run = dataclasses.replace(run, failover_run_id=run.failover_run_id or held_by, topics=topics,
                              unreplicated=unreplicated)
    holds = f"topic(s) {', '.join(run.request.topics)} failed over" if run.request.topics else "holds the route"
    detail = (f"both clusters answer; failover run {run.failover_run_id} {holds}; {len(topics)} replica(s) "
              f"to copy back ({', '.join(_named(t) for t in topics)}); {lost} offsets of {route.source!r} never "
              f"reached {route.target!r}" + (" (dropped: --accept-loss)" if lost and run.request.accept_loss else ""))
    return StepResult(run, acting(run), detail)


def _its_topics(run: FailbackRun) -> str:
    return f"topic(s) {', '.join(run.request.topics)}" if run.request.topics else "its topics"


def _check_topics_held(ctx: Ctx, topics: tuple[str, ...]) -> None:
    """StepFailed naming each of ``topics`` no longer failed over (released since the failback started)."""
    from replicator.domain.route_topic import DesiredState
    from replicator.state.repository import route_topics
    from replicator.state.store import StateStore

    with StateStore(ctx.config.state.url) as store:
        rows = store.run(lambda session: {t.topic: t.desired_state for t in route_topics(session, ctx.route.name)})
    loose = [t for t in topics if rows.get(t) != DesiredState.FAILED_OVER]
    if loose:
        raise StepFailed(f"route {ctx.route.name}: topic(s) {', '.join(loose)} are not failed over any more (the "
                         "route copies them again): nothing to fail back")


def _named(topic: ReverseTopic) -> str:
    return topic.replica if topic.copied else f"{topic.replica} (written since the failover)"


def _local_starts(ctx: Ctx, run: FailbackRun) -> dict[Partition, int]:
    """Where the reverse route starts on the backup's own topics of the originals' names: their first record.

    Under ``prefix`` nothing but the failed-over producers writes them (a route of the
    config that copies them back in an active/active pair keeps them: see check).
    """
    local = [(t.replica, p) for t in run.topics if not t.copied for p in range(t.partitions)]
    return {tp: low for tp, (low, _) in rev.watermarks(_props(ctx, ctx.route.target), local).items()}


def _unreplicated(ctx: Ctx, run: FailbackRun, on_primary: dict[str, int]) -> tuple[Unreplicated, ...]:
    lags = [lag for lag in source.measure_lags(ctx.config, ctx.route, run.request.topics) if lag.topic in on_primary]
    return tuple(Unreplicated(lag.topic, lag.partition, lag.replicated or 0, lag.end_offset)
                 for lag in lags if lag.pending)


def prepare(ctx: Ctx, run: FailbackRun) -> StepResult:
    """Lift the failover's write fence (the reverse copy writes there); then incremental: commit where the
    reverse route starts; resync: delete the old primary's topics (a topic's ACLs outlive it: lifted first)."""
    from replicator.runbooks.failover.fencing import lift_held

    lifted = lift_held(ctx.config, ctx.route, ctx.say, run.request.dry_run, run.request.topics)
    result = _prepare(ctx, run)
    return dataclasses.replace(result, detail="; ".join([*lifted, result.detail]))


def _prepare(ctx: Ctx, run: FailbackRun) -> StepResult:
    reverse = _reverse(ctx)
    if run.request.mode == FailbackMode.RESYNC:
        return _recreate(ctx, run)
    backup, group = _props(ctx, ctx.route.target), group_id(reverse)
    partitions = rev.replica_partitions(run.topics)
    if not run.request.dry_run:
        _forget_reverse_group(ctx, reverse)  # a former failback's positions are not this one's
    original = {t.replica: t.original for t in run.topics if t.copied}
    syncs = _syncs(_props(ctx, ctx.route.target), sync_topic_name(ctx.route), f"route {ctx.route.name}")
    forward_end = read_committed(_props(ctx, ctx.route.source), group_id(ctx.route),
                                 [(original[t], p) for t, p in partitions if t in original], f"route {ctx.route.name}")
    ends = rev.watermarks(backup, partitions)
    starts, why = _local_starts(ctx, run), set()
    if starts:
        why.add("the backup's own topics of the original names: every record")
    for replica, p in partitions:
        if replica not in original:
            continue
        offset, reason = reverse_start(syncs.get((original[replica], p), ()),
                                       forward_end.get((original[replica], p)), ends[(replica, p)][1])
        starts[(replica, p)] = offset
        why.add(reason)
    if not run.request.dry_run:
        commit(backup, group, starts, f"reverse route {reverse.name}: {reverse.source!r}")
    run = dataclasses.replace(run, starts=tuple((t, p, o) for (t, p), o in sorted(starts.items())))
    since = sum(ends[tp][1] - o for tp, o in starts.items())
    detail = (f"the reverse route {reverse.name} starts on {len(starts)} replica partition(s) "
              f"({'; '.join(sorted(why))}): {since} offsets written on "
              f"{ctx.route.target!r} since the failover go back")
    return StepResult(run, acting(run), detail)


def _forget_reverse_group(ctx: Ctx, reverse: RouteConfig) -> None:
    """Delete the reverse route's group on the backup (it has no member: nothing runs it but a failback)."""
    admin = AdminClient(admin_settings(_props(ctx, reverse.source)))
    for group, future in admin.delete_consumer_groups([group_id(reverse)], request_timeout=30).items():
        try:
            future.result()
        except Exception as exc:  # noqa: BLE001 - KafkaException; a group that never existed is fine
            if "GROUP_ID_NOT_FOUND" not in str(exc):
                raise StepFailed(f"reverse route {reverse.name}: delete of group {group} on {reverse.source!r} "
                                 f"failed: {exc}") from None


def _syncs(properties: dict[str, str], topic: str, what: str) -> dict[Partition, list[OffsetSync]]:
    log_ = SyncLog(properties, topic, what)
    try:
        log_.read_to_end()
        return log_.syncs
    finally:
        log_.close()


def _recreate(ctx: Ctx, run: FailbackRun) -> StepResult:
    primary = _props(ctx, ctx.route.source)
    # The reverse route's former syncs would place the new copies on the deleted topics.
    names = [t.original for t in run.topics] + [sync_topic_name(_reverse(ctx))]
    names = list(dict.fromkeys(names))
    existing = [n for n in names if n in rev.partitions_of(ctx.config, ctx.route.source)]
    local = _local_starts(ctx, run)
    run = dataclasses.replace(run, starts=tuple((t.replica, p, local.get((t.replica, p), 0)) for t in run.topics
                                                for p in range(t.partitions)))
    if run.request.dry_run:
        return StepResult(run, StepStatus.PLANNED, f"would delete {len(existing)} topic(s) of {ctx.route.source!r} "
                                                   f"({', '.join(existing) or 'none'}); the reverse route creates "
                                                   "them again like the replicas and copies every record back")
    _forget_reverse_group(ctx, _reverse(ctx))
    if existing:
        admin = AdminClient(admin_settings(primary))
        for name, future in admin.delete_topics(existing, operation_timeout=30).items():
            try:
                future.result()
            except Exception as exc:  # noqa: BLE001 - KafkaException; gone already is fine
                if "UNKNOWN_TOPIC" not in str(exc):
                    raise StepFailed(f"route {ctx.route.name}: delete of topic {name} on {ctx.route.source!r} "
                                     f"failed: {exc}") from None
        deadline = time.monotonic() + 60
        while (left := [n for n in existing if n in rev.partitions_of(ctx.config, ctx.route.source)]):
            if time.monotonic() > deadline:
                raise StepFailed(f"route {ctx.route.name}: topics {left} still exist on {ctx.route.source!r} "
                                 "60 s after their deletion: run the failback again")
            time.sleep(0.5)
    return StepResult(run, StepStatus.DONE, f"deleted {len(existing)} topic(s) of {ctx.route.source!r} "
                                            f"({', '.join(existing) or 'none'}): the reverse route creates them "
                                            "again and copies every record of the replicas back")


def _primary_ends(ctx: Ctx, run: FailbackRun) -> int:
    on_primary = rev.partitions_of(ctx.config, ctx.route.source)
    wanted = [(t.original, p) for t in run.topics if t.original in on_primary for p in range(on_primary[t.original])]
    return sum(high for _, high in rev.watermarks(_props(ctx, ctx.route.source), wanted).values())


def _left_words(left: dict[Partition, int]) -> str:
    return "nothing left to copy" if not left else f"{sum(left.values())} records left on {len(left)} partition(s)"


def reverse_copy(ctx: Ctx, run: FailbackRun) -> StepResult:
    """The reverse route copies up to the replicas' ends as they are now."""
    reverse = _reverse(ctx)
    if run.request.dry_run:
        return StepResult(run, StepStatus.PLANNED, f"the reverse route {reverse.name} would copy "
                                                   f"{reverse.source!r} -> {reverse.target!r} up to the replicas' ends")
    before, began = _primary_ends(ctx, run), time.monotonic()
    rev.copy_until_caught_up(ctx.config, reverse, run.topics, None, ctx.say)
    copied = _primary_ends(ctx, run) - before
    run = dataclasses.replace(run, copied=run.copied + copied)
    return StepResult(run, StepStatus.DONE, f"copied {copied} records to {reverse.target!r} in "
                                            f"{time.monotonic() - began:.1f} s")


def fence(ctx: Ctx, run: FailbackRun) -> StepResult:
    """``--fence``: deny writes on the backup's topics the reverse route copies, and watch that none gets past
    (the failover's fence, on the backup): the drain then ends at their last record."""
    from replicator.runbooks.failover.fencing import fence_run
    from replicator.runbooks.failover.source import route_topics

    if not run.request.fence:
        return StepResult(run, StepStatus.SKIPPED, f"no --fence: applications still writing on {run.backup!r} "
                                                   "after the drain are not copied back")
    reverse = _reverse(ctx)
    fenced, status, detail = fence_run(ctx, run, run.backup, route_topics(ctx.config, reverse))
    return StepResult(fenced, status, detail)


def drain(ctx: Ctx, run: FailbackRun) -> StepResult:
    """Copy until nothing is left (the applications stopped writing on the backup), up to the timeout."""
    reverse = _reverse(ctx)
    timeout = run.request.drain_timeout_seconds
    if run.request.dry_run:
        return StepResult(run, StepStatus.PLANNED, f"would copy until nothing is left on the replicas, up to "
                                                   f"{timeout} s (stop the producers on {reverse.source!r} first)")
    before = _primary_ends(ctx, run)
    left = rev.copy_until_caught_up(ctx.config, reverse, run.topics, timeout, ctx.say, moving_ends=True)
    copied = _primary_ends(ctx, run) - before
    run = dataclasses.replace(run, copied=run.copied + copied, not_copied=sum(left.values()))
    words = "drained: nothing left to copy" if not left else \
        f"not drained after {timeout} s: {_left_words(left)} (the producers still write on {reverse.source!r})"
    return StepResult(run, StepStatus.DONE, f"{words}; {copied} more records copied")


def translate(ctx: Ctx, run: FailbackRun) -> StepResult:
    """Where each group of the backup resumes on the old primary."""
    reverse, route = _reverse(ctx), ctx.route
    backup, primary = _props(ctx, route.target), _props(ctx, route.source)
    on_backup = f"route {route.name}: {route.target!r}"
    existing = list_groups(AdminClient(admin_settings(backup)), on_backup)
    if run.request.groups:
        missing = [g for g in run.request.groups if g not in existing]
        if missing:
            raise StepFailed(f"{on_backup}: no consumer group {', '.join(map(repr, missing))}")
        groups = list(run.request.groups)
    else:
        groups = route.checkpoints.group_filter.select(existing)
    partitions = rev.replica_partitions(run.topics)
    original = {t.replica: t.original for t in run.topics}
    copied = {t.replica for t in run.topics if t.copied}
    incremental = run.request.mode == FailbackMode.INCREMENTAL
    reverse_syncs = _syncs(primary, sync_topic_name(reverse), f"reverse route {reverse.name}")
    forward_syncs = _syncs(backup, sync_topic_name(route), f"route {route.name}") if incremental else {}
    reverse_end = read_committed(backup, group_id(reverse), partitions, on_backup)
    forward_end = read_committed(primary, group_id(route), [(original[t], p) for t, p in partitions if t in copied],
                                 f"route {route.name}: {route.source!r}") if incremental else {}
    starts = {(t, p): o for t, p, o in run.starts}
    points, notes = [], list(run.notes)
    for group in groups:
        for (replica, p), position in sorted(read_committed(backup, group, partitions, on_backup).items()):
            key = (original[replica], p)
            point = resume_point(group, replica, original[replica], p, position, starts.get((replica, p), 0),
                                 reverse_syncs.get((replica, p), ()), reverse_end.get((replica, p)),
                                 forward_syncs.get(key, ()) if replica in copied else (), forward_end.get(key))
            points.append(point)
            if point.basis == Basis.UNKNOWN:
                notes.append(f"group {group} {replica}-{p} at {position}: no offset sync places it on "
                             f"{route.source!r}: not moved")
    merged = merge_points(points, starts)
    for point in merged:
        if point.basis == Basis.BEHIND and len([p for p in points if (p.group, p.target_topic, p.partition) == (
                point.group, point.target_topic, point.partition)]) > 1:
            notes.append(f"group {point.group} {point.target_topic}-{point.partition}: it had not read all of "
                         f"{point.topic} on {route.target!r}; on {route.source!r} it resumes there and may read "
                         f"again up to {point.max_repeats} records written since the failover")
    points = list(merged)
    for u in run.unreplicated if incremental else ():
        for point in points:
            if (point.target_topic, point.partition) == (u.topic, u.partition) and point.target_offset is not None:
                if point.target_offset <= u.first:
                    notes.append(f"group {point.group} {u.topic}-{u.partition}: reads the {u.end - u.first} offsets "
                                 f"[{u.first}, {u.end}) that never reached {route.target!r} first")
                elif point.target_offset >= u.end:
                    notes.append(f"group {point.group} {u.topic}-{u.partition}: never saw the {u.end - u.first} "
                                 f"offsets [{u.first}, {u.end}) that never reached {route.target!r}; they stay "
                                 f"on {route.source!r} before where it resumes")
    run = dataclasses.replace(run, points=tuple(points), notes=tuple(dict.fromkeys(notes)))
    exact = sum(1 for p in points if p.basis == Basis.EXACT)
    return StepResult(run, acting(run), f"{len(groups)} group(s), {len(points)} partition(s): {exact} exact"
                      + "".join(f", {n} {b.value}" for b in (Basis.BEHIND, Basis.BEFORE_FIRST_SYNC, Basis.UNKNOWN)
                                if (n := sum(1 for p in points if p.basis == b))))


def commit_offsets(ctx: Ctx, run: FailbackRun) -> StepResult:
    """Into the old primary's groups without active members, never backwards."""
    reverse = _reverse(ctx)
    planned = commits.plan(ctx.config, reverse, run.points)
    done = planned if run.request.dry_run else commits.write(ctx.config, reverse, planned)
    run = dataclasses.replace(run, commits=done)
    counts: dict[str, int] = {}
    for c in done:
        counts[c.outcome.value] = counts.get(c.outcome.value, 0) + 1
    failed = [c for c in done if c.error]
    if failed:
        raise StepFailed(f"route {ctx.route.name}: group {failed[0].point.group} on {ctx.route.source!r}: "
                         f"{failed[0].error}")
    return StepResult(run, acting(run), ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no group")


def verify(ctx: Ctx, run: FailbackRun) -> StepResult:
    """The committed offsets read back."""
    if run.request.dry_run:
        return StepResult(run, StepStatus.PLANNED, "would read the committed offsets back")
    checked, problems = verify_commits(run.commits, commits.read_back(ctx.config, _reverse(ctx), run.commits))
    run = dataclasses.replace(run, commits=checked)
    if problems:
        raise StepFailed(f"route {ctx.route.name}: " + "; ".join(problems))
    return StepResult(run, StepStatus.DONE, f"{sum(1 for c in checked if c.verified is not None)} offsets read back "
                                            "as committed")


def release(ctx: Ctx, run: FailbackRun) -> StepResult:
    """The route may run again; resync: from the ends of the recreated topics."""
    from replicator.state.failover_hold import release as release_hold

    route = ctx.route
    primary = _props(ctx, route.source)
    if run.request.mode == FailbackMode.RESYNC:
        wanted = sorted({(t.original, p) for t in run.topics for p in range(t.partitions)})
        ends = {tp: high for tp, (_, high) in rev.watermarks(primary, wanted).items()}
        if not run.request.dry_run:
            commit(primary, group_id(route), ends, f"route {route.name}: {route.source!r}")
        resume = f"from the ends of the recreated topics ({sum(ends.values())} offsets, all from {route.target!r})"
    else:
        resume = (f"where it stopped: it copies the {run.unreplicated_records} offsets that never reached "
                  f"{route.target!r} and skips the records the reverse route brought")
    run, lifted = lift_own(ctx, run)  # the backup's fence: the route writes its replicas again
    lifted_words = f"; {lifted}" if lifted else ""
    if run.request.topics:
        return _release_topics(ctx, run, run.request.topics, f"{resume}{lifted_words}")
    if run.request.dry_run:
        return StepResult(run, StepStatus.PLANNED, f"would release route {route.name}; it would resume "
                                                   f"{resume}{lifted_words}")
    released = release_hold(ctx.config, route, pendulum.now("UTC"))
    held = f" (failover run(s) {', '.join(map(str, released))})" if released else ""
    return StepResult(run, StepStatus.DONE, f"route {route.name} released{held}; it resumes {resume}{lifted_words}")


def _release_topics(ctx: Ctx, run: FailbackRun, topics: tuple[str, ...], resume: str) -> StepResult:
    """A per-topic failback: the route's running workers copy ``topics`` again at their next look."""
    from replicator.state.repository import release_topics
    from replicator.state.store import StateStore

    which = f"topic(s) {', '.join(topics)} of route {ctx.route.name}"
    if run.request.dry_run:
        return StepResult(run, StepStatus.PLANNED, f"would let the route copy {which} again; it would resume {resume}")
    with StateStore(ctx.config.state.url) as store:
        store.run(lambda session: release_topics(session, ctx.route.name, topics))
    return StepResult(run, StepStatus.DONE, f"{which} copied again (the route's workers follow at their next look); "
                                            f"it resumes {resume}")


def finish(ctx: Ctx, run: FailbackRun) -> StepResult:
    """The end: the figures are final."""
    if run.request.dry_run:
        return StepResult(run, StepStatus.PLANNED, "would record the run's figures")
    run = dataclasses.replace(run, finished_at=pendulum.now("UTC"))
    return StepResult(run, StepStatus.DONE, f"{run.copied} records copied back, RTO "
                                            f"{run.rto_seconds:.1f} s, {run.not_copied or 0} offsets not copied")


STEPS: dict[FailbackStep, Callable[[Ctx, FailbackRun], StepResult]] = {
    FailbackStep.CHECK: check,
    FailbackStep.PREPARE: prepare,
    FailbackStep.REVERSE_COPY: reverse_copy,
    FailbackStep.FENCE: fence,
    FailbackStep.DRAIN: drain,
    FailbackStep.TRANSLATE: translate,
    FailbackStep.COMMIT_OFFSETS: commit_offsets,
    FailbackStep.VERIFY: verify,
    FailbackStep.RELEASE: release,
    FailbackStep.FINISH: finish,
}
