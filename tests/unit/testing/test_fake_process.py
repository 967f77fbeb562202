"""A frozen fake process behaves as a SIGSTOPped one: what is written after the freeze, and what its group says
after it, do not reach a call of that process already under way."""

from __future__ import annotations

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from replicator.testing.cluster import FakeCluster
from replicator.testing.consumer import FakeConsumer
from replicator.testing.process import FakeProcess


class _FrozenRightAfterItsCheck(FakeProcess):
    """The test thread's moves land between a consume's check of its process and its fetch: it freezes the
    process, then writes (the race a test's ``freeze`` then ``produce`` can lose to a consume under way)."""

    def __init__(self, cluster: FakeCluster) -> None:
        super().__init__("worker")
        self.cluster = cluster
        self.armed = False

    def checkpoint(self) -> None:
        super().checkpoint()
        if self.armed:
            self.armed = False
            self.frozen = True
            self.cluster.append("t", 0, None, b"written after the freeze")


def test_a_consume_under_way_when_its_process_freezes_fetches_nothing_written_after() -> None:
    cluster = FakeCluster("source")
    cluster.create_topic("t", 1)
    cluster.append("t", 0, None, b"before")
    process = _FrozenRightAfterItsCheck(cluster)
    consumer = FakeConsumer({"group.id": "g"}, cluster, process)
    consumer.incremental_assign([TopicPartition("t", 0, OFFSET_BEGINNING)])
    assert [m.value() for m in consumer.consume(10, 0)] == [b"before"]
    process.armed = True
    assert consumer.consume(10, 0) == []  # frozen where it stood: the record written since is not its own yet
    process.frozen = False  # thawed
    assert [m.value() for m in consumer.consume(10, 0)] == [b"written after the freeze"]


class _FrozenAndExpiredRightAfterItsCheck(FakeProcess):
    """The test's ``freeze`` then ``expire`` land between a consume's check of its process and its word with the
    group (the race a zombie test lost in CI: the frozen worker learned it lost its partitions and rejoined, so
    the survivor never took them all)."""

    def __init__(self, consumer: list[FakeConsumer]) -> None:
        super().__init__("worker")
        self.consumer = consumer
        self.armed = False

    def checkpoint(self) -> None:
        super().checkpoint()
        if self.armed:
            self.armed = False
            self.frozen = True
            self.consumer[0].group.expire(self.consumer[0].member_id)


def test_a_consume_under_way_when_its_process_freezes_does_not_hear_its_session_expired() -> None:
    cluster = FakeCluster("source")
    cluster.create_topic("t", 2)
    made: list[FakeConsumer] = []
    process = _FrozenAndExpiredRightAfterItsCheck(made)
    consumer = FakeConsumer({"group.id": "g"}, cluster, process)
    made.append(consumer)
    lost: list[list[TopicPartition]] = []
    consumer.subscribe(["t"], on_lost=lambda _, parts: lost.append(parts))
    consumer.consume(1, 0)
    assert sorted(consumer.positions) == [("t", 0), ("t", 1)]
    process.armed = True
    consumer.consume(1, 0)
    assert lost == [] and cluster.group("g").alive() == []  # stopped where it stood: still expired, not rejoined
    process.frozen = False  # thawed: the group's word comes after its first fetches, then it learns
    consumer.consume(1, 0)
    consumer.consume(1, 0)
    assert [sorted((tp.topic, tp.partition) for tp in parts) for parts in lost] == [[("t", 0), ("t", 1)]]


def test_a_killed_process_thread_ends_without_a_word_and_other_errors_still_reach_the_hook() -> None:
    import threading

    from replicator.testing.process import ProcessKilled, killed_threads_end_silently

    seen: list[type[BaseException] | None] = []
    hook = killed_threads_end_silently(lambda args: seen.append(args.exc_type))
    for error in (ProcessKilled("killed"), ValueError("a bug")):
        try:
            raise error
        except BaseException as exc:  # noqa: BLE001 - handed to the hook as threading would
            hook(threading.ExceptHookArgs((type(exc), exc, exc.__traceback__, None)))
    assert seen == [ValueError]
