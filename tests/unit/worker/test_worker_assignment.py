"""Positioner: where a newly assigned partition starts, and how a position retention deleted is recovered."""

from __future__ import annotations

import logging
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient
from prometheus_client import REGISTRY

from replicator.domain.commit_metadata import encode_note
from replicator.kafka.log_ranges import watermarks
from replicator.testing import FakeKafka
from replicator.testing.admin import FakeAdmin
from replicator.testing.consumer import FakeConsumer
from replicator.worker.assignment import Positioner, Watermarks, read_places
from tests.fake_route import route_config

TOPIC, LOW, HIGH = "orders", 4, 10
KEY = (TOPIC, 0)


@pytest.fixture
def kafka() -> FakeKafka:
    """``orders[0]``: records 0..9 written at 0 s, 1 s, ... 9 s; retention deleted 0..3."""
    fake = FakeKafka("source", "target")
    fake["source"].create_topic(TOPIC, 1)
    for n in range(HIGH):
        fake["source"].append(TOPIC, 0, b"k", f"v{n}".encode(), timestamp=n * 1000 or 1)
    fake["source"].delete_records(TOPIC, 0, LOW)
    return fake


class Reports:
    def __init__(self) -> None:
        self.losses: list[tuple[str, int, tuple[int, int]]] = []
        self.recreations: list[tuple[str, str, str]] = []

    def positioner(self, kafka: FakeKafka, **options: str) -> Positioner:
        route = route_config(kafka, **options).routes[0]
        return Positioner(route, lambda *args: self.losses.append(args),
                          lambda *args: self.recreations.append(args))


def consumer(kafka: FakeKafka, committed: int | None = None, note: str | None = None) -> Consumer:
    if committed is not None:
        kafka["source"].group("g").committed[KEY] = (committed, note)
    return cast(Consumer, FakeConsumer({"group.id": "g"}, kafka["source"]))


def marks(kafka: FakeKafka) -> Watermarks:
    """The source's watermarks as the worker reads them: one admin request for all partitions."""
    admin = cast(AdminClient, FakeAdmin({}, kafka["source"]))
    return lambda partitions: watermarks(admin, partitions)


def place(positioner: Positioner, reader: Consumer, ids: dict[str, str],
          watermarks: Watermarks) -> list[TopicPartition]:
    """Where the partition starts: what placing reads (through ``reader``), then what it decides."""
    reads = read_places(positioner.route, [TopicPartition(TOPIC, 0)], lambda _topics: ids,
                        lambda asked: reader.committed(asked), watermarks,
                        lambda asked: reader.offsets_for_times(asked))
    return positioner.decide(reads)


def lost_total() -> float:
    return REGISTRY.get_sample_value("mirrorflow_records_lost_to_retention_total", {"route": "r", "topic": TOPIC}) or 0


@pytest.mark.parametrize(("options", "committed", "offset", "losses", "failure"), [
    ({}, None, LOW, [], None),  # never copied: start earliest
    ({"start": "latest"}, None, HIGH, [], None),
    ({"start": "latest"}, 6, 6, [], None),  # resumed where it stopped, whatever `start` says
    ({}, HIGH, HIGH, [], None),  # everything was copied
    ({}, 2, LOW, [(TOPIC, 0, (2, LOW))], None),  # retention ran ahead: reported, and copying goes on
    ({"on_data_loss": "fail"}, 2, LOW, [(TOPIC, 0, (2, LOW))],
     "orders[0]: offsets 2..3 were deleted by retention before they were copied (on_data_loss: fail)"),
    ({"on_data_loss": "fail"}, LOW, LOW, [], None),  # nothing lost: nothing to fail on
    ({}, 15, LOW, [], None),  # beyond the log end (topic truncated or recreated): copied anew
    ({"start": '"1970-01-01T00:00:07+00:00"'}, None, 7, [], None),  # the first record at or after start
    ({"start": '"1970-01-01T00:00:02+00:00"'}, None, LOW, [], None),  # ... retention took those: the log start
    ({"start": '"2990-01-01T00:00:00+00:00"'}, None, HIGH, [], None),  # ... none yet: the log end
    ({"start": '"2990-01-01T00:00:00+00:00"'}, 6, 6, [], None),
], ids=["new-earliest", "new-latest", "resume", "caught-up", "retention", "retention-fail", "at-low-fail",
        "beyond-end", "timestamp", "timestamp-deleted", "timestamp-future", "timestamp-resume"])
def test_place_starts_each_partition_where_nothing_is_skipped_unreported(
        kafka: FakeKafka, options: dict[str, str], committed: int | None, offset: int,
        losses: list[Any], failure: str | None) -> None:
    reports = Reports()
    positioner = reports.positioner(kafka, **options)
    before = lost_total()
    placed = place(positioner, consumer(kafka, committed), {}, marks(kafka))
    assert [(tp.topic, tp.partition, tp.offset) for tp in placed] == [(TOPIC, 0, offset)]
    assert reports.losses == losses
    assert lost_total() - before == sum(to - since for _, _, (since, to) in losses)
    assert positioner.failure == failure
    assert reports.recreations == []


@pytest.mark.parametrize(("note", "current_id", "offset", "recreated"), [
    (encode_note(1, "old-id"), "new-id", LOW, True),  # a deleted topic's commit: copied from the start
    (encode_note(1, "new-id"), "new-id", 6, False),
    (encode_note(1, None), "new-id", 6, False),  # noted before topic ids were: trusted
    (encode_note(1, "old-id"), None, 6, False),  # the current id unknown: trusted
    ("foreign metadata", "new-id", 6, False),
])
def test_a_commit_of_a_deleted_topic_of_the_same_name_is_not_reused(
        kafka: FakeKafka, note: str, current_id: str | None, offset: int, recreated: bool) -> None:
    reports = Reports()
    positioner = reports.positioner(kafka, start="latest")
    ids = {} if current_id is None else {TOPIC: current_id}
    placed = place(positioner, consumer(kafka, 6, note), ids, marks(kafka))
    assert [tp.offset for tp in placed] == [offset]
    assert reports.losses == []
    assert [(topic, topic_id) for topic, topic_id, _ in reports.recreations] == (
        [(TOPIC, "new-id")] if recreated else [])
    if recreated:
        assert "committed offset 6 of partition 0 was not reused" in reports.recreations[0][2]


def test_a_position_beyond_the_log_end_is_logged_as_a_reset(kafka: FakeKafka,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "replicator.worker.assignment")
    place(Reports().positioner(kafka), consumer(kafka, 15), {}, marks(kafka))
    assert [r.getMessage() for r in caplog.records] == [
        "committed offset beyond the log end (topic recreated or truncated): copying it anew route=r "
        "topic=orders partition=0 from=4"]


def fetched(fake: Consumer) -> list[int]:
    return [m.offset() for m in fake.consume(100, 0) if m.error() is None]  # type: ignore[misc]


@pytest.mark.parametrize("stuck", [False, True], ids=["seekable", "after-librdkafka-reset-error"])
def test_recover_moves_a_fallen_off_partition_to_the_log_start_and_reports_the_gap(kafka: FakeKafka,
                                                                                  stuck: bool) -> None:
    reports = Reports()
    positioner = reports.positioner(kafka)
    fake = consumer(kafka)
    fake.incremental_assign([TopicPartition(TOPIC, 0, 2)])
    if stuck:  # librdkafka's own reset failed: the partition is in a state no seek leaves
        events = fake.consume(100, 0) + fake.consume(100, 0)  # type: ignore[operator]
        assert [m.error().code() for m in events] == [KafkaError._AUTO_OFFSET_RESET]
    assert positioner.recover(fake, KEY, 2) == LOW
    assert positioner.failure is None
    assert reports.losses == [(TOPIC, 0, (2, LOW))]
    assert fetched(fake) == list(range(LOW, HIGH))


def test_recover_with_on_data_loss_fail_fails_and_moves_nothing(kafka: FakeKafka) -> None:
    reports = Reports()
    positioner = reports.positioner(kafka, on_data_loss="fail")
    fake = consumer(kafka)
    fake.incremental_assign([TopicPartition(TOPIC, 0, 2)])
    assert positioner.recover(fake, KEY, 2) is None
    assert positioner.failure == (
        "orders[0]: offsets 2..3 were deleted by retention before they were copied (on_data_loss: fail)")
    assert fake.position([TopicPartition(TOPIC, 0)])[0].offset == 2


def test_recover_prefers_the_consumers_fetch_position_to_the_ledgers(kafka: FakeKafka) -> None:
    reports = Reports()
    positioner = reports.positioner(kafka)
    fake = consumer(kafka)
    fake.incremental_assign([TopicPartition(TOPIC, 0, 3)])
    positioner.recover(fake, KEY, 1)
    assert reports.losses == [(TOPIC, 0, (3, LOW))]


@pytest.mark.parametrize("start", ["latest", '"1970-01-01T00:00:07+00:00"'])
def test_recover_of_a_placed_partition_never_skips_records_still_in_the_log(kafka: FakeKafka, start: str) -> None:
    positioner = Reports().positioner(kafka, start=start)
    fake = consumer(kafka)
    fake.incremental_assign([TopicPartition(TOPIC, 0, 2)])
    fake.consume(100, 0)
    fake.consume(100, 0)  # the out-of-range fetch: librdkafka's reset error, the fetch position unknown
    positioner.recover(fake, KEY, None)  # nothing acknowledged yet
    assert fetched(fake)[:1] == [LOW]


def test_a_route_started_at_latest_copies_what_retention_left_after_a_pause(caplog: pytest.LogCaptureFixture) -> None:
    """Found by these tests: recover decided by the route's `start` when the position was unknown, and a
    route started at latest jumped to the log end, skipping what retention had left, with no loss reported."""
    from tests.fake_route import WorkerThread, wait_until

    kafka = FakeKafka("source", "target")
    kafka["source"].create_topic(TOPIC, 1)
    kafka["source"].append(TOPIC, 0, None, b"before the route started")
    worker = WorkerThread(kafka, "a", route_config(kafka, start="latest"))
    wait_until(lambda: worker.worker.inflight.owns(KEY), what="the partition placed", alive=(worker,))
    kafka.freeze("a")  # the worker stops fetching while records arrive and retention runs ahead of it
    for n in range(20):
        kafka["source"].append(TOPIC, 0, None, f"new{n}".encode())
    kafka["source"].delete_records(TOPIC, 0, 11)  # new0..new9 gone, new10..new19 still there
    kafka.thaw("a")
    source_consumer = worker.worker.consumer
    wait_until(lambda: source_consumer.position([TopicPartition(TOPIC, 0)])[0].offset == 21
               and worker.worker.inflight.unsettled() == 0 and not worker.worker.backlog,
               what="the worker at the log end with nothing in flight", alive=(worker,))
    assert worker.finish() is None
    copied = [r.value for r in kafka["target"].records("source.orders", 0)] if (
        "source.orders" in kafka["target"].topics) else []
    assert copied == [f"new{n}".encode() for n in range(10, 20)]
    assert "lost_from=1 lost_to_exclusive=11 count=10" in caplog.text  # placed at 1: new0..new9 never copied
