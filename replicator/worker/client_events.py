"""What a route worker's clients report: delivery reports, their errors, commits, and a callback that failed.

Callbacks only record facts (the loop acts on them) and never raise into librdkafka
(``callbacks.shielded``). The no-loss rule's half that lives here: a record's source
offset moves its partition's ledger only once the target acknowledged it; a record the
target did not write blocks the ledger at it (copied again, by the loop: ``_replay``), one it
refused stops the route there.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicPartition

from replicator.domain.offset_sync import decode_sync
from replicator.worker import metrics
from replicator.worker.callbacks import shielded
from replicator.worker.links import group_out_of_reach
from replicator.worker.records import PURGED, TP, error_of, event_partition, failed_without_error, key_of
from replicator.worker.refusals import describe_refusal
from replicator.worker.watches import Watches

if TYPE_CHECKING:
    from replicator.domain.inflight import PartitionLedger
    from replicator.worker.logins import Logins
    from replicator.worker.stall import ProducerWatch

log = logging.getLogger(__name__)

# The target partition (or topic) is not in the producer's metadata: a partition just added, metadata that went
# back for a moment, a topic being created again. Transient: the records are copied again once it is there.
NOT_THERE = (KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC)
# A delivery failed unwritten because the target topic went away: "not there", or the records librdkafka had
# queued for a deleted (or re-created) topic, purged with _DESTROY. Copied again once the topic is back. (The
# records of a producer we replace are purged too, but its reports are never served: see stall.discard.)
# UNKNOWN_TOPIC_OR_PART: a topic the target's metadata has not shown for topic.metadata.propagation.max.ms
# (30 s) -- a replica just created on a broker still busy creating thousands of others' logs -- has its
# queued records failed with the broker's error (the scale bench: 2,000 new replicas, the route stopped).
NOT_WRITTEN = (*NOT_THERE, KafkaError._DESTROY, KafkaError.UNKNOWN_TOPIC_OR_PART)


class ClientEvents(Watches):
    """RouteWorker's base: what its clients report. The attributes below are the worker's (set in its
    ``__init__``), beside Watches'."""

    producer_watch: ProducerWatch
    merged: frozenset[str]  # the route's merged target topics (the subscription's, kept for the hot path)
    replays: dict[TP, str]  # records of these not written (why): copy again from the first of them
    _target_checked_at: float
    _metadata_look: threading.Thread | None  # the producer learning a target partition
    refused: list[tuple[int | None, KafkaError]]
    _sizes: dict[int, int]  # source offset -> bytes, of records refused as too large
    meter: metrics.RouteMeter
    logins: Logins

    # -- delivery reports (callbacks: they only record facts) ---------------------

    @shielded("delivery report")
    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        self.producer_watch.reported()
        if error is not None and error.code() in PURGED:
            self.purged_reports += 1
        topic, partition = key_of(message)
        if topic == self.subscription.sync_topic:
            self._on_sync_delivery(error, message)
            return
        source_topic = self.inflight.source_topic(topic, partition, self.subscription.source_of, self.merged)
        key = (source_topic or "", partition)
        ledger, live = self.inflight.ledger_of_report(key)
        if ledger is None or not len(ledger):
            metrics.ERRORS.labels(self.route.name, "unmatched_report").inc()
            return
        if not live:
            ledger.delivered()  # a record of a partition handed over meanwhile: settled, commits nothing
            return
        if error is not None:
            if error.code() in NOT_WRITTEN:
                ledger.block(ledger.delivered())  # not written: never commit at or past it; the loop copies it again
                self.replays[key] = "target partition missing for records already sent"
                return
            if error.code() == KafkaError.MSG_SIZE_TOO_LARGE:
                self._sizes[ledger.peek()] = len(message.value() or b"") + len(message.key() or b"")
            self._fail_delivery(error, key, ledger)
            return
        offset = message.offset()
        if offset is None or offset < 0:
            # Acknowledged without an offset: librdkafka's word for a batch the broker called a duplicate of one it
            # had written. The broker judges by sequence numbers, and on a partition where it holds no state of
            # this producer (a new one) it takes a later batch's sequence as the first: the long form of seed 381
            # lost the first record of a new partition so. No proof, then: copied again (a duplicate if written).
            ledger.block(ledger.delivered())
            self.replays.setdefault(key, "records acknowledged without an offset (no proof they were written)")
            return
        self.links.up("target")
        source_offset = self.inflight.delivered(key, ledger, offset)
        self.meter.records[key[0]] += 1
        self.meter.bytes[key[0]] += len(message)  # value length, without copying the value
        if source_offset % 64 == 0:
            kind, ts = message.timestamp()
            if kind and ts > 0:
                metrics.LATENCY.labels(self.route.name).observe(max(0.0, time.time() - ts / 1000))

    def _on_sync_delivery(self, error: KafkaError | None, message: Message) -> None:
        run = decode_sync(message.key() or b"", message.value() or b"")
        if error is not None and error.code() in PURGED:  # dropped unsent (``_drop_unsent``): it goes again
            self.inflight.sync_purged(run)
            return
        if error is not None:
            self.failure = f"offset sync for {run.start.topic}[{run.start.partition}] not written: {error.str()}"
            return
        if (offset := message.offset()) is None or offset < 0:
            # No proof it was written (see _on_delivery): the commit must not pass the run's start on its word.
            # It goes again (a sync written twice says the same thing twice).
            log.info("offset sync acknowledged without an offset, writing it again route=%s topic=%s partition=%s",
                     self.route.name, run.start.topic, run.start.partition)
            self.inflight.sync_unproven(run)
            return
        self.inflight.sync_delivered(run)

    def _fail_delivery(self, error: KafkaError, key: TP, ledger: PartitionLedger) -> None:
        """Stop the route: never commit at or past the refused record (a refused batch
        fails every record in it), and name the record at fault."""
        metrics.ERRORS.labels(self.route.name, error.name()).inc()
        offset = ledger.delivered()
        ledger.block(offset)  # later records may still be acked: the commit must not pass this one
        self.refused.append((offset, error))
        if self.failure is None:
            log.error("target refused records route=%s topic=%s partition=%s first_offset=%s error=%s",
                      self.route.name, key[0], key[1], offset, error.name())
        first, first_error = self.refused[0]
        self.failure = describe_refusal(f"{key[0]}[{key[1]}]", first, first_error, self._sizes,
                                        self.subscription.limit_of.get(key[0]))

    # -- records the target did not take: copied again ----------------------------

    def _replay(self) -> None:
        """Records the producer had taken failed as "not there" (its metadata lost the partition after it took
        them), or were acknowledged without proof: copy their partitions again from the first such record, once
        the target has them."""
        keys, self.replays = self.replays, {}
        whys = sorted(set(keys.values()))
        for why in whys:
            log.warning("%s, copying them again route=%s partitions=%s", why, self.route.name,
                        ",".join(f"{t}[{p}]" for (t, p), said in sorted(keys.items()) if said == why))
        metrics.ERRORS.labels(self.route.name, "replayed").inc()
        self._start_over(set(keys), "; ".join(whys) + ": copying them again")
        self.subscription.force_refresh(targets=True)

    def _target_not_ready(self, target: str, partition: int) -> None:
        """A source partition arrived before its target partition: the group assigns a partition added to
        a source topic at once, and the target topic grows at a worker's next topic refresh (or this
        producer has not seen it grow yet). Refresh now, and ask the producer to look again."""
        now = time.monotonic()
        if now < self._target_checked_at + 1.0:
            return
        self._target_checked_at = now
        log.info("target partition not there yet, waiting for it route=%s topic=%s partition=%s",
                 self.route.name, target, partition)
        self.subscription.force_refresh(targets=True)
        if self._metadata_look is None or not self._metadata_look.is_alive():
            # Up to 5 s over a slow link: in a thread of its own, never on the loop.
            self._metadata_look = threading.Thread(target=self._look_at_target, args=(self.producer, target),
                                                   name=f"target-metadata-{self.route.name}", daemon=True)
            self._metadata_look.start()

    def _look_at_target(self, producer: Producer, target: str) -> None:
        """Ask the producer to fetch ``target``'s metadata (it learns the new partition from the answer)."""
        try:
            producer.list_topics(target, timeout=5)
        except (KafkaException, RuntimeError) as exc:  # RuntimeError: the producer was closed meanwhile
            log.debug("target metadata not refreshed route=%s error=%s", self.route.name, exc)

    # -- errors and statistics ----------------------------------------------------

    def callback_failed(self, name: str, exc: Exception) -> None:
        """A callback raised (a bug): stop, commit nothing more, say why in one line. Except a fatal error of the
        producer, which confluent-kafka may raise inside a callback it serves (seen in the fault harness): that is
        the producer failing (``_producer_failed``), wherever it comes out of a delivery report; and a SystemError
        there, the state in which poll and flush fail without an error (see ``_serve_producer``): a report's first
        call into the library found an exception already set (overlap-eos-29: "<method 'fatal' of ...> returned a
        result with an exception set")."""
        log.debug("callback failed route=%s callback=%s", self.route.name, name, exc_info=exc)
        if name == "delivery report" and isinstance(exc, KafkaException) and exc.args \
                and isinstance(exc.args[0], KafkaError) and exc.args[0].fatal():
            self._producer_failed(exc.args[0])
            return
        if name == "delivery report" and isinstance(exc, SystemError):
            self._producer_failed(failed_without_error(exc))
            return
        self.unsafe = True
        if self.failure is None:
            self.failure = f"internal error in the {name} callback: {type(exc).__name__}: {exc}"
            log.error("route stops route=%s reason=%r", self.route.name, self.failure)

    def _on_consume_error(self, message: Message) -> None:
        error = error_of(message)
        key = event_partition(message)  # None for an event of the whole client (a fatal error, say)
        metrics.ERRORS.labels(self.route.name, error.name()).inc()
        if error.code() == KafkaError._AUTO_OFFSET_RESET:
            if key is not None and self.inflight.owns(key):  # unplaced ones are positioned by _place anyway
                self.resets.add(key)
                self._retry_at = 0.0
        elif error.fatal() or error.code() == KafkaError._FATAL:
            self._consumer_failed(error)
        elif error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            self.subscription.force_refresh()
        else:
            log.warning("source error route=%s error=%s", self.route.name, error.str())

    @shielded("source error")
    def _on_source_error(self, error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            self.logins.refused(self.route.source)
        if group_out_of_reach(error):
            self.outage.unreachable(time.monotonic())
        if self.links.error("source", error) is not None:
            self._consumer_failed(error)  # fatal: a held worker id is waited for, anything else stops

    @shielded("target error")
    def _on_target_error(self, error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            self.logins.refused(self.route.target)
        self.failure = self.links.error("target", error) or self.failure

    @shielded("commit")
    def _on_commit(self, error: KafkaError | None, _partitions: list[TopicPartition]) -> None:
        if error is None:  # the group's coordinator took it: the source answers this worker's membership
            self.outage.answers(time.monotonic())
        ok = error is None or error.code() == KafkaError._NO_OFFSET
        if not ok:
            self.commit_pace.failed()  # its offsets are still stored: asked again at the next turn
        metrics.COMMITS.labels(self.route.name, "ok" if ok else "failed").inc()
