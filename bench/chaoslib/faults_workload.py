"""Faults of the workload: a new topic, more partitions, a topic deleted and created again, and
records deleted by "retention" before the route copied them."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import NewPartitions, NewTopic

from bench.chaoslib.context import ROUTE, Chaos, Injected
from bench.chaoslib.records import Stream

MAX_PARTITIONS = 6
GAP_BEFORE, GAP_DURING, GAP_DELETED, GAP_AFTER = 20, 40, 30, 10  # records of a retention gap's topic


def _base_topics(chaos: Chaos) -> list[str]:
    """Steady topics being written now (not a retention gap's), in a stable order."""
    return sorted({s.topic for s in chaos.verifier.active()})


def topic_add(chaos: Chaos) -> Injected:
    """A new topic the route's pattern matches starts receiving records."""
    topic = chaos.next_name("add")
    chaos.create_topic(topic, chaos.settings.partitions)
    return Injected(None, topic, chaos.hold(2, chaos.settings.fault_seconds))


def partitions_add(chaos: Chaos) -> Injected:
    """One more partition on a steady topic, written at once."""
    counts = {t: 1 + max(s.partition for s in chaos.verifier.active() if s.topic == t) for t in _base_topics(chaos)}
    topic = chaos.rng.choice([t for t, n in counts.items() if n < MAX_PARTITIONS] or list(counts))
    total = counts[topic] + 1
    for future in chaos.admin().create_partitions([NewPartitions(topic, total)]).values():
        future.result(30)
    chaos.wait_partitions(topic, total)
    chaos.verifier.add(topic, [total - 1])
    return Injected(None, f"{topic} now {total} partitions", chaos.hold(2, chaos.settings.fault_seconds))


def _wait_arrived(chaos: Chaos, streams: list[Stream], timeout: float) -> int:
    """Until every record sent to ``streams`` is on the target; returns how many are still missing."""
    deadline, counts = time.monotonic() + timeout, chaos.verifier.counts()
    wanted = {s: counts.get(s, 0) for s in streams}
    while (missing := chaos.reader.missing(wanted, chaos.verifier.excused_now())) and time.monotonic() < deadline:
        time.sleep(0.25)
    return missing


def topic_recreate(chaos: Chaos) -> Injected:
    """A topic deleted and created again: written no more, drained to the target, then deleted."""
    topic = chaos.rng.choice(_base_topics(chaos))
    chaos.verifier.pause(topic)
    time.sleep(0.5)  # the producer's last records of it are acknowledged
    incarnation = chaos.verifier.incarnation[topic]
    streams = [s for s in chaos.verifier.counts() if s.topic == topic and s.incarnation == incarnation]
    missing = _wait_arrived(chaos, streams, chaos.settings.settle_timeout)
    if missing:  # deleting now would delete records the route has not copied: a loss of ours, not its
        chaos.verifier.resume(topic)
        return Injected(None, f"{topic} NOT recreated: {missing} of its records still not on the target after "
                              f"{chaos.settings.settle_timeout:.0f} s", 0.0)
    for future in chaos.admin().delete_topics([topic]).values():
        future.result(30)
    chaos.wait_partitions(topic, None)
    _create_again(chaos, topic, len(streams))
    chaos.verifier.recreated(topic)
    return Injected(None, f"{topic} ({len(streams)} partitions)", chaos.hold(2, chaos.settings.fault_seconds))


def _create_again(chaos: Chaos, topic: str, partitions: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            for future in chaos.admin().create_topics([NewTopic(topic, partitions, -1)]).values():
                future.result(30)
            break
        except KafkaException:
            if time.monotonic() > deadline:  # the deletion still in progress after a minute
                raise
            time.sleep(0.5)
    chaos.wait_partitions(topic, partitions)


def _committed(chaos: Chaos, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": chaos.sides["source"].direct, "group.id": f"mirrorflow-{ROUTE}",
                         "log_level": 0})
    try:
        return int(consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset)
    except KafkaException:
        return -1
    finally:
        consumer.close()


def retention_gap(chaos: Chaos) -> Injected:
    """Records deleted at the source before the route could copy them (the workers cut off from
    the source meanwhile); the route must report exactly that range in ``mf_data_loss``."""
    topic = chaos.next_name("gap")
    chaos.create_topic(topic, 1, steady=False)
    stream = Stream(topic, 0, 0)
    chaos.verifier.produce_now(stream, GAP_BEFORE)
    deadline = time.monotonic() + chaos.settings.settle_timeout
    while _committed(chaos, topic) < GAP_BEFORE:  # copied and committed: the route knows where it is
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: the route did not commit its first {GAP_BEFORE} records in time")
        time.sleep(0.25)
    cut_off = chaos.sides["source"].toxic(chaos.proxies, "gap", "timeout", {"timeout": 0})
    chaos.verifier.produce_now(stream, GAP_DURING)
    low = chaos.verifier.snapshot()[stream][GAP_BEFORE + GAP_DELETED].offset
    assert low is not None
    for future in chaos.admin().delete_records([TopicPartition(topic, 0, low)]).values():
        future.result(30)
    chaos.deleted_below[(topic, 0)] = low
    chaos.verifier.excuse(stream, range(GAP_BEFORE, GAP_BEFORE + GAP_DELETED))  # never waited for

    def heal() -> None:
        cut_off()
        chaos.verifier.produce_now(stream, GAP_AFTER)

    return Injected("source", f"{topic}: offsets below {low} deleted while the source was cut off",
                    chaos.hold(2, 6), heal, loss_topic=topic)


KINDS = {
    "topic-add": topic_add,
    "partitions-add": partitions_add,
    "topic-recreate": topic_recreate,
    "retention-gap": retention_gap,
}
