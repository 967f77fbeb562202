"""An exactly-once route's membership: the partitions it copies are given by a group on the *target*.

Each worker of an exactly-once route is a member of the route's positions group on the
target cluster (``naming.positions_group_id``), subscribed to the route's target topics
(every partition it owns stays paused: it fetches nothing). The group gives it target
partitions; it copies the source partitions that map to them (several for a merged
topic), assigned by hand on its source consumer -- which joins no group -- only once
placed, at the position decided: the furthest of the positions group's (committed with
the records, ``domain.positions``) and the source group's (a copy, or an at-least-once
worker's). Because the group lives on the cluster the transactions write to, the target
refuses the offsets of a member whose session expired (KIP-447): that is what fences a
zombie (see ``exactly_once``).
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from typing import TYPE_CHECKING

from confluent_kafka import OFFSET_INVALID, Consumer, KafkaError, KafkaException, Message, TopicPartition

from replicator.domain.commit_metadata import decode_note, encode_note
from replicator.domain.naming import positions_group_id
from replicator.domain.positions import SourcePosition, decode_positions, resume_position
from replicator.kafka import pausing
from replicator.kafka.clients import KAFKA_CLIENTS, ClientFactory, close_within, membership_settings
from replicator.logs import listed
from replicator.worker.callbacks import shielded
from replicator.worker.placing import READER_CLOSE_S
from replicator.worker.records import TP
from replicator.worker.route_worker import RouteWorker
from replicator.worker.subscription import Membership
from replicator.worker.timeouts import WorkerTimeouts

if TYPE_CHECKING:
    from concurrent.futures import Future

    from replicator.config import Config, RouteConfig
    from replicator.state.store import StateStore
    from replicator.worker.assignment import CommittedThrough
    from replicator.worker.subscription import Look

log = logging.getLogger(__name__)

POSITIONS_TIMEOUT_S = 15.0  # reading committed positions (waits while a transaction holds them)


class TargetMember(RouteWorker):
    """A route worker whose partitions are given by the positions group on the target."""

    def __init__(self, config: Config, route: RouteConfig, store: StateStore | None = None,
                 batch_size: int = 2000, worker_id: str | None = None, clients: ClientFactory = KAFKA_CLIENTS,
                 timeouts: WorkerTimeouts | None = None) -> None:
        super().__init__(config, route, store, batch_size, worker_id, clients, timeouts or WorkerTimeouts())
        self._member: Consumer | None = None
        self._sources: dict[TP, list[TP]] = {}  # owned target partition -> the source partitions it copies
        self._metadata_of: tuple[int, object] | None = None  # (id of the positions group's member, its membership)

    @abstractmethod
    def _abort(self, reason: str) -> None:
        """Abort what is open; every owned partition goes back to its last committed position."""

    @property
    def member(self) -> Consumer:
        """The member of the positions group on the target (there is one while the route runs)."""
        if self._member is None:
            raise RuntimeError(f"route {self.route.name} is not running")
        return self._member

    def _member_metadata(self) -> object | None:
        """The membership a transaction's offsets carry (the positions group refuses them from a member it no
        longer has). Asked of the member at each assignment and commit, not while a client of the group is being
        closed: there librdkafka's call waits for the group's thread, as ``memberid`` does (see
        ``Watches._released``), and the worker would hang for good. The member's last answer stands then (a
        generation behind, the group refuses the offsets and the transaction aborts: copied again, nothing lost);
        None when this member never gave one."""
        member = self.member
        if not self.closing:
            self._metadata_of = (id(member), member.consumer_group_metadata())
        elif self._metadata_of is None or self._metadata_of[0] != id(member):
            return None
        return self._metadata_of[1]

    def _new_consumer(self) -> Consumer:
        if self._member is None:  # joins once the producer could start transactions
            self._member = self._new_member()
        return super()._new_consumer()

    def _new_member(self) -> Consumer:
        return self.clients.consumer(membership_settings(self.config, self.route, self.worker_id,
                                                         error_cb=self._on_target_error))

    def _membership(self) -> Membership | None:
        """This worker's member of the positions group on the target: the group that gives it its partitions
        (target partitions; see ``domain.withheld``)."""
        member = self._member_id_of(self._member)
        return None if member is None else Membership(self.route.target, positions_group_id(self.route), member)

    def _handed_over(self) -> set[TP]:
        return set(self._sources)

    # -- membership: the positions group on the target -----------------------------

    def _subscribe(self, topics: list[str]) -> None:
        """Join with the target topics of ``topics`` (source topics): the group gives target partitions."""
        targets = sorted({self.subscription.target_of[t] for t in topics if t in self.subscription.target_of})
        try:
            if targets:
                self.member.subscribe(targets, on_assign=self._on_target_assign, on_revoke=self._on_target_revoke,
                                      on_lost=self._on_target_lost)
            else:
                self.member.unsubscribe()
        except KafkaException as exc:
            self._subscription_refused(f"member of {positions_group_id(self.route)}", exc)

    def _consume(self, count: int, timeout: float) -> list[Message]:
        self._serve_member()
        return super()._consume(count, timeout)

    def _serve_member(self) -> None:
        """Serve the member's callbacks (every partition it owns is paused: it returns no records)."""
        if self._rejoin_at is not None:
            return  # its worker id is held: a new member joins at _rejoin
        try:
            for message in self.member.consume(1, 0):
                error = message.error()
                if error is not None and (error.fatal() or error.code() == KafkaError._FATAL):
                    self._member_failed(error)
        except KafkaException as exc:  # librdkafka raises a fatal error from the call
            self._member_failed(exc.args[0])

    def _member_failed(self, error: KafkaError) -> None:
        """A fatal error of the member: a worker id still held (this worker's crashed process) is waited
        for, as on an at-least-once route; anything else stops the route."""
        if self.worker_id and "instance ID is still used" in error.str():
            self._consumer_failed(error)
        elif self.failure is None:
            self.failure = f"member of {positions_group_id(self.route)} on the target: {error.str()}"

    def _rejoin(self, wedged: bool = False) -> None:
        """A new member of the positions group: the worker id was still held there (a crashed process of this
        worker), or (``wedged``) the member may have stopped getting answers."""
        self._rejoin_at = None
        old, self._member, self.group_joined = self._member, self._new_member(), False
        if old is not None:
            self._close_client(old, "the member of the positions group", wedged)
        self._abort("the positions group took this worker's membership back" if not wedged
                    else "the member of the positions group was renewed")
        self._forget(set(self.inflight.ledgers) | self.unplaced)
        self._sources.clear()
        self._subscribe(sorted(self.subscription.partitions))

    def _reach_coordinator(self) -> None:
        """Nothing to wait for: the source consumer is assigned by hand (no group to leave); the member of the
        positions group is on the target, which the source's outage did not touch."""

    def _renew_clients(self, reason: str) -> None:
        """A new source consumer and a new member of the positions group (either may be the one that stopped
        getting answers: placing reads positions through both): every partition is given and placed again."""
        self._renew_consumer(reason, wedged=True)
        self._rejoin(wedged=True)

    def _renew_consumer(self, reason: str | None, wedged: bool = False) -> None:
        """A new source consumer (a recreated topic, say): what is open is aborted, and every owned partition
        is placed again from its committed position (the target partitions stay this worker's)."""
        if reason is not None:
            log.warning("source consumer renewed route=%s reason=%r", self.route.name, reason)
        self._abort(reason or "the source consumer was renewed")
        self._close_client(self.consumer, "the source consumer", wedged, hands_over=False)  # assigned by hand
        self._consumer = self._new_consumer()

    def _resubscribe(self, finished: Future[Look]) -> None:
        super()._resubscribe(finished)
        self._remap()

    def _remap(self) -> None:
        """Source partitions of owned target partitions that the last look found: the target partition may be
        given before this worker's look sees its source partition (another worker grew the target topic)."""
        for target, sources in self._sources_of([TopicPartition(t, p) for t, p in self._sources]).items():
            new = [key for key in sources if key not in self._sources[target]]
            if new:
                self._sources[target] = sources
                self._unplace(set(new))
                self._retry_at = 0.0
                log.info("assigned route=%s partitions=%s", self.route.name, listed(f"{t}[{p}]" for t, p in new))

    def _sources_of(self, targets: list[TopicPartition]) -> dict[TP, list[TP]]:
        """The source partitions each target partition copies (several for a merged topic; none for a target
        partition the source does not have)."""
        sources: dict[str, list[str]] = {}
        for source, target in self.subscription.target_of.items():
            sources.setdefault(target, []).append(source)
        return {(tp.topic, tp.partition): [(s, tp.partition) for s in sorted(sources.get(tp.topic, []))
                                           if tp.partition < self.subscription.partitions.get(s, 0)]
                for tp in targets}

    @shielded("assignment")
    def _on_target_assign(self, member: Consumer, partitions: list[TopicPartition]) -> None:
        """Take the target partitions (paused: the member fetches nothing); their source partitions wait for
        the loop to place them, assigned on the source consumer only then, at the position decided."""
        if self._left_behind(member):
            return
        member.incremental_assign(partitions)
        self.group_joined = True
        self._member_metadata()  # this generation's, for a commit in a close (its revocation)
        pausing.pause(member, partitions)
        given = self._sources_of(partitions)
        self._sources.update(given)
        keys = {key for sources in given.values() for key in sources}
        self._unplace(keys)
        self._assignment_changed()
        self._retry_at = 0.0
        log.info("assigned route=%s partitions=%s", self.route.name,
                 listed(f"{t}[{p}]" for t, p in sorted(keys)))

    @shielded("revocation")
    def _on_target_revoke(self, member: Consumer, partitions: list[TopicPartition]) -> None:
        """Hand over cleanly: the open transaction commits (or aborts) before the partitions go."""
        if self._left_behind(member):
            return
        self._commit_now()  # what is open commits, with the positions of the partitions going
        keys = self._release(partitions)
        self._unassign_sources(keys)
        self._assignment_changed()
        member.incremental_unassign(partitions)
        self._released(partitions)
        log.info("revoked route=%s partitions=%s", self.route.name,
                 listed(f"{t}[{p}]" for t, p in sorted(keys)))

    @shielded("lost partitions")
    def _on_target_lost(self, member: Consumer, partitions: list[TopicPartition]) -> None:
        """Lost (this worker was no longer a member): its open transaction cannot commit, abort it."""
        if self._left_behind(member):
            return
        keys = self._release(partitions)
        self._abort("partitions lost: this worker's membership lapsed")
        self._unassign_sources(keys)
        self._assignment_changed()
        member.incremental_unassign(partitions)
        log.warning("partitions lost route=%s count=%s", self.route.name, len(keys))

    def _release(self, partitions: list[TopicPartition]) -> set[TP]:
        keys: set[TP] = set()
        for tp in partitions:
            keys.update(self._sources.pop((tp.topic, tp.partition), []))
        return keys

    def _unassign_sources(self, keys: set[TP]) -> None:
        consumer = self.consumer
        assigned = {(tp.topic, tp.partition) for tp in consumer.assignment()}
        self._forget(keys)
        gone = [TopicPartition(t, p) for t, p in sorted(keys & assigned)]
        if gone:
            consumer.incremental_unassign(gone)

    # -- placing: positions from the positions group, assigned at the decided offset --

    def _committed_reader(self) -> CommittedThrough:
        """Each source partition's committed position: the furthest of the positions group's (committed with
        the records; read by a reader of that group made for it, which never joins) and the source group's (a
        copy, or an at-least-once worker's). Raises KafkaException while a transaction still holds the positions
        (a frozen worker's, until it is committed or aborted). What it needs of the worker is taken now."""
        target_of, topic_ids = dict(self.subscription.target_of), dict(self.subscription.topic_ids)
        settings, make = membership_settings(self.config, self.route), self.clients.consumer

        def committed(source_reader: Consumer, partitions: list[TopicPartition]) -> list[TopicPartition]:
            targets = sorted({(target_of[tp.topic], tp.partition) for tp in partitions})
            reader = make(settings)
            try:
                from_target = reader.committed([TopicPartition(t, p) for t, p in targets],
                                               timeout=POSITIONS_TIMEOUT_S)
            finally:
                close_within(reader.close, READER_CLOSE_S)
            positions: dict[TP, SourcePosition] = {}
            for tp in from_target:
                positions.update(decode_positions(tp.metadata))
            out = []
            for tp in source_reader.committed(partitions, timeout=POSITIONS_TIMEOUT_S):
                note = decode_note(tp.metadata)
                copy = SourcePosition(tp.offset, note.topic_id) if tp.offset >= 0 else None
                chosen = resume_position([positions.get((tp.topic, tp.partition)), copy], topic_ids.get(tp.topic))
                out.append(TopicPartition(tp.topic, tp.partition, OFFSET_INVALID) if chosen is None else
                           TopicPartition(tp.topic, tp.partition, chosen.offset,
                                          metadata=encode_note(0, chosen.topic_id)))
            return out

        return committed

    def _start(self, consumer: Consumer, tp: TopicPartition, ids: dict[str, str]) -> bool:
        """Assign the source partition at the decided offset (it was not assigned before)."""
        key = (tp.topic, tp.partition)
        if not any(key in sources for sources in self._sources.values()):
            self.unplaced.discard(key)  # its target partition went meanwhile
            return False
        return super()._start(consumer, tp, ids)

    def _fetch_from(self, consumer: Consumer, tp: TopicPartition) -> None:
        """Assign the source partition at its placed offset (it was not assigned before): paused while a full
        queue pauses the others."""
        consumer.incremental_assign([tp])
        if self._kept_from_fetching((tp.topic, tp.partition)):
            consumer.pause([tp])
