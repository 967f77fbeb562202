"""Backfill a route's topic: copy source offset ranges to the same partitions of the replica.

    python -m spark_jobs.backfill --spec spec.json --output result.json [--master local[2]]
    spark-submit spark_jobs/backfill.py --spec spec.json --output result.json

The spec (``replicator.runbooks.backfill.spec``, written by ``mirrorflow backfill`` or the
backfill DAG) names the route, its clusters, the topic, its replica and per
partition the offsets ``[start, end)``; the clusters' client properties come from
the config file it names. Spark's Kafka source reads the ranges (one Spark partition
per Kafka partition, in offset order); each Spark task writes its records with an
idempotent librdkafka producer (``acks=all``) to the same partition of the replica,
with key, value, headers and timestamp as they are. Not Spark's Kafka sink: it has
a ``partition`` column but no timestamp (its producer records take none), and the
copy must keep the original CreateTime.

The result (JSON): records written per partition, first and last timestamp, the
Spark UI URL. Progress (records done / total) is printed as tasks finish.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if __package__ in (None, ""):  # spark-submit spark_jobs/backfill.py: the spark_jobs package sits one up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyspark.sql import DataFrame, SparkSession

from replicator.runbooks.backfill.spec import BackfillSpec
from spark_jobs import runner
from spark_jobs.audit_frames import CopyRules, as_copied
from spark_jobs.backfill_check import check
from spark_jobs.kafka_options import spark_kafka_options

if TYPE_CHECKING:
    from pyspark import RDD

_READ = {"includeHeaders": "true", "kafka.isolation.level": "read_committed", "failOnDataLoss": "true"}
# No loss, no duplicate from a producer retry, order kept per partition.
_PRODUCE = {"acks": "all", "enable.idempotence": "true", "linger.ms": "20", "compression.type": "lz4"}

# What a Spark task reports per partition it wrote: (partition, records, first and last
# timestamp, first and last target offset).
Written = tuple[int, int, int, int, int, int]


def read_ranges(spark: SparkSession, options: Mapping[str, str], spec: BackfillSpec) -> DataFrame:
    """The records of the spec's ranges: partition, offset, key, value, headers, timestamp_ms."""
    wanted = [r for r in spec.ranges if r.count > 0]
    records = (spark.read.format("kafka").options(**options, **_READ)
               .option("assign", json.dumps({spec.topic: [r.partition for r in wanted]}))
               .option("startingOffsets", json.dumps({spec.topic: {str(r.partition): r.start for r in wanted}}))
               .option("endingOffsets", json.dumps({spec.topic: {str(r.partition): r.end for r in wanted}})).load())
    copied = as_copied(records, CopyRules(spec.source_cluster, spec.target_cluster, spec.stamps_origin))
    return copied.selectExpr("partition", "offset", "key", "value", "headers",
                             "unix_millis(timestamp) AS timestamp_ms")


def writer(topic: str, producer_properties: Mapping[str, str],
           done: Any = None) -> Callable[[Iterable[Any]], Iterator[Written]]:
    """A function of a Spark partition's rows that produces them and yields (partition, count, first
    and last timestamp, first and last target offset);
    ``done``: an accumulator of the records written (Spark merges it as each task ends)."""
    settings = {**producer_properties, **_PRODUCE}

    def write(rows: Iterable[Any]) -> Iterator[Written]:
        from confluent_kafka import KafkaException, Producer

        failures: list[str] = []

        landed: dict[int, tuple[int, int]] = {}  # partition -> (first, last) target offset written

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                failures.append(f"partition {msg.partition()}: {err.str()}")
                return
            low, high = landed.get(msg.partition(), (msg.offset(), msg.offset()))
            landed[msg.partition()] = (min(low, msg.offset()), max(high, msg.offset()))

        producer = Producer(settings)
        stats: dict[int, tuple[int, int, int]] = {}  # partition -> (records, first, last timestamp)
        for row in rows:
            headers: list[tuple[str, str | bytes | None]] = [
                (h["key"], None if h["value"] is None else bytes(h["value"])) for h in row["headers"] or ()]
            producer.produce(topic, value=None if row["value"] is None else bytes(row["value"]),
                             key=None if row["key"] is None else bytes(row["key"]), partition=row["partition"],
                             timestamp=row["timestamp_ms"], headers=headers or None, on_delivery=delivered)
            producer.poll(0)
            count, first, last = stats.get(row["partition"], (0, row["timestamp_ms"], row["timestamp_ms"]))
            stats[row["partition"]] = (count + 1, min(first, row["timestamp_ms"]), max(last, row["timestamp_ms"]))
        if producer.flush(300) or failures:
            raise KafkaException(f"writing to {topic} failed: " + ("; ".join(failures[:5]) or "flush timed out"))
        if done is not None:
            done.add(sum(s[0] for s in stats.values()))
        yield from ((p, *s, *landed[p]) for p, s in stats.items())

    return write


def backfill(spark: SparkSession, spec: BackfillSpec, properties: tuple[Mapping[str, str], Mapping[str, str]],
             progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Copy the spec's ranges and check the copy (``backfill_check``); the result (see the module's doc)."""
    say = progress or (lambda _line: None)
    ui = spark.sparkContext.uiWebUrl or "-"
    say(f"backfill {spec.topic} -> {spec.target_topic}: {spec.total} records, Spark UI {ui}")
    options = (spark_kafka_options(spec.source_cluster, properties[0]),
               spark_kafka_options(spec.target_cluster, properties[1]))
    written: dict[int, int] = {}
    landed: dict[int, list[int]] = {}
    first = last = None
    if spec.total:
        rows = read_ranges(spark, options[0], spec).rdd
        done = spark.sparkContext.accumulator(0)
        tasks = rows.mapPartitions(writer(spec.target_topic, properties[1], done))
        for partition, count, low, high, at, to in _with_progress(tasks, done, spec.total, say):
            written[partition] = written.get(partition, 0) + count
            seen = landed.get(partition)
            landed[partition] = [at, to + 1] if seen is None else [min(seen[0], at), max(seen[1], to + 1)]
            first = low if first is None else min(first, low)
            last = high if last is None else max(last, high)
    say(f"backfill {spec.topic}: {sum(written.values())} / {spec.total} records written")
    found = check(spark, spec, {str(p): r for p, r in landed.items()}, *options)
    say(f"backfill {spec.topic} check: {found['missing']} missing, {found['duplicates']} duplicated on"
        f" {spec.target_topic}")
    return {"check": found, "run_key": spec.run_key, "route": spec.route, "topic": spec.topic,
            "target_topic": spec.target_topic,
            "written": {str(p): n for p, n in sorted(written.items())}, "first_ms": first, "last_ms": last,
            "landed": {str(p): r for p, r in sorted(landed.items())},  # target offsets [first, end)
            "ui_url": ui, "total": spec.total}


def _with_progress(tasks: RDD[Written], written: Any, total: int, say: Callable[[str], None]) -> list[Written]:
    """Collect ``tasks``, saying every 5 s how many records the finished tasks wrote."""
    done = threading.Event()

    def report() -> None:
        while not done.wait(5):
            say(f"backfill progress: {written.value} / {total} records written")

    thread = threading.Thread(target=report, daemon=True)
    thread.start()
    try:
        return tasks.collect()
    finally:
        done.set()


def build_parser() -> argparse.ArgumentParser:
    """Arguments of the job."""
    return runner.build_parser("backfill", __doc__, "the backfill spec (JSON, from prepare_backfill_spec)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job from a spec file (``spark_jobs.runner``). 0 once the result is written."""
    return runner.run_job("backfill", build_parser().parse_args(argv), BackfillSpec.read, _run)


def _run(spark: SparkSession, spec: BackfillSpec,
         properties: tuple[Mapping[str, str], Mapping[str, str]]) -> tuple[dict[str, Any], str]:
    result = backfill(spark, spec, properties, progress=lambda line: print(line, flush=True))
    return result, f"backfill {spec.route} {spec.topic}"


if __name__ == "__main__":
    sys.exit(main())
