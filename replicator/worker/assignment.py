"""Placing newly assigned source partitions, and recovering a position retention deleted."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, TopicPartition

from replicator.config import RouteConfig
from replicator.domain.commit_metadata import belongs_to_other_topic, decode_note
from replicator.domain.start_position import Reason, StartDecision, start_position
from replicator.worker import metrics

log = logging.getLogger(__name__)

LossReporter = Callable[[str, int, tuple[int, int]], None]
RecreationReporter = Callable[[str, str, str], None]
Committed = Callable[[list[TopicPartition]], list[TopicPartition]]
# The same read through a reader it is given: a consumer of the source group made for one placing, which never joins.
CommittedThrough = Callable[[Consumer, list[TopicPartition]], list[TopicPartition]]
Watermarks = Callable[[list[tuple[str, int]]], Mapping[tuple[str, int], tuple[int, int]]]
TopicIds = Callable[[list[str]], Mapping[str, str]]

# Where a partition is assigned (paused) until it is placed: absolute, so librdkafka asks nothing about it.
PLACEHOLDER = 0


def fetch_from(consumer: Consumer, tp: TopicPartition) -> None:
    """Make an assigned partition fetch from ``tp.offset``: a seek; and where librdkafka's own reset error
    left the partition in a state no seek leaves ("Erroneous state", and it would stall silently), out of
    the assignment and back at that offset, which starts its fetch afresh."""
    try:
        consumer.seek(tp)
    except KafkaException:
        consumer.incremental_unassign([TopicPartition(tp.topic, tp.partition)])
        consumer.incremental_assign([tp])


@dataclass(frozen=True, slots=True)
class Reads:
    """What placing reads of the clusters for assigned partitions (``read_places``), all a decision needs."""

    committed: list[TopicPartition]  # each partition's committed position (negative: none) with its note
    topic_ids: Mapping[str, str]  # the topics' current ids (a vanished topic left out)
    marks: Mapping[tuple[str, int], tuple[int, int]]  # (log start, log end)
    at_start_time: Mapping[tuple[str, int], int]  # a timestamp ``start``: the first offset at or after it of
    # each partition without a position (negative: none yet)


def read_places(route: RouteConfig, partitions: list[TopicPartition], topic_ids: TopicIds, committed: Committed,
                watermarks: Watermarks, offsets_for_times: Committed) -> Reads:
    """Read what deciding where ``partitions`` start needs: network calls only, no decision (``Positioner``)."""
    ids = topic_ids(sorted({tp.topic for tp in partitions}))
    found = committed(partitions)
    marks = watermarks([(tp.topic, tp.partition) for tp in found])
    times: dict[tuple[str, int], int] = {}
    if isinstance(route.start, dt.datetime):
        millis = int(route.start.timestamp() * 1000)
        asked = [TopicPartition(tp.topic, tp.partition, millis) for tp in found if tp.offset < 0]
        times = {(tp.topic, tp.partition): tp.offset for tp in (offsets_for_times(asked) if asked else [])}
    return Reads(found, ids, marks, times)


class Positioner:
    """Decides where each assigned partition starts (committed, new, lost, reset)."""

    def __init__(self, route: RouteConfig, report_loss: LossReporter = lambda *_: None,
                 report_recreated: RecreationReporter = lambda *_: None) -> None:
        self.route = route
        self.report_loss = report_loss
        self.report_recreated = report_recreated
        self.failure: str | None = None
        self._reported: dict[tuple[str, int], tuple[int, int]] = {}  # each partition's last lost range
        self.reset: set[tuple[str, int]] = set()  # of the last ``decide``: committed beyond the log's end

    def _start_kind(self) -> str:
        return "timestamp" if isinstance(self.route.start, dt.datetime) else str(self.route.start)

    def decide(self, reads: Reads) -> list[TopicPartition]:
        """The partitions read with the offsets to start from. A committed offset noted with a topic id other
        than the topic's current one counts records of a deleted topic of the same name, not of this one."""
        placed = []
        self.reset = set()
        for tp in reads.committed:
            key = (tp.topic, tp.partition)
            low, high = reads.marks[key]
            start, position = self._start_kind(), (tp.offset if tp.offset >= 0 else None)
            if position is not None and belongs_to_other_topic(decode_note(tp.metadata), reads.topic_ids.get(tp.topic)):
                self._recreated(tp.topic, reads.topic_ids[tp.topic], tp.partition, position, low)
                start, position = "earliest", None
            at_time = reads.at_start_time.get(key, -1)
            ts_offset = at_time if start == "timestamp" and position is None and at_time >= 0 else None
            decision = start_position(position, low, high, start, ts_offset)
            if decision.reason == Reason.RESET:
                self.reset.add(key)
            self._explain(tp.topic, tp.partition, decision)
            placed.append(TopicPartition(tp.topic, tp.partition, decision.offset))
        return placed

    def _explain(self, topic: str, partition: int, decision: StartDecision) -> None:
        if decision.lost is not None:
            self._lost(topic, partition, decision.lost)
        elif decision.reason == Reason.RESET:
            log.warning("committed offset beyond the log end (topic recreated or truncated): copying it "
                        "anew route=%s topic=%s partition=%s from=%s", self.route.name, topic, partition,
                        decision.offset)

    def _recreated(self, topic: str, topic_id: str, partition: int, old_position: int, low: int) -> None:
        log.warning("committed offset belongs to a deleted topic of the same name: copying the new topic "
                    "from its start route=%s topic=%s partition=%s old_committed=%s from=%s",
                    self.route.name, topic, partition, old_position, low)
        self.report_recreated(topic, topic_id, f"the deleted topic's committed offset {old_position} of "
                                               f"partition {partition} was not reused")

    def skipped(self, consumer: Consumer, key: tuple[str, int], expected: int, offset: int) -> None:
        """The consumer returned ``offset`` where ``expected`` was next, with no seek of ours saying so
        (compaction and transaction markers leave such gaps). What retention deleted of the gap is lost:
        reported like any other loss, however the consumer came to jump it (librdkafka has done so on its
        own). The log start is librdkafka's, from the fetch that returned the record: no request."""
        try:
            low, _high = consumer.get_watermark_offsets(TopicPartition(*key), cached=True)
        except KafkaException:
            return
        if min(low, offset) > expected:
            self._lost(key[0], key[1], (expected, min(low, offset)))

    def _lost(self, topic: str, partition: int, lost: tuple[int, int]) -> None:
        last = self._reported.get((topic, partition))
        if last is not None and lost[0] < last[1] and lost[1] > last[0]:
            lost = (last[1], lost[1])  # overlapping what was reported already: only the rest
        if lost[0] >= lost[1]:
            return
        self._reported[(topic, partition)] = lost
        log.error("records deleted by retention before they were copied route=%s topic=%s partition=%s "
                  "lost_from=%s lost_to_exclusive=%s count=%s", self.route.name, topic, partition,
                  lost[0], lost[1], lost[1] - lost[0])
        metrics.LOST.labels(self.route.name, topic).inc(lost[1] - lost[0])
        self.report_loss(topic, partition, lost)
        if self.route.on_data_loss == "fail":
            self.failure = (f"{topic}[{partition}]: offsets {lost[0]}..{lost[1] - 1} were deleted by "
                            "retention before they were copied (on_data_loss: fail)")

    def recover(self, consumer: Consumer, key: tuple[str, int], position: int | None) -> int | None:
        """The fetch position fell off the log (retention ran ahead): report, then go on (returns the
        offset copying goes on from) or fail (None; ``failure`` says why). A position past the log's end (the
        topic created again, or truncated): None, the key in ``reset``: the caller places it afresh."""
        topic, partition = key
        tp = TopicPartition(topic, partition)
        fetch = consumer.position([tp])[0].offset
        position = fetch if fetch >= 0 else position
        low, high = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
        # A placed partition whose position is unknown resumes at the log start: the route's `start`
        # (latest, a timestamp) is for partitions it never copied, and would skip what is left.
        decision = start_position(position, low, high, "earliest")
        self._explain(topic, partition, decision)
        if self.failure is not None:
            return None
        if decision.reason == Reason.RESET:  # past the log's end: created again, or truncated -- placed afresh
            self.reset.add(key)
            return None
        fetch_from(consumer, TopicPartition(topic, partition, decision.offset))
        return decision.offset
