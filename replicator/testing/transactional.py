"""A transactional FakeProducer: librdkafka's transaction API over the FakeCluster's coordinator.

The calls and their errors as librdkafka (2.x) makes them:

- ``init_transactions`` registers the ``transactional.id``. A later producer with the same id
  fences this one: it learns it at its next request (a transactional call, or records sent),
  and is then fatal (``_FENCED``): what is queued is purged (reported with ``_PURGE_QUEUE``),
  the next ``poll`` or ``flush`` raises the fatal error (once), every transactional call raises it.
- ``produce`` outside a transaction (before ``begin_transaction``, or once the transaction can only
  be aborted) fails with ``_STATE``.
- A failed delivery makes the transaction abortable: ``send_offsets_to_transaction`` and
  ``commit_transaction`` then raise that error, ``txn_requires_abort()`` True.
- ``send_offsets_to_transaction`` is refused (UNKNOWN_MEMBER_ID, or ILLEGAL_GENERATION for a stale
  member epoch; abortable) unless the member the group metadata names is a live member of that
  epoch (KIP-447); the offsets become the group's only when the transaction commits.
- ``commit_transaction`` flushes first (delivery reports are served from it). ``abort_transaction``
  purges what is queued and serves those reports (``_PURGE_QUEUE``) before it returns, as librdkafka's
  abort does (it flushes after the purge).
- A cluster that does not answer: a retriable ``_TIMED_OUT``; the transaction stays as it was. ``poll``
  and ``flush`` report it once through ``error_cb`` (``_ALL_BROKERS_DOWN``, "1/1 brokers are down"), as
  librdkafka does; with the cluster's ``offsets_hang_after_outage``, this producer's
  ``send_offsets_to_transaction`` never returns after that (librdkafka #5456/#5511).

A crashed producer's open transaction stays open (holding back ``read_committed`` readers of the
partitions it wrote) until a producer with its transactional id starts: the fakes do not run the
broker's ``transaction.timeout.ms``.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from replicator.testing.cluster import FakeCluster
from replicator.testing.consumer import FakeGroupMetadata
from replicator.testing.process import FakeProcess
from replicator.testing.producer import DeliveryCallback, FakeProducer, Queued
from replicator.testing.transactions import Coordinator, FakeTransaction

FENCED = "Producer fenced by newer instance: Broker: Producer attempted to produce with an old epoch"
PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)


class FakeTransactionalProducer(FakeProducer):
    """A FakeProducer with ``transactional.id``: records are produced inside transactions only."""

    def __init__(self, settings: dict[str, Any], cluster: FakeCluster, process: FakeProcess | None = None) -> None:
        super().__init__(settings, cluster, process)
        self.transactional_id = str(settings["transactional.id"])
        self._stuck: bool | None = None  # this producer's commits never complete (decided at its first commit)
        self._stuck_calls = 0
        self.error_cb = settings.get("error_cb")
        self.epoch: int | None = None  # set by init_transactions
        self.transaction: FakeTransaction | None = None  # the open one
        self.abortable: KafkaError | None = None  # the error that dooms the open transaction
        self.fatal: KafkaError | None = None
        self.events: deque[KafkaError] = deque()  # for error_cb, served by poll and flush
        self._away = False  # the cluster is unreachable, and that was reported
        self.lost_cluster = False  # it was, at least once

    @property
    def coordinator(self) -> Coordinator:
        """The cluster's transaction coordinator."""
        return self.cluster.transactions

    # -- the transaction API -----------------------------------------------------------

    def init_transactions(self, timeout: float = -1) -> None:
        """Register the transactional id: an earlier producer with it is fenced, its open transaction aborted."""
        self.process.checkpoint()
        self._raise_fatal()
        self.cluster.check_reachable("init_transactions", self.process)
        self.epoch = self.coordinator.init(self.transactional_id)

    def begin_transaction(self) -> None:
        """Start a transaction (local: no request; _STATE unless initialised and none is open)."""
        self.process.checkpoint()
        self._raise_fatal()
        if self.epoch is None or self.transaction is not None:
            raise KafkaException(_state("begin_transaction"))
        self.transaction = self.coordinator.begin(self.transactional_id, self.epoch)

    def send_offsets_to_transaction(self, positions: list[TopicPartition], group_metadata: FakeGroupMetadata,
                                    timeout: float = -1) -> None:
        """Add a group's offsets to the open transaction; refused (abortable) for a member no longer live, or for
        metadata longer than the brokers take."""
        txn = self._current("send_offsets_to_transaction")
        if self.lost_cluster and self.cluster.offsets_hang_after_outage:
            with self.cluster.lock:
                self.cluster.hung_offsets += 1
            threading.Event().wait()  # never returns
        group = self.cluster.group(group_metadata.group_id)
        if group_metadata.member_id is None:
            live = not group.alive()  # a consumer that never joined: taken for a group without members
            code = KafkaError.UNKNOWN_MEMBER_ID
        else:
            epoch = group.live_epoch(group_metadata.member_id)
            live = epoch == group_metadata.epoch
            code = KafkaError.UNKNOWN_MEMBER_ID if epoch is None else KafkaError.ILLEGAL_GENERATION
        if live and any(len((tp.metadata or "").encode()) > self.cluster.offset_metadata_max_bytes
                        for tp in positions):
            live, code = False, KafkaError.OFFSET_METADATA_TOO_LARGE  # the broker refuses it per partition
        if not live:
            self.abortable = KafkaError(code, f"Failed to commit offsets to transaction: {KafkaError(code).str()}",
                                        txn_requires_abort=True)
            raise KafkaException(self.abortable)
        with self.cluster.lock:
            txn.offsets[group_metadata.group_id].update(
                {(tp.topic, tp.partition): (tp.offset, tp.metadata) for tp in positions})

    def commit_transaction(self, timeout: float = -1) -> None:
        """Flush (reports served here), then commit: records and offsets visible together (see the cluster's
        ``stuck_commits`` for a commit that never completes)."""
        self.process.checkpoint()
        self._raise_fatal()
        if self.transaction is None:
            raise KafkaException(_state("commit_transaction"))
        if self._stuck is None:
            with self.cluster.lock:
                self._stuck = self.cluster.stuck_commits > 0
                self.cluster.stuck_commits -= self._stuck
        if self._stuck:
            first, self._stuck_calls = self._stuck_calls == 0, self._stuck_calls + 1
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Timed out waiting for operation to finish, "
                                            "retry call to resume", retriable=True) if first else
                                 KafkaError(KafkaError._CONFLICT, "Conflicting commit_transaction API call is "
                                            "already in progress", retriable=True))
        left = self.flush(timeout)
        if left:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"Failed to flush {left} outstanding "
                                            "message(s) before commit", retriable=True))
        txn = self._current("commit_transaction")
        self.coordinator.end(txn, commit=True)
        self.transaction = None

    def abort_transaction(self, timeout: float = -1) -> None:
        """Purge what is queued (its reports served here, _PURGE_QUEUE), then abort: nothing of it visible."""
        self.process.checkpoint()
        self._raise_fatal()
        txn = self.transaction
        if txn is None:
            raise KafkaException(_state("abort_transaction"))
        self.purge()
        self._report_purged()
        self._ask("abort_transaction")
        self.coordinator.end(txn, commit=False)
        self.transaction, self.abortable = None, None

    # -- records -------------------------------------------------------------------------

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int = -1,
                on_delivery: DeliveryCallback | None = None, timestamp: int = 0,
                headers: list[tuple[str, bytes | None]] | None = None,
                callback: DeliveryCallback | None = None) -> None:
        """Queue a record of the open transaction (_STATE outside one, _FATAL once fenced). confluent-kafka makes
        the _FATAL that ``produce`` raises from the code alone: its ``fatal()`` is False (the fault pairs: a worker
        stopped on an offset sync refused so, taken for a refusal of the sync)."""
        self.process.checkpoint()
        if self.fatal is not None:
            raise KafkaException(KafkaError(KafkaError._FATAL, "Unable to produce message: Local: Fatal error"))
        if self.transaction is None or self.abortable is not None:
            raise KafkaException(_state("produce"))
        super().produce(topic, value, key, partition, on_delivery, timestamp, headers, callback)

    def poll(self, timeout: float | None = None) -> int:
        """Serve error events, then delivery reports (learning of a fence when records are sent)."""
        self.process.checkpoint()
        self._check_fence()
        self._watch_link()
        return self._serve_events() + super().poll(timeout)

    def flush(self, timeout: float | None = None) -> int:
        """Serve error events and purged records' reports, then deliver what is queued."""
        self.process.checkpoint()
        self._check_fence()
        self._watch_link()
        self._serve_events()
        self._report_purged()
        return super().flush(timeout)

    def _write(self, item: Queued) -> int:
        txn = self.transaction
        if txn is None:  # cannot happen: produce refuses records outside a transaction, ending one purges
            raise KafkaException(_state("delivery"))
        offset = self.cluster.append(item.topic, item.partition, item.key, item.value, item.headers,
                                     item.timestamp, txn=txn.number)
        txn.partitions.add((item.topic, item.partition))
        return offset

    def _delivery_failed(self, error: KafkaError) -> None:
        if self.transaction is not None and self.abortable is None and error.code() not in PURGED:
            self.abortable = KafkaError(error.code(), "Current transaction failed: message(s) failed delivery "
                                        f"({error.str()})", txn_requires_abort=True)

    # -- fencing ----------------------------------------------------------------------

    def _current(self, request: str) -> FakeTransaction:
        """The open transaction, for a request to the coordinator about it."""
        self.process.checkpoint()
        self._raise_fatal()
        txn = self.transaction
        if txn is None:
            raise KafkaException(_state(request))
        if self.abortable is not None:
            raise KafkaException(self.abortable)
        self._ask(request)
        return txn

    def _ask(self, request: str) -> None:
        """A request to the coordinator: a retriable timeout when it does not answer, fatal when fenced."""
        with self.cluster.lock:
            moved = self.cluster.coordinator_moves > 0
            self.cluster.coordinator_moves -= moved
        if moved:
            self.lost_cluster = True
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, f"Failed to {request} on broker TxnCoordinator/1: "
                                            "Local: Broker transport failure", retriable=True))
        try:
            self.cluster.check_reachable(request, self.process)
        except KafkaException as exc:
            error = exc.args[0]
            raise KafkaException(KafkaError(error.code(), error.str(), retriable=True)) from None
        if self.epoch is not None and self.coordinator.fenced(self.transactional_id, self.epoch):
            self._become_fatal()
        self._raise_fatal()

    def _watch_link(self) -> None:
        """An unreachable cluster is reported once per outage (as librdkafka's error_cb does)."""
        away = self.cluster.frozen or not self.process.reaches(self.cluster.name)
        if away and not self._away:
            self.events.append(KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
            self.lost_cluster = True
        self._away = away

    def _check_fence(self) -> None:
        """Records sent by a fenced producer are refused: it learns it then."""
        if self.queue and self.fatal is None and self._reachable() and self.epoch is not None \
                and self.coordinator.fenced(self.transactional_id, self.epoch):
            self._become_fatal()

    def _become_fatal(self) -> None:
        self.fatal = KafkaError(KafkaError._FENCED, FENCED, fatal=True)
        self.events.append(KafkaError(KafkaError._FATAL, f"Fatal error: {KafkaError(KafkaError._FENCED).str()}: "
                                      f"{FENCED}", fatal=True))
        self.purge()  # its open transaction was aborted when the newer producer started
        self.transaction = None

    def _raise_fatal(self) -> None:
        if self.fatal is not None:
            raise KafkaException(self.fatal)

    def _serve_events(self) -> int:
        """Error events for ``error_cb``; the fatal one is raised instead, once, from the ``poll`` or ``flush``
        that serves it (as confluent-kafka 2.16 does with a fenced transactional producer: seen on a broker,
        ``poll`` raised ``_FENCED`` and ``error_cb`` was not called)."""
        served = 0
        while self.events:
            error = self.events.popleft()
            if error.fatal() and self.fatal is not None:
                raise KafkaException(self.fatal)
            if self.error_cb is not None:
                self.error_cb(error)
            served += 1
        return served


def _state(call: str) -> KafkaError:
    return KafkaError(KafkaError._STATE, f"Local: Erroneous state: {call} is not valid in this transaction state")
