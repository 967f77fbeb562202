"""What a running route subscribes to, re-evaluated every few seconds without a restart."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import Counter
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from replicator.config import Config, RouteConfig
from replicator.domain.naming import sync_topic_name
from replicator.domain.topic_selection import select_topics
from replicator.errors import ClusterError
from replicator.kafka.clients import KAFKA_CLIENTS, ClientFactory, admin_settings
from replicator.kafka.log_ranges import ends, watermarks
from replicator.kafka.topic_describes import message_limits, topic_ids
from replicator.kafka.topics import create_sync_topic, ensure_target_topics, source_partitions
from replicator.logs import listed
from replicator.state.route_link import StateLink
from replicator.worker import metrics
from replicator.worker.interpreter import collector_paused

if TYPE_CHECKING:
    from replicator.domain.withheld import GroupSays
    from replicator.state.store import StateStore

log = logging.getLogger(__name__)

REFRESH_SECONDS = 5.0


# Topic ids checked per look beside the new topics': describing thousands of topics every refresh built
# their descriptions in one long hold of the GIL (~40 ms at 2,000) that the copy loop waited for. Each
# known topic's id is still checked every ceil(topics / ID_CHECKS_PER_LOOK) looks.
ID_CHECKS_PER_LOOK = 250

# Looks failed in a row before the next one gets new admin clients: seen in CI, one worker's admin client failed
# every request for 90 s after two source restarts ("Local: Broker transport failure") while the other worker's
# answered; its look never saw its topic created again. A real outage costs a new client every few looks.
LOOK_FAILURES_RENEW = 3


def rotating_share(names: list[str], seen: frozenset[str], cursor: int,
                   size: int | None = None) -> tuple[list[str], int]:
    """The topics whose ids a look checks: every name not ``seen`` before, and the next ``size`` (default
    ``ID_CHECKS_PER_LOOK``) of the others from ``cursor`` on, wrapping around; and the cursor of the next
    look (pure)."""
    size = ID_CHECKS_PER_LOOK if size is None else size
    new = [n for n in names if n not in seen]
    known = [n for n in names if n in seen]
    if len(known) <= size:
        return new + known, 0
    start = cursor % len(known)
    share = known[start:start + size] + known[:max(0, start + size - len(known))]
    return new + share, (start + size) % len(known)


class SourceSilent(ClusterError):
    """The source's metadata request went unanswered for its whole timeout, without an error: a frozen broker or
    a black hole (connections stay open). ``asked``: when it went out (the source has said nothing since)."""

    def __init__(self, message: str, asked: float) -> None:
        super().__init__(message, retriable=True)
        self.asked = asked


@dataclass(frozen=True, slots=True)
class Membership:
    """A worker's member in the group that gives it its partitions: the route's group on the source, or an
    exactly-once route's positions group on the target (``cluster`` names it in the config)."""

    cluster: str
    group: str
    member: str


# What the target's metadata says: the node leading each (topic, partition), and each node's address.
Leaders = tuple[dict[tuple[str, int], int], dict[int, str]]


@dataclass(frozen=True, slots=True)
class Look:
    """What one look found: topic ids always; the rest only when the selection changed (or a hold)."""

    ids: dict[str, str]
    names: list[str] = field(default_factory=list)
    partitions: dict[str, int] = field(default_factory=dict)
    target_of: dict[str, str] | None = None
    wanted: dict[str, tuple[str, int]] = field(default_factory=dict)
    limit_of: dict[str, int] = field(default_factory=dict)
    held: str | None = None  # why the route must stop: a failover holds it
    paused: frozenset[str] = frozenset()  # topics the operator paused: subscribed, not fetched
    # Owned partitions' readable ends (stable); None: not asked this look (see ``start_look``).
    ends: dict[tuple[str, int], int] | None = None
    # The worker's member and what the group's coordinator says of it and the others (see ``domain.withheld``);
    # None: not asked, or not answered.
    group: tuple[Membership, GroupSays] | None = None
    group_unread: ClusterError | None = None  # why the group was asked and did not answer
    unknown_member: Membership | None = None  # the worker's member, which the group answered it does not know


class Subscription:
    """The route's source topics, their target names, and the refresh clock."""

    def __init__(self, config: Config, route: RouteConfig, store: StateStore | None = None,
                 refresh_seconds: float = REFRESH_SECONDS, clients: ClientFactory = KAFKA_CLIENTS) -> None:
        self.config, self.route, self.refresh_seconds = config, route, refresh_seconds
        self.clients = clients
        self.policy = config.policy(route)
        self.sync_topic = sync_topic_name(route)
        self.target_of: dict[str, str] = {}
        self.source_of: dict[str, str] = {}
        # Targets fed by several sources (a merge mapping): deliveries name only the target,
        # so the worker remembers, per target partition, which source each record came from.
        self.merged: frozenset[str] = frozenset()
        self.partitions: dict[str, int] = {}
        self.limit_of: dict[str, int] = {}  # source topic -> its target topic's max.message.bytes
        self.paused: frozenset[str] = frozenset()  # topics the operator paused (``mirrorflow topics pause``)
        self.state = StateLink(route, store)
        self.topic_ids: dict[str, str] = {}  # last id seen per source topic, kept after it vanishes
        self._id_cursor = 0  # where the next look's share of known topics starts (see rotating_share)
        self._recreations: set[tuple[str, str]] = set()
        self.recreations = 0  # source topics seen deleted and created again (each new id once)
        self._next = 0.0
        self._ensure_targets = False
        self._look: Future[Look] | None = None  # the look at the source under way (or finished, not taken)
        self._sync_topic_ready = False
        self._source: AdminClient | None = None
        self._target: AdminClient | None = None
        self._failed_looks = 0  # in a row (written by the look's thread, read by the loop's once it finished)

    def open(self) -> None:
        """Make the admin clients (no network call: a cluster that does not answer yet is waited for
        by ``refresh``)."""
        self._source = self.clients.admin(admin_settings(self.config.cluster(self.route.source).client_properties()))
        self._target = self.clients.admin(admin_settings(self.config.cluster(self.route.target).client_properties()))

    def due(self) -> bool:
        """Time to look at the source's topics again."""
        return time.monotonic() >= self._next

    def force_refresh(self, targets: bool = False) -> None:
        """Look again at the next loop iteration (a topic vanished, say); ``targets``: also make sure every
        target topic exists with its partitions, even if the source did not change (one was deleted)."""
        self._next = 0.0
        self._ensure_targets = self._ensure_targets or targets

    def refresh(self) -> list[str] | None:
        """Look at the source now and wait for it: the new topic list when it changed (target topics
        ready), else None. The loop does the same without waiting (``start_look``, ``finished_look``)."""
        self.start_look()
        assert self._look is not None
        wait([self._look])  # taken whatever its end: a failed look is not the next one's answer
        finished = self.finished_look()
        assert finished is not None
        return self.apply(finished.result())

    @property
    def looking(self) -> bool:
        """A look runs (or finished and was not taken yet)."""
        return self._look is not None

    def start_look(self, owned: list[tuple[str, int]] | None = None, member: Membership | None = None) -> None:
        """Start looking at the route's topics in a thread of its own, unless a look is under way: the
        metadata of thousands of topics, their ids, creating target topics, the state DB's rows of them --
        calls that must not hold the copy up. With ``owned`` it also reads those partitions' readable ends
        (``Look.ends``); with ``member`` (the worker's member in the group that gives it its partitions), what
        that group gave it (``Look.group``)."""
        if self._look is not None:
            return
        if self._failed_looks >= LOOK_FAILURES_RENEW:
            self._renew_admins()
        self._next = time.monotonic() + self.refresh_seconds
        ensure, self._ensure_targets = self._ensure_targets, False
        future: Future[Look] = Future()
        known = dict(self.partitions)  # what the loop copies now: looks run one at a time, each applied first
        seen = frozenset(self.topic_ids)

        def look() -> None:
            started = time.monotonic()
            try:
                found = self._look_at_topics(known, ensure, seen)
                if owned is not None and found.held is None:
                    found = dataclasses.replace(found, ends=self._readable_ends(owned) if owned else {})
                if member and found.held is None:
                    found = self._with_group(found, member)
                metrics.TOPIC_REFRESH.labels(self.route.name).observe(time.monotonic() - started)
                self._failed_looks = 0
                future.set_result(found)
            except BaseException as exc:  # noqa: BLE001 - handed to the loop, which reports it
                self._failed_looks += 1
                if ensure:
                    self._ensure_targets = True  # the next look makes sure of the target topics again
                future.set_exception(exc)

        self._look = future
        threading.Thread(target=look, name=f"topic-refresh-{self.route.name}", daemon=True).start()

    def _renew_admins(self) -> None:
        """New admin clients for the looks (and the placing, which asks through them); the old ones are let go in
        a thread of their own: a client that no longer hears its cluster may take long to destroy."""
        log.warning("topic refresh failed %d times in a row: its admin clients are made anew route=%s",
                    self._failed_looks, self.route.name)
        self._failed_looks = 0
        old = [self._source, self._target]
        self.open()
        threading.Thread(target=old.clear, name="admin-let-go", daemon=True).start()

    def finished_look(self) -> Future[Look] | None:
        """The look that has finished (taken: the next one may start), or None while it runs or none ran."""
        look = self._look
        if look is None or not look.done():
            return None
        self._look = None
        return look

    def apply(self, look: Look) -> list[str] | None:
        """Take what a look found (on the loop's thread): the new topic list when it changed, else None."""
        self._note_ids(look.ids)
        if look.held is None:
            self.paused = look.paused
        if look.target_of is None:
            return None
        self.limit_of = look.limit_of
        self.target_of = look.target_of
        self.source_of = {target: src for target, (src, _) in look.wanted.items()}
        self.merged = frozenset(t for t, n in Counter(look.target_of.values()).items() if n > 1)
        gone = sorted(set(self.partitions) - set(look.partitions))
        new = sorted(set(look.partitions) - set(self.partitions))
        self.partitions = dict(look.partitions)
        log.info("subscription route=%s topics=%d added=%s removed=%s", self.route.name,
                 len(self.partitions), listed(new), listed(gone))
        return look.names

    def _look_at_topics(self, known: dict[str, int], ensure: bool, seen: frozenset[str] = frozenset()) -> Look:
        """The look itself (in its own thread): the state DB's hold and hand-made topics, what the source has,
        what the route selects, target topics made ready, the topic statuses stored."""
        assert self._source is not None and self._target is not None
        held = self.state.held()  # a failover began: the worker must stop copying
        if held:
            return Look({}, held=held)
        added, removed = self.state.manual_topics()
        paused = self.state.paused
        if not self._sync_topic_ready:
            create_sync_topic(self._target, self.sync_topic)  # before any record: its syncs go there
            self._sync_topic_ready = True
        with collector_paused():  # Kafka's answers on thousands of topics: see collector_paused
            selection = select_topics(self._source_partitions(), self.route.topic_filter, self.policy,
                                      self.route.target, added, removed)
            checked, self._id_cursor = rotating_share(selection.names, seen, self._id_cursor)
            ids = self.describe_ids(checked)
        unchanged = dict(selection.partitions) == known
        if unchanged and not ensure:
            return Look(ids, paused=paused)
        target_of = {t: self.policy.format_remote_topic(self.route.source, t) for t in selection.partitions}
        wanted: dict[str, tuple[str, int]] = {}  # target -> its (widest) source: several under a merge mapping
        for src, count in sorted(selection.partitions.items()):
            if target_of[src] not in wanted or count > wanted[target_of[src]][1]:
                wanted[target_of[src]] = (src, count)
        with collector_paused():
            ensure_target_topics(self._source, self._target, wanted)
            if unchanged:
                return Look(ids, paused=paused)
            limits = message_limits(self._target, sorted(wanted))
        self.state.replicating(sorted(set(selection.partitions) - set(known)),
                               sorted(set(known) - set(selection.partitions)))
        return Look(ids, selection.names, dict(selection.partitions), target_of, wanted,
                    {src: limits[target] for src, target in target_of.items() if target in limits}, paused=paused)

    def _source_partitions(self) -> dict[str, int]:
        """The source's topics and partition counts; SourceSilent when the request timed out."""
        assert self._source is not None
        asked = time.monotonic()
        try:
            return source_partitions(self._source)
        except ClusterError as exc:
            cause = exc.__cause__
            if isinstance(cause, KafkaException) and cause.args[0].code() == KafkaError._TIMED_OUT:
                raise SourceSilent(str(exc), asked) from cause
            raise

    def _readable_ends(self, owned: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """Each owned partition's last stable offset (what a read_committed worker can fetch up to), in one
        batched ListOffsets; empty when the source does not answer it (stuck partitions wait for the next)."""
        assert self._source is not None
        try:
            with collector_paused():
                return ends(self._source, self.route.source, owned, stable=True)
        except (ClusterError, KafkaException) as exc:
            log.debug("readable ends not read route=%s error=%s", self.route.name, exc)
            return {}

    def _with_group(self, found: Look, member: Membership) -> Look:
        """``found`` with its ``group``: ``member`` and what the coordinator says of it (None when it does not know
        the member); or with its ``group_unread``, why it did not answer."""
        properties = self.config.cluster(member.cluster).client_properties()
        try:
            said = self.clients.assignment(properties, member.group, member.member,
                                           f"route {self.route.name}: cluster {member.cluster!r}")
        except ClusterError as exc:
            return dataclasses.replace(found, group_unread=exc)
        log.debug("group assignment read route=%s group=%s member=%s given=%s", self.route.name, member.group,
                  member.member, "unknown member" if said is None else len(said.given))
        if said is None:
            return dataclasses.replace(found, unknown_member=member)
        return dataclasses.replace(found, group=(member, said))

    def target_answers(self, timeout: float = 5.0) -> bool:
        """Whether the target cluster answers a metadata request now (its admin client, not the producer)."""
        assert self._target is not None
        try:
            self._target.list_topics(self.sync_topic, timeout=timeout)
        except KafkaException:
            return False
        return True

    def ask_leaders(self, topics: list[str], timeout: float) -> Future[Leaders]:
        """The node leading each partition of the target ``topics``, and each node's address, as the target's
        metadata says, in threads of their own. Each address of the target's ``bootstrap.servers`` is asked by a
        client of its own, the first answer taken: a client's metadata requests went to the node out of reach
        every time in the three-node test (each timed out), while the other nodes would have answered."""
        properties = self.config.cluster(self.route.target).client_properties()
        addresses = [a.strip() for a in str(properties.get("bootstrap.servers", "")).split(",") if a.strip()] or [""]
        future: Future[Leaders] = Future()
        lock, failed = threading.Lock(), []

        def ask(address: str) -> None:
            try:
                client = self.clients.admin(admin_settings({**properties, "bootstrap.servers": address}))
                metadata = client.list_topics(timeout=timeout)
            except BaseException as exc:  # noqa: BLE001 - the last one handed to the loop
                with lock:
                    failed.append(exc)
                    if len(failed) == len(addresses) and not future.done():
                        future.set_exception(exc)
                return
            nodes = {node: str(broker) for node, broker in metadata.brokers.items()}
            leaders = {(topic, p): part.leader for topic in topics
                       if (found := metadata.topics.get(topic)) is not None and found.error is None
                       for p, part in found.partitions.items()}
            with lock:
                if not future.done():
                    future.set_result((leaders, nodes))

        for address in addresses:
            threading.Thread(target=ask, args=(address,), name=f"target-leaders-{self.route.name}",
                             daemon=True).start()
        return future

    def watermarks(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        """(log start, log end) of source partitions, read in one go (see ``kafka.log_ranges.watermarks``)."""
        assert self._source is not None
        return watermarks(self._source, partitions)

    def describe_ids(self, topics: list[str]) -> dict[str, str]:
        """The current id of each topic that exists (a vanished one is left out)."""
        assert self._source is not None
        return topic_ids(self._source, topics) if topics else {}

    def _note_ids(self, ids: dict[str, str]) -> None:
        for topic, topic_id in ids.items():
            known = self.topic_ids.get(topic)
            if known is not None and known != topic_id:
                self.recreated(topic, topic_id, f"topic id was {known}")
            self.topic_ids[topic] = topic_id

    def recreated(self, topic: str, topic_id: str, detail: str) -> None:
        """Report, once per new id, a source topic deleted and created again under its name."""
        if (topic, topic_id) in self._recreations:
            return
        self._recreations.add((topic, topic_id))
        self.recreations += 1
        log.warning("source topic deleted and created again, copying the new one from its start route=%s "
                    "topic=%s topic_id=%s detail=%r", self.route.name, topic, topic_id, detail)
        metrics.RECREATED.labels(self.route.name, topic).inc()
        self.state.recreated(topic, f"deleted and created again (new topic id {topic_id}), copied anew; {detail}")
