"""An exactly-once worker's producer: started with ``init_transactions``, doubted when it lost the target,
declared lost (fenced, its epoch gone, fatal, silent while a commit waits), and replaced.

A lost producer's open transaction is never committed: the loop replaces the producer
(its ``init_transactions`` takes the transactional id over, so the target aborts what
the old one left open) and the copy goes back to the last commit. Replaced over and
over while the target answers, another worker has this worker's id: the route stops.
"""

from __future__ import annotations

import logging
import time
import uuid
from abc import abstractmethod
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException, Producer

from replicator.errors import ConfigError
from replicator.kafka.clients import KAFKA_CLIENTS, ClientFactory, producer_settings
from replicator.worker.bounded import Hung, bounded
from replicator.worker.callbacks import shielded
from replicator.worker.links import UNREACHABLE
from replicator.worker.route_worker import RouteFailed
from replicator.worker.stall import discard
from replicator.worker.target_member import TargetMember
from replicator.worker.timeouts import WorkerTimeouts

if TYPE_CHECKING:
    from replicator.config import Config, RouteConfig
    from replicator.state.store import StateStore
    from replicator.worker.records import TP

log = logging.getLogger(__name__)

# The producer's epoch is no longer the target's: its transaction timed out (the target was away longer than
# transaction.timeout.ms) and the coordinator bumped the epoch, or another producer took this transactional id.
PRODUCER_LOST = (KafkaError.INVALID_PRODUCER_EPOCH, KafkaError.PRODUCER_FENCED, KafkaError._FENCED)

FENCINGS_ALLOWED = 5  # producers replaced this often within FENCING_WINDOW_S: another worker has this worker's id
FENCING_WINDOW_S = 60.0
INIT_TIMEOUT_S = 30.0  # init_transactions: finds the coordinator, fences an earlier producer of the same id
REINIT_TIMEOUT_S = 5.0  # a replacement's start, tried again each turn while the target does not answer


def producer_lost(error: KafkaError) -> bool:
    """The producer can no longer commit: fenced, its epoch gone, or fatal. A fatal producer's ``produce`` raises
    _FATAL made from the code alone (its ``fatal()`` is False): the fault pairs stopped a worker on an offset
    sync refused so, taken for a refusal of the sync. _STATE ("Erroneous state"): its transaction is in no state
    to take records (librdkafka's own error doomed it, or an abort did not complete); the 100-pair exactly-once
    run (seed 305, twice after a topic was created again) stopped workers on it, blaming the record."""
    return error.fatal() or error.code() in (*PRODUCER_LOST, KafkaError._FATAL, KafkaError._STATE)


class TransactionProducer(TargetMember):
    """ExactlyOnceWorker's base: its producer's life. The worker supplies what a replacement does to the copy
    (``_give_up_open``, ``_back_to_committed``) and when a commit is due (``_due``)."""

    _open: bool  # a transaction is begun and not yet committed or aborted (the worker's)
    _committing: dict[TP, tuple[int, str]] | None  # the positions of a commit under way (the worker's)

    def __init__(self, config: Config, route: RouteConfig, store: StateStore | None = None,
                 batch_size: int = 2000, worker_id: str | None = None, clients: ClientFactory = KAFKA_CLIENTS,
                 timeouts: WorkerTimeouts | None = None) -> None:
        super().__init__(config, route, store, batch_size, worker_id, clients, timeouts or WorkerTimeouts())
        self.identity = worker_id or uuid.uuid4().hex[:12]  # names the transactional id
        self._lost_producer: str | None = None  # why the producer can no longer commit (the loop replaces it)
        self._lost_target: str | None = None  # the producer reported the target unreachable (see _doubt_producer)
        self._fresh: Producer | None = None  # the replacement, until its init_transactions succeeded
        self._hung = False  # a call on the current producer never returned: it is not to be purged or destroyed
        self._fencings: list[float] = []  # when producers were replaced for that
        self._fenced = False  # the producer was lost while the target answered (counted in _fencings)

    @abstractmethod
    def _due(self) -> bool:
        """The open transaction's commit is due: no records are handed over until it is done."""

    @abstractmethod
    def _give_up_open(self) -> set[TP]:
        """Forget what is in flight and count the open transaction aborted; the partitions to place again."""

    @abstractmethod
    def _back_to_committed(self, keys: set[TP]) -> None:
        """``keys`` are placed again from their committed positions."""

    def _producer_settings(self) -> dict[str, Any]:
        return producer_settings(self.config, self.route, self.identity, on_delivery=self._on_delivery,
                                 error_cb=self._on_producer_error)

    def _new_producer(self) -> Producer:
        producer = self.clients.producer(self._producer_settings())
        try:
            producer.init_transactions(INIT_TIMEOUT_S)
        except KafkaException as exc:
            raise self._cannot_transact(exc.args[0]) from None
        self._open, self._committing, self._lost_target = False, None, None
        return producer

    def _cannot_transact(self, error: KafkaError) -> ConfigError | RouteFailed:
        """The target refused (or never answered) the start of transactions: name the cluster and the cause."""
        target = f"target cluster {self.route.target!r} ({self.config.cluster(self.route.target).bootstrap_servers})"
        tid = f"mirrorflow-{self.route.name}-{self.identity}"
        if error.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            return ConfigError(f"route {self.route.name}: {target} refuses transactional id {tid!r}: grant WRITE and "
                               "DESCRIBE on TransactionalId (prefix mirrorflow-<route>-) to the route's principal")
        if error.code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED:
            return ConfigError(f"route {self.route.name}: {target} refuses idempotent writes: grant IDEMPOTENT_WRITE "
                               "on the cluster to the route's principal")
        if error.code() in (KafkaError._TIMED_OUT, KafkaError.COORDINATOR_NOT_AVAILABLE):
            return ConfigError(f"route {self.route.name}: {target} cannot run transactions: no transaction "
                               f"coordinator answered in {INIT_TIMEOUT_S:.0f} s (does it have as many brokers as its "
                               "transaction.state.log.replication.factor, and transaction.state.log.min.isr of them "
                               "up?) - guarantee exactly-once needs them")
        if error.code() == KafkaError.INVALID_TRANSACTION_TIMEOUT:
            return ConfigError(f"route {self.route.name}: {target} refuses the producer's transaction.timeout.ms: "
                               "it must not exceed the brokers' transaction.max.timeout.ms")
        return RouteFailed(f"route {self.route.name}: {target}: transactions could not start: {error.str()}")

    def _doubt_producer(self) -> None:
        """A producer that lost the target (and found it again) is not asked to commit: after the coordinators
        went away librdkafka's ``send_offsets_to_transaction`` may never return (#5456, #5511; the fault
        harness: 19 of 19 target restarts and kills), and waiting out ``bounded``'s deadline held the copy
        7 s more. A new producer copies again from the last commit instead: what the open transaction held
        (its interval's records) is copied twice on the target, aborted once, visible once."""
        if self._lost_target is not None and self._lost_producer is None:
            self._lost_producer = f"it lost the target during the transaction ({self._lost_target})"

    def _producer_hung(self, what: str) -> None:
        """A transactional call never returned (librdkafka, see ``bounded``): the producer is replaced."""
        if self._lost_producer is None:
            self._lost_producer = f"{what} (librdkafka did not answer; the producer is replaced)"
        self._hung = True

    def _producer_lost(self, error: KafkaError) -> None:
        """The producer cannot commit any more (fenced, or its transaction timed out): noted, replaced by the
        loop; its open transaction is aborted by the target, nothing of it is visible."""
        if self._lost_producer is None:
            self._lost_producer = f"{error.name()}: {error.str()}"
            # Lost while the target answered: maybe another worker runs with this id. After the target was away
            # it is its transaction timed out (the epoch bumped), not a duplicate: not counted.
            self._fenced = self._lost_target is None

    def _watch_producer(self) -> None:
        self._watch_acks()
        if self._lost_producer is not None:
            self._replace_producer()
        else:
            super()._watch_producer()

    def _watch_acks(self) -> None:
        """A due commit waits for what is in flight, and the source is not read meanwhile. No report at all for
        ``timeouts.acks_due`` s while the target answers: the producer is lost. Found by the exactly-once fault
        pairs (a worker leaving while the target was frozen): after the thaw AddPartitionsToTxn answered "not
        coordinator", and librdkafka found "no brokers available for transactions" for as long as it was let
        (30 s, until the stuck watch renewed every client of the worker, the consumer and its group's member
        too, saying the consumer no longer fetched)."""
        if self._lost_producer is None and self._due() and len(self.producer) \
                and self.producer_watch.due(self.timeouts.acks_due) and self.subscription.target_answers():
            self._lost_producer = (f"its commit waited {self.producer_watch.silent_for():.0f} s for acknowledgements "
                                   f"of {len(self.producer)} records while the target answers")

    def _fetch_held(self) -> bool:
        return self._due()  # a due commit takes no records until what is in flight is acknowledged

    def _watch_held_apart(self) -> None:
        """No partition is held apart: a transaction commits all its partitions or none, so holding one apart
        would free nothing (its records stay in the open transaction, whose commit waits for them)."""

    def _replace_producer(self) -> None:
        """A new producer (its init_transactions takes the transactional id over) copies again from the last
        commit; while the target does not answer, its start is tried again each turn. Fenced over and over:
        another worker runs with this worker's id, and the route stops."""
        if self._fresh is None:
            reason = self._lost_producer or "fenced"
            now = time.monotonic()
            self._fencings = [t for t in self._fencings if now - t < FENCING_WINDOW_S] + [now] * self._fenced
            self._fenced = False
            if len(self._fencings) > FENCINGS_ALLOWED:
                if self.failure is None:
                    self.failure = (f"the target fenced this worker's producer {len(self._fencings)} times in "
                                    f"{FENCING_WINDOW_S:.0f} s: another worker uses transactional id "
                                    f"mirrorflow-{self.route.name}-{self.identity} (the same --worker-id?); {reason}")
                    log.error("route stops route=%s reason=%r", self.route.name, self.failure)
                return
            log.warning("producer replaced, a new one copies again from the last commit (nothing of the open "
                        "transaction is visible) route=%s reason=%r", self.route.name, reason)
            keys = self._give_up_open()
            if self._producer is not None and not self._hung:
                discard(self._producer)  # (one a call hangs in stays with that call: destroying it may hang too)
            self._hung = False
            self._producer = self._fresh = self.clients.producer(self._producer_settings())
            self._back_to_committed(keys)
        fresh = self._fresh
        try:
            bounded("init_transactions", lambda: fresh.init_transactions(REINIT_TIMEOUT_S), REINIT_TIMEOUT_S)
        except Hung as exc:  # left with its call; another new one is started at the next turn
            self.links.trouble("starting transactions", exc)
            self._producer = self._fresh = self.clients.producer(self._producer_settings())
            return
        except KafkaException as exc:
            error = exc.args[0]
            if error.retriable() or error.code() in (KafkaError._TIMED_OUT, KafkaError.COORDINATOR_NOT_AVAILABLE):
                self.links.trouble("starting transactions", exc)  # the target away: tried again next turn
            elif self.failure is None:
                self.failure = str(self._cannot_transact(error))
            return
        self.links.clear("starting transactions")
        self._fresh, self._lost_producer, self._lost_target = None, None, None

    def _producer_failed(self, error: KafkaError) -> None:
        self._producer_lost(error)  # fenced (poll raises it): a new producer copies again from the last commit

    @shielded("target error")
    def _on_producer_error(self, error: KafkaError) -> None:
        """The producer's errors: a fatal one (fenced: librdkafka reports it as _FATAL) means a new producer,
        which copies again from the last commit; the rest as the target's."""
        if producer_lost(error):
            self._producer_lost(error)
            return
        if error.code() in UNREACHABLE and self._lost_target is None:
            self._lost_target = error.str()
        super()._on_target_error(error)
