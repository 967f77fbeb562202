"""--source-transactions: the verifier's steady records go in transactions, a share aborted with records never to
arrive; a record counts as acknowledged only once its transaction committed."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, KafkaException

from bench.chaos import main
from bench.chaoslib import producer as producer_module
from bench.chaoslib.faults import FAULTS, choose_kinds
from bench.chaoslib.producer import Verifier
from bench.chaoslib.records import parse_key

Delivery = Callable[[KafkaError | None, object], None]


class Written:
    def __init__(self, topic: str, partition: int, offset: int) -> None:
        self._where = (topic, partition, offset)

    def topic(self) -> str:
        return self._where[0]

    def partition(self) -> int:
        return self._where[1]

    def offset(self) -> int:
        return self._where[2]


class TransactionalSource:
    """A transactional producer as librdkafka's behaves: records written (offsets taken, delivery reports served)
    by the commit's flush; ``failures`` are raised by the next commits, in turn."""

    def __init__(self, failures: list[KafkaError] | None = None) -> None:
        self.failures = failures or []
        self.log: list[tuple[bytes, str]] = []  # (key, "committed" | "aborted") in offset order
        self.open: list[tuple[bytes, Delivery | None, str, int]] = []
        self.begun = self.initialised = 0
        self.unknown: set[int] = set()  # partitions its metadata does not show yet (just added)

    def list_topics(self, topic: str, timeout: float) -> None:
        self.unknown.clear()  # its metadata renewed: every partition the topic has now

    def init_transactions(self, timeout: float) -> None:
        self.initialised += 1

    def begin_transaction(self) -> None:
        assert not self.open
        self.begun += 1

    def produce(self, topic: str, value: bytes, key: bytes, partition: int, on_delivery: Delivery | None = None,
                **kwargs: object) -> None:
        if partition in self.unknown:
            raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION, "Local: Unknown partition"))
        self.open.append((key, on_delivery, topic, partition))

    def _write(self, outcome: str) -> None:
        for key, on_delivery, topic, partition in self.open:
            self.log.append((key, outcome))
            if on_delivery is not None:
                on_delivery(None, Written(topic, partition, len(self.log) - 1))
        self.open = []

    def commit_transaction(self, timeout: float) -> None:
        if self.failures:
            error = self.failures.pop(0)
            if error.txn_requires_abort():
                self._write("written, commit failed")
            elif error.fatal():  # the producer fails what it holds
                for _key, on_delivery, _topic, _partition in self.open:
                    if on_delivery is not None:
                        on_delivery(KafkaError(KafkaError._PURGE_QUEUE), None)
                self.open = []
            raise KafkaException(error)
        self._write("committed")

    def abort_transaction(self, timeout: float) -> None:
        self._write("aborted")


def _verifier(monkeypatch: pytest.MonkeyPatch, source: TransactionalSource, seed: int) -> Verifier:
    class Plain:
        def list_topics(self, topic: str, timeout: float) -> None:
            return None

        def flush(self, timeout: float) -> int:
            return 0

    verifier = Verifier("127.0.0.1:1", 1.0, 100, transactional=True, seed=seed)
    verifier._producer = Plain()  # type: ignore[assignment]
    monkeypatch.setattr(producer_module, "Producer", lambda config: source)
    return verifier


def test_records_count_as_acknowledged_once_committed_and_aborted_transactions_hold_none_of_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    source = TransactionalSource()
    verifier = _verifier(monkeypatch, source, seed=3)
    streams = verifier.add("t", [0, 1, 2])
    turn = written = 0
    for _ in range(40):
        turn, written = verifier._transaction(streams, 5, turn, written)
    assert verifier.aborts > 0 and verifier.commits > 0 and verifier.commits + verifier.aborts == 40
    assert written == 5 * verifier.commits and source.initialised == 1
    committed = [key for key, outcome in source.log if outcome == "committed"]
    aborted = [key for key, outcome in source.log if outcome == "aborted"]
    assert len(aborted) == verifier.aborted == 3 * verifier.aborts
    assert all(parse_key(key) is None for key in aborted)  # foreign, should a copy ever show one
    assert all(parse_key(key) is not None for key in committed)
    sent = verifier.snapshot()
    assert sum(len(records) for records in sent.values()) == len(committed)
    assert all(record.offset is not None and record.acked_at is not None for r in sent.values() for record in r)
    assert not verifier.excused_now()


def test_a_retriable_commit_is_tried_again_and_a_failed_one_is_never_waited_for(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(producer_module, "ABORT_SHARE", 0.0)
    source = TransactionalSource([KafkaError(KafkaError._TIMED_OUT, "slow", retriable=True)])
    verifier = _verifier(monkeypatch, source, seed=1)
    (stream,) = verifier.add("t", [0])
    assert verifier._transaction([stream], 2, 0, 0) == (2, 2)
    assert [r.offset for r in verifier.snapshot()[stream]] == [0, 1] and verifier.commits == 1
    source.failures = [KafkaError(KafkaError._FENCED, "fenced", fatal=True)]
    assert verifier._transaction([stream], 2, 2, 2) == (4, 4)
    assert [r.offset for r in verifier.snapshot()[stream]][2:] == [None, None]
    assert verifier.excused_now() == {stream: {2, 3}} and verifier.commits == 1
    assert verifier._txn is None  # a new producer next time: its start aborts what this one left open
    assert verifier._transaction([stream], 1, 4, 4) == (5, 5) and source.initialised == 2


def test_the_hang_needs_source_transactions(capsys: pytest.CaptureFixture[str]) -> None:
    assert "source-txn-hang" in FAULTS
    assert "source-txn-hang" not in choose_kinds([], "postgres")
    assert "source-txn-hang" in choose_kinds([], "sqlite", transactions=True)
    assert main(["--state", "sqlite", "--kinds", "worker-kill+source-txn-hang"]) == 2
    assert capsys.readouterr().err == "chaos.py: source-txn-hang needs --source-transactions\n"


def test_a_partition_just_added_is_skipped_until_the_producer_knows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A partitions-add fault: the transactional producer's metadata does not show the new partition for a while
    (found in a run: the verifier's thread died on it, in an aborted transaction)."""
    source = TransactionalSource()
    source.unknown.add(1)
    verifier = _verifier(monkeypatch, source, seed=3)
    streams = verifier.add("t", [0, 1])
    turn = written = 0
    for _ in range(20):
        turn, written = verifier._transaction(streams, 4, turn, written)
    assert verifier.aborts > 0 and verifier.commits > 0
    assert all(parse_key(key) is None or parse_key(key)[1] == 0 for key, _ in source.log)  # type: ignore[index]
    sent = verifier.snapshot()
    assert not sent[streams[1]] and len(sent[streams[0]]) > 0
    assert all(record.offset is not None for record in sent[streams[0]])
    verifier.add("t", [1])  # the harness adds the partition's stream: the transactional producer learns of it
    for _ in range(10):
        turn, written = verifier._transaction(streams, 4, turn, written)
    assert verifier.snapshot()[streams[1]]
