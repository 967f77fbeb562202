"""What a sync run works on: each cluster of the route, the topics the route replicates, its rules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from confluent_kafka.admin import AdminClient

from replicator.config import Config, RouteConfig
from replicator.domain.cluster_view import ClusterView
from replicator.domain.metadata_sync import SyncRules, SyncScope
from replicator.domain.replication_policy import ReplicationPolicy
from replicator.domain.sync_run import Outcome, SyncChange
from replicator.domain.topic_selection import select_topics
from replicator.errors import ClusterError, ConfigError
from replicator.kafka.admin import connected_admin
from replicator.kafka.clients import admin_settings
from replicator.runbooks.sync.read import read_acls, read_configs, read_topics


class ClusterSide:
    """The source or target cluster of a route, for one run: its admin client and what it reads."""

    def __init__(self, config: Config, route: RouteConfig, side: str, timeout: float = 15.0) -> None:
        self.route, self.side, self.timeout = route, side, timeout
        self.cluster = config.cluster(getattr(route, side))
        self._admin: AdminClient | None = None  # created on first use, dropped with this object
        self._topics: tuple[dict[str, int], frozenset[str]] | None = None

    def admin(self) -> AdminClient:
        """This run's admin client of the cluster."""
        if self._admin is None:
            try:
                self._admin = connected_admin(admin_settings(self.cluster.client_properties()))
            except ClusterError as exc:
                raise ClusterError(f"{self._where()}: {exc}", retriable=exc.retriable) from None
        return self._admin

    def _where(self) -> str:
        return f"route {self.route.name}: {self.side} cluster {self.cluster.name!r} ({self.cluster.bootstrap_servers})"

    def partitions(self) -> dict[str, int]:
        """The cluster's healthy topics and their partition counts (read once per run)."""
        if self._topics is None:
            admin = self.admin()
            try:
                self._topics = read_topics(admin, self.timeout)
            except ClusterError as exc:
                raise ClusterError(f"{self._where()}: {exc}", retriable=exc.retriable) from None
        return self._topics[0]

    def names(self) -> frozenset[str]:
        """Every topic the cluster lists, metadata errors included."""
        self.partitions()
        assert self._topics is not None
        return self._topics[1]

    def view(self, describe: Iterable[str], acls: bool) -> ClusterView:
        """Topics, the overrides of the ``describe`` topics that exist, and ACLs when asked."""
        partitions = self.partitions()
        configs, unreadable = read_configs(self.admin(), sorted(set(describe) & set(partitions)), self.timeout)
        acl_set, acl_error = read_acls(self.admin(), self.timeout) if acls else (None, None)
        return ClusterView(partitions, self.names(), configs, acl_set, unreadable, acl_error)

    def read_failures(self, view: ClusterView) -> tuple[SyncChange, ...]:
        """What could not be read, as failed changes of the run (the rest still syncs)."""
        where = f"{self.side} cluster {self.cluster.name}"
        failures = [SyncChange("read configs", f"topic {t}", where, Outcome.FAILED, why)
                    for t, why in sorted(view.unreadable.items())]
        if view.acl_error:
            failures.append(SyncChange("read acls", f"cluster {self.cluster.name}", where, Outcome.FAILED,
                                       view.acl_error))
        return tuple(failures)


def rules_of(route: RouteConfig, failed_over: bool = False) -> SyncRules:
    """The route's ``sync:`` settings as the planners take them (a failed-over route's replicas are written by
    the applications now: not made read-only again)."""
    settings = route.sync
    return SyncRules(settings.exclude_configs, settings.acls, dict(settings.principals), settings.grant_write,
                     settings.delete_topics, settings.read_only and not failed_over, settings.writers)


def scope_of(config: Config, route: RouteConfig, policy: ReplicationPolicy,
             source_partitions: Mapping[str, int]) -> SyncScope:
    """The route's topics now: its patterns, plus/minus ``mirrorflow topics``, minus loops.

    The same selection the workers make (``select_topics``), so a sync never creates a
    replica the route would not copy into.
    """
    from replicator.state import repository
    from replicator.state.route_link import StateLink
    from replicator.state.store import StateStore

    with StateStore(config.state.url) as store:
        try:
            added, removed = StateLink(route, store).manual_topics()
            with store.session() as session:
                before = repository.replicated_topics(session, route.name)
        except ConfigError:  # the route is not registered yet: no topic of it was added, removed or copied
            added, removed, before = set(), set(), frozenset()
    selection = select_topics(source_partitions, route.topic_filter, policy, route.target, added, removed)
    return SyncScope(route.name, dict(selection.partitions),
                     lambda topic: policy.format_remote_topic(route.source, topic), before)
