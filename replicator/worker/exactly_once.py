"""An exactly-once route's worker: records, source positions and offset syncs commit together on the target.

The hot path is the at-least-once one (``RouteWorker``); what changes is who owns a
partition and where its position is kept (docs/exactly-once.md has the reasoning):

- **Ownership lives on the target** (``TargetMember``): the route's positions group on
  the target cluster gives each worker target partitions; it copies their source
  partitions.
- **Positions commit inside the transaction.** Every ``transactions.interval_ms`` (or
  ``max_records``) the worker stops handing records to the producer, waits for what is
  in flight to be acknowledged, then sends the positions group's offsets for the target
  partitions it wrote (metadata: the next source offset of each source partition, see
  ``domain.positions``) and commits. Offset syncs were produced in the same transaction.
- **A zombie is fenced by the group.** A worker frozen past its session (SIGSTOP, a GC
  pause, cut from the target) is no longer a member when it wakes; the target refuses
  its offsets (UNKNOWN_MEMBER_ID, or a stale member epoch) and its transaction is
  aborted, records included (KIP-447: the group is on the transaction's own cluster). A
  new owner reading the positions waits for a transaction still pending on them.
- **An abort goes back to the last commit**: every owned partition is placed again from
  the positions group (nothing of the aborted transaction is visible).
- After each commit the source group's offsets get a copy of the positions (as an
  at-least-once worker would have committed them), for ``status``, lag, checkpoints and
  failover, and so that switching the route back to at-least-once repeats nothing.

The producer's life (started, lost, replaced) is ``transaction_producer``'s.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
import uuid
from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from replicator.domain.commit_metadata import encode_note
from replicator.domain.naming import positions_group_id
from replicator.domain.positions import SourcePosition, decode_positions, encode_positions
from replicator.kafka.clients import KAFKA_CLIENTS, ClientFactory
from replicator.state.transaction_counts import RunCounts
from replicator.worker import metrics
from replicator.worker.bounded import Hung, bounded
from replicator.worker.callbacks import shielded
from replicator.worker.dead_letter import REQUEST_LIMIT, TOPIC_LIMIT, DeadLetterError, DeadLetterWriter
from replicator.worker.records import PURGED, TP
from replicator.worker.timeouts import WorkerTimeouts
from replicator.worker.transaction_producer import TransactionProducer, producer_lost

if TYPE_CHECKING:
    from replicator.config import Config, RouteConfig
    from replicator.state.store import StateStore

log = logging.getLogger(__name__)

COUNTS_EVERY_S = 10.0  # this run's transaction counts go to the state link this often (stored by its next topic
#   refresh, in the refresh's thread) and at the stop
COMMIT_GIVE_UP_S = 15.0  # a commit retried this long is given up: the producer is replaced (librdkafka answered
#   "Conflicting commit_transaction API call is already in progress" for minutes after a target restart)
COMMIT_RETRY_S = 0.1  # between tries of a commit that answered "retry"
COMMIT_TIMEOUT_S = 5.0  # send_offsets_to_transaction, commit_transaction, abort_transaction: a timeout is retried
#   at the next turn (the loop must go on serving the member and the source meanwhile)


class ExactlyOnceWorker(TransactionProducer):
    """Replicates one exactly-once route until ``stop`` is set or an unrecoverable error occurs."""

    FIRST_ALONE = False  # nothing kept aside: an abort goes back to the commit, and a kept record would outlive it

    def __init__(self, config: Config, route: RouteConfig, store: StateStore | None = None,
                 batch_size: int = 2000, worker_id: str | None = None, clients: ClientFactory = KAFKA_CLIENTS,
                 timeouts: WorkerTimeouts | None = None) -> None:
        super().__init__(config, route, store, batch_size, worker_id, clients, timeouts or WorkerTimeouts())
        self.interval = route.transactions.interval_ms / 1000
        self.max_records = route.transactions.max_records
        # The target's coordinator aborts a transaction open this long (at its next check): a commit still retried
        # then can no longer be counted on, and is given up (see ``_transaction_failed``).
        self.transaction_timeout = int(self._producer_settings()["transaction.timeout.ms"]) / 1000
        self._open = False  # a transaction is begun and not yet committed or aborted
        self._opened_at = 0.0
        self._records = 0  # records handed to the producer in the open transaction
        self._aborting = False  # our own abort_transaction runs: the purged records' reports are expected
        self._stopping = False  # the worker is on its way out
        self._moved: dict[TP, int] = {}  # source partition -> position, acknowledged in the transaction committing
        self._committing: dict[TP, tuple[int, str]] | None = None  # the positions of a commit under way
        self._retrying_since: float | None = None  # the commit under way answered "retry" first then
        # ... and is tried again from then on (not placing's ``_retry_at``: one deadline for both put every commit
        # off for as long as a partition could not be placed)
        self._commit_retry_at = 0.0
        self._counts = {"committed": 0, "aborted": 0}  # this run's transactions, stored for `mirrorflow status`
        self._run_key, self._started = uuid.uuid4().hex, dt.datetime.now(dt.UTC)
        self._counts_at = 0.0  # when they are stored next
        if self.dead_letters is not None:  # set aside inside the transaction, by its producer
            self.dead_letters = DeadLetterWriter(config, route, clients, through=lambda: self.producer,
                                                 value_limit=int(self._producer_settings()["message.max.bytes"])
                                                 - (REQUEST_LIMIT - TOPIC_LIMIT))

    # -- clients -------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """The main loop (``RouteWorker.run``), the route's guarantee shown on /metrics meanwhile."""
        metrics.GUARANTEE.labels(self.route.name, "exactly-once").set(1)
        super().run(stop)

    # -- transactions ----------------------------------------------------------------

    def _drain(self) -> None:
        """Hand records over inside an open transaction; none once its commit is due (what is in flight
        must be acknowledged before the positions are taken)."""
        if self._due():
            return  # (not a pause: librdkafka drops what a paused partition prefetched, and fetches it again)
        if self.backlog and not self._begin():
            if not self.paused:
                self._pause(True)  # no producer to take records: the backlog waits, the source need not fill it
            return
        before = len(self.backlog)
        super()._drain()
        self._records += before - len(self.backlog)

    def _consume(self, count: int, timeout: float) -> list[Message]:
        """Records from the source, except while a commit is due: then the time goes to the delivery reports
        the commit waits for (the source's records stay in librdkafka's prefetch queue, bounded by its
        queued.* limits, until the commit is done)."""
        if not self._due():
            return super()._consume(count, timeout)
        self._serve_member()
        if timeout:
            self._serve_producer(timeout)
        return []

    def _send_syncs(self) -> None:
        if not self.inflight.syncs or self._begin():
            super()._send_syncs()

    def _begin(self) -> bool:
        """A transaction is open (begun now if needed); False when the producer can no longer begin one."""
        if self._open:
            return True
        if self._lost_producer is not None:
            return False
        try:
            self.producer.begin_transaction()
        except KafkaException as exc:
            self._producer_lost(exc.args[0])
            return False
        self._open, self._opened_at, self._records = True, time.monotonic(), 0
        self._retrying_since, self._commit_retry_at = None, 0.0
        return True

    def _due(self) -> bool:
        return self._open and (time.monotonic() - self._opened_at >= self.interval or self._records >= self.max_records)

    def _store_offsets(self) -> None:
        """Each turn: commit the open transaction once it is due and nothing is in flight."""
        if self._lost_producer is None and self._due() and self.failure is None and not len(self.producer) \
                and not self.inflight.syncs and time.monotonic() >= self._commit_retry_at:
            self._commit_transaction()
        if time.monotonic() >= self._counts_at:
            self._store_counts()

    def _count(self, outcome: str) -> None:
        """A transaction committed or aborted: on /metrics at once, in the state DB within COUNTS_EVERY_S and a
        topic refresh."""
        metrics.TRANSACTIONS.labels(self.route.name, outcome).inc()
        self._counts[outcome] += 1

    def _store_counts(self) -> None:
        self._counts_at = time.monotonic() + COUNTS_EVERY_S
        self.subscription.state.transactions(RunCounts(
            self._run_key, self.route.name, self.identity, self._counts["committed"], self._counts["aborted"],
            self._started, dt.datetime.now(dt.UTC)))

    def _commit_now(self, keys: set[TP] | None = None, asynchronous: bool = False) -> None:
        """Commit the open transaction now (a hand-over, a stop): what is in flight first. What cannot commit
        within the hand-over time is aborted: a transaction left open past a hand-over would later commit
        records of partitions another worker copies again (``asynchronous``: a transaction is committed whole
        or not at all; the argument is the at-least-once worker's)."""
        if not self._open:
            return
        self._doubt_producer()
        if self._lost_producer is not None:
            self._replace_producer()  # nothing of the open transaction can commit
            return
        deadline = time.monotonic() + self.timeouts.handover
        left = self._settle(self.timeouts.handover)
        while self._open and not left and not self.unsafe and self._lost_producer is None \
                and time.monotonic() < deadline:
            self._commit_transaction()
        if self._open:
            self._abort(f"{left} records not acknowledged by the target in time" if left else
                        "internal error" if self.unsafe else "the commit did not go through in time")

    def _commit_transaction(self) -> None:
        """Send the positions and commit; a commit that timed out is tried again with the same positions (the
        ledgers no longer say which partitions moved once asked)."""
        self._doubt_producer()
        if self._lost_producer is not None:
            return
        if self._committing is None:
            self._committing = self._positions()
        positions = self._committing
        producer = self.producer
        try:
            if positions:
                offsets = [TopicPartition(t, p, offset, metadata=note)
                           for (t, p), (offset, note) in sorted(positions.items())]
                group = self._member_metadata()
                if group is None:
                    self._abort("the positions group's member is closing and was never asked its membership")
                    return
                bounded("send_offsets_to_transaction",
                        lambda: producer.send_offsets_to_transaction(offsets, group, COMMIT_TIMEOUT_S),
                        COMMIT_TIMEOUT_S)
            bounded("commit_transaction", lambda: producer.commit_transaction(COMMIT_TIMEOUT_S), COMMIT_TIMEOUT_S)
        except KafkaException as exc:
            self._transaction_failed(exc.args[0])
            return
        except Hung as exc:
            self._producer_hung(str(exc))
            return
        self._open, self._committing, self._retrying_since = False, None, None
        self._count("committed")
        self._copy_to_source_group()

    def _positions(self) -> dict[TP, tuple[int, str]]:
        """The positions group's offsets to commit: for each target partition this transaction wrote, the
        offset after its last record, with every owned source partition's next offset as metadata."""
        moved = self.inflight.commit_positions()  # source partitions acknowledged in this transaction
        targets = {(self.subscription.target_of[t], p) for t, p in moved if t in self.subscription.target_of}
        stored_at = int(time.time() * 1000)
        out = {}
        for target in targets:
            positions = {}
            for key in self._sources.get(target, []):
                ledger = self.inflight.ledgers.get(key)
                position = ledger.resume_from() if ledger is not None else None
                if position is not None:
                    positions[key] = SourcePosition(position, self.topic_id_of.get(key))
            if positions:
                ends = [end for key in positions if (end := self.inflight.ledgers[key].target_end) is not None]
                out[target] = (max(ends, default=0), encode_positions(stored_at, positions))
        self._moved = moved
        return out

    def _copy_to_source_group(self) -> None:
        """The committed positions, also on the source group (for status, lag, checkpoints, a switch back)."""
        stored_at = int(time.time() * 1000)
        offsets = [TopicPartition(t, p, position, metadata=encode_note(stored_at, self.topic_id_of.get((t, p))))
                   for (t, p), position in sorted(self._moved.items())]
        if offsets:
            try:  # waited for on the way out: the next worker may be an at-least-once one reading this copy
                if self._stopping:
                    self.consumer.commit(offsets=offsets, asynchronous=False)
                else:
                    self.consumer.commit(offsets=offsets, asynchronous=True)
            except KafkaException as exc:
                log.debug("source group copy not committed route=%s error=%s", self.route.name, exc.args[0].str())

    def _transaction_failed(self, error: KafkaError) -> None:
        if error.code() == KafkaError._TRANSPORT and self._lost_producer is None:
            # The connection to its transaction coordinator broke: the node died or restarts (one of several, which
            # librdkafka reports no error for), and once the coordinator moved a retried send_offsets_to_transaction
            # may never return (#5456, #5511; the fault harness on three-node clusters: 7 s hung, 27 s without a
            # commit). Doubted as a producer that lost the whole target is (``_doubt_producer``): replaced.
            self._lost_producer = f"its transaction coordinator went away ({error.str()})"
            return
        if error.retriable() and not error.txn_requires_abort() and not error.fatal():
            now = time.monotonic()
            self._commit_retry_at = now + COMMIT_RETRY_S  # still open and due: tried again shortly
            if self._retrying_since is None:
                self._retrying_since = now
                log.info("transaction commit retried (said once per transaction) route=%s error=%s",
                         self.route.name, error.str())
            elif now - self._retrying_since >= COMMIT_GIVE_UP_S:  # librdkafka will not complete it: start over
                self._retrying_since = None
                self._lost_producer = (f"the commit did not complete in {COMMIT_GIVE_UP_S:g} s "
                                       f"({error.name()}: {error.str()})")
            elif now - self._opened_at >= self.transaction_timeout:
                # A target node holding the coordinator killed: the commit timed out, then answered "Conflicting
                # commit_transaction API call is already in progress" until COMMIT_GIVE_UP_S (the fault harness
                # with --brokers 3: 20 s without a commit, though the coordinator had moved after 9).
                self._retrying_since = None
                self._lost_producer = (f"the commit was still retried when its transaction was "
                                       f"{now - self._opened_at:.0f} s old, the target's transaction.timeout.ms "
                                       f"({error.name()}: {error.str()})")
            return
        if producer_lost(error):
            self._producer_lost(error)
            self._replace_producer()
            return
        refusal = self._refused_for_good(error)
        self._abort(f"the target refused the transaction's commit: {error.name()}")
        if refusal is not None:  # every later transaction would be refused the same way: copied and aborted
            self.failure = self.failure or refusal
            log.error("route stops route=%s reason=%r", self.route.name, refusal)

    def _refused_for_good(self, error: KafkaError) -> str | None:
        """Why no transaction of this route can commit until something is changed, for a commit refusal that
        says so; None for one that may pass next time."""
        where = f"target cluster {self.route.target!r}"
        if error.code() == KafkaError.OFFSET_METADATA_TOO_LARGE:
            notes = [note for _offset, note in (self._committing or {}).values()]
            largest = max(notes, key=len, default="")
            sources = len(decode_positions(largest))
            return (f"{where} refuses the route's positions: the largest, of a target partition {sources} source "
                    f"partition(s) are copied into, takes {len(largest.encode())} bytes, more than the brokers' "
                    f"offset.metadata.max.bytes (4096 by default; about 60 bytes per source partition): raise it "
                    f"on the brokers, or split the route so fewer source partitions share a target partition")
        if error.code() in (KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TOPIC_AUTHORIZATION_FAILED):
            return (f"{where} refuses the route's positions ({error.name()}): grant READ on group "
                    f"{positions_group_id(self.route)!r} and on the route's target topics to the route's principal")
        return None

    def _sync_not_produced(self, error: KafkaError) -> None:
        if producer_lost(error):
            self._producer_lost(error)  # the loop replaces the producer; the syncs go with the copy again
        else:
            super()._sync_not_produced(error)

    def _not_set_aside(self, message: Message, failure: DeadLetterError) -> None:
        """A producer fenced while it set the record aside is replaced, and the copy goes back to the last
        commit (this record with it); anything else stops the route."""
        error = failure.error
        if error is not None and producer_lost(error):
            self._producer_lost(error)
            return
        super()._not_set_aside(message, failure)

    def _not_produced(self, message: Message, target: str, partition: int, error: KafkaError) -> bool:
        if producer_lost(error):
            self._producer_lost(error)
            return False  # kept; the loop replaces the producer and goes back to the commit anyway
        return super()._not_produced(message, target, partition, error)

    @shielded("delivery report")
    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None and (producer_lost(error) or error.code() in PURGED):
            if not self._aborting:  # not a refusal of the record: its transaction can no longer commit
                self._producer_lost(error)
            return
        super()._on_delivery(error, message)

    def _abort(self, reason: str) -> None:
        """Abort what is open: every owned partition goes back to its last committed position."""
        keys = set(self.inflight.ledgers)
        self.inflight.abandon()  # first: abort_transaction serves the purged records' reports, they match nothing
        self._aborting = True
        try:
            self._abort_open(reason)
        finally:
            self._aborting = False
        self._back_to_committed(keys)

    def _abort_open(self, reason: str) -> None:
        if self._open:
            log.warning("transaction aborted, copying again from the last committed positions (nothing of it is "
                        "visible) route=%s reason=%r", self.route.name, reason)
            producer = self.producer
            try:
                bounded("abort_transaction", lambda: producer.abort_transaction(COMMIT_TIMEOUT_S), COMMIT_TIMEOUT_S)
            except KafkaException as exc:  # fenced meanwhile: a new producer aborts it by taking the id over
                self._producer_lost(exc.args[0])
            except Hung as exc:
                self._producer_hung(str(exc))
            self._open, self._committing = False, None
            self._count("aborted")
            self._drop_reports()

    def _back_to_committed(self, keys: set[TP]) -> None:
        """``keys`` (their records in flight forgotten) are placed again from their committed positions."""
        assigned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()} if self._consumer else set()
        gone = [TopicPartition(t, p) for t, p in sorted(keys & assigned)]
        if gone:
            self.consumer.incremental_unassign(gone)
        self.backlog.clear()
        for key in keys:
            self.topic_id_of.pop(key, None)
        self._unplace(keys & {k for sources in self._sources.values() for k in sources})
        self.resets -= keys
        self._retry_at = 0.0
        if self.paused:
            self.paused = False
            self._paused_at = None

    def _drop_reports(self) -> None:
        """Serve the reports of the aborted records now (purged): none may be taken for a record of a
        partition placed again."""
        if self._producer is not None:
            try:
                self._producer.flush(1.0)
            except (KafkaException, RuntimeError, SystemError):  # a failed producer: its reports are moot
                pass

    def _drop_unsent(self) -> int:
        """Nothing to drop: partitions go after their transaction committed (a hand-over) or was aborted (lost);
        what a purge would drop belongs to that transaction, which librdkafka's abort purges itself."""
        return 0

    def _start_over(self, only: set[TP] | None = None, why: str | None = None) -> None:
        """A replaced producer, a replay or a re-seek: in a transaction that means abort and start from the
        commit (``why`` in words)."""
        if only is not None:
            self._abort(why or "copying partitions again from the last commit")
            return
        # The producer is replaced (wedged): the new one's init_transactions fences it and aborts its
        # transaction; waiting for the old one to abort could take as long as it is wedged.
        self._back_to_committed(self._give_up_open())

    def _give_up_open(self) -> set[TP]:
        """Forget what is in flight and count the open transaction aborted (its producer is being replaced: the
        new one's init_transactions aborts it on the target); returns the partitions to place again."""
        keys = set(self.inflight.ledgers)
        self.inflight.abandon()
        if self._open:
            self._open, self._committing = False, None
            self._count("aborted")
        return keys

    # -- stopping ------------------------------------------------------------------------

    def _last_reports(self) -> None:
        self._store_counts()

    def _shutdown(self) -> None:
        """Leave the positions group first (its revocation commits what is open, while the source consumer is
        still there), then stop as an at-least-once worker does."""
        self._stopping = True
        try:
            if self._member is not None and self._consumer is not None:
                try:
                    with self.closing_a_client():  # its revocation runs in this close
                        self._member.close()
                except (KafkaException, RuntimeError) as exc:
                    log.warning("member close failed route=%s error=%s", self.route.name, exc)
        finally:
            super()._shutdown()
            metrics.GUARANTEE.labels(self.route.name, "exactly-once").set(0)
