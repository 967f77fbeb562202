"""The verifier's producer: numbered records at a steady rate, each one remembered.

It writes to the source's direct listener (never through the proxy) with an idempotent,
``acks=all`` producer that retries for two minutes (``DELIVERY_TIMEOUT_MS``; the source is away
for seconds at a time), and keeps, per stream and record number, the source offset from the
delivery report and the record's fingerprint. A record the source never acknowledged is not
waited for on the target (it may or may not be there).
"""

from __future__ import annotations

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


class Verifier:
    """Steady streams get records at ``rate`` per second in turn; others only by ``produce_now``."""

    def __init__(self, bootstrap: str, rate: float, padding: int, age_ms: int = 0) -> None:
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

    def start(self) -> None:
        """Begin the steady production."""
        self._thread.start()

    def add(self, topic: str, partitions: Iterable[int], steady: bool = True) -> list[Stream]:
        """New streams of ``topic`` (its current incarnation)."""
        self._producer.list_topics(topic, timeout=10)  # its metadata, partitions included, before the first record
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

    def _send(self, stream: Stream) -> bool:
        records = self.sent[stream]
        seq, key, timestamp = len(records), key_of(stream, len(records)), int(time.time() * 1000) - self.age_ms
        value, headers = value_of(stream, seq, self.padding), headers_of(stream, seq)
        try:
            self._producer.produce(stream.topic, value, key, partition=stream.partition, timestamp=timestamp,
                                   headers=[*headers], on_delivery=lambda e, m: self._delivered(stream, seq, e, m))
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

    def _on_error(self, error: KafkaError) -> None:
        if error.fatal():
            self.fatal = f"the verifier's producer failed: {error.str()}"

    def _loop(self) -> None:
        began, written, turn = time.monotonic(), 0, 0
        while not self._stop.is_set():
            due = int((time.monotonic() - began) * self.rate) - written
            streams = self.active()
            with self._lock:
                for _ in range(max(0, due) if streams else 0):
                    if not self._send(streams[turn % len(streams)]):
                        break
                    turn, written = turn + 1, written + 1
                if self._renew:  # under the lock: no record may go to the producer being replaced
                    self._producer.flush(300)
                    self._producer, self._renew = Producer(self._config), False
            if not streams:
                written += max(0, due)  # nothing to write to: no burst once a stream is back
            self._producer.poll(TICK_S)

    def stop(self) -> None:
        """Stop writing and wait (bounded) for the last acknowledgements."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        self._producer.flush(30)
