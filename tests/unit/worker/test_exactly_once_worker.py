"""The exactly-once worker on fake clients with Kafka's transactions: what a read_committed reader of the
target sees is every source record once, in order, byte for byte, through a full queue, a failed delivery, a
zombie, a fenced producer and a hand-over."""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from replicator.domain.positions import SourcePosition, decode_positions
from replicator.state.repository import register_routes
from replicator.state.store import StateStore
from replicator.state.transaction_counts import TransactionTotals, totals
from replicator.testing import FakeKafka
from replicator.testing.cluster import FakeCluster
from replicator.testing.consumer import FakeConsumer
from replicator.testing.message import FakeMessage
from replicator.testing.producer import FakeProducer
from replicator.testing.transactional import FakeTransactionalProducer
from replicator.worker.exactly_once import ExactlyOnceWorker
from replicator.worker.timeouts import WorkerTimeouts
from tests.fake_route import FAST, WorkerThread, route_config, topic_found_while_the_id_is_held, wait_until

TOPIC, REPLICA, PARTITIONS = "orders", "source.orders", 4
POSITIONS_GROUP = "mirrorflow-r.positions"
# The producer watch (no report for `stalled` s: a new producer) left out, for tests that stop the target's
# acknowledgements and hold the producer: on a loaded machine FAST's 1 s replaced it under them (CI, session 36).
HOLDS_ITS_PRODUCER = dataclasses.replace(FAST, stalled=60.0)


def produce(cluster: FakeCluster, per_partition: int, start: int = 0) -> None:
    for partition in range(PARTITIONS):
        for n in range(start, start + per_partition):
            cluster.append(TOPIC, partition, f"k{n}".encode(), f"p{partition}-{n}".encode(), [("h", b"x")], 1_000 + n)


def eos_worker(kafka: FakeKafka, process: str, worker_id: str | None = None, store: StateStore | None = None,
               timeouts: WorkerTimeouts = FAST, **route: str) -> WorkerThread:
    config = route_config(kafka, guarantee="exactly-once", transactions="{interval_ms: 50}", **route)
    return WorkerThread(kafka, process, config, timeouts, worker_id=worker_id, kind=ExactlyOnceWorker, store=store)


def read_committed(kafka: FakeKafka, partitions: int = PARTITIONS) -> dict[int, list[FakeMessage]]:
    """What a read_committed consumer of the replica gets now, per partition."""
    target = kafka["target"]
    if REPLICA not in target.topics:
        return {p: [] for p in range(partitions)}
    reader = FakeConsumer({"group.id": "reader", "isolation.level": "read_committed"}, target)
    reader.incremental_assign([TopicPartition(REPLICA, p, OFFSET_BEGINNING) for p in range(partitions)])
    got: dict[int, list[FakeMessage]] = {p: [] for p in range(partitions)}
    while batch := reader.consume(1_000, 0):
        for message in batch:
            got[message.partition() or 0].append(message)
    return got


def visible(kafka: FakeKafka) -> dict[int, int]:
    return {p: len(messages) for p, messages in read_committed(kafka).items()}


def all_visible(kafka: FakeKafka, per_partition: int) -> bool:
    return visible(kafka) == dict.fromkeys(range(PARTITIONS), per_partition)


def assert_exactly_once(kafka: FakeKafka) -> None:
    """Every source record visible once on the target, byte for byte, in source order."""
    got = read_committed(kafka)
    for p in range(PARTITIONS):
        source = kafka["source"].records(TOPIC, p)
        assert [m.value() for m in got[p]] == [r.value for r in source], f"partition {p}"
        for message, original in zip(got[p], source, strict=True):
            assert (message.key(), message.timestamp()[1], message.headers()) == \
                (original.key, original.timestamp, list(original.headers)), f"partition {p}"


def positions(kafka: FakeKafka) -> dict[int, dict[tuple[str, int], SourcePosition]]:
    """The source positions committed in the positions group on the target, per target partition."""
    committed = kafka["target"].group(POSITIONS_GROUP).committed
    return {p: decode_positions(committed[(REPLICA, p)][1]) for p in range(PARTITIONS) if (REPLICA, p) in committed}


def positions_at(kafka: FakeKafka, offset: int) -> bool:
    topic_id = kafka["source"].topics[TOPIC].topic_id
    return positions(kafka) == {p: {(TOPIC, p): SourcePosition(offset, topic_id)} for p in range(PARTITIONS)}


def producer_of(kafka: FakeKafka, process: str) -> FakeTransactionalProducer:
    made = kafka.producers[process][-1]
    assert isinstance(made, FakeTransactionalProducer)
    return made


@pytest.fixture
def kafka() -> FakeKafka:
    fake = FakeKafka("source", "target")
    fake["source"].create_topic(TOPIC, PARTITIONS)
    return fake


def test_records_are_copied_once_and_show_only_when_their_transaction_commits(kafka: FakeKafka) -> None:
    held = threading.Event()
    kafka["target"].gates["commit_transaction"] = held
    produce(kafka["source"], 100)
    worker = eos_worker(kafka, "a")
    wait_until(lambda: kafka["target"].waiting["commit_transaction"] == 1, what="a commit held", alive=(worker,))
    written = sum(len(kafka["target"].records(REPLICA, p)) for p in range(PARTITIONS))
    assert written > 0, "the transaction being committed wrote no record: this proves nothing"
    assert visible(kafka) == dict.fromkeys(range(PARTITIONS), 0)  # written, not yet committed
    held.set()
    wait_until(lambda: all_visible(kafka, 100) and positions_at(kafka, 100), what="the copy", alive=(worker,))
    assert worker.finish() is None
    assert_exactly_once(kafka)
    source_group = kafka["source"].group("mirrorflow-r").committed  # the copy, for status and lag
    assert {p: source_group[(TOPIC, p)][0] for p in range(PARTITIONS)} == dict.fromkeys(range(PARTITIONS), 100)


def test_a_full_producer_queue_inside_a_transaction_loses_and_repeats_nothing(kafka: FakeKafka) -> None:
    produce(kafka["source"], 500)
    kafka["target"].deliveries_per_poll = 7
    worker = eos_worker(kafka, "a", producer='{queue.buffering.max.messages: "20"}')
    wait_until(lambda: all_visible(kafka, 500) and positions_at(kafka, 500), timeout=60, what="the copy",
               alive=(worker,))
    assert producer_of(kafka, "a").queue_full > 0, "the queue never filled: this proves nothing"
    assert worker.finish() is None
    assert_exactly_once(kafka)
    assert all(len(kafka["target"].records(REPLICA, p)) == 500 for p in range(PARTITIONS))  # nothing aborted


@pytest.mark.parametrize("error", [KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART],
                         ids=["unknown", "not-propagated"])
def test_a_failed_delivery_aborts_and_copies_again_from_the_last_commit(kafka: FakeKafka, tmp_path: Path,
                                                                        error: int) -> None:
    """UNKNOWN_TOPIC_OR_PART: a replica the target's metadata did not show within 30 s (librdkafka's
    topic.metadata.propagation.max.ms) has its queued records failed so; the route stopped on it."""
    kafka["target"].hidden_error = error
    produce(kafka["source"], 50)
    store = StateStore(f"sqlite:///{tmp_path / 'state.db'}")
    store.run(lambda session: register_routes(session, route_config(kafka).routes))
    worker = eos_worker(kafka, "a", store=store, timeouts=HOLDS_ITS_PRODUCER)
    wait_until(lambda: all_visible(kafka, 50) and positions_at(kafka, 50), what="the first copy", alive=(worker,))
    kafka["target"].deliveries_per_poll = 0  # what is produced now waits in the queue, in the open transaction
    produce(kafka["source"], 50, start=50)
    producer = producer_of(kafka, "a")
    wait_until(lambda: {item.partition for item in producer.queue} == set(range(PARTITIONS)),
               what="records of every partition queued", alive=(worker,))
    kafka["target"].hidden_partitions.add((REPLICA, 1))  # its queued records fail: the transaction must abort
    kafka["target"].deliveries_per_poll = None
    wait_until(lambda: kafka["target"].transactions.aborted, what="the abort", alive=(worker,))
    kafka["target"].hidden_partitions.clear()
    wait_until(lambda: all_visible(kafka, 100) and positions_at(kafka, 100), what="the copy after the abort",
               alive=(worker,))
    assert worker.finish() is None
    assert_exactly_once(kafka)
    assert len(kafka["target"].records(REPLICA, 0)) > 100, "nothing was written before the abort: this proves nothing"
    coordinator = kafka["target"].transactions  # what `mirrorflow status` shows, as the worker stored it
    assert store.run(lambda session: totals(session, "r")) == TransactionTotals(
        coordinator.committed, len(coordinator.aborted), worker.worker._started)
    store.close()


def test_records_acknowledged_without_an_offset_abort_the_transaction_saying_so_and_show_once(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """No proof they were written (the long form's loss of seed 381, at-least-once): the open transaction aborts
    and the copy starts again from the commit. The abort named the wrong cause ("failed as not there")."""
    caplog.set_level(logging.WARNING, logger="replicator.worker")
    kafka["target"].offsetless_unwritten[REPLICA] = 3
    produce(kafka["source"], 100)
    worker = eos_worker(kafka, "a")
    wait_until(lambda: all_visible(kafka, 100) and positions_at(kafka, 100), what="the copy", alive=(worker,))
    assert worker.finish() is None
    assert_exactly_once(kafka)
    assert kafka["target"].transactions.aborted, "no transaction aborted: this proves nothing"
    assert ("transaction aborted" in caplog.text and "reason='records acknowledged without an offset (no proof they "
            "were written): copying them again'" in caplog.text)


def test_a_zombie_cannot_commit_its_open_transaction(kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """b's membership expires while it commits (held at send_offsets_to_transaction): a takes its partitions
    and copies them; b's commit is refused, its transaction aborted, and nothing of it ever shows."""
    caplog.set_level(logging.WARNING, logger="replicator.worker.exactly_once")
    produce(kafka["source"], 100)
    a, b = eos_worker(kafka, "a"), eos_worker(kafka, "b")
    wait_until(lambda: all_visible(kafka, 100) and len(a.worker.inflight.ledgers) == 2
               and len(b.worker.inflight.ledgers) == 2, what="both copying", alive=(a, b))
    held = threading.Event()
    kafka["target"].gates["send_offsets_to_transaction@b"] = held
    produce(kafka["source"], 100, start=100)
    wait_until(lambda: kafka["target"].waiting["send_offsets_to_transaction@b"] == 1, what="b committing",
               alive=(a, b))
    zombie_txn = producer_of(kafka, "b").transaction
    assert zombie_txn is not None and any(t == REPLICA for t, _ in zombie_txn.partitions)
    kafka.expire("b")
    wait_until(lambda: positions_at(kafka, 200), what="a copying b's partitions", alive=(a, b))
    assert not all_visible(kafka, 200)  # a's copies wait behind b's open transaction (the last stable offset)
    held.set()
    wait_until(lambda: all_visible(kafka, 200), what="b's transaction ended", alive=(a, b))
    assert zombie_txn.state == "aborted"
    assert "UNKNOWN_MEMBER_ID" in caplog.text
    produce(kafka["source"], 100, start=200)
    wait_until(lambda: all_visible(kafka, 300) and len(b.worker.inflight.ledgers) == 2, what="b back at work",
               alive=(a, b))
    assert a.finish() is None and b.finish() is None
    assert_exactly_once(kafka)


def test_partitions_that_cannot_be_placed_yet_do_not_hold_up_the_commits_of_the_others(kafka: FakeKafka) -> None:
    """a takes b's partitions while b's commit holds their positions (pending in b's transaction): a cannot place
    them until that transaction ends, and meanwhile goes on committing what it copies of its own. Placing's retry and
    the commit's retry were one deadline: each failed placement put a's commit off until placing's next try, which
    failed and put it off again, so a committed once per retry (1 s by default) at best, copying nothing between
    (a source partition whose leader is away would hold a whole route so)."""
    config = route_config(kafka, guarantee="exactly-once", transactions="{interval_ms: 50}")
    produce(kafka["source"], 100)
    # Placing tried again every 5 s: the commits of a's own partitions must not wait for it (they take 50 ms).
    a = WorkerThread(kafka, "a", config, dataclasses.replace(FAST, retry=5.0), kind=ExactlyOnceWorker)
    b = eos_worker(kafka, "b")
    wait_until(lambda: all_visible(kafka, 100) and len(a.worker.inflight.ledgers) == 2
               and len(b.worker.inflight.ledgers) == 2, what="both copying", alive=(a, b))
    own = sorted(p for _, p in a.worker.inflight.ledgers)
    held = threading.Event()
    kafka["target"].gates["commit_transaction@b"] = held
    produce(kafka["source"], 100, start=100)
    wait_until(lambda: kafka["target"].waiting["commit_transaction@b"] == 1, what="b's commit held", alive=(a, b))
    kafka.expire("b")
    wait_until(lambda: "placing assigned partitions" in a.worker.links.troubles,
               what="a unable to place b's partitions", alive=(a, b))
    produce(kafka["source"], 100, start=200)
    wait_until(lambda: all(visible(kafka)[p] == 300 for p in own), timeout=3, what="a committing its own partitions",
               alive=(a, b))
    assert len(a.worker.unplaced) == 2  # b's, still waiting for b's transaction
    held.set()
    wait_until(lambda: all_visible(kafka, 300), what="every partition copied", alive=(a, b))
    assert a.finish() is None and b.finish() is None
    assert_exactly_once(kafka)


def test_a_topic_found_while_the_worker_id_is_still_held_in_the_positions_group_waits_for_the_rejoin(
        kafka: FakeKafka) -> None:
    """As on an at-least-once route (found by the fault harness): the member of the positions group refused
    while its id is held, a topic found then must not stop the worker."""
    config = route_config(kafka, topics="['orders.*']", guarantee="exactly-once", transactions="{interval_ms: 50}")
    produce(kafka["source"], 50)
    first = WorkerThread(kafka, "first", config, FAST, worker_id="w1", kind=ExactlyOnceWorker)
    wait_until(lambda: all_visible(kafka, 50), what="the first copy", alive=(first,))
    kafka.kill("first", expire=False)  # SIGKILL: the positions group holds its id until the session times out
    again = WorkerThread(kafka, "again", config, dataclasses.replace(FAST, rejoin=0.5), worker_id="w1",
                         kind=ExactlyOnceWorker)
    late = topic_found_while_the_id_is_held(kafka, again, "first")

    def late_visible() -> list[bytes | None]:
        if "source.orders.late" not in kafka["target"].topics:
            return []
        reader = FakeConsumer({"group.id": "reader", "isolation.level": "read_committed"}, kafka["target"])
        reader.incremental_assign([TopicPartition("source.orders.late", 0, OFFSET_BEGINNING)])
        return [m.value() for m in reader.consume(1_000, 0)]

    wait_until(lambda: len(late_visible()) == 20 and all_visible(kafka, 50),
               what="both topics copied after the id came back", alive=(again,))
    assert again.finish() is None
    assert_exactly_once(kafka)
    assert late_visible() == late


def test_partitions_the_positions_group_gives_a_worker_whose_member_never_takes_them_up_are_copied_anew(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """As on an at-least-once route (the fault harness, seed 26): an exactly-once worker is given its partitions
    by the positions group on the target. One its member never takes up is held there for that member and copied
    by nobody; the worker compares what the group says it gave it with what its member handed over, and gets new
    clients."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    produce(kafka["source"], 20)
    a = eos_worker(kafka, "a", worker_id="wa", stuck_after="1")
    b = eos_worker(kafka, "b", worker_id="wb", stuck_after="1")
    try:
        wait_until(lambda: all_visible(kafka, 20) and len(a.worker._sources) == len(b.worker._sources) == 2,
                   what="both copying", alive=(a, b))
        a.worker.member.unresolved.add(REPLICA)  # type: ignore[attr-defined]
        assert b.finish() is None  # its partitions go to a, whose member does not take them up
        produce(kafka["source"], 30, start=20)
        wait_until(lambda: all_visible(kafka, 50), what="every partition copied by a", alive=(a,))
    finally:
        b.finish()
        assert a.finish() is None
    said = [r.getMessage() for r in caplog.records if "did not hand them over" in r.getMessage()]
    assert len(said) == 1 and f"group {POSITIONS_GROUP} gave this worker" in said[0], said
    assert_exactly_once(kafka)


def renewals_when_the_positions_group_mishears_a_hand_over(kafka: FakeKafka, caplog: pytest.LogCaptureFixture,
                                                          mishear: str) -> list[str]:
    """a copies alone; the positions group then mishears a's side of a hand-over (``mishear``: the FakeGroup
    method, given a's member); b joins and must get half the partitions; every record visible once. The renewals
    logged, in order."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    produce(kafka["source"], 20)
    a = eos_worker(kafka, "a", worker_id="wa", stuck_after="3")
    b = None
    try:
        wait_until(lambda: all_visible(kafka, 20), what="a copying", alive=(a,))
        getattr(kafka["target"].group(POSITIONS_GROUP), mishear)("wa")
        b = eos_worker(kafka, "b", worker_id="wb", stuck_after="3")  # a is to give half up
        produce(kafka["source"], 30, start=20)
        wait_until(lambda: all_visible(kafka, 50) and len(b.worker._sources) == 2, what="b copying what a gave up",
                   alive=(a, b))
    finally:
        assert a.finish() is None
        assert b is None or b.finish() is None
    assert_exactly_once(kafka)
    return [r.getMessage() for r in caplog.records if "source consumer renewed" in r.getMessage()]


def test_partitions_a_worker_revoked_that_the_positions_group_never_heard_of_are_released_by_its_joining_anew(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the exactly-once fault pairs (overlap-eos-28b): a worker revoked three partitions a second after the
    target, the positions group's coordinator, came back; the coordinator kept them as that worker's, and the
    worker that joined waited for them 3 minutes through three members of its own. The worker that released them
    now sees another member still waiting for them, and joins anew; nothing is copied twice."""
    said = renewals_when_the_positions_group_mishears_a_hand_over(kafka, caplog, "lose_releases")
    assert any(f"group {POSITIONS_GROUP} still counts {REPLICA}[" in line and "as this worker's, revoked 2 s ago"
               in line for line in said), said
    assert not any("did not hand them over" in line for line in said), said


def test_partitions_a_worker_was_never_told_to_give_up_in_the_positions_group_are_released_by_its_joining_anew(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the fault pairs (worker-join+target-freeze, exactly-once): a worker kept all seven partitions for
    90 s while four workers joined; the positions group counted them pending revocation and the worker's member
    was never told to revoke them. The worker now sees another member waiting for partitions it holds, and joins
    anew; nothing is copied twice."""
    said = renewals_when_the_positions_group_mishears_a_hand_over(kafka, caplog, "lose_revocations")
    assert any(f"group {POSITIONS_GROUP} took {REPLICA}[" in line and "client was never told to give them up" in line
               for line in said), said
    assert not any("did not hand them over" in line for line in said), said


def test_a_producer_that_acknowledges_nothing_while_its_commit_is_due_is_replaced_alone(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the exactly-once fault pairs (a worker leaving while the target was frozen): after the thaw
    librdkafka's producer lost its transaction coordinator for good, the due commit waited for acknowledgements
    that never came, and the source was not read meanwhile. After 30 s the stuck watch took the standing positions
    for a consumer that no longer fetches, and renewed every client (the group's member too: a rebalance). Now the
    producer alone is replaced, saying why, and every record is visible once."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    config = route_config(kafka, guarantee="exactly-once", transactions="{interval_ms: 50}")
    timeouts = dataclasses.replace(FAST, stalled=60.0, acks_due=1.0)  # the general watch would wait a minute
    produce(kafka["source"], 20)
    worker = WorkerThread(kafka, "a", config, timeouts, kind=ExactlyOnceWorker)
    try:
        wait_until(lambda: all_visible(kafka, 20), what="the first copy", alive=(worker,))
        wedged = worker.worker._producer
        wedged.wedge()  # type: ignore[union-attr]
        produce(kafka["source"], 30, start=20)
        wait_until(lambda: all_visible(kafka, 50), what="the copy by a new producer", alive=(worker,))
    finally:
        assert worker.finish() is None
    assert worker.worker._producer is not wedged
    said = [r.getMessage() for r in caplog.records]
    assert any("producer replaced" in line and "its commit waited" in line and "for acknowledgements of" in line
               for line in said), said
    assert not any("source consumer renewed" in line for line in said), said
    assert_exactly_once(kafka)


def test_a_producer_whose_transaction_takes_no_more_records_is_replaced_and_the_record_is_not_blamed(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the 100-pair exactly-once fault run (seed 305, twice after a source topic was created again): the
    producer's transaction was in no state to take records, ``produce`` raised _STATE ("Erroneous state"), and
    the worker stopped at the record as if the target refused it. The producer is replaced instead, and the copy
    goes back to the last commit: every record visible once."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    produce(kafka["source"], 20)
    worker = eos_worker(kafka, "a")
    try:
        wait_until(lambda: all_visible(kafka, 20), what="the first copy", alive=(worker,))
        doomed = producer_of(kafka, "a")
        doomed.abortable = KafkaError(KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, "the transaction failed")
        produce(kafka["source"], 30, start=20)
        wait_until(lambda: all_visible(kafka, 50), what="the copy by a new producer", alive=(worker,))
    finally:
        assert worker.finish() is None
    assert not any(r.levelno >= logging.ERROR for r in caplog.records), caplog.text
    assert "producer replaced" in caplog.text and "Erroneous state" in caplog.text
    assert_exactly_once(kafka)


def test_a_second_worker_with_the_same_id_fences_the_first_which_takes_its_producer_back(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """b's producer fences a's (same transactional id) while b waits for its worker id, which a holds in the
    positions group: a starts a new producer (fencing b's idle one) and goes on from its last commit; the
    records a's fenced producer still held (purged, not refused by the target) stop nothing."""
    produce(kafka["source"], 100)
    a = eos_worker(kafka, "a", worker_id="w1")
    wait_until(lambda: all_visible(kafka, 100), what="the first copy", alive=(a,))
    b = eos_worker(kafka, "b", worker_id="w1")
    wait_until(lambda: kafka["target"].transactions.epochs.get("mirrorflow-r-w1") == 1, what="b's producer",
               alive=(a, b))
    produce(kafka["source"], 100, start=100)
    wait_until(lambda: all_visible(kafka, 200) and positions_at(kafka, 200), what="a copying on",
               alive=(a, b))
    assert "producer replaced, a new one copies again from the last commit" in caplog.text
    assert "worker id still held" in caplog.text  # b, waiting for the id a holds
    assert not any(r.exc_info for r in caplog.records), "a traceback was logged"
    assert a.finish() is None and b.finish() is None
    assert_exactly_once(kafka)


def test_a_hand_over_commits_the_leaving_partitions_so_the_new_owner_repeats_nothing(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """b joins while a's open transaction holds unacknowledged records of every partition (the target
    acknowledges nothing meanwhile, so only the revocation can commit them): b resumes after them."""
    caplog.set_level(logging.INFO, logger="replicator.worker.placing")
    produce(kafka["source"], 100)
    a = eos_worker(kafka, "a", timeouts=HOLDS_ITS_PRODUCER)
    wait_until(lambda: all_visible(kafka, 100) and positions_at(kafka, 100), what="the first copy", alive=(a,))
    kafka["target"].deliveries_per_poll = 0
    produce(kafka["source"], 100, start=100)
    producer = producer_of(kafka, "a")
    wait_until(lambda: {item.partition for item in producer.queue} == set(range(PARTITIONS)),
               what="records of every partition in flight", alive=(a,))
    b = eos_worker(kafka, "b")
    wait_until(lambda: len(b.worker.inflight.ledgers) == 2, what="the hand-over", alive=(a, b))
    kafka["target"].deliveries_per_poll = None
    wait_until(lambda: all_visible(kafka, 200) and positions_at(kafka, 200), what="the copy by both",
               alive=(a, b))
    assert a.finish() is None and b.finish() is None
    assert_exactly_once(kafka)
    for p in range(PARTITIONS):  # not even an aborted copy: nothing was written twice
        assert [r.value for r in kafka["target"].records(REPLICA, p)] == \
            [r.value for r in kafka["source"].records(TOPIC, p)], f"partition {p}"
    # b's first placement: the hand-over. (Once a has finished, b may take a's partitions too, at 200.)
    first = next(r for r in caplog.records if r.threadName == "worker-b" and r.msg.startswith("placed"))
    resumed = [int(offset) for offset in re.findall(r"@(\d+)", first.getMessage())]
    assert len(resumed) == 2 and min(resumed) > 100, f"b did not resume where the hand-over committed: {resumed}"


def test_a_worker_stopped_with_its_transaction_open_commits_it_as_its_member_leaves(kafka: FakeKafka) -> None:
    """The stop's revocation (served by the member's close) commits the open transaction: its offsets carry the
    membership the member gave before its close -- asked in the close, librdkafka's call waits for the group's
    thread, which can wait for the close (the at-least-once worker hung for good on ``memberid`` that way)."""
    produce(kafka["source"], 100)
    config = route_config(kafka, guarantee="exactly-once", transactions="{interval_ms: 60000}")
    worker = WorkerThread(kafka, "a", config, FAST, kind=ExactlyOnceWorker)
    wait_until(lambda: REPLICA in kafka["target"].topics and sum(
        len(kafka["target"].records(REPLICA, p)) for p in range(PARTITIONS)) == PARTITIONS * 100,
               what="every record written in the open transaction", alive=(worker,))
    assert visible(kafka) == dict.fromkeys(range(PARTITIONS), 0)  # not committed yet: only the stop can
    assert worker.finish() is None
    assert all_visible(kafka, 100) and positions_at(kafka, 100)
    assert_exactly_once(kafka)


def test_a_transactional_call_that_never_returns_is_given_up_and_the_producer_replaced(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the fault harness: after a target restart librdkafka's send_offsets_to_transaction never
    returned (it ignores its timeout when the group coordinator went away: librdkafka #5456/#5511), and both
    workers' loops stayed blocked in it. The call is given up at its deadline, a new producer (fencing the
    stuck one) copies again from the last commit."""
    from replicator.worker import bounded, exactly_once

    monkeypatch.setattr(exactly_once, "COMMIT_TIMEOUT_S", 0.2)
    monkeypatch.setattr(bounded, "GRACE_S", 0.1)
    produce(kafka["source"], 100)
    a = eos_worker(kafka, "a")
    wait_until(lambda: all_visible(kafka, 100) and positions_at(kafka, 100), what="the first copy", alive=(a,))
    stuck = threading.Event()
    kafka["target"].gates["send_offsets_to_transaction@a"] = stuck
    try:
        produce(kafka["source"], 100, start=100)
        wait_until(lambda: kafka["target"].waiting["send_offsets_to_transaction@a"] == 1, what="a call stuck",
                   alive=(a,))
        del kafka["target"].gates["send_offsets_to_transaction@a"]  # later calls go through; that one never returns
        wait_until(lambda: all_visible(kafka, 200) and positions_at(kafka, 200), what="a new producer's copy",
                   alive=(a,))
        assert "send_offsets_to_transaction did not return" in caplog.text
        assert a.finish() is None
    finally:
        stuck.set()
    assert_exactly_once(kafka)


def _target_away_a_moment(kafka: FakeKafka, caplog: pytest.LogCaptureFixture, a: WorkerThread) -> None:
    kafka["target"].freeze()
    produce(kafka["source"], 100, start=100)
    wait_until(lambda: "target cluster unreachable" in caplog.text, what="the target reported away", alive=(a,))
    kafka["target"].thaw()


def _coordinator_moved(kafka: FakeKafka, caplog: pytest.LogCaptureFixture, a: WorkerThread) -> None:
    kafka["target"].coordinator_moves = 1
    produce(kafka["source"], 100, start=100)


@pytest.mark.parametrize(("fault", "said"), [
    # Found by the fault harness: after each target restart or kill the commit's send_offsets_to_transaction hung
    # (librdkafka #5456/#5511) until its deadline gave it up: records flowed again 19 s after a restart (0.7 s on an
    # at-least-once route).
    (_target_away_a_moment, "it lost the target during the transaction (1/1 brokers are down)"),
    # Found by the fault harness on three-node clusters (``--brokers 3``, a target node killed): the commit failed
    # with "Broker transport failure" on TxnCoordinator/1 (retriable; librdkafka reports no error when one broker
    # of several goes), was retried, and once the coordinator had moved send_offsets_to_transaction hung its 7 s:
    # 27 s before records showed again.
    (_coordinator_moved, "its transaction coordinator went away"),
])
def test_a_producer_that_lost_the_target_or_its_coordinator_is_replaced_not_asked_to_commit(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture,
        fault: Callable[[FakeKafka, pytest.LogCaptureFixture, WorkerThread], None], said: str) -> None:
    """A producer that reported the target unreachable, or whose transaction coordinator's connection broke, is
    replaced before it is asked to commit."""
    caplog.set_level(logging.WARNING, logger="replicator.worker")
    kafka["target"].offsets_hang_after_outage = True
    produce(kafka["source"], 100)
    a = eos_worker(kafka, "a")
    wait_until(lambda: all_visible(kafka, 100) and positions_at(kafka, 100), what="the first copy", alive=(a,))
    fault(kafka, caplog, a)
    wait_until(lambda: all_visible(kafka, 200) and positions_at(kafka, 200), what="the copy after the fault",
               alive=(a,))
    assert a.finish() is None
    assert kafka["target"].hung_offsets == 0, "a producer that lost the target or its coordinator was asked to commit"
    assert said in caplog.text
    assert_exactly_once(kafka)


def test_producers_lost_with_the_target_over_and_over_do_not_stop_the_route(kafka: FakeKafka) -> None:
    """Found by the fault harness (target restarts and kills, 12 in 2.5 min): each producer replaced after the
    target came back was counted as fenced by another worker, and the sixth in 60 s stopped the route ("another
    worker uses transactional id"). Only producers lost while the target answered count."""
    produce(kafka["source"], 10)
    a = eos_worker(kafka, "a")
    wait_until(lambda: all_visible(kafka, 10), what="the first copy", alive=(a,))
    for outage in range(1, 8):
        kafka["target"].freeze()
        produce(kafka["source"], 10, start=10 * outage)
        wait_until(lambda: any(p.lost_cluster for p in kafka.producers["a"][-1:]), what="the outage seen",
                   alive=(a,))
        kafka["target"].thaw()
        wait_until(lambda n=outage: all_visible(kafka, 10 * (n + 1)), what=f"the copy after outage {outage}",
                   alive=(a,))
    assert a.finish() is None
    assert_exactly_once(kafka)


def test_a_producer_fenced_over_and_over_while_the_target_answers_stops_the_route_naming_the_id(
        kafka: FakeKafka) -> None:
    """Another process with this worker's transactional id (a copy started with the same --worker-id that does
    not wait for it): fenced 6 times in 60 s, the route stops and says why, rather than ping-pong for ever."""
    produce(kafka["source"], 10)
    a = eos_worker(kafka, "a", worker_id="w1")
    wait_until(lambda: all_visible(kafka, 10), what="the first copy", alive=(a,))
    other = FakeTransactionalProducer({"transactional.id": "mirrorflow-r-w1"}, kafka["target"])
    for fence in range(1, 7):
        other.init_transactions()
        produce(kafka["source"], 1, start=10 + fence)
        # Fence n is seen once the worker's next producer holds the id (its init_transactions ran, fencing
        # `other` in turn). Only then may `other` fence it again: a producer merely made could init after
        # `other`, fence it, and the next fence would never reach the worker (seen under load in CI).
        wait_until(lambda n=fence: _holds_the_id(kafka.producers["a"], n) or not a.thread.is_alive(),
                   what=f"fence {fence} seen", alive=() if fence == 6 else (a,))
    failure = str(a.finish())
    assert "fenced this worker's producer 6 times in 60 s" in failure, failure
    assert "another worker uses transactional id mirrorflow-r-w1" in failure


def _holds_the_id(producers: list[FakeProducer], index: int) -> bool:
    """The worker's producer number ``index`` (0: its first) was made and registered its transactional id."""
    return len(producers) > index and getattr(producers[index], "epoch", None) is not None


@pytest.mark.parametrize(("code", "says"), [
    (KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "refuses transactional id 'mirrorflow-r-w1': grant WRITE"),
    (KafkaError.CLUSTER_AUTHORIZATION_FAILED, "refuses idempotent writes: grant IDEMPOTENT_WRITE"),
    (KafkaError._TIMED_OUT, "cannot run transactions: no transaction coordinator answered"),
    (KafkaError.INVALID_TRANSACTION_TIMEOUT, "transaction.timeout.ms: it must not exceed"),
])
def test_a_target_that_refuses_transactions_is_named_with_what_is_missing(kafka: FakeKafka, code: int,
                                                                           says: str) -> None:
    """Bad input: the start of transactions refused exits 2 (ConfigError) naming the target cluster and what
    it lacks (the ACL, the coordinator, the timeout), never a traceback."""
    from replicator.errors import ConfigError

    config = route_config(kafka, guarantee="exactly-once")
    worker = ExactlyOnceWorker(config, config.routes[0], worker_id="w1", clients=kafka.clients("a"))
    refusal = worker._cannot_transact(KafkaError(code))
    assert isinstance(refusal, ConfigError) and refusal.exit_code == 2
    assert "route r: target cluster 'target'" in str(refusal) and says in str(refusal), str(refusal)


def test_a_target_partition_given_before_the_worker_sees_its_source_partition_is_copied(kafka: FakeKafka) -> None:
    """Found by the fault harness: a source topic grew, another worker grew its target topic, and the new
    target partition was given to a worker whose look at the source still counted the old partitions: it
    mapped to no source partition, and the new one was never copied (until a worker restarted)."""
    produce(kafka["source"], 50)
    a = eos_worker(kafka, "a")
    wait_until(lambda: all_visible(kafka, 50), what="the first copy", alive=(a,))
    held = threading.Event()
    kafka["source"].gates["list_topics@a"] = held  # a's looks at the source wait: it keeps counting 4
    try:
        wait_until(lambda: kafka["source"].waiting["list_topics@a"] == 1, what="a look held", alive=(a,))
        kafka["source"].add_partitions(TOPIC, PARTITIONS + 1)
        kafka["target"].add_partitions(REPLICA, PARTITIONS + 1)  # as another worker's look would
        for n in range(30):
            kafka["source"].append(TOPIC, PARTITIONS, f"k{n}".encode(), f"p4-{n}".encode(), [("h", b"x")], 1_000 + n)
        wait_until(lambda: (REPLICA, PARTITIONS) in a.worker._sources, what="the new target partition given",
                   alive=(a,))
    finally:
        held.set()
    wait_until(lambda: len(read_committed(kafka, PARTITIONS + 1)[PARTITIONS]) == 30, what="the new partition copied",
               alive=(a,))
    assert a.finish() is None
    assert_exactly_once(kafka)
    assert [m.value() for m in read_committed(kafka, PARTITIONS + 1)[PARTITIONS]] == \
        [r.value for r in kafka["source"].records(TOPIC, PARTITIONS)]


def test_a_record_too_large_for_the_target_is_set_aside_inside_the_transaction(kafka: FakeKafka) -> None:
    """on_refused_record: dead-letter on an exactly-once route: the record goes to the dead-letter topic through
    the transactional producer, so it shows when its transaction commits (not before), once; the copy of
    the rest stays exactly-once, and a worker started again writes no second copy of it."""
    dead = "mirrorflow-dead-letter.r.internal"
    kafka["target"].create_topic(REPLICA, PARTITIONS, {"max.message.bytes": "1000"})
    values = [b"x" * (2000 if n == 4 else 10) + str(n).encode() for n in range(10)]
    for value in values:
        kafka["source"].append(TOPIC, 0, b"k", value, [("h", b"x")], 1_000)
    held = threading.Event()
    kafka["target"].gates["commit_transaction"] = held
    worker = eos_worker(kafka, "a", on_refused_record="dead-letter")
    wait_until(lambda: dead in kafka["target"].topics and len(kafka["target"].records(dead, 0)) == 1,
               what="the record written aside", alive=(worker,))
    assert read_topic(kafka, dead) == []  # written in the open transaction, not yet committed
    held.set()
    wait_until(lambda: len(read_committed(kafka)[0]) == 9 and len(read_topic(kafka, dead)) == 1,
               what="nine records copied, one set aside", alive=(worker,))
    assert worker.finish() is None
    produce(kafka["source"], 5)  # records after it, and a worker started again
    again = eos_worker(kafka, "b", on_refused_record="dead-letter")
    wait_until(lambda: visible(kafka) == {0: 14, 1: 5, 2: 5, 3: 5}, what="the copy after a restart",
               alive=(again,))
    assert again.finish() is None
    assert [m.value() for m in read_committed(kafka)[0][:9]] == values[:4] + values[5:]
    [aside] = read_topic(kafka, dead)
    assert aside.value() == values[4] and aside.key() == b"k"
    assert dict(aside.headers() or [])["h"] == b"x"


def read_topic(kafka: FakeKafka, topic: str) -> list[FakeMessage]:
    """Partition 0 of ``topic`` on the target, as a read_committed consumer sees it now."""
    reader = FakeConsumer({"group.id": "reader", "isolation.level": "read_committed"}, kafka["target"])
    reader.incremental_assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    got: list[FakeMessage] = []
    while batch := reader.consume(1_000, 0):
        got += batch
    return got


def test_positions_larger_than_the_brokers_take_stop_the_route_naming_the_setting(kafka: FakeKafka) -> None:
    """Bad input: a target partition many source partitions are copied into (a merged topic) has positions
    longer than the brokers' offset.metadata.max.bytes. Before, each commit was refused, aborted and copied
    again, for ever; now the route stops at the first, saying what to change, with nothing of it visible."""
    kafka["target"].offset_metadata_max_bytes = 40
    produce(kafka["source"], 20)
    worker = eos_worker(kafka, "a")
    wait_until(lambda: not worker.thread.is_alive(), what="the route to stop")
    assert str(worker.error).startswith("route r: target cluster 'target' refuses the route's positions: the "
                                        "largest, of a target partition 1 source partition(s) are copied into, "
                                        "takes "), worker.error
    assert "more than the brokers' offset.metadata.max.bytes (4096 by default" in str(worker.error)
    assert visible(kafka) == dict.fromkeys(range(PARTITIONS), 0)
    assert len(kafka["target"].transactions.aborted) == 1  # once, not for ever


def test_a_producer_fenced_while_it_sets_a_record_aside_is_replaced_and_the_record_set_aside_once(
        kafka: FakeKafka) -> None:
    """The dead-letter write waits for its acknowledgement on the transactional producer; fenced meanwhile (a
    target away past the transaction timeout), it is replaced as anywhere else, not a reason to stop."""
    dead = "mirrorflow-dead-letter.r.internal"
    kafka["target"].create_topic(REPLICA, PARTITIONS, {"max.message.bytes": "1000"})
    values = [b"x" * (2000 if n == 4 else 10) + str(n).encode() for n in range(10)]
    for value in values:
        kafka["source"].append(TOPIC, 0, b"k", value, [("h", b"x")], 1_000)
    kafka["target"].deliveries_per_poll = 0  # nothing is acknowledged: the worker waits in the dead-letter write
    worker = eos_worker(kafka, "a", worker_id="w1", on_refused_record="dead-letter")
    wait_until(lambda: kafka.producers.get("a") and any(q.topic == dead for q in producer_of(kafka, "a").queue),
               what="the record being set aside", alive=(worker,))
    kafka["target"].transactions.init("mirrorflow-r-w1")  # the coordinator fences the producer
    kafka["target"].deliveries_per_poll = None
    wait_until(lambda: len(read_committed(kafka)[0]) == 9 and len(read_topic(kafka, dead)) == 1,
               what="nine records copied, one set aside", alive=(worker,))
    assert worker.finish() is None
    assert [m.value() for m in read_committed(kafka)[0]] == values[:4] + values[5:]
    assert len(kafka.producers["a"]) > 1, "the producer was not replaced: this proves nothing"


def test_a_commit_that_never_completes_is_given_up_and_the_producer_replaced(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the fault harness (long form, seed 11): after a target restart librdkafka answered every
    commit_transaction "Conflicting commit_transaction API call is already in progress" for 6.5 minutes; the
    worker retried it 63,108 times (a log line each) and its partitions were not copied until they moved."""
    from replicator.worker import exactly_once

    monkeypatch.setattr(exactly_once, "COMMIT_GIVE_UP_S", 0.5)
    caplog.set_level(logging.INFO, logger="replicator.worker.exactly_once")
    kafka["target"].stuck_commits = 1
    produce(kafka["source"], 100)
    worker = eos_worker(kafka, "a")
    wait_until(lambda: all_visible(kafka, 100) and positions_at(kafka, 100), what="the copy", alive=(worker,))
    assert worker.finish() is None
    assert_exactly_once(kafka)
    assert len(kafka.producers["a"]) == 2, "the stuck producer was not replaced"
    assert caplog.text.count("transaction commit retried") == 1  # said once, not on every turn
    assert "the commit did not complete in 0.5 s" in caplog.text


def test_a_commit_still_retried_when_its_transaction_is_as_old_as_its_timeout_is_given_up(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the fault harness on three-node clusters (a target node holding the coordinator killed): the commit
    timed out, then answered "Conflicting commit_transaction API call is already in progress" until the 15 s give-up,
    20 s without a commit though the coordinator had moved after 9. The target aborts a transaction open longer than
    transaction.timeout.ms: a commit still retried then is given up."""
    caplog.set_level(logging.WARNING, logger="replicator.worker")
    kafka["target"].stuck_commits = 1
    produce(kafka["source"], 100)
    worker = eos_worker(kafka, "a", producer="{transaction.timeout.ms: '1000'}")
    wait_until(lambda: all_visible(kafka, 100) and positions_at(kafka, 100), timeout=10,
               what="the copy, well before the commit's own give-up", alive=(worker,))
    assert worker.finish() is None
    assert_exactly_once(kafka)
    assert len(kafka.producers["a"]) == 2, "the stuck producer was not replaced"
    assert "the commit was still retried when its transaction was 1 s old" in caplog.text


class _PendingFatal:
    """A delivery report's error while confluent-kafka has a fatal error pending: the callback's first call into
    the library raises it (seen in the fault harness: a delivery callback raised KafkaException _FENCED)."""

    def __init__(self, error: KafkaError) -> None:
        self._error = error

    def __getattr__(self, name: str) -> object:
        raise KafkaException(self._error)


def test_a_fatal_error_surfacing_inside_a_delivery_callback_is_the_producer_lost_not_a_bug(
        kafka: FakeKafka) -> None:
    """Found by the fault harness (long form, exactly-once): a fenced producer's fatal error came out inside a
    delivery report callback; the worker took it for a bug of its own ("internal error in the delivery report
    callback") and exited. A fatal producer error is the producer lost, wherever it comes out: replaced."""
    config = route_config(kafka, guarantee="exactly-once")
    worker = ExactlyOnceWorker(config, config.routes[0], worker_id="w1", clients=kafka.clients("a"))
    fenced = KafkaError(KafkaError._FENCED, "transactional producer fenced by newer producer instance", fatal=True)
    worker._on_delivery(_PendingFatal(fenced), FakeMessage("mirrorflow-offset-syncs.r.internal", 0, 7))
    assert (worker.failure, worker.unsafe) == (None, False)
    assert worker._lost_producer is not None and "fenced" in worker._lost_producer  # the loop replaces it


class _PendingSystemError:
    """A delivery report's error while confluent-kafka has an exception set already: the callback's first call
    into the library raises SystemError ("<method 'fatal' of 'confluent_kafka.cimpl.KafkaError' objects> returned
    a result with an exception set", overlap-eos-29 #76)."""

    def __getattr__(self, name: str) -> object:
        raise SystemError(f"<method '{name}' of 'confluent_kafka.cimpl.KafkaError' objects> returned a result with "
                          "an exception set")


def test_a_system_error_inside_a_delivery_callback_is_the_producer_lost_not_a_bug(kafka: FakeKafka) -> None:
    """Found by the exactly-once fault pairs (overlap-eos-29 #76, a worker frozen during a source freeze): during a
    hand-over's commit, a delivery report's first call into the library raised SystemError, and the worker exited
    with "internal error in the delivery report callback". The same confluent-kafka state that makes poll and
    flush fail without an error (the producer's fatal error taken inside a report): the producer lost."""
    config = route_config(kafka, guarantee="exactly-once")
    worker = ExactlyOnceWorker(config, config.routes[0], worker_id="w1", clients=kafka.clients("a"))
    worker._on_delivery(_PendingSystemError(), FakeMessage("mirrorflow-offset-syncs.r.internal", 0, 7))
    assert (worker.failure, worker.unsafe) == (None, False)
    assert worker._lost_producer is not None and "returned a result with an exception set" in worker._lost_producer


def test_a_poll_that_fails_without_an_error_replaces_the_producer(kafka: FakeKafka) -> None:
    """Found by the fault harness (CI short form): when a fenced producer's fatal error is taken inside a
    delivery report, confluent-kafka's flush then fails with "SystemError: <method 'flush' of 'cimpl.Producer'
    objects> returned NULL without setting an exception"; it escaped a revocation and the worker exited. It is
    the producer failing: replaced, and the copy goes back to the last commit."""
    produce(kafka["source"], 50)
    worker = eos_worker(kafka, "a")
    wait_until(lambda: all_visible(kafka, 50), what="the first copy", alive=(worker,))
    producer = producer_of(kafka, "a")
    real_poll = producer.poll

    def failing_poll(timeout: float | None = None) -> int:
        producer.poll = real_poll  # type: ignore[method-assign]  # once
        raise SystemError("<method 'poll' of 'cimpl.Producer' objects> returned NULL without setting an exception")

    producer.poll = failing_poll  # type: ignore[method-assign]
    produce(kafka["source"], 50, start=50)
    wait_until(lambda: all_visible(kafka, 100) and positions_at(kafka, 100), what="the copy after it",
               alive=(worker,))
    assert worker.finish() is None
    assert_exactly_once(kafka)
    assert len(kafka.producers["a"]) > 1, "the producer was not replaced"


def test_a_source_consumer_that_gets_no_more_answers_is_replaced_with_the_member_and_nothing_repeats(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """Found by the exactly-once chaos run (seed 5, a clean restart of the source broker): two workers' source
    consumers fetched nothing more and reading positions timed out; the stuck watch placed the partitions again,
    placing failed for minutes, and the route stalled. Now every partition stuck at once (seed 264) gets a new
    source consumer and a new member of the positions group at once (placing that fails for ``stuck_after`` s
    while both clusters answer does too: the at-least-once test)."""
    caplog.set_level(logging.INFO, logger="replicator.worker")
    produce(kafka["source"], 20)
    worker = eos_worker(kafka, "a", stuck_after="5")  # FAST.client_still: 1 s
    wait_until(lambda: all_visible(kafka, 20) and positions_at(kafka, 20), what="the first copy", alive=(worker,))
    deaf, member = worker.worker.consumer, worker.worker._member
    wedged = threading.Event()
    deaf.deafen(close_blocks=wedged)  # type: ignore[attr-defined]
    # Its last word of the source was "all brokers down" (the broker restarted), never taken back (seed 8).
    worker.worker.links.error("source", KafkaError(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down"))
    produce(kafka["source"], 30, start=20)
    wait_until(lambda: all_visible(kafka, 50) and positions_at(kafka, 50), timeout=30,
               what="the copy by new clients", alive=(worker,))
    said = [r.getMessage() for r in caplog.records]
    renewed = [m for m in said if m.startswith("source consumer renewed")]
    assert len(renewed) == 1 and f"every partition it owns ({PARTITIONS}) stuck at once" in renewed[0], said
    assert worker.worker.consumer is not deaf and worker.worker._member is not member
    # Its close never returned (a later chaos run, same seed): it was left behind and the worker went on -- after
    # ``close`` s, not the hand-over's too: assigned by hand, it has no revocation to wait for (join-eos-29: 20 s).
    assert any(m.startswith(f"the source consumer did not close in {FAST.close:.0f} s") and "left behind" in m
               for m in said), said
    assert worker.finish() is None
    wedged.set()
    assert_exactly_once(kafka)


def test_a_topic_created_again_under_a_running_route_is_copied_once(kafka: FakeKafka) -> None:
    """A source topic deleted and created again while the worker copies it: the new topic's records are copied
    once each, in order, after the old topic's (none of them again once the worker sees the new id). The fault
    run (seed 5, topic-recreate) found 8 duplicates in this situation when the brokers' describe still gave the
    deleted topic's id at the placement that followed: not reproduced here (see the note of session 12)."""
    produce(kafka["source"], 20)
    config = route_config(kafka, guarantee="exactly-once", transactions="{interval_ms: 50}")
    slow_look = dataclasses.replace(FAST, refresh=3.0)  # the worker learns the new id seconds after the records
    worker = WorkerThread(kafka, "a", config, slow_look, kind=ExactlyOnceWorker)
    wait_until(lambda: all_visible(kafka, 20) and positions_at(kafka, 20), what="the first copy", alive=(worker,))
    source = kafka["source"]
    with source.lock:
        source.delete_topic(TOPIC)
        source.create_topic(TOPIC, PARTITIONS)
        produce(source, 8)
    wait_until(lambda: visible(kafka) == dict.fromkeys(range(PARTITIONS), 28), what="the new records copied",
               alive=(worker,))
    new_id = source.topics[TOPIC].topic_id
    wait_until(lambda: worker.worker.subscription.topic_ids.get(TOPIC) == new_id and not worker.worker.unplaced
               and positions_at(kafka, 8), what="the new id seen and the partitions placed again", alive=(worker,))
    produce(source, 2, start=8)  # a marker per partition: copied once, after the 8 (nothing copied again)
    wait_until(lambda: visible(kafka) == dict.fromkeys(range(PARTITIONS), 30), what="the markers",
               alive=(worker,))
    assert worker.finish() is None
    got = read_committed(kafka)
    for p in range(PARTITIONS):
        assert [m.value() for m in got[p]][20:] == [f"p{p}-{n}".encode() for n in range(10)], f"partition {p}"


def test_records_of_a_topic_created_again_are_not_copied_twice_when_the_brokers_still_give_the_old_id(
        kafka: FakeKafka) -> None:
    """Found by the exactly-once fault run (seed 3, eight topic re-creations: 56 duplicates): right after a topic
    was deleted and created again the brokers still described it by the deleted one's id; the worker placed its
    partitions from the new log's start under that id, committed the new records' positions with it, then (the
    new id seen) took them for the deleted topic's and copied the new records again."""
    produce(kafka["source"], 20)
    worker = eos_worker(kafka, "a")
    wait_until(lambda: all_visible(kafka, 20) and positions_at(kafka, 20), what="the first copy", alive=(worker,))
    source = kafka["source"]
    with source.lock:
        old_id = source.topics[TOPIC].topic_id
        source.delete_topic(TOPIC)
        source.create_topic(TOPIC, PARTITIONS)
        source.stale_ids[TOPIC] = old_id  # described by the deleted topic's id for a moment
        produce(source, 8)
    threading.Timer(0.5, lambda: source.stale_ids.clear()).start()
    wait_until(lambda: visible(kafka) == dict.fromkeys(range(PARTITIONS), 28), what="the new records copied",
               alive=(worker,))
    wait_until(lambda: worker.worker.subscription.topic_ids.get(TOPIC) == source.topics[TOPIC].topic_id
               and not worker.worker.unplaced and positions_at(kafka, 8), what="the partitions placed again",
               alive=(worker,))
    produce(source, 2, start=8)  # a marker per partition: copied after the 8, none of them again
    wait_until(lambda: visible(kafka) == dict.fromkeys(range(PARTITIONS), 30), what="the markers", alive=(worker,))
    assert worker.finish() is None
    got = read_committed(kafka)
    for p in range(PARTITIONS):
        assert [m.value() for m in got[p]][20:] == [f"p{p}-{n}".encode() for n in range(10)], f"partition {p}"


def test_an_offset_sync_refused_by_a_fenced_producer_replaces_the_producer_and_stops_nothing(
        kafka: FakeKafka) -> None:
    """The fault pairs (exactly-once, `worker-freeze+statedb-stop`): a worker woke with its producer fenced and
    stopped on "offset sync not produced: Unable to produce message: Local: Fatal error". confluent-kafka's
    ``produce`` raises that _FATAL from the code alone: ``fatal()`` is False."""
    config = route_config(kafka, guarantee="exactly-once")
    worker = ExactlyOnceWorker(config, config.routes[0], None, batch_size=100, worker_id="w1",
                               clients=kafka.clients("a"), timeouts=FAST)
    refused = KafkaError(KafkaError._FATAL, "Unable to produce message: Local: Fatal error")
    assert not refused.fatal()
    worker._sync_not_produced(refused)
    assert worker.failure is None
    assert worker._lost_producer is not None  # the loop replaces it, and copies again from the last commit


def test_a_worker_whose_positions_member_was_fenced_says_so_and_goes_on_once_the_id_is_released(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture) -> None:
    """The positions group's coordinator (on the target) fenced the worker's member and refuses its id until that
    membership's session times out (Kafka 4.1 after a stall of the coordinator): the worker says so, not "an
    earlier member ... this worker's crashed process", and copies on, exactly once, after the session."""
    caplog.set_level(logging.INFO, "replicator.worker")
    produce(kafka["source"], 100)
    a = eos_worker(kafka, "a", worker_id="w1")
    wait_until(lambda: all_visible(kafka, 100) and positions_at(kafka, 100), what="the first copy", alive=(a,))
    member = next(c for c in kafka.consumers["a"] if c.cluster is kafka["target"])
    member.fence()
    produce(kafka["source"], 100, start=100)
    wait_until(lambda: a.worker.id_held_since is not None, what="the id refused", alive=(a,))
    assert "worker id refused to this worker's member after the group's coordinator fenced it" in caplog.text
    assert "worker id still held" not in caplog.text
    kafka.expire("a")  # the fenced membership's session times out
    wait_until(lambda: all_visible(kafka, 200) and positions_at(kafka, 200), what="the copy after the session",
               alive=(a,))
    assert a.finish() is None
    assert_exactly_once(kafka)


def test_a_worker_whose_positions_member_ran_out_unheard_joins_anew_and_copies_its_share_once(
        kafka: FakeKafka, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """The positions group (on the target) no longer knows a's member, whose client heard nothing of its session
    running out: a joins anew, takes its share back, and every record still shows once."""
    monkeypatch.setattr("replicator.worker.watches.UNKNOWN_AFTER_S", 0.5)
    caplog.set_level(logging.INFO, "replicator.worker")
    produce(kafka["source"], 100)
    a, b = eos_worker(kafka, "a", worker_id="wa"), eos_worker(kafka, "b", worker_id="wb")
    wait_until(lambda: all_visible(kafka, 100) and len(a.worker.inflight.ledgers) == 2
               and len(b.worker.inflight.ledgers) == 2, what="both copying", alive=(a, b))
    member = next(c for c in kafka.consumers["a"] if c.cluster is kafka["target"])
    member.lose_coordinator()
    member.group.expire(member.member_id)  # its session runs out; its client hears nothing of it
    wait_until(lambda: "no longer knows this worker's member" in caplog.text, what="a's renewal", alive=(a, b))
    wait_until(lambda: len(a.worker.inflight.ledgers) == 2 and len(b.worker.inflight.ledgers) == 2,
               what="a's share back", alive=(a, b))
    produce(kafka["source"], 100, start=100)
    wait_until(lambda: all_visible(kafka, 200) and positions_at(kafka, 200), what="the copy by both", alive=(a, b))
    assert a.finish() is None and b.finish() is None
    assert_exactly_once(kafka)
