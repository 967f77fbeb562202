"""The target reader: follows every replica partition from its start and notes each record and when
it arrived. It reads the target's direct listener, assigned (no group), so nothing the
workers do moves it."""

from __future__ import annotations

import bisect
import threading
import time
from typing import cast

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Message, TopicPartition
from confluent_kafka.admin import AdminClient

from bench.chaoslib.accounting import Got
from bench.chaoslib.records import Headers, Stream, fingerprint, parse_key
from replicator.kafka.log_ranges import LATEST

REFRESH_S = 1.0
# A reader assigned its partitions can stop getting answers after the target broker restarts (librdkafka #5153,
# the route's own remedy is in replicator.worker.watches): overlap-28b's reader read nothing after a target
# restart while the workers' commits moved on, and every later fault counted the records it did not see as lost.
# Every this often the reader looks at its positions: positions that stood a whole look while the target has
# records past them mean a new consumer. (Per partition: overlap-28c's reader still read some partitions.)
STILL_S = 5.0

TPKey = tuple[str, int]


def standing(positions: dict[TPKey, int], read: dict[TPKey, int]) -> dict[TPKey, int]:
    """Where each partition stands: its consumer's position, or, while that says nothing (below 0: nothing
    returned since the consumer was made), the offset after the last record read from it (-1: none yet).
    Never where nothing was read: a new consumer at the start would read it all again (overlap-28d's
    22,732 "duplicates" were the harness reading partitions again from their start)."""
    return {tp: position if position >= 0 else read.get(tp, -1) for tp, position in positions.items()}


def stuck(before: dict[TPKey, int], now: dict[TPKey, int], ends: dict[TPKey, int]) -> list[TPKey]:
    """Partitions whose position stood since the last look (``before``) though the target has records past it
    (``ends``: the high watermarks; a read_committed position may stand below one while a transaction is open,
    so only a position that also stood a whole look counts). A position below 0: nothing fetched yet."""
    return sorted(tp for tp, position in now.items()
                  if before.get(tp) == position and ends.get(tp, -1) > max(position, 0))


def gaps(seen: bytearray, upto: int, settled: int, excused: set[int]) -> tuple[int, list[int]]:
    """The numbers below ``upto`` neither ``seen`` (a byte per number, 1 once found) nor ``excused``, looking from
    ``settled`` (below it every number was found or excused), and where that settled prefix now ends."""
    while settled < upto and ((settled < len(seen) and seen[settled]) or settled in excused):
        settled += 1
    return settled, [seq for seq in range(settled, upto)
                     if (seq >= len(seen) or not seen[seq]) and seq not in excused]


class TargetReader:
    """Records found on the target, per stream, in target-offset order."""

    def __init__(self, bootstrap: str) -> None:
        # read_committed: what an application reading the target sees (an exactly-once route's aborted
        # transactions are not returned; librdkafka's default, said out loud)
        self._settings = {"bootstrap.servers": bootstrap, "group.id": "chaos-target-reader",
                          "isolation.level": "read_committed",
                          "enable.auto.commit": "false", "enable.partition.eof": "false",
                          "fetch.wait.max.ms": "50", "log_level": 0}  # the target goes away on purpose
        self._consumer = Consumer(self._settings)
        self._admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})  # the ends, for ``_watch``
        self.renewals = 0  # consumers replaced because a position stood below the target's end (``_watch``)
        self.renewed_at: list[float] = []  # when (``time.monotonic()``): a fault's figures then include the stall
        self._look_at = time.monotonic() + STILL_S  # when ``_watch`` looks next
        self._looked: dict[TPKey, int] = {}  # the positions at the previous look of ``_watch``
        self._read: dict[TPKey, int] = {}  # per replica partition, the offset after the last record read
        self.got: dict[Stream, list[Got]] = {}
        self.seen: dict[Stream, bytearray] = {}
        self.foreign: list[str] = []  # where a record that names no stream of ours was found
        self._replicas: dict[str, str] = {}  # replica topic -> source topic
        self._assigned: set[tuple[str, int]] = set()
        self._settled: dict[Stream, int] = {}  # every record below this number arrived (or is excused)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="target-reader", daemon=True)

    def start(self) -> None:
        """Begin reading."""
        self._thread.start()

    def follow(self, replica: str, source_topic: str) -> None:
        """Read ``replica`` (every partition it has or will have) as the copy of ``source_topic``."""
        with self._lock:
            self._replicas[replica] = source_topic

    def arrived(self, stream: Stream, seq: int) -> bool:
        """True once record ``seq`` of ``stream`` was found on the target."""
        with self._lock:
            seen = self.seen.get(stream)
            return seen is not None and seq < len(seen) and bool(seen[seq])

    def missing(self, wanted: dict[Stream, int], excused: dict[Stream, set[int]]) -> int:
        """How many of the first ``wanted[stream]`` records of each stream are not on the target yet."""
        return sum(len(seqs) for seqs in self.still_missing(wanted, excused).values())

    def still_missing(self, wanted: dict[Stream, int], excused: dict[Stream, set[int]]) -> dict[Stream, list[int]]:
        """The numbers of the first ``wanted[stream]`` records of each stream not on the target yet (and not
        excused), per stream with any. Each stream's settled prefix is remembered, so a look starts there."""
        with self._lock:
            found = {}
            for stream, upto in wanted.items():
                self._settled[stream], seqs = gaps(self.seen.get(stream, bytearray()), upto,
                                                   self._settled.get(stream, 0), excused.get(stream, set()))
                if seqs:
                    found[stream] = seqs
            return found

    def first_at_or_after(self, stream: Stream, seq: int, start: int) -> float | None:
        """When the first record numbered ``seq`` or higher arrived (looking from position ``start``)."""
        with self._lock:
            records = self.got.get(stream, [])
            return next((g.arrived_at for g in records[start:] if g.seq >= seq), None)

    def arrivals_between(self, stream: Stream, start: float, end: float) -> list[float]:
        """When the records of ``stream`` that arrived within ``[start, end]`` did, in order."""
        with self._lock:
            records = self.got.get(stream, [])
            low = bisect.bisect_left(records, start, key=lambda g: g.arrived_at)
            high = bisect.bisect_right(records, end, lo=low, key=lambda g: g.arrived_at)
            return [g.arrived_at for g in records[low:high]]

    def first_arrivals_since(self, stream: Stream, start: float) -> dict[int, float]:
        """When each record of ``stream`` that arrived since ``start`` first did, by number."""
        with self._lock:
            records = self.got.get(stream, [])
            low = bisect.bisect_left(records, start, key=lambda g: g.arrived_at)
            first: dict[int, float] = {}
            for g in records[low:]:
                first.setdefault(g.seq, g.arrived_at)
            return first

    def positions(self) -> dict[Stream, int]:
        """How many records each stream has on the target so far."""
        with self._lock:
            return {stream: len(records) for stream, records in self.got.items()}

    def snapshot(self) -> tuple[dict[Stream, list[Got]], int]:
        """A copy of everything found so far, and the count of foreign records."""
        with self._lock:
            return {stream: list(records) for stream, records in self.got.items()}, len(self.foreign)

    def _loop(self) -> None:
        refreshed = 0.0
        while not self._stop.is_set():
            if time.monotonic() - refreshed > REFRESH_S:
                self._assign_new()
                refreshed = time.monotonic()
            try:
                messages = self._consumer.consume(2000, 0.2)
            except KafkaException:
                continue  # the target is down: librdkafka reconnects by itself
            now = time.monotonic()
            if now >= self._look_at:
                self._look_at = now + STILL_S
                self._watch()
            with self._lock:
                for message in messages:
                    if message.error() is None:
                        self._note(message, now)

    def _watch(self) -> None:
        """A consumer with a position that stood since the last look while the target has records past it is
        replaced by a new one, assigned at the positions it had."""
        assigned = sorted(self._assigned)
        with self._lock:
            read = dict(self._read)
        try:
            positions = standing({(tp.topic, tp.partition): tp.offset for tp in
                                  self._consumer.position([TopicPartition(t, p) for t, p in assigned])}, read)
        except KafkaException:
            return  # the target is away: nothing to tell
        ends = self._ends(assigned)
        before, self._looked = self._looked, positions
        if not stuck(before, positions, ends):
            return
        old, self._consumer = self._consumer, Consumer(self._settings)
        self._consumer.incremental_assign([TopicPartition(t, p, positions[(t, p)] if positions[(t, p)] >= 0
                                                          else OFFSET_BEGINNING) for t, p in assigned])
        self.renewals += 1
        self.renewed_at.append(time.monotonic())
        self._looked = {}
        old.close()

    def _ends(self, assigned: list[TPKey]) -> dict[TPKey, int]:
        """The high watermarks of ``assigned``, in one request per node: asked one partition at a time, 1,000
        partitions took the loop longer than a look, so every position stood and the reader was made anew at every
        look (a run at 250 x 4). A partition that does not answer is left out: it stood for nothing."""
        if not assigned:
            return {}
        futures = self._admin.list_offsets({TopicPartition(t, p): LATEST for t, p in assigned}, request_timeout=5)
        ends = {}
        for tp, future in futures.items():
            try:
                ends[(tp.topic, tp.partition)] = future.result().offset
            except KafkaException:
                continue
        if len(ends) < len(futures):  # a leader elected since (a restart): refused until the metadata is renewed
            try:
                self._admin.list_topics(timeout=5)
            except KafkaException:
                pass
        return ends

    def _assign_new(self) -> None:
        with self._lock:
            replicas = dict(self._replicas)
        try:
            topics = self._consumer.list_topics(timeout=5).topics
        except KafkaException:
            return
        new = [TopicPartition(name, p, OFFSET_BEGINNING) for name in replicas if name in topics
               for p in topics[name].partitions if (name, p) not in self._assigned]
        if new:
            self._consumer.incremental_assign(new)
            self._assigned.update((tp.topic, tp.partition) for tp in new)

    def _note(self, message: Message, now: float) -> None:
        self._read[(message.topic() or "", message.partition() or 0)] = (message.offset() or 0) + 1
        source, parsed = self._replicas.get(message.topic() or ""), parse_key(message.key())
        if source is None or parsed is None or parsed[1] != message.partition() or not 0 <= parsed[2] < 10**8:
            self.foreign.append(f"{message.topic()}[{message.partition()}]@{message.offset()}")
            return
        incarnation, partition, seq = parsed
        stream = Stream(source, incarnation, partition)
        headers = cast("Headers | None", message.headers())  # a consumer's: a list of (str, bytes | None)
        digest = fingerprint(message.key(), message.value(), headers, message.timestamp()[1])
        self.got.setdefault(stream, []).append(Got(seq, digest, now))
        seen = self.seen.setdefault(stream, bytearray())
        if seq >= len(seen):
            seen.extend(bytes(seq - len(seen) + 1 + 1024))  # room ahead, grown in steps
        seen[seq] = 1

    def stop(self) -> None:
        """Stop reading and close the consumer."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        self._consumer.close()
