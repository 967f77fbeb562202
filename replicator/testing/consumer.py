"""A consumer of a FakeCluster, with librdkafka's calling conventions."""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from replicator.testing.cluster import FakeCluster, FakeLog
from replicator.testing.consumer_faults import ConsumerFaults
from replicator.testing.login import FakeAbort, FakeLogin, serving_callback
from replicator.testing.message import FakeMessage
from replicator.testing.process import FakeProcess

TP = tuple[str, int]
Callback = Callable[..., Any] | None


@dataclass(frozen=True, slots=True)
class FakeGroupMetadata:
    """What ``consumer_group_metadata()`` gives a transactional producer: who is committing, in which group."""

    group_id: str
    member_id: str | None  # None: a consumer that never joined
    epoch: int


class FakeConsumer(ConsumerFaults, FakeLogin):
    """Subscribe, consume (rebalance callbacks served here), pause, seek, store and commit offsets. With
    ``isolation.level`` read_committed (librdkafka's default) it reads no further than the last stable offset
    and skips aborted records; markers are never returned."""

    def __init__(self, settings: dict[str, Any], cluster: FakeCluster, process: FakeProcess | None = None) -> None:
        self.cluster = cluster
        self._remember_login(settings)
        self.process = process or FakeProcess("consumer")
        self.group = cluster.group(str(settings["group.id"]))
        self.member_id = str(settings.get("group.instance.id") or uuid.uuid4())
        self.reset = str(settings.get("auto.offset.reset", "latest"))
        self.auto_commit = str(settings.get("enable.auto.commit", "true")) == "true"
        self.on_commit: Callback = settings.get("on_commit")
        self.read_committed = str(settings.get("isolation.level", "read_committed")) == "read_committed"
        self.joined = False  # subscribed once: a member of the group (else its commits are "simple" ones)
        self.positions: dict[TP, int | None] = {}  # assigned partitions -> next offset (None: unknown)
        self.paused: set[TP] = set()
        self.stuck: set[TP] = set()  # after a failed reset: seek refused until assigned again
        self.silenced: dict[TP, bool] = {}  # fetched no more, without a word -> whether a seek cures it
        self.deaf = False  # no answer from its cluster any more, though the cluster answers other clients
        self.group_deaf = False  # nor from its group's coordinator (``lose_coordinator``)
        self.close_blocks: threading.Event | None = None  # a wedged close: it waits for this event
        # Topics this client never takes up (the fault harness saw a librdkafka member do so; why is not known):
        # their partitions the group gives it are neither handed to the application nor acknowledged, and the
        # group keeps them for this member (see replicator.domain.withheld).
        self.unresolved: set[str] = set()
        # librdkafka resolves a logical offset given to assign (OFFSET_BEGINNING/END) by a query answered
        # later; a seek before the answer makes it outdated, and librdkafka (<= 2.16, rdkafka_partition.c,
        # "outdated offset response") then asks again and applies that answer over the seek.
        self.queries: dict[TP, int] = {}  # asked at assign; answered after any seek (the worst case)
        self.requeries: dict[TP, int] = {}  # asked again after an outdated answer: see answer_offset_queries
        self.stored: dict[TP, tuple[int, str | None]] = {}
        self.errors: deque[FakeMessage] = deque()
        self.error_cb: Callback = settings.get("error_cb")
        self.client_errors: deque[KafkaError] = deque()  # for error_cb, served by consume (``report``)
        self.callbacks: dict[str, Callback] = {}
        self.closed = False
        self._closing = False  # serving the callbacks of its close
        self.fatal: KafkaException | None = None  # raised by every consume (librdkafka's fatal state)
        self._assigned_in_callback = False
        self._was_cut = False  # the previous consume found the link to its cluster cut
        self._thaws_seen = (self.process.thaws, cluster.thaws)
        self._coordinator_lost = False  # cut off from its cluster, or met it frozen: see ``_finds_coordinator``
        self._answered_since: float | None = None  # when the cluster first answered it again after that

    # -- group -----------------------------------------------------------------------

    def subscribe(self, topics: list[str], on_assign: Callback = None, on_revoke: Callback = None,
                  on_lost: Callback = None) -> None:
        """Join the group with these topics; callbacks run from ``consume``. A consumer in librdkafka's fatal
        state refuses (as ``unsubscribe`` does)."""
        self._refuse_if_fatal()
        self.callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}
        self._join(topics)

    def _refuse_if_fatal(self) -> None:
        if self.fatal is not None:
            raise KafkaException(KafkaError(KafkaError._FATAL, "Failed to set subscription: Local: Fatal error"))

    def _join(self, topics: list[str]) -> None:
        self.joined = True
        try:
            self.group.join(self.member_id, topics, id(self))
        except KafkaException as exc:  # librdkafka learns it from a heartbeat: an error event of the whole
            self.fatal = exc  # client (no topic) comes out of consume first, then every consume raises it
            self.errors.append(FakeMessage(None, None, -1, error=exc.args[0]))

    def unsubscribe(self) -> None:
        """Subscribe to nothing: everything owned is revoked at the next ``consume``."""
        self._refuse_if_fatal()
        self._join([])

    def memberid(self) -> str | None:
        """This client's member id in its group (None before it joined). Called from a callback that ``close``
        serves, librdkafka's waits for its group thread, which waits for the close, and confluent-kafka holds the
        GIL meanwhile: the process hangs for good (seen in CI) -- the fake aborts instead."""
        if self._closing:
            raise FakeAbort("memberid() called from a callback served by close: the process would hang")
        return self.member_id if self.joined else None

    def _serve_group(self) -> None:
        while (event := self._group_word()) is not None:
            kind, tps = event
            if kind == "assign" and self.unresolved:
                self.group.revoked(self.member_id, [tp for tp in tps if tp[0] in self.unresolved])
                tps = [tp for tp in tps if tp[0] not in self.unresolved]
                if not tps:
                    return  # offered again at the next consume, and withheld again
            parts = [TopicPartition(t, p) for t, p in tps]
            callback = self.callbacks.get(kind) or (self.callbacks.get("revoke") if kind == "lost" else None)
            self._assigned_in_callback = False
            if callback is not None:
                callback(self, parts)
            if kind == "assign" and not self._assigned_in_callback:
                self.incremental_assign(parts)  # librdkafka's fallback when the callback did not
            if kind != "assign":
                if not self._assigned_in_callback:
                    self.incremental_unassign(parts)
                self.group.revoked(self.member_id, tps)

    def _group_word(self) -> tuple[str, list[TP]] | None:
        """The group's next event for this member; nothing for a process frozen while this call was under way
        (SIGSTOP stops it where it stands): looked at under the lock the group's changes take, so a session
        expired after the freeze is not heard before the thaw. Nor by a killed process: ``FakeKafka.kill`` marks it
        killed before it expires its members, and a member hearing its own expiry rejoins (CI: a killed worker's
        consume under way brought its member back, which never polled again, and the survivor waited for good)."""
        with self.cluster.lock:
            return None if self.process.frozen or self.process.killed else self.group.events(self.member_id)

    # -- assignment ------------------------------------------------------------------

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        """Add partitions; an offset of OFFSET_INVALID means "the committed one"."""
        self._assigned_in_callback = True
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self.stuck.discard(key)
            self.silenced.pop(key, None)
            self.positions[key] = self._resolve(key, tp.offset)
            self.requeries.pop(key, None)
            if tp.offset in (OFFSET_BEGINNING, OFFSET_END):
                self.queries[key] = tp.offset

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        """Remove partitions (their stored, uncommitted offsets are dropped)."""
        self._assigned_in_callback = True
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self.positions.pop(key, None)
            self.queries.pop(key, None)
            self.requeries.pop(key, None)
            self.stuck.discard(key)
            self.paused.discard(key)
            self.stored.pop(key, None)
            self.errors = deque(e for e in self.errors if (e.topic(), e.partition()) != key)

    def assignment(self) -> list[TopicPartition]:
        """The assigned partitions."""
        return [TopicPartition(t, p) for t, p in sorted(self.positions)]

    def _resolve(self, key: TP, offset: int) -> int | None:
        """An absolute offset as it is; OFFSET_BEGINNING/END as the log's start/end; else the committed one."""
        if offset >= 0:
            return offset
        if offset in (OFFSET_BEGINNING, OFFSET_END):
            low, high = self.cluster.watermarks(*key)
            return low if offset == OFFSET_BEGINNING else self._end_of(key, high)
        return self._start_of(key)

    def _end_of(self, key: TP, high: int) -> int:
        """Where "the end" is for this reader: the last stable offset under read_committed."""
        return self.cluster.log(*key).stable_end if self.read_committed else high

    def _start_of(self, key: TP) -> int | None:
        committed = self.group.committed.get(key)
        if committed is not None:
            return committed[0]
        low, high = self.cluster.watermarks(*key)
        if self.reset == "error":
            self._reset_error(key)
            return None
        return low if self.reset in ("earliest", "smallest") else self._end_of(key, high)

    def _reset_error(self, key: TP) -> None:
        # librdkafka's own reset failed (auto.offset.reset=error): it reports it, and the partition is
        # then in a state that no seek leaves (_STATE) until it is assigned again.
        error = KafkaError(KafkaError._AUTO_OFFSET_RESET, f"fetch position of {key} is out of range")
        self.errors.append(FakeMessage(key[0], key[1], -1, error=error))
        self.stuck.add(key)

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Stop fetching these partitions."""
        self.paused.update((tp.topic, tp.partition) for tp in partitions)

    def resume(self, partitions: list[TopicPartition]) -> None:
        """Fetch these partitions again."""
        self.paused.difference_update((tp.topic, tp.partition) for tp in partitions)

    def seek(self, partition: TopicPartition) -> None:
        """Move the fetch position of an assigned partition (drops what was fetched before)."""
        key = (partition.topic, partition.partition)
        if key not in self.positions or key in self.stuck:
            raise KafkaException(KafkaError(KafkaError._STATE, f"Failed to seek {key}: Local: Erroneous state"))
        self.positions[key] = partition.offset
        if self.silenced.get(key):
            del self.silenced[key]
        self.errors = deque(e for e in self.errors if (e.topic(), e.partition()) != key)
        if key in self.queries:  # its answer will be outdated: librdkafka asks again
            self.requeries[key] = self.queries.pop(key)

    def answer_offset_queries(self) -> None:
        """The answers to the queries librdkafka asked again arrive (over a slow or cut link, any time
        later): each partition's fetch position moves to the log start (or end) of that moment, whatever
        the application sought meanwhile. Called by a test, at the moment it chooses."""
        for key, logical in sorted(self.requeries.items()):
            if key in self.positions:
                self.positions[key] = self._resolve(key, logical)
        self.requeries.clear()

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The next offset to fetch of each partition (OFFSET_INVALID when unknown)."""
        found = (self.positions.get((tp.topic, tp.partition)) for tp in partitions)
        return [TopicPartition(tp.topic, tp.partition, OFFSET_INVALID if offset is None else offset)
                for tp, offset in zip(partitions, found, strict=True)]

    # -- reading ---------------------------------------------------------------------

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[FakeMessage]:
        """Rebalance callbacks first, then up to ``num_messages`` records of unpaused partitions."""
        self.process.checkpoint()
        if self.closed:
            raise RuntimeError("Consumer closed")
        if self.fatal is not None and not self.errors:
            raise self.fatal
        self._follow_link()
        self._auto_commit()
        while self.client_errors:
            error = self.client_errors.popleft()
            if self.error_cb is not None:
                with serving_callback():
                    self.error_cb(error)
        out: list[FakeMessage] = []
        while self.errors and len(out) < num_messages:
            out.append(self.errors.popleft())
        if not self.cluster.frozen and self.process.reaches(self.cluster.name):
            with self.cluster.lock:
                # A process frozen while this call was under way (SIGSTOP stops it where it stands) fetches
                # nothing written since: looked at under the lock every write takes, so no write slips between.
                if not self.process.frozen:
                    out += self._fetch(num_messages - len(out))
        if not out and timeout:
            time.sleep(min(timeout, 0.005) if timeout > 0 else 0.005)
        return out

    def _follow_link(self) -> None:
        """The group's word comes over the link to the coordinator: nothing while it is cut (librdkafka reports
        the broken connection to ``error_cb`` once), and not on the first consume after it is back, or after the
        process was thawed: its fetches go out at once and their records come before the answer to its next
        heartbeat -- a member whose session expired meanwhile gets records of partitions that are no longer its
        own first (seen on real brokers: a host cut off for 10 s copied 4,070 records again before it learned it
        was fenced; a worker frozen 17.6 s, 395 records of one partition; a source broker frozen 17 s, whose
        members' sessions all ran out at its thaw, 2,693 records copied again by the fault harness's pairs)."""
        reaches = self.process.reaches(self.cluster.name)
        thaws = (self.process.thaws, self.cluster.thaws)  # its process's, or its cluster's (a broker SIGSTOPped)
        woke, self._thaws_seen = thaws != self._thaws_seen, thaws
        if not reaches and not self._was_cut:
            self.client_errors.append(KafkaError(KafkaError._TRANSPORT, f"GroupCoordinator: {self.cluster.name}: "
                                                 "Connect failed: No route to host"))
        found = self._finds_coordinator() and not self.group_deaf
        if reaches and found and not self._was_cut and not woke and not self.cluster.frozen:  # frozen: says nothing
            self._serve_group()
        self._was_cut = not reaches

    def _finds_coordinator(self) -> bool:
        """Whether this consumer knows its group's coordinator now: lost while the cluster is out of its reach or
        frozen, found again ``cluster.coordinator_refind_s`` after the cluster first answers it again."""
        if self.cluster.frozen or not self.process.reaches(self.cluster.name):
            self._coordinator_lost, self._answered_since = True, None
            return False
        if self._coordinator_lost:
            now = time.monotonic()
            self._answered_since = self._answered_since or now
            if now - self._answered_since < self.cluster.coordinator_refind_s:
                return False
            self._coordinator_lost = False
        return True

    def _fetch(self, limit: int) -> list[FakeMessage]:
        out: list[FakeMessage] = []
        for key in sorted(self.positions):
            position = self.positions[key]
            if limit - len(out) <= 0 or key in self.paused or key in self.silenced or position is None or self.deaf:
                continue
            log = self.cluster.log(*key) if key[0] in self.cluster.topics else None
            if log is None:
                continue
            if position < log.start or position > log.end:
                self.positions[key] = None
                self._reset_error(key)
                continue
            out += self._read(key, log, position, limit - len(out))
        return out

    def _read(self, key: TP, log: FakeLog, position: int, limit: int) -> list[FakeMessage]:
        """Up to ``limit`` records from ``position``: markers skipped, and under read_committed aborted
        records skipped and nothing at or past the last stable offset."""
        end = log.stable_end if self.read_committed else log.end
        aborted = self.cluster.transactions.aborted
        out: list[FakeMessage] = []
        for record in log.read(position, max(0, end - position)):
            if len(out) >= limit:
                break
            self.positions[key] = record.offset + 1
            if record.control or (self.read_committed and record.txn in aborted):
                continue
            out.append(FakeMessage(key[0], key[1], record.offset, record.key, record.value,
                                   list(record.headers) or None, record.timestamp))
        return out

    # -- offsets ---------------------------------------------------------------------

    def committed(self, partitions: list[TopicPartition], timeout: float = -1) -> list[TopicPartition]:
        """The group's committed offsets (with their metadata). Offsets an open transaction holds are waited
        for (Kafka's require_stable): a timeout, retriable, until that transaction ends."""
        self.cluster.check_reachable("committed", self.process)
        if self.deaf or not self._finds_coordinator():  # librdkafka waits for its coordinator, up to the timeout
            time.sleep(0.05)
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get committed offsets: Local: Timed out"))
        if any(self.cluster.transactions.pending(self.group.group_id, (tp.topic, tp.partition)) for tp in partitions):
            time.sleep(0.01)
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "fake committed: UNSTABLE_OFFSET_COMMIT "
                                            "(offsets pending in an open transaction)", retriable=True))
        out = []
        for tp in partitions:
            offset, note = self.group.committed.get((tp.topic, tp.partition), (OFFSET_INVALID, None))
            out.append(_partition(tp.topic, tp.partition, offset, note))
        return out

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float = -1,
                              cached: bool = False) -> tuple[int, int]:
        """(low, high) of one partition."""
        self.cluster.check_reachable("get_watermark_offsets", self.process)
        return self.cluster.watermarks(partition.topic, partition.partition)

    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float = -1) -> list[TopicPartition]:
        """The first offset at or after each partition's timestamp (-1: none)."""
        self.cluster.check_reachable("offsets_for_times", self.process)
        out = []
        for tp in partitions:
            found = [r.offset for r in self.cluster.records(tp.topic, tp.partition) if r.timestamp >= tp.offset]
            out.append(TopicPartition(tp.topic, tp.partition, found[0] if found else -1))
        return out

    def store_offsets(self, offsets: list[TopicPartition]) -> None:
        """Note offsets to commit; only assigned partitions (librdkafka: _STATE otherwise)."""
        for tp in offsets:
            key = (tp.topic, tp.partition)
            if key not in self.positions:
                raise KafkaException(KafkaError(KafkaError._STATE, f"{key} is not assigned"))
            self.stored[key] = (tp.offset, tp.metadata)

    def _auto_commit(self) -> None:
        if self.auto_commit and self.stored and not self.cluster.frozen and self.process.reaches(self.cluster.name):
            self._commit_stored(raise_errors=False)

    def _commit_stored(self, raise_errors: bool) -> list[TopicPartition]:
        """Commit the stored offsets. As in librdkafka, an offset stays stored until a commit of it succeeds: a
        failed commit leaves it for the next."""
        offsets = dict(self.stored)
        parts = self._commit_offsets(offsets, raise_errors)
        if parts:
            for key, value in offsets.items():
                if self.stored.get(key) == value:
                    del self.stored[key]
        return parts

    def _commit_offsets(self, offsets: dict[TP, tuple[int, str | None]], raise_errors: bool) -> list[TopicPartition]:
        parts = [_partition(t, p, o, m) for (t, p), (o, m) in offsets.items()]
        try:
            self.group.commit(self.member_id if self.joined else None, offsets)
        except KafkaException as exc:
            if self.on_commit is not None:
                self.on_commit(exc.args[0], parts)
            if raise_errors:
                raise
            return []
        if self.on_commit is not None:
            self.on_commit(None, parts)
        return parts

    def commit(self, message: object = None, offsets: list[TopicPartition] | None = None,
               asynchronous: bool = True) -> list[TopicPartition] | None:
        """Commit ``offsets`` (a consumer that never joined makes a "simple" commit), else the stored ones
        (_NO_OFFSET when there are none). An asynchronous commit reports errors to ``on_commit`` only, as
        librdkafka does."""
        self.process.checkpoint()
        if offsets is None:
            try:
                self.cluster.check_reachable("commit", self.process)
                if not self.stored:
                    raise KafkaException(KafkaError(KafkaError._NO_OFFSET, "no offset to commit"))
            except KafkaException as exc:
                if not asynchronous:
                    raise
                if self.on_commit is not None:  # an asynchronous commit says how it went to the callback only
                    self.on_commit(exc.args[0], [])
                return None
            committed = self._commit_stored(raise_errors=not asynchronous)
            return None if asynchronous else committed
        explicit = {(tp.topic, tp.partition): (tp.offset, tp.metadata) for tp in offsets}
        try:
            self.cluster.check_reachable("commit", self.process)
        except KafkaException as exc:
            if not asynchronous:
                raise
            if self.on_commit is not None:
                self.on_commit(exc.args[0], offsets)
            return None
        committed = self._commit_offsets(explicit, raise_errors=not asynchronous)
        return None if asynchronous else committed

    def report(self, error: KafkaError) -> None:
        """An error librdkafka reports to ``error_cb`` (a refused login, brokers down), served by ``consume``."""
        self.client_errors.append(error)

    def consumer_group_metadata(self) -> FakeGroupMetadata:
        """The group and this member (its epoch now), for a transactional producer's offsets. Like ``memberid``,
        librdkafka's asks the group's thread: called from a callback that ``close`` serves, the fake aborts."""
        if self._closing:
            raise FakeAbort("consumer_group_metadata() called from a callback served by close: the process would hang")
        epoch = self.group.live_epoch(self.member_id) if self.joined else None
        return FakeGroupMetadata(self.group.group_id, self.member_id if self.joined else None,
                                 -1 if epoch is None else epoch)

    def close(self) -> None:
        """Revoke what is owned (callbacks run), commit what is stored, leave the group (when it knows its
        coordinator: else the group keeps the member until its session expires)."""
        self.process.checkpoint()
        if self.closed:
            return
        if self.fatal is not None:
            self.closed = True
            return
        if self.close_blocks is not None:
            self.close_blocks.wait()  # what it waits for never answers (until the test says so)
        if self.joined and not self.group_deaf:  # one that lost its coordinator hears nothing of the group
            self.unsubscribe()
            self._closing = True
            try:
                self._serve_group()
            finally:
                self._closing = False
        if self.auto_commit and self.stored:
            self._commit_stored(raise_errors=False)
        if self.joined and self._finds_coordinator() and not self.group_deaf:  # no leave without a coordinator
            self.group.leave(self.member_id)
        self.closed = True


def _partition(topic: str, partition: int, offset: int, note: str | None) -> TopicPartition:
    """A TopicPartition with its commit metadata (confluent-kafka refuses None for it)."""
    if note is None:
        return TopicPartition(topic, partition, offset)
    return TopicPartition(topic, partition, offset, metadata=note)
