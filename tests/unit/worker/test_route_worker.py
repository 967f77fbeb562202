"""The hot path on fake clients that behave like librdkafka's: back-pressure, rebalances, outages."""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from prometheus_client import REGISTRY

from replicator.state.repository import partition_owners, partition_states, register_routes
from replicator.state.store import StateStore
from replicator.testing import FakeKafka
from replicator.testing.cluster import FakeCluster
from replicator.worker.timeouts import WorkerTimeouts
from tests.fake_route import FAST, WorkerThread, route_config, topic_found_while_the_id_is_held, wait_until

TOPIC, REPLICA, PARTITIONS = "orders", "source.orders", 4


def produce(cluster: FakeCluster, per_partition: int, start: int = 0, partitions: int = PARTITIONS) -> None:
    for partition in range(partitions):
        for n in range(start, start + per_partition):
            cluster.append(TOPIC, partition, f"k{n}".encode(), f"p{partition}-{n}".encode(), [("h", b"x")], 1_000 + n)


def source_values(kafka: FakeKafka, partition: int) -> list[bytes | None]:
    return [r.value for r in kafka["source"].records(TOPIC, partition)]


def assert_copied_once_in_order(kafka: FakeKafka, committed_at: int) -> None:
    """Every partition's replica is its source, record for record, and the group committed ``committed_at``."""
    for p in range(PARTITIONS):
        assert [r.value for r in kafka["target"].records(REPLICA, p)] == source_values(kafka, p), f"partition {p}"
    assert committed(kafka) == {p: committed_at for p in range(PARTITIONS)}


def first_copies(kafka: FakeKafka, partition: int) -> list[bytes | None]:
    """The replica's records in order of first arrival (a repeat is a duplicate, not a loss)."""
    seen: dict[bytes | None, None] = {}
    for record in kafka["target"].records(REPLICA, partition):
        seen.setdefault(record.value, None)
    return list(seen)


def all_copied(kafka: FakeKafka) -> bool:
    if REPLICA not in kafka["target"].topics:
        return False
    return all(set(source_values(kafka, p)) <= set(first_copies(kafka, p)) for p in range(PARTITIONS))


def committed(kafka: FakeKafka) -> dict[int, int]:
    group = kafka["source"].group("mirrorflow-r")
    return {p: group.committed.get((TOPIC, p), (-1, None))[0] for p in range(PARTITIONS)}


def assert_nothing_lost(kafka: FakeKafka) -> None:
    """Every source record on the target, byte for byte, in source order by first arrival."""
    for p in range(PARTITIONS):
        assert first_copies(kafka, p) == source_values(kafka, p), f"partition {p}"
        source = {r.value: r for r in kafka["source"].records(TOPIC, p)}
        for record in kafka["target"].records(REPLICA, p):
            original = source[record.value]
            assert (record.key, record.timestamp) == (original.key, original.timestamp)
            assert dict(record.headers)["h"] == b"x"


@pytest.fixture
def kafka() -> FakeKafka:
    fake = FakeKafka("source", "target")
    fake["source"].create_topic(TOPIC, PARTITIONS)
    return fake


def test_copies_every_record_and_commits_the_ends(kafka: FakeKafka) -> None:
    produce(kafka["source"], 300)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the copy", alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)
    assert committed(kafka) == {p: 300 for p in range(PARTITIONS)}


def test_a_full_producer_queue_with_a_slow_target_crashes_nothing_and_loses_nothing(kafka: FakeKafka) -> None:
    """Found as a user: `producer: {queue.buffering.max.messages: 500}` killed every worker
    (the offset sync was produced from inside the delivery callback while the queue was full)."""
    produce(kafka["source"], 1_000)
    kafka["target"].deliveries_per_poll = 7
    worker = WorkerThread(kafka, "a", route_config(kafka, producer='{queue.buffering.max.messages: "20"}'))
    wait_until(lambda: all_copied(kafka), timeout=60, what="the copy", alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)
    assert committed(kafka) == {p: 1_000 for p in range(PARTITIONS)}


def test_partitions_handed_over_while_the_target_is_frozen_lose_nothing(kafka: FakeKafka) -> None:
    """Found as a user: two workers, target frozen, one worker killed, the survivor handed its
    partitions while its queue was full: 299 records were dropped and committed past."""
    produce(kafka["source"], 200)
    config = route_config(kafka, producer='{queue.buffering.max.messages: "50"}')
    a, b = WorkerThread(kafka, "a", config), WorkerThread(kafka, "b", config)
    wait_until(lambda: all_copied(kafka) and len(b.worker.inflight.ledgers) == 2, what="both copying",
               alive=(a, b))
    kafka["target"].freeze()
    produce(kafka["source"], 400, start=200)
    wait_until(lambda: a.worker.paused and b.worker.paused, what="both queues full", alive=(a, b))
    kafka.kill("b")
    wait_until(lambda: len(a.worker.unplaced) + len(a.worker.inflight.ledgers) == PARTITIONS,
               what="the survivor owning every partition", alive=(a,))
    kafka["target"].thaw()
    wait_until(lambda: all_copied(kafka), timeout=60, what="the copy after the thaw", alive=(a,))
    assert a.finish() is None
    assert_nothing_lost(kafka)
    assert committed(kafka) == {p: 600 for p in range(PARTITIONS)}


def test_a_zombie_that_wakes_up_after_its_partitions_moved_loses_nothing(kafka: FakeKafka) -> None:
    produce(kafka["source"], 200)
    a, b = WorkerThread(kafka, "a", route_config(kafka)), WorkerThread(kafka, "b", route_config(kafka))
    wait_until(lambda: all_copied(kafka) and len(b.worker.inflight.ledgers) == 2, what="both copying",
               alive=(a, b))
    kafka.freeze("b")  # SIGSTOP: its session runs out, its partitions move
    kafka.expire("b")
    produce(kafka["source"], 300, start=200)
    wait_until(lambda: len(a.worker.inflight.ledgers) == PARTITIONS, what="the takeover", alive=(a,))
    kafka.thaw("b")  # SIGCONT: it learns it lost them, rejoins, gets some back
    produce(kafka["source"], 100, start=500)
    wait_until(lambda: all_copied(kafka) and len(b.worker.inflight.ledgers) == 2, what="the zombie back at work",
               alive=(a, b))
    assert a.finish() is None and b.finish() is None
    assert_nothing_lost(kafka)
    assert committed(kafka) == {p: 600 for p in range(PARTITIONS)}


def test_a_worker_frozen_past_its_session_copies_nothing_again_on_waking(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the fault harness: a worker frozen 17.6 s (SIGSTOP) past its session copied 395 records of a
    partition again on waking -- librdkafka fetches its old partitions before the answer to its next heartbeat
    says they moved, and the worker copied what their new owner had copied already."""
    produce(kafka["source"], 200)
    a, b = WorkerThread(kafka, "a", route_config(kafka)), WorkerThread(kafka, "b", route_config(kafka))
    wait_until(lambda: all_copied(kafka) and len(b.worker.inflight.ledgers) == 2
               and committed(kafka) == {p: 200 for p in range(PARTITIONS)}, what="both copying, committed",
               alive=(a, b))
    kafka.freeze("b")  # SIGSTOP: every thread of b stops, its loop watch's too
    kafka.expire("b")  # its session runs out: a gets its partitions
    produce(kafka["source"], 300, start=200)
    wait_until(lambda: all_copied(kafka) and committed(kafka) == {p: 500 for p in range(PARTITIONS)},
               what="a copying everything", alive=(a,))
    wait_until(lambda: b.worker.loop_watch.stood_still() >= 2.5, what="b frozen long enough to tell")
    kafka.thaw("b")  # SIGCONT: its first fetch comes before the group's word that the partitions moved
    wait_until(lambda: "copying held: the worker's process stood still" in caplog.text, what="b holding",
               alive=(a, b))
    produce(kafka["source"], 100, start=500)  # the marker: b back at work after it joined anew
    wait_until(lambda: all_copied(kafka) and len(b.worker.inflight.ledgers) > 0
               and committed(kafka) == {p: 600 for p in range(PARTITIONS)}, what="b back at work", alive=(a, b))
    assert a.finish() is None and b.finish() is None
    assert_nothing_lost(kafka)
    for p in range(PARTITIONS):
        values = [r.value for r in kafka["target"].records(REPLICA, p)]
        assert len(values) == len(set(values)) == 600, f"partition {p}: {len(values) - len(set(values))} repeated"


def test_a_source_that_stops_answering_is_waited_for(kafka: FakeKafka) -> None:
    """Found as a user: a source broker restart ended every worker ("cannot list topics")."""
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    kafka["source"].freeze()
    wait_until(lambda: "topic refresh" in worker.worker.links.troubles, what="a failed refresh", alive=(worker,))
    kafka["source"].thaw()
    produce(kafka["source"], 100, start=100)
    wait_until(lambda: all_copied(kafka) and not worker.worker.links.troubles, what="the copy after the outage",
               alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)


def test_partitions_are_placed_once_the_source_answers(kafka: FakeKafka) -> None:
    produce(kafka["source"], 100)
    kafka["source"].failures["committed"] = 5  # the first placements time out
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the copy", alive=(worker,))
    assert kafka["source"].failures["committed"] == 0
    assert worker.finish() is None
    assert_nothing_lost(kafka)


def test_a_hand_over_while_the_target_is_unreachable_stops_no_worker(kafka: FakeKafka) -> None:
    """Before: "target did not acknowledge N records in 30 s during a hand-over" ended the worker."""
    produce(kafka["source"], 100)
    a = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka) and committed(kafka) == {p: 100 for p in range(PARTITIONS)},
               what="the first copy, committed", alive=(a,))
    kafka.cut("a", "target")  # a network partition between a and the target only
    produce(kafka["source"], 200, start=100)
    wait_until(lambda: len(a.worker.inflight.ledgers) == PARTITIONS
               and all(len(ledger) for ledger in a.worker.inflight.ledgers.values()),
               what="records of every partition in flight", alive=(a,))
    b = WorkerThread(kafka, "b", route_config(kafka))  # joins: two partitions move from a to b
    wait_until(lambda: len(b.worker.inflight.ledgers) == 2 and len(a.worker.inflight.ledgers) == 2,
               what="a hand-over with records in flight", alive=(a, b))
    kafka.heal("a", "target")
    wait_until(lambda: all_copied(kafka) and committed(kafka) == {p: 300 for p in range(PARTITIONS)},
               what="the copy after the thaw, committed to the ends", alive=(a, b))
    assert a.finish() is None and b.finish() is None
    assert_nothing_lost(kafka)
    assert committed(kafka) == {p: 300 for p in range(PARTITIONS)}
    # Nothing twice: a dropped what it had not sent of the partitions it handed over, and copied the two it kept
    # again from their last acknowledged record (the fault pairs' worker-freeze+target-kill: 1,164 duplicates).
    for p in range(PARTITIONS):
        assert [r.value for r in kafka["target"].records(REPLICA, p)] == source_values(kafka, p), f"partition {p}"


def test_a_worker_restarted_under_its_id_after_a_crash_joins_once_the_id_is_released(kafka: FakeKafka) -> None:
    produce(kafka["source"], 100)
    first = WorkerThread(kafka, "first", route_config(kafka), worker_id="w1")
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(first,))
    kafka.kill("first", expire=False)  # SIGKILL: the group holds its id until the session times out
    produce(kafka["source"], 100, start=100)
    again = WorkerThread(kafka, "again", route_config(kafka), worker_id="w1")
    wait_until(lambda: again.worker.id_held_since is not None, what="the id refused", alive=(again,))
    kafka.expire("first")
    wait_until(lambda: all_copied(kafka), what="the copy after the id came back", alive=(again,))
    assert again.finish() is None
    assert_nothing_lost(kafka)


def test_a_topic_found_while_the_worker_id_is_still_held_waits_for_the_rejoin(kafka: FakeKafka) -> None:
    """Found by the fault harness: while the group still held the worker's id (its consumer fatal, a new one due
    at the next rejoin), the topic refresh found a new topic and subscribed the fatal consumer. librdkafka refuses
    that ("Failed to set subscription: Local: Fatal error"), and the worker stopped on an internal error."""
    config = route_config(kafka, topics="['orders.*']")
    produce(kafka["source"], 100)
    first = WorkerThread(kafka, "first", config, worker_id="w1")
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(first,))
    kafka.kill("first", expire=False)  # SIGKILL: the group holds its id until the session times out
    again = WorkerThread(kafka, "again", config, dataclasses.replace(FAST, rejoin=0.5), worker_id="w1")
    late = topic_found_while_the_id_is_held(kafka, again, "first")
    wait_until(lambda: "source.orders.late" in kafka["target"].topics
               and len(kafka["target"].records("source.orders.late", 0)) >= 20 and all_copied(kafka),
               what="both topics copied after the id came back", alive=(again,))
    assert again.finish() is None
    assert_nothing_lost(kafka)
    assert [r.value for r in kafka["target"].records("source.orders.late", 0)][:20] == late


def test_a_partition_added_to_a_source_topic_waits_for_its_target_partition(kafka: FakeKafka) -> None:
    """Found by the fault harness: the group assigns a new source partition at once, before any worker
    grew the target topic; producing to it failed with "Local: Unknown partition" and stopped the route."""
    produce(kafka["source"], 50)
    slow_refresh = dataclasses.replace(FAST, refresh=3600.0)  # only a forced refresh grows the target
    worker = WorkerThread(kafka, "a", route_config(kafka), slow_refresh)
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    kafka["source"].add_partitions(TOPIC, PARTITIONS + 2)
    for partition in (PARTITIONS, PARTITIONS + 1):
        for n in range(20):
            kafka["source"].append(TOPIC, partition, None, f"p{partition}-{n}".encode())
    wait_until(lambda: len(kafka["target"].topics[REPLICA].logs) == PARTITIONS + 2
               and len(kafka["target"].records(REPLICA, PARTITIONS + 1)) == 20, what="the new partitions copied",
               alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)


def test_a_consumer_that_goes_back_on_its_own_repeats_nothing(kafka: FakeKafka,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    """Found by the fault harness: just after a hand-over, the consumer fetched one partition again from its
    log start with no seek of ours (2,815 records of it copied a second time, twice in one 100-fault run)."""
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    with kafka["source"].lock:
        consumer = worker.worker.consumer
        consumer.drift(TOPIC, 1, 0)
        consumer.drift(TOPIC, 2, 40)
    produce(kafka["source"], 50, start=100)  # the marker: records after the repeat arrive
    wait_until(lambda: all_copied(kafka), what="the records after the repeat", alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)
    for p in range(PARTITIONS):
        values = [r.value for r in kafka["target"].records(REPLICA, p)]
        assert len(values) == len(set(values)) == 150, f"partition {p} repeated records"
    assert committed(kafka) == {p: 150 for p in range(PARTITIONS)}
    assert "source consumer went back to records already copied" in caplog.text


def test_a_target_partition_the_producer_is_slow_to_learn_does_not_hold_the_copy_up(kafka: FakeKafka) -> None:
    """Before: the producer's metadata request for a partition added to a source topic (up to 5 s over a
    slow link) ran on the loop's thread, and every other partition waited for it."""
    produce(kafka["source"], 50)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    gate = kafka["target"].gates["producer.list_topics"] = threading.Event()
    try:
        kafka["source"].add_partitions(TOPIC, PARTITIONS + 1)
        kafka["source"].append(TOPIC, PARTITIONS, None, b"new partition")
        wait_until(lambda: kafka["target"].waiting["producer.list_topics"] > 0,
                   what="the producer's metadata request held", alive=(worker,))
        produce(kafka["source"], 50, start=50)  # the marker: the other partitions go on meanwhile
        wait_until(lambda: all_copied(kafka), what="the other partitions' new records", alive=(worker,))
    finally:
        gate.set()
    wait_until(lambda: [r.value for r in kafka["target"].records(REPLICA, PARTITIONS)] == [b"new partition"],
               what="the new partition's record", alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)


def test_records_after_a_retention_gap_are_copied_and_the_gap_reported(kafka: FakeKafka,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    """Found by the fault harness: after librdkafka's own reset error the partition refused every seek
    ("Erroneous state"): the gap was reported, and the records after it waited for a restart."""
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    kafka.freeze("a")  # the worker stops fetching while retention runs ahead of it
    produce(kafka["source"], 100, start=100)
    kafka["source"].delete_records(TOPIC, 0, 150)
    kafka.thaw("a")
    wait_until(lambda: len(kafka["target"].records(REPLICA, 0)) == 150, what="the records after the gap",
               alive=(worker,))
    assert worker.finish() is None
    assert [r.value for r in kafka["target"].records(REPLICA, 0)] == (
        [f"p0-{n}".encode() for n in range(100)] + [f"p0-{n}".encode() for n in range(150, 200)])
    assert "lost_from=100 lost_to_exclusive=150 count=50" in caplog.text


def test_a_late_answer_to_an_outdated_offset_query_moves_nothing_past_a_retention_gap(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the fault harness (CI, and 8 of 20 retention gaps in one run): the partition was assigned at
    OFFSET_BEGINNING as a placeholder, then sought to its placed offset before librdkafka's query of the log
    start was answered; librdkafka asked again, and the answer came after retention had deleted records
    below 150: the fetch position jumped from 100 to 150, and 50 records were lost without a report."""
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    kafka.freeze("a")  # cut off while retention runs ahead of it
    produce(kafka["source"], 100, start=100)
    kafka["source"].delete_records(TOPIC, 0, 150)
    with kafka["source"].lock:
        consumer = worker.worker.consumer
        consumer.answer_offset_queries()  # what librdkafka asked again is answered now, over the seeks
    kafka.thaw("a")
    wait_until(lambda: len(kafka["target"].records(REPLICA, 0)) == 150, what="the records after the gap",
               alive=(worker,))
    wait_until(lambda: all_copied(kafka), what="the other partitions", alive=(worker,))
    assert worker.finish() is None
    assert [r.value for r in kafka["target"].records(REPLICA, 0)] == (
        [f"p0-{n}".encode() for n in range(100)] + [f"p0-{n}".encode() for n in range(150, 200)])
    assert "lost_from=100 lost_to_exclusive=150 count=50" in caplog.text
    assert caplog.text.count("records deleted by retention before they were copied") == 1  # reported once
    for p in range(1, PARTITIONS):
        values = [r.value for r in kafka["target"].records(REPLICA, p)]
        assert len(values) == len(set(values)) == 200, f"partition {p} repeated records"


@pytest.mark.parametrize("on_data_loss", ["continue", "fail"])
def test_a_consumer_that_jumps_records_retention_deleted_has_them_reported(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture, on_data_loss: str) -> None:
    """However the consumer comes to jump ahead (librdkafka has done so on its own), what retention deleted
    of the gap is reported once; a gap over records still there (compaction, markers) reports nothing."""
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka, on_data_loss=on_data_loss))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    kafka.freeze("a")
    produce(kafka["source"], 100, start=100)
    kafka["source"].delete_records(TOPIC, 0, 150)
    with kafka["source"].lock:
        consumer = worker.worker.consumer
        consumer.drift(TOPIC, 0, 160)  # past the deleted 100..149 and ten records still there
        consumer.drift(TOPIC, 1, 110)  # past records still there: not a loss
    kafka.thaw("a")
    if on_data_loss == "fail":
        wait_until(lambda: not worker.thread.is_alive(), what="the route to stop")
        assert str(worker.error) == (
            f"route r: {TOPIC}[0]: offsets 100..149 were deleted by retention before they were copied "
            "(on_data_loss: fail)")
        assert len(kafka["target"].records(REPLICA, 0)) == 100  # nothing copied past the gap
        assert committed(kafka)[0] == 100
    else:
        wait_until(lambda: len(kafka["target"].records(REPLICA, 0)) == 140
                   and len(kafka["target"].records(REPLICA, 1)) == 190, what="the records after the jumps",
                   alive=(worker,))
        assert worker.finish() is None
    assert caplog.text.count("records deleted by retention before they were copied") == 1
    assert "partition=0 lost_from=100 lost_to_exclusive=150 count=50" in caplog.text


def test_deliveries_without_an_offset_of_records_written_are_copied_again_and_the_syncs_place_the_later_copy(
        kafka: FakeKafka) -> None:
    """Found by the fault tests: after a frozen target thawed, records acknowledged without an offset (the
    broker had written the first attempt: DUPLICATE_SEQUENCE_NUMBER) stopped the worker on a TypeError. They are
    copied again (no proof: see the test below); every sync kept names a copy of its record, the later one where
    a record is there twice."""
    from replicator.domain.offset_sync import decode_sync, kept_syncs

    kafka["target"].offsetless_deliveries = 3
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the copy", alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)
    assert committed(kafka) == {p: 100 for p in range(PARTITIONS)}
    written = kafka["target"].records("mirrorflow-offset-syncs.r.internal", 0)
    syncs = [s for s in kept_syncs(decode_sync(r.key or b"", r.value or b"") for r in written) if s.topic == TOPIC]
    copied = {p: [r.value for r in kafka["target"].records(REPLICA, p)] for p in range(PARTITIONS)}
    twice = 0
    for s in syncs:
        value = source_values(kafka, s.partition)[s.source_offset]
        twice += copied[s.partition].count(value) > 1
        last = len(copied[s.partition]) - 1 - copied[s.partition][::-1].index(value)
        assert s.target_offset == last, f"{s}: {value!r} is at target {last}"
    assert twice, "no sync names a record copied twice: this proves nothing"


def test_a_delivery_acknowledged_without_an_offset_is_copied_again(kafka: FakeKafka,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Found by the long form (seed 381): librdkafka acknowledged the first record of a new target partition
    without an offset (as it does when the broker calls a retried batch a duplicate), and the broker had never
    written it -- with no state of the producer on a new partition it took a later batch's sequence as the
    first. The worker counted the record as copied and committed past it: lost. An acknowledgement without an
    offset proves nothing; the record is copied again (a duplicate when it was written after all). It arrives
    after the records the target wrote meanwhile: late, not lost."""
    caplog.set_level(logging.WARNING, logger="replicator.worker")
    kafka["target"].offsetless_unwritten[REPLICA] = 3
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the copy", alive=(worker,))
    assert worker.finish() is None
    for p in range(PARTITIONS):
        assert sorted(first_copies(kafka, p)) == sorted(source_values(kafka, p)), f"partition {p}"
    assert committed(kafka) == {p: 100 for p in range(PARTITIONS)}
    assert "acknowledged without an offset" in caplog.text


def test_a_partitions_first_record_goes_alone_so_a_batch_written_before_it_cannot_put_it_out_of_order(
        kafka: FakeKafka) -> None:
    """The long form of seed 381 on the code that copies an unproven record again: the first record of a new
    partition, its batch retried while a later one was written first, landed after records that follow it. A
    partition's first record to a producer now goes alone: nothing is written before it, nothing repeats."""
    kafka["target"].first_batch_race.add(REPLICA)
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the copy", alive=(worker,))
    assert worker.finish() is None
    assert_copied_once_in_order(kafka, committed_at=100)


def test_a_partition_quiet_for_a_while_goes_alone_again_as_the_target_may_have_forgotten_its_producer(
        kafka: FakeKafka) -> None:
    """Kafka's brokers drop a producer's state of a partition a day after the timestamps of its last records there
    (at once, for records copied from days back). The worker's next batch of that partition then meets the race of
    a producer's first: a later batch written first, the first acknowledged without an offset. Before, a partition
    went alone only when placed: its next record after the target forgot the producer landed after the ones
    behind it. Now a quiet partition's next record goes alone."""
    kafka["target"].first_batch_race.add(REPLICA)
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka), dataclasses.replace(FAST, quiet=0.2))
    wait_until(lambda: all_copied(kafka), what="the copy", alive=(worker,))
    every = {(TOPIC, p) for p in range(PARTITIONS)}
    wait_until(lambda: every <= worker.worker.inflight.alone, what="the quiet partitions going alone",
               alive=(worker,))
    kafka["target"].forget_producers()
    produce(kafka["source"], 100, start=100)
    wait_until(lambda: all_copied(kafka), what="the copy after the target forgot", alive=(worker,))
    assert worker.finish() is None
    assert_copied_once_in_order(kafka, committed_at=200)


def test_records_older_than_the_targets_memory_of_producers_go_serially_so_no_small_batch_is_overtaken(
        kafka: FakeKafka) -> None:
    """Found by the fault harness with records two days old (`bench/chaos.py --records-age 48`): the target's brokers
    forget a producer on a partition as soon as the records it wrote there are older than producer.id.expiration.ms,
    so every batch is a first one. A trickle's batches are small, librdkafka sends the next while one is in flight,
    and when the target retried the first (a restart), the second was written before it: a record copied again
    after later ones. Now such a partition's records wait aside while few are in flight, and go together."""
    kafka["target"].batch_race.add(REPLICA)
    produce(kafka["source"], 2)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first records (each partition's first went alone)",
               alive=(worker,))
    kafka["target"].deliveries_per_poll = 0  # a target that answers nothing for now: batches queue up
    consumer = worker.worker.consumer
    for n in range(2, 12, 2):  # a trickle of records of 1970: two per partition a turn, each turn a batch
        produce(kafka["source"], 2, start=n)
        wait_until(lambda n=n: all(consumer.positions.get((TOPIC, p)) == n + 2 for p in range(PARTITIONS)),  # type: ignore[attr-defined]
                   what=f"records {n}-{n + 1} fetched", alive=(worker,))
    kafka["target"].deliveries_per_poll = None
    produce(kafka["source"], 88, start=12)
    wait_until(lambda: all_copied(kafka), what="the copy", alive=(worker,))
    assert worker.finish() is None
    assert_copied_once_in_order(kafka, committed_at=100)


def test_records_fetched_in_the_hand_over_that_acknowledged_those_in_flight_wait_for_those_kept_aside(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by CI's short fault run (seed 11, records two days old): one record lost, silently, after the
    workers started together. A partition copying serially had records kept aside behind those in flight; another
    partition's revocation waited for every record in flight to be acknowledged (the hand-over's flush, inside the
    consume that served it), and that consume also returned the kept partition's next records. With nothing in
    flight, the next went to the producer ahead of those kept aside, which came back behind it as "repeats" and
    were dropped; the gap looked like a transaction's marker. A record never overtakes one kept aside."""
    caplog.set_level(logging.WARNING, logger="replicator.worker")
    produce(kafka["source"], 2)  # records of 1970: older than any target remembers a producer, copied serially
    config = route_config(kafka)
    a = WorkerThread(kafka, "a", config)
    wait_until(lambda: all_copied(kafka) and committed(kafka) == {p: 2 for p in range(PARTITIONS)},
               what="the first records, committed", alive=(a,))  # a's only commit from now on: its hand-over's
    kafka["target"].deliveries_per_poll = 0  # takes records, acknowledges none until a flush
    consumer = a.worker.consumer
    for n in range(2, 8, 2):
        produce(kafka["source"], 2, start=n)
        wait_until(lambda n=n: all(consumer.positions.get((TOPIC, p)) == n + 2 for p in range(PARTITIONS)),  # type: ignore[attr-defined]
                   what=f"records {n}-{n + 1} fetched", alive=(a,))
    every = {(TOPIC, p) for p in range(PARTITIONS)}
    assert set(a.worker.held_back) == every, "no record kept aside behind those in flight: this proves nothing"
    gate = kafka["source"].gates["commit@a"] = threading.Event()  # a's hand-over stops at its commit, after its flush
    b = WorkerThread(kafka, "b", config)
    wait_until(lambda: kafka["source"].waiting["commit@a"] > 0, what="a handing partitions over", alive=(a, b))
    assert a.worker.inflight.proven, "the hand-over's flush acknowledged nothing: this proves nothing"
    produce(kafka["source"], 2, start=8)  # fetched by the consume that serves the hand-over
    gate.set()
    kafka["target"].deliveries_per_poll = None
    wait_until(lambda: all_copied(kafka), what="the copy", alive=(a, b))
    assert a.finish() is None and b.finish() is None
    assert_nothing_lost(kafka)
    assert "went back" not in caplog.text


def test_new_records_of_a_trickle_are_not_kept_aside_while_others_are_in_flight(kafka: FakeKafka) -> None:
    """What the target remembers a producer for needs no waiting: a record of now goes to the producer while
    records before it are in flight (a round trip each would be the latency of every trickle)."""
    produce(kafka["source"], 2)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first records", alive=(worker,))
    kafka["target"].deliveries_per_poll = 0
    now = int(time.time() * 1000)
    for n in range(2, 6):
        for p in range(PARTITIONS):
            kafka["source"].append(TOPIC, p, f"k{n}".encode(), f"p{p}-{n}".encode(), [("h", b"x")], now)
        wait_until(lambda n=n: all(worker.worker.inflight.ledgers[(TOPIC, p)].expected == n + 1
                                   for p in range(PARTITIONS)), what=f"record {n} handed over", alive=(worker,))
    assert not worker.worker.held_back and not worker.worker.inflight.serial
    kafka["target"].deliveries_per_poll = None
    wait_until(lambda: all_copied(kafka), what="the copy", alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)


def test_records_kept_aside_behind_a_first_record_the_target_does_not_acknowledge_stop_its_fetching(
        kafka: FakeKafka) -> None:
    """Kept in memory while a partition's first record waits; a target that acknowledges nothing would have
    every record fetched kept. Past a bound its fetching pauses, and the copy goes on in order once it answers."""
    kafka["target"].deliveries_per_poll = 0  # takes records, acknowledges none yet
    produce(kafka["source"], 5_000)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    every = {(TOPIC, p) for p in range(PARTITIONS)}
    wait_until(lambda: every <= worker.worker.hold_paused, what="fetching paused", alive=(worker,))
    assert every <= worker.worker.consumer.paused  # type: ignore[attr-defined]
    kept = {key: len(records) for key, records in worker.worker.held_back.items()}
    assert set(kept) == every and all(100 <= n < 4_999 for n in kept.values()), kept
    kafka["target"].deliveries_per_poll = None
    wait_until(lambda: all_copied(kafka), timeout=60, what="the copy", alive=(worker,))
    assert worker.finish() is None
    for p in range(PARTITIONS):
        assert [r.value for r in kafka["target"].records(REPLICA, p)] == source_values(kafka, p), f"partition {p}"


def test_an_offset_sync_acknowledged_without_an_offset_is_written_again(kafka: FakeKafka,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    """The same acknowledgement for an offset sync: the worker took the sync for written and let the commit pass
    its run's start. Had the broker not written it, checkpoints and failover would translate without that run."""
    from replicator.domain.offset_sync import decode_sync, kept_syncs

    caplog.set_level(logging.INFO, logger="replicator.worker")
    syncs_topic = "mirrorflow-offset-syncs.r.internal"
    kafka["target"].offsetless_unwritten[syncs_topic] = 2
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka) and committed(kafka) == {p: 100 for p in range(PARTITIONS)},
               what="the copy and its commit", alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)
    syncs = kept_syncs(decode_sync(r.key or b"", r.value or b"") for r in kafka["target"].records(syncs_topic, 0))
    assert sorted((s.partition, s.source_offset, s.target_offset) for s in syncs if s.topic == TOPIC) == [
        (p, 0, 0) for p in range(PARTITIONS)]
    assert caplog.text.count("offset sync acknowledged without an offset, writing it again") == 2


def test_a_producer_that_reports_nothing_while_the_target_answers_is_replaced(kafka: FakeKafka,
                                                                              caplog: pytest.LogCaptureFixture) -> None:
    """Seen once in a 100-fault run: after a clean target restart one worker's records stayed in flight
    with no delivery report for minutes while the target answered: its partitions were not copied."""
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    wedged = worker.worker._producer
    wedged.wedge()  # type: ignore[union-attr]
    produce(kafka["source"], 200, start=100)
    wait_until(lambda: all_copied(kafka), what="the copy by a new producer", alive=(worker,))
    assert worker.finish() is None
    assert worker.worker._producer is not wedged
    assert_nothing_lost(kafka)
    assert committed(kafka) == {p: 300 for p in range(PARTITIONS)}
    assert "producer replaced" in caplog.text


def test_a_frozen_target_is_waited_for_not_taken_for_a_wedged_producer(kafka: FakeKafka,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    producer = worker.worker._producer
    kafka["target"].freeze()
    produce(kafka["source"], 100, start=100)
    stalled = FAST.stalled
    wait_until(lambda: worker.worker.producer_watch.silent_for() > 3 * stalled, what="a long silence",
               alive=(worker,))
    kafka["target"].thaw()
    wait_until(lambda: all_copied(kafka), what="the copy after the thaw", alive=(worker,))
    assert worker.finish() is None
    assert worker.worker._producer is producer
    assert "producer replaced" not in caplog.text
    assert_nothing_lost(kafka)


@pytest.mark.parametrize("error",
                         [KafkaError._UNKNOWN_PARTITION, KafkaError._DESTROY, KafkaError.UNKNOWN_TOPIC_OR_PART],
                         ids=["unknown", "destroy", "not-propagated"])
def test_records_failed_as_unknown_partition_after_the_producer_took_them_are_copied_again(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture, error: int) -> None:
    """Found by the 100-fault run (partitions added): a delivery failed with "Local: Unknown partition" after
    produce() had taken the record (the producer's metadata lost the partition for a moment), and the worker
    stopped as if the target had refused the record. Found by CI (a replica deleted under a running route):
    librdkafka purged the deleted topic's queued records with _DESTROY, and the worker stopped the route. Found
    by the scale bench (2,000 new replicas on one broker): a replica the target's metadata did not show within
    librdkafka's topic.metadata.propagation.max.ms (30 s) had its queued records failed with the broker's
    UNKNOWN_TOPIC_OR_PART, and the worker stopped the route as if the target had refused them."""
    kafka["target"].hidden_error = error
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    kafka["target"].freeze()  # records queue up in the producer
    produce(kafka["source"], 100, start=100)
    wait_until(lambda: len(worker.worker.inflight.ledgers.get((TOPIC, 0), ())) > 0, what="records of [0] in flight",
               alive=(worker,))
    kafka["target"].hidden_partitions.add((REPLICA, 0))
    kafka["target"].thaw()
    wait_until(lambda: "copying them again" in caplog.text, what="the failed records taken back", alive=(worker,))
    kafka["target"].hidden_partitions.clear()
    wait_until(lambda: all_copied(kafka), what="the copy after the partition came back", alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)
    assert committed(kafka) == {p: 200 for p in range(PARTITIONS)}


def test_a_target_topic_deleted_under_a_running_route_is_created_again(kafka: FakeKafka) -> None:
    """Before: the records waited for the target topic forever (the subscription created target topics
    only when the source's topics changed)."""
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    kafka["target"].delete_topic(REPLICA)
    produce(kafka["source"], 100, start=100)
    wait_until(lambda: REPLICA in kafka["target"].topics
               and all(len(kafka["target"].records(REPLICA, p)) == 100 for p in range(PARTITIONS)),
               what="the new records in the target topic created again", alive=(worker,))
    assert worker.finish() is None
    for p in range(PARTITIONS):
        assert [r.value for r in kafka["target"].records(REPLICA, p)] == source_values(kafka, p)[100:]


def test_a_topic_refresh_the_source_is_slow_to_answer_does_not_hold_the_copy_up(kafka: FakeKafka) -> None:
    """Before: the refresh (metadata of every topic, their ids, target topics) ran on the loop's thread, so a
    source slow to answer it -- thousands of topics, a slow link -- stopped the copy for as long."""
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    gate = kafka["source"].gates["list_topics"] = threading.Event()
    try:
        wait_until(lambda: kafka["source"].waiting["list_topics"] > 0, what="a refresh held by the source",
                   alive=(worker,))
        produce(kafka["source"], 50, start=100)  # the markers: copied while the refresh is still held
        wait_until(lambda: all_copied(kafka), what="records copied while the refresh waits", alive=(worker,))
        assert kafka["source"].waiting["list_topics"] > 0
    finally:
        gate.set()
    assert worker.finish() is None
    assert_nothing_lost(kafka)
    assert committed(kafka) == {p: 150 for p in range(PARTITIONS)}


def lag_gauge(partition: int) -> float | None:
    return REGISTRY.get_sample_value("mirrorflow_partition_lag",
                                     {"route": "r", "topic": TOPIC, "partition": str(partition)})


def test_the_lag_gauges_follow_the_records_not_yet_copied(kafka: FakeKafka) -> None:
    """Before: lag came from librdkafka's statistics, whose JSON (parsed on the loop) stalled it a quarter of a
    second at 2,000 partitions; the fakes had no statistics, so nothing here proved the gauges either."""
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka), dataclasses.replace(FAST, lag=0.05))
    wait_until(lambda: all_copied(kafka) and all(lag_gauge(p) == 0 for p in range(PARTITIONS)),
               what="the copy, lag 0", alive=(worker,))
    kafka["target"].freeze()
    produce(kafka["source"], 30, start=100)
    wait_until(lambda: all(lag_gauge(p) == 30 for p in range(PARTITIONS)), what="lag 30 behind a frozen target",
               alive=(worker,))
    kafka["target"].thaw()
    wait_until(lambda: all(lag_gauge(p) == 0 for p in range(PARTITIONS)), what="lag 0 again", alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)


def test_an_idle_worker_reads_its_partitions_ends_once_a_lag_interval_not_at_every_look(kafka: FakeKafka) -> None:
    """Found by bench/scale.py: every 5 s look read the ends of all 2,000 owned partitions (one ListOffsets, whose
    futures confluent-kafka resolves one by one in Python); with the watches over them, a fifth of an idle
    worker's CPU. They serve the lag gauges and the stuck watch, both on ``timeouts.lag``; the looks in between
    read none."""
    produce(kafka["source"], 10)
    source = kafka["source"]
    worker = WorkerThread(kafka, "a", route_config(kafka), dataclasses.replace(FAST, lag=3600.0))
    wait_until(lambda: all_copied(kafka) and len(worker.worker._ends) == PARTITIONS,
               what="the copy, and the ends of every partition read once", alive=(worker,))
    ends_read, looks = source.answered["list_offsets"], source.answered["list_topics"]
    wait_until(lambda: source.answered["list_topics"] >= looks + 10, what="ten more looks", alive=(worker,))
    assert source.answered["list_offsets"] == ends_read
    assert worker.finish() is None
    assert_nothing_lost(kafka)


def test_an_idle_worker_asks_no_commit_and_commits_the_next_record_at_once(kafka: FakeKafka) -> None:
    """librdkafka's own auto-commit walked every assigned partition every 250 ms, stored or not (at 2,500 topics x 4,
    10 % of a core with nothing to copy): the worker commits itself, only when it stored something."""
    source = kafka["source"]
    produce(source, 50)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka) and committed(kafka) == {p: 50 for p in range(PARTITIONS)},
               what="the copy, committed", alive=(worker,))
    looks = source.answered["list_topics"]
    wait_until(lambda: source.answered["list_topics"] >= looks + 10, what="ten more looks", alive=(worker,))
    commits, looks = source.answered["commit"], source.answered["list_topics"]
    wait_until(lambda: source.answered["list_topics"] >= looks + 10, what="ten more looks", alive=(worker,))
    assert source.answered["commit"] == commits, "commits asked with nothing stored"
    produce(source, 1, start=50)
    wait_until(lambda: committed(kafka) == {p: 51 for p in range(PARTITIONS)}, what="the next record, committed",
               alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)


def test_the_commits_after_the_first_wait_for_the_routes_commit_interval(kafka: FakeKafka) -> None:
    """``auto.commit.interval.ms`` (the window of duplicates after a crash) paces the worker's commits: the first
    offsets stored are committed at once, the next wait the interval (here a minute; the stop commits them)."""
    source = kafka["source"]
    produce(source, 50)
    worker = WorkerThread(kafka, "a", route_config(kafka, consumer="{auto.commit.interval.ms: 60000}"))
    wait_until(lambda: source.answered["commit"] == 1, what="the first commit", alive=(worker,))
    produce(source, 30, start=50)
    wait_until(lambda: all_copied(kafka), what="every record copied", alive=(worker,))
    looks = source.answered["list_topics"]
    wait_until(lambda: source.answered["list_topics"] >= looks + 10, what="ten more looks", alive=(worker,))
    assert all(offset <= 50 for offset in committed(kafka).values()), "committed before the route's interval"
    assert source.answered["commit"] == 1
    assert worker.finish() is None
    assert committed(kafka) == {p: 80 for p in range(PARTITIONS)}
    assert_nothing_lost(kafka)


def test_a_commit_that_failed_is_asked_again_with_no_new_record_to_copy(kafka: FakeKafka) -> None:
    """The offsets a failed commit carried stay stored (as in librdkafka) and the worker asks again: the group
    gets them although nothing more is copied."""
    source = kafka["source"]
    produce(source, 40)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: committed(kafka) == {p: 40 for p in range(PARTITIONS)}, what="the first commit",
               alive=(worker,))
    source.failures["commit"] = 3
    produce(source, 1, start=40)
    wait_until(lambda: source.failures["commit"] == 0, what="the failed commits", alive=(worker,))
    wait_until(lambda: committed(kafka) == {p: 41 for p in range(PARTITIONS)}, what="the commit asked again",
               alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)


def states_gauge() -> dict[str, float]:
    found = {state: REGISTRY.get_sample_value("mirrorflow_partitions_in_state", {"route": "r", "state": state})
             for state in ("COPYING", "CATCHING_UP", "PAUSED", "STUCK")}
    return {state: value for state, value in found.items() if value}


def test_the_lag_gauges_are_updated_a_slice_of_partitions_a_turn_and_the_states_counted_once_all_were_seen(
        kafka: FakeKafka, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by bench/scale.py: updating 2,000 partitions' gauges in one turn held the loop up to 0.7 s (each
    cached watermark is found by a walk of librdkafka's topics). A slice a turn gives the same figures: every
    partition's lag, and the states' counts over all of them (never a partial pass)."""
    from replicator.worker import watches

    monkeypatch.setattr(watches, "LAG_SLICE", 1)
    published: list[tuple[str, float]] = []  # each state's count as set, in order
    real = watches.metrics.STATES.labels

    class Spied:
        def __init__(self, route: str, state: str) -> None:
            self.state, self.gauge = state, real(route, state)

        def set(self, value: float) -> None:
            published.append((self.state, value))
            self.gauge.set(value)

    monkeypatch.setattr(watches.metrics.STATES, "labels", Spied)
    produce(kafka["source"], 100)
    worker = WorkerThread(kafka, "a", route_config(kafka), dataclasses.replace(FAST, lag=0.05))
    wait_until(lambda: all_copied(kafka) and all(lag_gauge(p) == 0 for p in range(PARTITIONS))
               and states_gauge() == {"COPYING": PARTITIONS}, what="the copy, lag 0", alive=(worker,))
    kafka["target"].freeze()
    produce(kafka["source"], 1_100, start=100)  # past CAUGHT_UP_LAG: catching up
    wait_until(lambda: all(lag_gauge(p) == 1_100 for p in range(PARTITIONS))
               and states_gauge() == {"CATCHING_UP": PARTITIONS}, what="lag 1,100 behind a frozen target",
               alive=(worker,))
    kafka["target"].thaw()
    wait_until(lambda: all(lag_gauge(p) == 0 for p in range(PARTITIONS)), what="lag 0 again", alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)
    states = len(watches.PartitionState)
    passes = [published[at:at + states] for at in range(0, len(published), states)]
    totals = [sum(count for _, count in counts) for counts in passes]  # 0: a pass before anything was placed
    assert totals.count(PARTITIONS) >= 2 and set(totals) <= {0, PARTITIONS}, passes


def test_an_offset_sync_the_producer_refuses_for_a_moment_is_produced_again(kafka: FakeKafka) -> None:
    """Found by the fault harness: an offset sync's produce() raising (not BufferError) escaped the loop and
    ended the worker with a traceback. The syncs topic missing from the producer's metadata for a moment is
    waited for: the records are copied, and committed once their syncs are written."""
    produce(kafka["source"], 100)
    syncs = ("mirrorflow-offset-syncs.r.internal", 0)
    kafka["target"].hidden_partitions.add(syncs)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the copy while the syncs topic is hidden", alive=(worker,))
    assert all(offset <= 0 for offset in committed(kafka).values()), "committed past syncs not written"
    kafka["target"].hidden_partitions.discard(syncs)
    wait_until(lambda: committed(kafka) == {p: 100 for p in range(PARTITIONS)}, what="the commit", alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)


def test_a_rate_limited_route_keeps_under_its_limit_loses_nothing_and_calls_no_target_slow(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="replicator.worker.route_worker")
    for partition in range(PARTITIONS):  # 4 x 50 records of ~1 KB: 200 KB at 100 KB/s
        for n in range(50):
            kafka["source"].append(TOPIC, partition, f"k{n}".encode(), f"p{partition}-{n}-".encode() + b"x" * 1_000,
                                   [("h", b"x")], 1_000 + n)
    began = time.monotonic()
    worker = WorkerThread(kafka, "a", route_config(kafka, max_bytes_per_second="100000"),
                          dataclasses.replace(FAST, backpressure_report=0.05))
    wait_until(lambda: all_copied(kafka), timeout=60, what="the copy", alive=(worker,))
    took, sent = time.monotonic() - began, copied_bytes(kafka)
    # An upper bound only (a slow machine sends less, never more): the rate, a burst, a record's debt. The fake
    # target takes all 200 KB in milliseconds without the limit.
    assert sent <= 100_000 * took + 100_000 * 0.1 + 1_100, (sent, took)
    assert worker.finish() is None
    assert_nothing_lost(kafka)
    assert not [r for r in caplog.records if "target slow" in r.getMessage()]  # the limit is no slow target


def copied_bytes(kafka: FakeKafka) -> int:
    return sum(len(r.value or b"") + len(r.key or b"") for p in range(PARTITIONS)
               for r in kafka["target"].records(REPLICA, p))


@pytest.mark.parametrize("seek_cures", [True, False])
def test_a_partition_that_silently_stops_fetching_is_found_stuck_and_recovered(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture, seek_cures: bool, tmp_path: Path) -> None:
    """librdkafka stops fetching partition 1 and says nothing (strimzi #10612): its lag grows while cached
    watermarks say 0. The worker finds it stuck (STUCK in the state DB, for status and the SLA), places it again
    from its committed offset; when a seek does not cure it, it gives the partition back to the group (a new
    consumer). Nothing is lost."""
    caplog.set_level(logging.INFO, logger="replicator.worker.route_worker")
    produce(kafka["source"], 20)
    config = route_config(kafka, stuck_after="1")
    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    store.run(lambda session: register_routes(session, config.routes))
    seen: list[dict[tuple[str, int], tuple[str, str | None, object]]] = []
    worker = WorkerThread(kafka, "a", config, store=store)
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    worker.worker.consumer.silence(TOPIC, 1, seek_cures=seek_cures)  # type: ignore[attr-defined]
    produce(kafka["source"], 30, start=20)
    wait_until(lambda: bool(seen.append(store.run(lambda s: partition_states(s, "r"))) or seen[-1]),
               what="the STUCK state stored", alive=(worker,))
    assert list(seen[-1]) == [(TOPIC, 1)] and seen[-1][(TOPIC, 1)][0] == "STUCK"
    wait_until(lambda: all_copied(kafka), timeout=30, what="partition 1 copied after its recovery", alive=(worker,))
    wait_until(lambda: any(r.getMessage().startswith("stuck partition fetches again") for r in caplog.records),
               what="the worker seeing it fetch again", alive=(worker,))
    said = [r.getMessage() for r in caplog.records]
    stuck = [m for m in said if m.startswith("partition stuck") and "partition=1" in m]
    assert stuck and "placing it again from its committed offset" in stuck[0], said
    assert (len(stuck) == 1) == seek_cures  # not cured by the seek: stuck again, and given back to the group
    assert seek_cures or "giving it back to the group (a new consumer)" in stuck[1]
    moving = [m for m in said if m.startswith("stuck partition fetches again")]
    assert moving[0].endswith("partition=1 position=50"), moving
    assert not [m for m in said if m.startswith("partition stuck") and "partition=1" not in m]
    assert worker.finish() is None
    assert store.run(lambda s: partition_states(s, "r")) == {}  # fetching again: no longer STUCK
    store.close()
    assert_nothing_lost(kafka)
    assert committed(kafka) == {p: 50 for p in range(PARTITIONS)}


def test_a_consumer_that_gets_no_more_answers_is_replaced_once_its_partitions_placed_again_stay_stuck(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the exactly-once chaos run (seed 5, a clean restart of the source broker): the consumer fetched
    nothing more and reading committed offsets through it timed out, while the source answered every other
    client; the stuck partitions were placed again, placing failed, and the route stalled for good. Placing reads
    through clients of its own now: the partitions are placed again, stay stuck, and the consumer is renewed."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    produce(kafka["source"], 20)
    worker = WorkerThread(kafka, "a", route_config(kafka, stuck_after="1"))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    deaf = worker.worker.consumer
    deaf.deafen()  # type: ignore[attr-defined]
    # Its last word of the source was "all brokers down" (the broker restarted), never taken back (seed 8).
    worker.worker.links.error("source", KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    produce(kafka["source"], 30, start=20, partitions=PARTITIONS - 1)  # the last gets none: not stuck, not all are
    wait_until(lambda: all_copied(kafka), timeout=30, what="the copy by a new consumer", alive=(worker,))
    said = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("partition stuck") and "placing it again" in m for m in said), said
    renewed = [m for m in said if m.startswith("source consumer renewed")]
    assert len(renewed) == 1 and "partitions stuck after a re-seek" in renewed[0], said
    assert worker.worker.consumer is not deaf
    assert worker.finish() is None
    assert_nothing_lost(kafka)
    assert committed(kafka) == {**{p: 50 for p in range(PARTITIONS - 1)}, PARTITIONS - 1: 20}


def test_partitions_given_while_their_committed_offsets_cannot_be_read_hold_up_none_copying_already(
        kafka: FakeKafka) -> None:
    """Found by the fault pairs (seed 443, a worker killed while a source node died): the survivor placed the
    partitions it was given on its loop, waiting 21 s for the group's coordinator and the dead node's partitions,
    and none of the partitions it was copying moved meanwhile (a record waited 33 s). Placing reads in a thread of
    its own now: b leaves while a cannot read committed offsets; a's own partitions copy on."""
    produce(kafka["source"], 20)
    a = WorkerThread(kafka, "a", route_config(kafka), worker_id="wa")
    b = WorkerThread(kafka, "b", route_config(kafka), worker_id="wb")
    wait_until(lambda: all_copied(kafka) and len(a.worker.inflight.ledgers) == 2
               and len(b.worker.inflight.ledgers) == 2, what="both copying", alive=(a, b))
    own = sorted(p for _, p in a.worker.inflight.ledgers)
    coordinator = threading.Event()
    kafka["source"].gates["committed@a"] = coordinator  # a's reads of committed offsets wait (its coordinator died)
    assert b.finish() is None
    wait_until(lambda: len(a.worker.unplaced) == 2 and kafka["source"].waiting["committed@a"] == 1,
               what="a given b's partitions, reading their committed offsets", alive=(a,))
    for n in range(20, 30):  # the marker: records of a's own partitions arrive while the read waits
        for p in own:
            kafka["source"].append(TOPIC, p, f"k{n}".encode(), f"p{p}-{n}".encode(), [("h", b"x")], 1_000 + n)
    wait_until(lambda: all(set(source_values(kafka, p)) <= set(first_copies(kafka, p)) for p in own), timeout=10,
               what="a's own partitions copied while it places b's", alive=(a,))
    assert len(a.worker.unplaced) == 2  # b's: still waiting for their committed offsets
    coordinator.set()
    produce(kafka["source"], 10, start=30)
    wait_until(lambda: all_copied(kafka) and not a.worker.unplaced, what="every partition copied", alive=(a,))
    assert a.finish() is None
    assert_nothing_lost(kafka)
    for p in range(PARTITIONS):  # b's partitions resumed where b committed: not one record copied twice
        assert [r.value for r in kafka["target"].records(REPLICA, p)] == source_values(kafka, p), f"partition {p}"


def test_what_placing_read_before_partitions_went_and_came_back_is_not_taken(kafka: FakeKafka) -> None:
    """A worker's read of committed offsets is out of date once its partitions went to another worker, which
    copied and committed on, and came back: taken, they would be copied again from there (exactly-once: shown
    twice). a reads b's committed offsets, then waits for their log ranges; b comes back for them, copies 10 more
    and leaves again; a places them where b left them."""
    produce(kafka["source"], 20)
    config = route_config(kafka)
    a = WorkerThread(kafka, "a", config, worker_id="wa")
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(a,))
    b = WorkerThread(kafka, "b", config, worker_id="wb")  # the group takes a joining member's share from the end
    wait_until(lambda: len(a.worker.inflight.ledgers) == 2 and len(b.worker.inflight.ledgers) == 2,
               what="both copying", alive=(a, b))
    theirs = sorted(p for _, p in b.worker.inflight.ledgers)
    leaders = threading.Event()
    kafka["source"].gates["list_offsets@a"] = leaders  # a's log ranges wait (a dead leader), after its committed
    assert b.finish() is None
    wait_until(lambda: kafka["source"].waiting["list_offsets@a"] >= 1 and set(a.worker.unplaced) ==
               {(TOPIC, p) for p in theirs}, what="a reading b's partitions", alive=(a,))
    b = WorkerThread(kafka, "b", config, worker_id="wb")
    wait_until(lambda: sorted(p for _, p in b.worker.inflight.ledgers) == theirs and not a.worker.unplaced,
               what="b given its partitions back", alive=(a, b))
    for n in range(20, 30):
        for p in theirs:
            kafka["source"].append(TOPIC, p, f"k{n}".encode(), f"p{p}-{n}".encode(), [("h", b"x")], 1_000 + n)
    wait_until(lambda: all(committed(kafka)[p] == 30 for p in theirs), what="b's copy committed", alive=(a, b))
    assert b.finish() is None
    wait_until(lambda: len(a.worker.unplaced) == 2, what="a given b's partitions again", alive=(a,))
    leaders.set()
    wait_until(lambda: not a.worker.unplaced, what="a placing them", alive=(a,))
    produce(kafka["source"], 5, start=30)  # the marker: copied after them
    wait_until(lambda: all_copied(kafka), what="the marker", alive=(a,))
    assert a.finish() is None
    assert_nothing_lost(kafka)
    for p in range(PARTITIONS):  # not one record copied twice: a started b's partitions at 30
        assert [r.value for r in kafka["target"].records(REPLICA, p)] == source_values(kafka, p), f"partition {p}"


def test_a_consumer_whose_every_partition_is_stuck_at_once_is_replaced_without_placing_them_again(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the exactly-once fault run (seed 264, a clean source restart; librdkafka #5153): every partition
    of two workers stopped fetching at once. Each was placed again from its committed offset, which the deaf
    consumer could not read either: placing failed for a minute before the worker got a new consumer, and the
    partitions were copied by nobody for 3.5 minutes. Every partition stuck at once is the client's fault: new
    clients at once."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    produce(kafka["source"], 20)
    worker = WorkerThread(kafka, "a", route_config(kafka, stuck_after="5"))  # FAST.client_still: 1 s
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    deaf = worker.worker.consumer
    deaf.deafen()  # type: ignore[attr-defined]
    produce(kafka["source"], 30, start=20)
    wait_until(lambda: all_copied(kafka), timeout=30, what="the copy by a new consumer", alive=(worker,))
    said = [r.getMessage() for r in caplog.records]
    renewed = [m for m in said if m.startswith("source consumer renewed")]
    assert len(renewed) == 1 and f"every partition it owns ({PARTITIONS}) stuck at once" in renewed[0], said
    assert not any(m.startswith("placing assigned partitions failed") for m in said), said
    assert worker.worker.consumer is not deaf
    assert worker.finish() is None
    assert_nothing_lost(kafka)
    assert committed(kafka) == {p: 50 for p in range(PARTITIONS)}


def test_a_consumer_whose_one_partition_is_stuck_is_replaced_as_soon_as_one_with_many(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the exactly-once fault pairs (join-eos-29, a source restart): a worker that owned one partition had
    its consumer stop fetching after the restart. "Every partition stuck at once" took two partitions or more, so
    the one partition waited for ``stuck_after`` (120 s), was placed again, and placing failed a minute more: the
    copy of that partition stood 3 minutes. One partition stuck, all a worker owns, gets new clients as soon."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    kafka["source"].create_topic("solo", 1)
    for n in range(20):
        kafka["source"].append("solo", 0, None, f"solo-{n}".encode())
    worker = WorkerThread(kafka, "a", route_config(kafka, topics="[solo]", stuck_after="5"))  # client_still: 1 s

    def copied(count: int) -> bool:
        return "source.solo" in kafka["target"].topics and len(kafka["target"].records("source.solo", 0)) >= count

    wait_until(lambda: copied(20), what="the first copy", alive=(worker,))
    deaf = worker.worker.consumer
    deaf.deafen()  # type: ignore[attr-defined]
    for n in range(20, 50):
        kafka["source"].append("solo", 0, None, f"solo-{n}".encode())
    wait_until(lambda: copied(50), timeout=30, what="the copy by a new consumer", alive=(worker,))
    said = [r.getMessage() for r in caplog.records]
    renewed = [m for m in said if m.startswith("source consumer renewed")]
    assert len(renewed) == 1 and "every partition it owns (1) stuck at once" in renewed[0], said
    assert not any(m.startswith("placing assigned partitions failed") for m in said), said
    assert worker.finish() is None
    first = dict.fromkeys(r.value for r in kafka["target"].records("source.solo", 0))
    assert list(first) == [f"solo-{n}".encode() for n in range(50)]


def withheld_after_a_leave(kafka: FakeKafka, timeouts: WorkerTimeouts) -> None:
    """Workers a and b copy; a's consumer stops taking up the topic's partitions; b leaves; every record must reach
    the target (through a's remedy)."""
    config = route_config(kafka, stuck_after="1")
    produce(kafka["source"], 20)
    a = WorkerThread(kafka, "a", config, timeouts, worker_id="wa")
    b = WorkerThread(kafka, "b", config, timeouts, worker_id="wb")
    try:
        wait_until(lambda: all_copied(kafka) and len(a.worker.inflight.ledgers) == len(b.worker.inflight.ledgers)
                   == PARTITIONS // 2, what="both copying", alive=(a, b))
        a.worker.consumer.unresolved.add(TOPIC)  # type: ignore[attr-defined]
        assert b.finish() is None  # its partitions go to a, whose consumer does not take them up
        produce(kafka["source"], 30, start=20)
        wait_until(lambda: all_copied(kafka), what="every partition copied by a", alive=(a,))
    finally:
        b.finish()
        assert a.finish() is None


def test_partitions_the_group_gives_a_worker_whose_consumer_never_takes_them_up_are_copied_by_a_new_consumer(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the fault harness (seed 26): after a worker left, the group gave one of its partitions to a worker
    whose librdkafka did not resolve that topic's id. The client neither handed the partition over nor
    acknowledged it, the coordinator kept it for that member, and nobody copied it for 4.5 minutes, with no
    error anywhere. A worker now compares what the group says it gave it with what its consumer handed over;
    withheld for ``stuck_after`` (30 s at most), it joins anew with a new consumer."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    withheld_after_a_leave(kafka, FAST)
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("source consumer renewed")]
    assert len(said) == 1 and "but its client did not hand them over for 1 s" in said[0], said
    assert_nothing_lost(kafka)
    assert committed(kafka) == {p: 50 for p in range(PARTITIONS)}


def test_partitions_withheld_in_the_minute_after_a_rebalance_are_found_without_waiting_for_the_minute_ask(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the fault harness's pairs (seed 44, a worker killed during a source freeze): two partitions given
    in the middle of the rebalances were withheld by their members' clients, and the once-a-minute ask found them
    80 s later. For a minute after its assignment changed a worker asks every ``assignment_soon`` s."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    # The minute's ask never comes here; a revoked half of its partitions when b joined.
    withheld_after_a_leave(kafka, dataclasses.replace(FAST, assignment=120.0, assignment_soon=0.3))
    assert any("but its client did not hand them over for 1 s" in r.getMessage() for r in caplog.records)
    assert_nothing_lost(kafka)


def test_a_new_topic_whose_partitions_the_client_withholds_is_found_without_waiting_for_the_minute_ask(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the exactly-once fault pairs (`topic-add+statedb-stop`): a topic added, the group gave its
    partitions to a worker whose client took them up in neither a callback nor anything else, and they waited
    55 s for the minute's ask. A subscription that changed asks soon, as a rebalance does."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    config = route_config(kafka, topics="['orders.*']", stuck_after="1")
    produce(kafka["source"], 20)
    a = WorkerThread(kafka, "a", config, dataclasses.replace(FAST, assignment=120.0, assignment_soon=0.3))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(a,))
    # Long after its own assignment changed: its next ask is two minutes away, and only the subscription's change
    # can bring one sooner.
    a.worker._asking_often_until, a.worker._assignment_at = 0.0, time.monotonic() + 120.0
    a.worker.consumer.unresolved.add("orders-new")  # type: ignore[attr-defined]
    kafka["source"].create_topic("orders-new", 2)
    for partition in range(2):
        kafka["source"].append("orders-new", partition, None, f"new-{partition}".encode())
    wait_until(lambda: all(r for r in (kafka["target"].records("source.orders-new", p) if "source.orders-new"
                                       in kafka["target"].topics else [] for p in range(2))),
               what="the new topic copied", alive=(a,))
    assert a.finish() is None
    assert any("but its client did not hand them over for 1 s" in r.getMessage() for r in caplog.records)


def renewals_when_the_group_mishears_a_hand_over(kafka: FakeKafka, caplog: pytest.LogCaptureFixture,
                                                mishear: str) -> list[str]:
    """a copies alone; the group then mishears a's side of a hand-over (``mishear``: the FakeGroup method, given
    a's member); b joins and must get half the partitions, and every record reach the target. The renewals
    logged, in order."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    config = route_config(kafka, stuck_after="3")
    produce(kafka["source"], 20)
    a = WorkerThread(kafka, "a", config, FAST, worker_id="wa")
    b = None
    try:
        wait_until(lambda: all_copied(kafka), what="a copying", alive=(a,))
        getattr(kafka["source"].group("mirrorflow-r"), mishear)("wa")
        b = WorkerThread(kafka, "b", config, FAST, worker_id="wb")  # a is to give half up
        produce(kafka["source"], 30, start=20)
        wait_until(lambda: all_copied(kafka) and len(b.worker.inflight.ledgers) == PARTITIONS // 2,
                   what="b copying the half a gave up", alive=(a, b))
    finally:
        assert a.finish() is None
        assert b is None or b.finish() is None
    assert_nothing_lost(kafka)
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("source consumer renewed")]


def test_partitions_a_worker_revoked_that_the_group_never_heard_of_are_released_by_that_worker_joining_anew(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the exactly-once fault pairs (overlap-eos-28b, a worker joining while the target restarted): a
    worker revoked three partitions a second after the group's coordinator came back, and the coordinator never
    heard it -- it kept them as that worker's, pending revocation, shown in no member's assignment. The joining
    worker waited for them 3 minutes; its own new consumers did not help. A worker now watches what it released:
    still awaited by another member two thirds of ``stuck_after`` (30 s at most) later, it joins anew -- before the
    joining worker's withheld watch is due, whose new consumer would cure nothing (the fault pairs saw both renew at
    once)."""
    said = renewals_when_the_group_mishears_a_hand_over(kafka, caplog, "lose_releases")
    assert any("still counts orders[" in line and "as this worker's, revoked 2 s ago" in line for line in said), said
    assert not any("did not hand them over" in line for line in said), said  # b: given them before its watch was due


def test_partitions_a_worker_was_never_told_to_give_up_are_released_by_that_worker_joining_anew(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the fault pairs (a worker joining while the target was frozen, exactly-once): one worker kept all
    seven partitions for 90 s while four workers joined. The coordinator counted them pending revocation (in no
    member's assignment) and the worker's client was never told to revoke them; the joining workers' own new
    consumers cured nothing. A worker now sees partitions it holds that another member waits for: two thirds of
    ``stuck_after`` later, it joins anew, before the joining worker's withheld watch is due."""
    said = renewals_when_the_group_mishears_a_hand_over(kafka, caplog, "lose_revocations")
    assert any("group mirrorflow-r took orders[" in line and "back for another member 2 s ago, but this worker's "
               "client was never told to give them up" in line for line in said), said
    assert not any("did not hand them over" in line for line in said), said  # b: its new consumer would not help


def test_a_group_that_does_not_say_what_it_gave_the_worker_is_reported_once_and_again_when_it_does(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """The withheld watch is blind while the group's coordinator does not answer the worker's ask (it logged that
    at debug only: a cluster whose ACLs refuse DescribeGroups would have left the watch blind without a word)."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    produce(kafka["source"], 20)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the copy", alive=(worker,))
    kafka["source"].failures["describe_group"] = 1_000_000
    wait_until(lambda: "reading what the group gave this worker failed, retrying" in caplog.text,
               what="the blind watch reported", alive=(worker,))
    kafka["source"].failures["describe_group"] = 0
    wait_until(lambda: "reading what the group gave this worker works again" in caplog.text,
               what="the watch seeing again", alive=(worker,))
    produce(kafka["source"], 10, start=20)  # the copy went on meanwhile
    wait_until(lambda: all_copied(kafka), what="the copy after", alive=(worker,))
    assert worker.finish() is None
    said = [r for r in caplog.records if "reading what the group gave this worker" in r.getMessage()]
    assert len(said) == 2 and "cannot describe group 'mirrorflow-r'" in said[0].getMessage(), said
    assert_nothing_lost(kafka)


def test_a_source_that_says_nothing_past_the_session_holds_the_copy_and_nothing_is_copied_twice(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the fault harness's pairs (seed 43, a worker frozen during a source broker frozen 17 s): a frozen
    broker reports no error (connections stay open), so the workers never held their copy; at its thaw every
    member's session had run out, and they copied the records written meanwhile before the answer to their next
    heartbeat said so, while the members that joined then copied them too (2,693 duplicates). A source metadata
    request unanswered for its whole timeout now dates the outage from when it went out."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    produce(kafka["source"], 20)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka) and committed(kafka) == {p: 20 for p in range(PARTITIONS)},
               what="the first copy, committed", alive=(worker,))
    source = kafka["source"]
    source.freeze()
    wait_until(lambda: worker.worker.holding is not None, what="the copy held", alive=(worker,))
    produce(source, 30, start=20)  # written meanwhile: the broker answers them at its thaw
    kafka.expire("a")  # the broker's session clock ran out while it stood still
    source.thaw()
    wait_until(lambda: all_copied(kafka) and committed(kafka) == {p: 50 for p in range(PARTITIONS)},
               what="the records written meanwhile", alive=(worker,))
    assert worker.finish() is None
    assert_nothing_lost(kafka)
    assert [len(kafka["target"].records(REPLICA, p)) for p in range(PARTITIONS)] == [50] * PARTITIONS
    assert "copying held: the source was out of reach" in caplog.text


def test_a_state_db_that_hangs_while_owners_are_recorded_never_holds_the_copy(
        kafka: FakeKafka, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found reading placement at 2,000 partitions (0.2-0.3 s of each placing turn on SQLite): the copy loop
    wrote the owners of what it placed, and the STUCK, FAULTED and lost-range rows, to the state DB itself. A DB
    that hangs (a lock on the table, a server that stopped answering mid-statement) held every partition's
    copy as long. Those writes are now the state link's, in a thread of its own: the records are copied
    meanwhile, and the owners stored once the DB answers."""
    from replicator.state import repository

    answers = threading.Event()
    recorded = repository.record_owner

    def hung(*args: object) -> None:
        answers.wait(60)
        recorded(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(repository, "record_owner", hung)
    config = route_config(kafka)
    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    store.run(lambda session: register_routes(session, config.routes))
    produce(kafka["source"], 20)
    worker = WorkerThread(kafka, "a", config, worker_id="wa", store=store)
    try:
        wait_until(lambda: all_copied(kafka), timeout=15, what="the copy while the state DB hangs", alive=(worker,))
        assert store.run(lambda s: partition_owners(s, "r")) == {}
        answers.set()
        every = {(TOPIC, p) for p in range(PARTITIONS)}
        wait_until(lambda: set(store.run(lambda s: partition_owners(s, "r"))) == every,
                   what="the owners stored once the DB answers", alive=(worker,))
    finally:
        answers.set()
        assert worker.finish() is None
        store.close()
    assert_nothing_lost(kafka)


def test_each_partition_is_recorded_with_the_worker_that_placed_it_until_that_worker_stops(
        kafka: FakeKafka, tmp_path: Path) -> None:
    """For ``status`` and the Replication page: which worker owns which partition. A worker that stops takes its
    rows away; the one given its partitions records them as its own."""
    config = route_config(kafka)
    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    store.run(lambda session: register_routes(session, config.routes))
    produce(kafka["source"], 20)
    a = WorkerThread(kafka, "a", config, worker_id="wa", store=store)
    b = WorkerThread(kafka, "b", config, worker_id="wb", store=store)
    owners = lambda: {k: w.split("@")[0] for k, (w, _) in store.run(lambda s: partition_owners(s, "r")).items()}  # noqa: E731
    try:
        wait_until(lambda: all_copied(kafka) and len(a.worker.inflight.ledgers) == len(b.worker.inflight.ledgers)
                   == PARTITIONS // 2, what="both copying", alive=(a, b))
        wait_until(lambda: owners() == {**{k: "wa" for k in a.worker.inflight.ledgers},
                                        **{k: "wb" for k in b.worker.inflight.ledgers}}, what="owners recorded",
                   alive=(a, b))
        assert store.run(lambda s: partition_owners(s, "r"))[next(iter(a.worker.inflight.ledgers))][0] == \
            f"wa@{socket.gethostname()}:{os.getpid()}"
        assert a.finish() is None
        wait_until(lambda: owners() == {(TOPIC, p): "wb" for p in range(PARTITIONS)}, what="b owning all",
                   alive=(b,))
    finally:
        assert b.finish() is None
    assert store.run(lambda s: partition_owners(s, "r")) == {}
    store.close()


def test_a_consumer_renewed_for_a_topic_created_again_whose_close_never_returns_is_left_behind(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by CI's fault run (seed 11): the source restarted, then a topic was created again; the worker renewed
    its consumer, whose close (its hand-over's commit waiting for a coordinator) did not return: the worker did
    not stop within 40 s of SIGTERM and was killed. A renewed consumer now gets a bounded close."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    produce(kafka["source"], 20)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    wedged, old = threading.Event(), worker.worker.consumer
    old.close_blocks = wedged  # type: ignore[attr-defined]
    source = kafka["source"]
    with source.lock:
        source.delete_topic(TOPIC)
        source.create_topic(TOPIC, PARTITIONS)
        produce(source, 5)
    wait_until(lambda: "the source consumer did not close in" in caplog.text, what="the old consumer left behind",
               alive=(worker,))
    old.group.expire(old.member_id)  # type: ignore[attr-defined]  # its session ends (45 s on brokers)
    wait_until(lambda: all(len(kafka["target"].records(REPLICA, p)) >= 25 for p in range(PARTITIONS)),
               timeout=30, what="the new topic copied by a new consumer", alive=(worker,))
    assert "the source consumer did not close in" in caplog.text
    assert worker.finish() is None  # it stops when asked
    wedged.set()


def test_a_topic_created_again_while_the_look_no_longer_hears_the_source_is_copied_whole(kafka: FakeKafka) -> None:
    """Seen in CI (tests/integration/worker/test_faults.py): after two source restarts, one worker's look failed
    for 90 s while the other worker's looked on, so it never learned its topic was created again, and copied
    nothing of the new one. Its look gets new admin clients."""
    produce(kafka["source"], 20)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    for admin in kafka.admins["a"]:
        admin.deaf = True
    source = kafka["source"]
    with source.lock:
        source.delete_topic(TOPIC)
        source.create_topic(TOPIC, PARTITIONS)
        produce(source, 5)
    wait_until(lambda: all(len(kafka["target"].records(REPLICA, p)) >= 25 for p in range(PARTITIONS)),
               what="the new topic copied", alive=(worker,))
    assert worker.finish() is None
    for p in range(PARTITIONS):  # the new topic's records are the old one's values again: read past the old 20
        copied = [record.value for record in kafka["target"].records(REPLICA, p)][20:]
        assert list(dict.fromkeys(copied)) == source_values(kafka, p), f"partition {p}"


def test_a_worker_whose_consumer_never_closes_still_stops_and_says_why(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """A stop must end: the source consumer's close (its leave, its last commit waiting for a coordinator) could
    block for good, and a worker asked to stop (SIGTERM) hung until it was killed. Its close is bounded now;
    what was acknowledged is committed before, so its partitions' next owner loses nothing."""
    caplog.set_level(logging.WARNING, logger="replicator.worker")
    produce(kafka["source"], 20)
    worker = WorkerThread(kafka, "a", route_config(kafka))
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    wait_until(lambda: committed(kafka) == {p: 20 for p in range(PARTITIONS)}, what="the commit", alive=(worker,))
    wedged = threading.Event()
    worker.worker.consumer.close_blocks = wedged  # type: ignore[attr-defined]
    began = time.monotonic()
    try:
        assert worker.finish(timeout=FAST.handover + FAST.close + 10) is None
        assert time.monotonic() - began < FAST.handover + FAST.close + 10
        assert "the source consumer did not close in 2 s: stopping without it" in caplog.text
    finally:
        wedged.set()
    assert_nothing_lost(kafka)


def owned_by(label: str) -> set[int]:
    """The partitions a worker's metrics say it owns."""
    return {int(s.labels["partition"]) for metric in REGISTRY.collect() if metric.name == "mirrorflow_partition_owned"
            for s in metric.samples if s.labels["worker"] == label and s.labels["route"] == "r" and s.value == 1}


def test_the_metrics_tell_which_partitions_each_worker_owns(kafka: FakeKafka) -> None:
    """#17: an operator reads from each worker's metrics which partitions it owns; before, only how many, and the
    lag gauge of a partition that had moved stayed behind on its old owner (a partition shown twice)."""
    produce(kafka["source"], 50)
    first = WorkerThread(kafka, "a", route_config(kafka), dataclasses.replace(FAST, lag=0.05), worker_id="w1")
    label = first.worker.label
    wait_until(lambda: all_copied(kafka) and owned_by(label) == set(range(PARTITIONS)), what="w1 owning all",
               alive=(first,))
    second = WorkerThread(kafka, "b", route_config(kafka), dataclasses.replace(FAST, lag=0.05), worker_id="w2")
    other = second.worker.label

    def shared() -> bool:
        mine, theirs = owned_by(label), owned_by(other)
        return bool(mine) and bool(theirs) and not mine & theirs and mine | theirs == set(range(PARTITIONS))

    wait_until(shared, what="the partitions shared, each owned once", alive=(first, second))
    assert second.finish() is None
    wait_until(lambda: owned_by(label) == set(range(PARTITIONS)) and not owned_by(other), what="w1 owning all again",
               alive=(first,))
    assert first.finish() is None
    assert not owned_by(label)
    assert all(lag_gauge(p) is None for p in range(PARTITIONS))  # no lag left behind for partitions nobody owns
    assert_nothing_lost(kafka)


def test_a_worker_cut_off_past_its_session_copies_nothing_of_what_it_no_longer_owns(kafka: FakeKafka) -> None:
    """Found by the fleet test (#17): a host cut off from the network for longer than the group's session timeout,
    once back, copied its old partitions again (4,070 records on real brokers) before the answer to its next
    heartbeat told it it was fenced; records its new owner had not copied yet could land before the new owner's.
    Now it holds (everything paused) once the source has been out of reach for a while, and joins anew when it is
    back. Before: 100 records copied again here."""
    produce(kafka["source"], 100)
    a = WorkerThread(kafka, "a", route_config(kafka), worker_id="w1")
    b = WorkerThread(kafka, "b", route_config(kafka), worker_id="w2")
    wait_until(lambda: all_copied(kafka) and len(a.worker.inflight.ledgers) == len(b.worker.inflight.ledgers) == 2
               and committed(kafka) == {p: 100 for p in range(PARTITIONS)}, what="two workers sharing the route",
               alive=(a, b))
    for cluster in ("source", "target"):
        kafka.cut("a", cluster)  # the host's link is down
    wait_until(lambda: a.worker.holding is not None, what="a holding its copy", alive=(a, b))
    kafka.expire("a")  # the group's session timeout: a's partitions go to b
    produce(kafka["source"], 100, start=100)
    wait_until(lambda: all_copied(kafka) and committed(kafka) == {p: 200 for p in range(PARTITIONS)},
               what="b copying everything", alive=(a, b))
    for cluster in ("source", "target"):
        kafka.heal("a", cluster)
    wait_until(lambda: a.worker.holding is None and len(a.worker.inflight.ledgers) == 2, what="a back with partitions",
               alive=(a, b))
    produce(kafka["source"], 50, start=200)  # the marker: copied after a is back
    wait_until(lambda: all_copied(kafka), what="the copy after a came back", alive=(a, b))
    assert a.finish() is None and b.finish() is None
    assert_nothing_lost(kafka)
    copies = {p: len(kafka["target"].records(REPLICA, p)) for p in range(PARTITIONS)}
    assert copies == {p: 250 for p in range(PARTITIONS)}, "a copied again what it no longer owned"


def test_a_worker_back_from_a_source_restart_leaves_the_group_before_it_joins_again(kafka: FakeKafka) -> None:
    """Found by the fault harness (seed 415, clean restarts of a one-node source): at the hold's end the worker
    closed its old consumer while librdkafka had not found the group's coordinator again (it reconnects, then asks
    for it), so its close sent no leave; the group kept the member, and the new consumer was refused the
    worker's id ("worker id still held") until the session timed out (10.8 s instead of 1-2 s; 45 s by Kafka's
    default). Here the session never times out by itself: before, the copy after the restart never came."""
    produce(kafka["source"], 100)
    timeouts = dataclasses.replace(FAST, coordinator=30.0)
    worker = WorkerThread(kafka, "a", route_config(kafka), timeouts, worker_id="w1")
    wait_until(lambda: all_copied(kafka), what="the first copy", alive=(worker,))
    kafka["source"].coordinator_refind_s = 1.0  # the old consumer finds its coordinator 1 s after the source is back
    kafka.cut("a", "source")  # the source restarting: out of reach for longer than the outage hold
    wait_until(lambda: worker.worker.holding is not None, what="the worker holding its copy", alive=(worker,))
    kafka.heal("a", "source")
    produce(kafka["source"], 50, start=100)  # the marker: copied only once the worker has joined again
    wait_until(lambda: all_copied(kafka), what="the copy after the restart", alive=(worker,), timeout=20)
    assert worker.worker.id_held_since is None, "the new consumer was refused the worker's id"
    assert worker.finish() is None
    assert_nothing_lost(kafka)


def test_a_worker_that_owns_nothing_leaves_the_group_too_before_it_joins_again(kafka: FakeKafka) -> None:
    """The same restart with two workers and one partition (seed 415 again, after the first fix): the worker that
    owned nothing closed its old consumer without a leave, the group gave the partition to that stale member at its
    next assignment, and the partition waited for the member's session to time out (the fakes' assignment may
    give it to the other worker: the stale member shows in the idle worker's new consumer refused its id)."""
    kafka["source"].create_topic("solo", 1)
    config = route_config(kafka, topics="[solo]")
    timeouts = dataclasses.replace(FAST, coordinator=30.0)
    workers = {name: WorkerThread(kafka, name, config, timeouts, worker_id=name) for name in ("a", "b")}
    wait_until(lambda: sum(len(w.worker.inflight.ledgers) for w in workers.values()) == 1, what="one owner",
               alive=tuple(workers.values()))
    idle = next(name for name, w in workers.items() if not w.worker.inflight.ledgers)
    kafka["source"].coordinator_refind_s = 1.0
    for name in workers:
        kafka.cut(name, "source")
    wait_until(lambda: all(w.worker.holding for w in workers.values()), what="both holding",
               alive=tuple(workers.values()))
    kafka.heal(idle, "source")  # the idle worker joins again first: the group's next assignment may give it "solo"
    wait_until(lambda: workers[idle].worker.holding is None, what="the idle worker back", alive=tuple(workers.values()))
    for name in workers:
        kafka.heal(name, "source")
    kafka["source"].append("solo", 0, b"k", b"marker", [], 1_000)
    wait_until(lambda: [r.value for r in kafka["target"].records("source.solo", 0)][-1:] == [b"marker"]
               if "source.solo" in kafka["target"].topics else False, what="the marker copied",
               alive=tuple(workers.values()), timeout=20)
    assert workers[idle].worker.id_held_since is None, "the idle worker's new consumer was refused its id"
    assert all(w.finish() is None for w in workers.values())
