"""A fault of the source's transactions (``--source-transactions``): a producer hangs with one open.

``source-txn-hang``: a second transactional producer writes one record to every steady partition in a
transaction and hangs (no commit, no abort): a read_committed reader, the route's workers included, reads no
further on those partitions (their last stable offset stands at its records) until the source's transaction
coordinator aborts it, at its first look after the producer's ``transaction.timeout.ms`` (the hold; brokers look
every 10 s by default). The heal waits for that abort, then wakes the zombie: it tries to commit, and the
source must refuse it. Its records (keyed ``zombie/...``) are never to arrive: the reader counts them foreign.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from bench.chaoslib.context import Chaos, Injected
from replicator.errors import ClusterError
from replicator.kafka.log_ranges import ends

# The zombie's own log: librdkafka says at level 0 that it was fenced, which is what the fault is for.
_ZOMBIE_LOG = logging.getLogger("chaos.zombie")
_ZOMBIE_LOG.addHandler(logging.NullHandler())
_ZOMBIE_LOG.propagate = False
ABORT_WAIT_S = 60.0  # the longest the heal waits for the coordinator to abort the zombie's transaction


def source_txn_hang(chaos: Chaos) -> Injected:
    """A transaction left open on every steady partition until the source's coordinator aborts it."""
    streams, hold = chaos.verifier.active(), chaos.hold(2, chaos.settings.fault_seconds)
    chaos.serial += 1
    zombie = Producer({"bootstrap.servers": chaos.sides["source"].direct, "transactional.id": f"chaos-zombie-"
                       f"{chaos.serial}", "transaction.timeout.ms": str(int(hold * 1000)), "logger": _ZOMBIE_LOG,
                       "error_cb": lambda _e: None})  # fenced on purpose: the refusal comes by the commit
    zombie.init_transactions(30)
    zombie.begin_transaction()
    offsets: dict[tuple[str, int], int] = {}

    def written(error: KafkaError | None, message: Message) -> None:
        if error is None:
            offsets[(message.topic() or "", message.partition() or 0)] = message.offset() or 0
    for stream in streams:
        zombie.produce(stream.topic, b"never to arrive", f"zombie/{stream.partition}".encode(),
                       partition=stream.partition, on_delivery=written)
    zombie.flush(30)
    if len(offsets) != len(streams):
        raise RuntimeError(f"the source took {len(offsets)} of the zombie's {len(streams)} records")

    def heal() -> None:
        waited = _wait_aborted(chaos, offsets)
        try:
            zombie.commit_transaction(10)
        except KafkaException:
            return  # refused, as it must be
        raise RuntimeError(f"the source committed the zombie's transaction {waited:.1f} s after it aborted it")

    return Injected("source", f"a transaction left open on {len(streams)} partitions, aborted after "
                              f"{hold * 1000:.0f} ms", hold, heal)


def _wait_aborted(chaos: Chaos, offsets: dict[tuple[str, int], int]) -> float:
    """Until every partition's last stable offset is past the zombie's record (its transaction aborted); the
    time waited after the hold."""
    began = time.monotonic()
    deadline = began + ABORT_WAIT_S
    while True:
        try:
            stable: dict[tuple[str, int], int | str] = dict(ends(chaos.admin(), "source", sorted(offsets), stable=True))
        except ClusterError as exc:
            stable = dict.fromkeys(offsets, str(exc))
        held = {key: stable[key] for key, offset in offsets.items()
                if not isinstance(stable.get(key), int) or stable[key] <= offset}  # type: ignore[operator]
        if not held:
            return time.monotonic() - began
        if time.monotonic() > deadline:
            raise TimeoutError(f"the source did not abort the zombie's transaction in {ABORT_WAIT_S:.0f} s (held: "
                               + ", ".join(f"{t}[{p}] stable at {held[(t, p)]}, the zombie's record at "
                                           f"{offsets[(t, p)]}" for t, p in sorted(held)[:3]) + ")")
        time.sleep(0.2)


KINDS = {"source-txn-hang": source_txn_hang}
