"""The verifier's producer: numbered records at a steady rate, each one remembered.

It writes to the source's direct listener (never through the proxy) with an idempotent,
``acks=all`` producer that retries for two minutes (``DELIVERY_TIMEOUT_MS``; the source is away
for seconds at a time), and keeps, per stream and record number, the source offset from the
delivery report and the record's fingerprint. A record the source never acknowledged is not
waited for on the target (it may or may not be there).

With ``transactional`` (``--source-transactions``) the steady records go in transactions instead, one per tick,
by a transactional producer: a record counts as acknowledged once its transaction committed, and one transaction
in ``1 / ABORT_SHARE`` holds instead a few records named ``aborted/...``, then is aborted. Those are never to
arrive (the reader counts them foreign): a read_committed copy skips them and the transaction markers, and the
offsets they take.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from bench.chaoslib.accounting import Sent
from bench.chaoslib.records import Stream, fingerprint, headers_of, key_of, value_of

TICK_S = 0.05
# A record not acknowledged in this time fails, and nobody waits for it. It was 0 (for ever): in one exactly-once run
# (seed 305, `topic-add+source-restart`) the first record to a topic created during a source restart was never
# acknowledged while the records after it were, and every check after it waited its whole bound (120 s) for it.
DELIVERY_TIMEOUT_MS = 120_000
ABORT_SHARE = 0.2  # of the transactions (``transactional``): aborted, holding only records never to arrive
ABORTED_PER_TRANSACTION = 3  # records of an aborted transaction, each to another steady partition
END_TIMEOUT_S = 30.0  # one try to commit or abort; a retriable failure is tried again until DELIVERY_TIMEOUT_MS
TRANSACTIONAL_ID = "chaos-verifier"


class Verifier:
    """Steady streams get records at ``rate`` per second in turn; others only by ``produce_now``."""

    def __init__(self, bootstrap: str, rate: float, padding: int, age_ms: int = 0, transactional: bool = False,
                 seed: int = 0) -> None:
        self._config = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": "true",
                        "message.timeout.ms": str(DELIVERY_TIMEOUT_MS), "linger.ms": "5", "error_cb": self._on_error,
                        "log_level": 0}  # brokers go away on purpose: fatal errors come by error_cb
        self._producer = Producer(self._config)
        self.rate, self.padding, self.age_ms = rate, padding, age_ms  # age_ms: CreateTime this far back
        self.sent: dict[Stream, list[Sent]] = {}
        self.excused: dict[Stream, set[int]] = {}  # deleted at the source on purpose: never waited for
        self.steady: list[Stream] = []
        self.incarnation: dict[str, int] = {}
        self.failed = 0  # records the source refused (never acknowledged)
        self.fatal: str | None = None
        self._paused: set[str] = set()
        self._renew = False
        # Re-entrant: a flush under the lock serves delivery reports, which take it too.
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="verifier", daemon=True)
        self.transactional = transactional
        self._txn_config = {**self._config, "transactional.id": TRANSACTIONAL_ID,
                            "transaction.timeout.ms": str(DELIVERY_TIMEOUT_MS), "error_cb": lambda _e: None}
        self._txn: Producer | None = None  # made (and its transactions initialised) by the loop
        self._rng = random.Random(seed)  # which transactions are aborted
        self._open: dict[tuple[Stream, int], int | None] = {}  # the open transaction's records: their offsets
        self.commits = self.aborts = self.aborted = 0  # transactions committed, aborted; records aborted

    def start(self) -> None:
        """Begin the steady production."""
        self._thread.start()

    def add(self, topic: str, partitions: Iterable[int], steady: bool = True) -> list[Stream]:
        """New streams of ``topic`` (its current incarnation)."""
        self._producer.list_topics(topic, timeout=10)  # its metadata, partitions included, before the first record
        if (txn := self._txn) is not None:  # the transactional producer's too (else a new partition waits minutes)
            txn.list_topics(topic, timeout=10)
        incarnation = self.incarnation.setdefault(topic, 0)
        streams = [Stream(topic, incarnation, p) for p in partitions]
        with self._lock:
            for stream in streams:
                self.sent.setdefault(stream, [])
                if steady and stream not in self.steady:
                    self.steady.append(stream)
        return streams

    def pause(self, topic: str) -> None:
        """No more steady records for ``topic`` until ``recreated``."""
        with self._lock:
            self._paused.add(topic)

    def resume(self, topic: str) -> None:
        """Write ``topic`` again, the same incarnation (it was not recreated after all)."""
        with self._lock:
            self._paused.discard(topic)

    def recreated(self, topic: str) -> None:
        """The topic was deleted and created again: its streams start over, numbered from 0."""
        with self._lock:
            partitions = [s.partition for s in self.steady if s.topic == topic]
            self.steady = [s for s in self.steady if s.topic != topic]
            self.incarnation[topic] += 1
            self._renew = True  # a fresh idempotent producer: the new partitions know no producer state
        self.add(topic, partitions)
        with self._lock:
            self._paused.discard(topic)

    def excuse(self, stream: Stream, seqs: Iterable[int]) -> None:
        """Records deleted at the source on purpose: nobody waits for them on the target."""
        with self._lock:
            self.excused.setdefault(stream, set()).update(seqs)

    def excused_now(self) -> dict[Stream, set[int]]:
        """A copy of the records nobody waits for."""
        with self._lock:
            return {stream: set(seqs) for stream, seqs in self.excused.items()}

    def active(self) -> list[Stream]:
        """The steady streams being written now."""
        with self._lock:
            return [s for s in self.steady if s.topic not in self._paused]

    def produce_now(self, stream: Stream, count: int, timeout: float = 60) -> None:
        """``count`` records to ``stream`` now; returns once the source acknowledged them."""
        with self._lock:
            first = len(self.sent.setdefault(stream, []))
            for _ in range(count):
                self._send(stream)
        deadline = time.monotonic() + timeout
        while any(s.offset is None for s in self.sent[stream][first:]):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the source did not acknowledge {count} records of {stream} in {timeout:.0f} s")
            time.sleep(0.05)

    def sent_of(self, stream: Stream) -> list[Sent]:
        """A copy of what was sent to ``stream`` so far."""
        with self._lock:
            return list(self.sent.get(stream, []))

    def snapshot(self) -> dict[Stream, list[Sent]]:
        """A copy of everything produced so far."""
        with self._lock:
            return {stream: list(records) for stream, records in self.sent.items()}

    def counts(self) -> dict[Stream, int]:
        """How many records each stream was sent so far."""
        with self._lock:
            return {stream: len(records) for stream, records in self.sent.items()}

    def _send(self, stream: Stream, txn: Producer | None = None) -> bool:
        """The stream's next record, by the plain producer or within ``txn``'s open transaction."""
        records = self.sent[stream]
        seq, key, timestamp = len(records), key_of(stream, len(records)), int(time.time() * 1000) - self.age_ms
        value, headers = value_of(stream, seq, self.padding), headers_of(stream, seq)
        try:
            if txn is None:
                self._producer.produce(stream.topic, value, key, partition=stream.partition, timestamp=timestamp,
                                       headers=[*headers], on_delivery=lambda e, m: self._delivered(stream, seq, e, m))
            else:
                txn.produce(stream.topic, value, key, partition=stream.partition, timestamp=timestamp,
                            headers=[*headers], on_delivery=lambda e, m: self._written(stream, seq, e, m))
                self._open[(stream, seq)] = None
        except BufferError:
            return False  # the queue is full (the source is away): next tick
        except KafkaException:
            return True  # a partition the producer's metadata does not show yet: the next stream's turn
        records.append(Sent(None, fingerprint(key, value, headers, timestamp)))
        return True

    def _delivered(self, stream: Stream, seq: int, error: KafkaError | None, message: Message) -> None:
        with self._lock:
            if error is not None:
                self.failed += 1
                self.excused.setdefault(stream, set()).add(seq)
                return
            record = self.sent[stream][seq]
            self.sent[stream][seq] = Sent(message.offset(), record.fingerprint, time.monotonic())

    def _written(self, stream: Stream, seq: int, error: KafkaError | None, message: Message) -> None:
        """A record of the open transaction is in the source's log (visible once the transaction commits)."""
        with self._lock:
            self._open[(stream, seq)] = message.offset() if error is None else None

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal = f"the verifier's producer failed: {error.str()}"

    def _loop(self) -> None:
        began, written, turn = time.monotonic(), 0, 0
        while not self._stop.is_set():
            due = int((time.monotonic() - began) * self.rate) - written
            streams = self.active()
            if self.transactional and streams and due > 0:
                turn, written = self._transaction(streams, due, turn, written)
            with self._lock:
                for _ in range(max(0, due) if streams and not self.transactional else 0):
                    if not self._send(streams[turn % len(streams)]):
                        break
                    turn, written = turn + 1, written + 1
                if self._renew:  # under the lock: no record may go to the producer being replaced
                    self._producer.flush(300)
                    self._producer, self._renew = Producer(self._config), False
                    self._txn = None  # the next transaction's producer: initialised anew, its sequences from 0
            if not streams:
                written += max(0, due)  # nothing to write to: no burst once a stream is back
            self._producer.poll(TICK_S)

    def _transaction(self, streams: list[Stream], due: int, turn: int, written: int) -> tuple[int, int]:
        """One transaction: the records due, committed; or (``ABORT_SHARE``) records never to arrive, aborted.
        Records of a transaction that did not commit are never waited for. (turn, written) after it."""
        txn = self._begin()
        if txn is None:
            return turn, written  # the source is away: the records due wait for the next tick
        if self._rng.random() < ABORT_SHARE:
            for stream in self._rng.sample(streams, min(ABORTED_PER_TRANSACTION, len(streams))):
                try:
                    txn.produce(stream.topic, b"never to arrive",
                                f"aborted/{stream.partition}/{self.aborted}".encode(), partition=stream.partition)
                except (BufferError, KafkaException):
                    continue  # a partition this producer's metadata does not show yet (just added), a full queue
                self.aborted += 1
            self._end(txn, commit=False)
            self.aborts += 1
            return turn, written
        with self._lock:
            for _ in range(due):
                if not self._send(streams[turn % len(streams)], txn):
                    break
                turn, written = turn + 1, written + 1
        committed = self._end(txn, commit=True)
        with self._lock:
            now, records = time.monotonic(), self._open
            self._open = {}
            for (stream, seq), offset in records.items():
                if committed and offset is not None:
                    self.sent[stream][seq] = Sent(offset, self.sent[stream][seq].fingerprint, now)
                else:
                    self.excused.setdefault(stream, set()).add(seq)
        self.commits += committed
        return turn, written

    def _begin(self) -> Producer | None:
        """The transactional producer with a transaction begun; None when the source did not answer (tried
        again at the next tick). A new producer's ``init_transactions`` aborts what an old one left open."""
        try:
            if self._txn is None:
                txn = Producer(self._txn_config)
                txn.init_transactions(END_TIMEOUT_S)
                self._txn = txn
            self._txn.begin_transaction()
        except KafkaException:
            self._txn = None
            return None
        return self._txn

    def _end(self, txn: Producer, commit: bool) -> bool:
        """Commit (or abort) the open transaction: True once done; False when it was aborted instead, or the
        producer failed (a new one at the next tick, whose start aborts what this one left open)."""
        deadline = time.monotonic() + DELIVERY_TIMEOUT_MS / 1000
        while True:
            try:
                (txn.commit_transaction if commit else txn.abort_transaction)(END_TIMEOUT_S)
                return True
            except KafkaException as exc:
                error = exc.args[0]
                if error.retriable() and time.monotonic() < deadline and not self._stop.is_set():
                    continue
                if error.txn_requires_abort():
                    try:
                        txn.abort_transaction(END_TIMEOUT_S)
                        return not commit
                    except KafkaException:
                        pass
                self._txn = None
                return False

    def stop(self) -> None:
        """Stop writing and wait (bounded) for the last acknowledgements."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        self._producer.flush(30)
