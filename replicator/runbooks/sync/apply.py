"""Apply a sync plan to the target, action by action, and wait until the target shows it.

One admin request per kind of action (topics are created before their configs are
altered, deletions come last); each action gets its own outcome, so a refused topic
(no permission, a config value the target rejects) fails alone and the rest applies.
"Already exists" is success. After applying, the target is read again until every
applied action shows (a broker's metadata follows its controller a moment later),
so that a run right after this one plans nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from replicator.domain.cluster_view import ClusterView
from replicator.domain.sync_plan import (
    AddPartitions,
    AlterTopicConfig,
    CreateAcl,
    CreateTopic,
    DeleteTopic,
    SyncAction,
    SyncPlan,
)
from replicator.domain.sync_run import Outcome, SyncChange
from replicator.errors import ClusterError
from replicator.kafka.admin import error_name, error_text
from replicator.kafka.topics import add_partitions_in_batches, create_topics_in_batches
from replicator.runbooks.sync.read import read_view, to_binding

log = logging.getLogger(__name__)

# Errors that mean "already so": the action is done.
_ALREADY: dict[type, str] = {CreateTopic: "TOPIC_ALREADY_EXISTS", DeleteTopic: "UNKNOWN_TOPIC_OR_PART"}
# Errors that may mean "already so": done only if the target then shows it.
_MAYBE_ALREADY: dict[type, str] = {AddPartitions: "INVALID_PARTITIONS"}


Result = tuple[Outcome, str | None]


def apply_plan(admin: AdminClient, plan: SyncPlan, timeout: float = 15.0,
               settle_timeout: float = 15.0) -> list[SyncChange]:
    """Apply every action of ``plan``; one outcome per action, in the plan's order."""
    results: dict[SyncAction, Result] = {}
    doubts: dict[SyncAction, str] = {}  # applied despite an error that may mean "already so"
    for kind, submit in _SUBMITTERS:
        batch = [a for a in plan.actions if isinstance(a, kind)]
        if not batch:
            continue
        try:
            futures = submit(admin, batch, timeout)
        except Exception as exc:  # noqa: BLE001 - a request refused whole fails its actions, not the run
            results.update((a, (Outcome.FAILED, error_text(exc))) for a in batch)
            continue
        for action, future in zip(batch, futures, strict=True):  # one future per action
            results[action], doubt = _outcome(action, future, timeout)
            if doubt:
                doubts[action] = doubt
    applied = [a for a, (outcome, _) in results.items() if outcome == Outcome.APPLIED]
    for action in wait_until_visible(lambda: _target_view(admin, applied, timeout), applied, settle_timeout):
        if action in doubts:
            results[action] = (Outcome.FAILED, doubts[action])
        else:
            log.warning("applied but not visible yet route=%s action=%r resource=%s", plan.route,
                        action.kind, action.resource)
    return [SyncChange.of(a, *results[a]) for a in plan.actions]


def _outcome(action: SyncAction, future: Future[Any], timeout: float) -> tuple[Result, str | None]:
    """The action's outcome, and the error it was taken as applied despite (to be checked), if any."""
    try:
        future.result(timeout=timeout + 5)
        return (Outcome.APPLIED, None), None
    except Exception as exc:  # noqa: BLE001 - recorded for this action alone
        name = error_name(exc)
        if name is not None and name == _ALREADY.get(type(action)):
            return (Outcome.APPLIED, None), None
        if name is not None and name == _MAYBE_ALREADY.get(type(action)):
            return (Outcome.APPLIED, None), error_text(exc)
        log.warning("sync action failed action=%r resource=%s error=%s", action.kind, action.resource,
                    error_text(exc))
        return (Outcome.FAILED, error_text(exc)), None


# Each submits one request for a batch of actions and returns their futures in the batch's order.

def _create_topics(admin: AdminClient, batch: list[CreateTopic], timeout: float) -> list[Future[Any]]:
    new = [NewTopic(a.topic, num_partitions=a.partitions, replication_factor=-1, config=dict(a.configs))
           for a in batch]
    futures = create_topics_in_batches(admin, new, timeout)
    return [futures[a.topic] for a in batch]


def _add_partitions(admin: AdminClient, batch: list[AddPartitions], timeout: float) -> list[Future[Any]]:
    futures = add_partitions_in_batches(admin, [(a.topic, a.current, a.wanted) for a in batch], timeout)
    return [futures[a.topic] for a in batch]


def _alter_configs(admin: AdminClient, batch: list[AlterTopicConfig], timeout: float) -> list[Future[Any]]:
    resources = [
        ConfigResource(ConfigResource.Type.TOPIC, a.topic, incremental_configs=[
            ConfigEntry(c.name, c.new, incremental_operation=AlterConfigOpType.SET if c.new is not None
                        else AlterConfigOpType.DELETE)
            for c in a.changes
        ])
        for a in batch
    ]
    by_name = {r.name: f for r, f in admin.incremental_alter_configs(resources, request_timeout=timeout).items()}
    return [by_name[a.topic] for a in batch]


def _create_acls(admin: AdminClient, batch: list[CreateAcl], timeout: float) -> list[Future[Any]]:
    bindings = [to_binding(a.acl) for a in batch]
    futures = admin.create_acls(bindings, request_timeout=timeout)
    return [futures[b] for b in bindings]


def _delete_topics(admin: AdminClient, batch: list[DeleteTopic], timeout: float) -> list[Future[Any]]:
    futures = admin.delete_topics([a.topic for a in batch], request_timeout=timeout)
    return [futures[a.topic] for a in batch]


_SUBMITTERS: tuple[tuple[type, Callable[[AdminClient, Any, float], list[Future[Any]]]], ...] = (
    (CreateTopic, _create_topics),
    (AddPartitions, _add_partitions),
    (AlterTopicConfig, _alter_configs),
    (CreateAcl, _create_acls),
    (DeleteTopic, _delete_topics),
)


def _target_view(admin: AdminClient, actions: Sequence[SyncAction], timeout: float) -> ClusterView:
    topics = [a.topic for a in actions if isinstance(a, (CreateTopic, AlterTopicConfig))]
    return read_view(admin, topics, acls=any(isinstance(a, CreateAcl) for a in actions), timeout=timeout)


def wait_until_visible(read: Callable[[], ClusterView], actions: Sequence[SyncAction],
                       timeout: float) -> list[SyncAction]:
    """Re-read the target until it shows every action done; returns those it still does not show."""
    pending = list(actions)
    deadline = time.monotonic() + timeout
    while pending:
        try:
            view = read()
            pending = [a for a in pending if not a.is_done(view)]
        except ClusterError as exc:  # the outcomes stand; only the confirmation is missing
            log.warning("cannot read the target to confirm the sync error=%s", exc)
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return pending
