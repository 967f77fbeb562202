"""A frozen fake process behaves as a SIGSTOPped one: what is written after the freeze, and what its group says
after it, do not reach a call of that process already under way."""

from __future__ import annotations

from typing import TYPE_CHECKING

from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from replicator.testing.cluster import FakeCluster
from replicator.testing.consumer import FakeConsumer
from replicator.testing.process import FakeProcess

if TYPE_CHECKING:
    from collections.abc import Callable


class _FrozenRightAfterItsCheck(FakeProcess):
    """The test thread's moves land between a client call's check of its process and what the call does next: it
    freezes the process, then does ``then`` (the races a test's ``freeze`` then ``produce``, or ``freeze`` then
    ``expire``, can lose to a consume under way)."""

    def __init__(self) -> None:
        super().__init__("worker")
        self.then: Callable[[], object] | None = None  # armed: done once, right after the next check

    def checkpoint(self) -> None:
        super().checkpoint()
        then, self.then = self.then, None
        if then is not None:
            self.frozen = True
            then()


def test_a_consume_under_way_when_its_process_freezes_fetches_nothing_written_after() -> None:
    cluster = FakeCluster("source")
    cluster.create_topic("t", 1)
    cluster.append("t", 0, None, b"before")
    process = _FrozenRightAfterItsCheck()
    consumer = FakeConsumer({"group.id": "g"}, cluster, process)
    consumer.incremental_assign([TopicPartition("t", 0, OFFSET_BEGINNING)])
    assert [m.value() for m in consumer.consume(10, 0)] == [b"before"]
    process.then = lambda: cluster.append("t", 0, None, b"written after the freeze")
    assert consumer.consume(10, 0) == []  # frozen where it stood: the record written since is not its own yet
    process.frozen = False  # thawed
    assert [m.value() for m in consumer.consume(10, 0)] == [b"written after the freeze"]


def test_a_consume_under_way_when_its_process_freezes_does_not_hear_its_session_expired() -> None:
    cluster = FakeCluster("source")
    cluster.create_topic("t", 2)
    process = _FrozenRightAfterItsCheck()
    consumer = FakeConsumer({"group.id": "g"}, cluster, process)
    lost: list[list[TopicPartition]] = []
    consumer.subscribe(["t"], on_lost=lambda _, parts: lost.append(parts))
    consumer.consume(1, 0)
    assert sorted(consumer.positions) == [("t", 0), ("t", 1)]
    process.then = lambda: consumer.group.expire(consumer.member_id)
    consumer.consume(1, 0)
    assert lost == [] and cluster.group("g").alive() == []  # stopped where it stood: still expired, not rejoined
    process.frozen = False  # thawed: the group's word comes after its first fetches, then it learns
    consumer.consume(1, 0)
    consumer.consume(1, 0)
    assert [sorted((tp.topic, tp.partition) for tp in parts) for parts in lost] == [[("t", 0), ("t", 1)]]


class _KilledWhileItHearsItsGroup(FakeProcess):
    """The test thread kills the process (``then``) while one of its consumer's calls is under way, past its
    checks, about to hear its group."""

    def __init__(self) -> None:
        super().__init__("worker")
        self.then: Callable[[], object] | None = None  # armed: done once, at the next look at its links

    def reaches(self, cluster: str) -> bool:
        then, self.then = self.then, None
        if then is not None:
            then()
        return super().reaches(cluster)


def test_a_consume_under_way_when_its_process_is_killed_does_not_bring_its_expired_member_back() -> None:
    """Found by CI (a loaded run): a worker killed while its consume heard the group took its own expiry as news,
    rejoined as a live member that never polled again, and the survivor was never given its partitions."""
    from replicator.testing.process import ProcessKilled

    cluster = FakeCluster("source")
    cluster.create_topic("t", 2)
    process = _KilledWhileItHearsItsGroup()
    consumer = FakeConsumer({"group.id": "g"}, cluster, process)
    consumer.subscribe(["t"])
    consumer.consume(1, 0)
    assert sorted(consumer.positions) == [("t", 0), ("t", 1)]

    def kill() -> None:  # as FakeKafka.kill does
        process.killed = True
        consumer.crash(expire=True)

    process.then = kill
    try:
        consumer.consume(1, 0)
    except ProcessKilled:
        pass
    assert cluster.group("g").alive() == []  # its partitions go to the others


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
