"""Audit a route's replicas: source topic vs target topic, per partition and time bucket.

    python -m spark_jobs.audit --spec spec.json --output result.json [--master local[2]]
    spark-submit spark_jobs/audit.py --spec spec.json --output result.json

The spec (``replicator.runbooks.audit.spec``, written by ``mirrorflow audit`` or the audit
DAG) names the route, its clusters, the window, and per topic the replica and the
route's committed offsets; the clusters' client properties come from the config
file it names. The result is ``replicator.domain.audit_report.AuditReport`` as JSON.

Per topic: both sides are read for the window (offsets found by timestamp), each
record reduced to a digest; per (partition, bucket) counts and digest sums are
compared in Spark, and only buckets that differ have their unbalanced digests (with
offsets) collected, for ``replicator.domain.audit`` to name missing, duplicated and
extra records. Source records at or past the committed offset count as pending.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # spark-submit spark_jobs/audit.py: the spark_jobs package sits one up
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark import StorageLevel
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, Row, SparkSession

from replicator.domain.audit import (
    BucketKey,
    BucketResult,
    BucketTotals,
    DigestGroup,
    Totals,
    compare_bucket,
    settle_by_totals,
)
from replicator.domain.audit_report import AuditReport, AuditWindow, worst
from replicator.errors import ClusterError
from replicator.runbooks.audit.spec import AuditSpec, TopicSpec
from spark_jobs import runner
from spark_jobs.audit_frames import (
    COMMITTED_SCHEMA,
    KEYS_SCHEMA,
    MARKS_SCHEMA,
    CopyRules,
    as_copied,
    bucket_totals,
    marks,
    unbalanced_groups,
    without_ranges,
)
from spark_jobs.kafka_options import spark_kafka_options

Progress = Callable[[str], None]
# Read as the route reads: aborted transactions were never copied.
_READ = {"includeHeaders": "true", "kafka.isolation.level": "read_committed",
         "startingOffsetsByTimestampStrategy": "latest"}


def read_marks(spark: SparkSession, options: Mapping[str, str], topic: str, partitions: int,
               window: AuditWindow, rules: CopyRules | None = None) -> DataFrame:
    """The marks of ``topic``'s partitions ``0..partitions-1`` whose timestamps fall in the window
    (with ``rules``: of the records as the route copies them)."""
    if partitions <= 0:
        return spark.createDataFrame([], MARKS_SCHEMA)
    records = (spark.read.format("kafka").options(**options, **_READ)
               .option("assign", json.dumps({topic: list(range(partitions))}))
               .option("startingTimestamp", str(window.start_ms))
               .option("endingTimestamp", str(window.end_ms)).load())  # absent: the partition's end
    return marks(records if rules is None else as_copied(records, rules), window)


def _materialised(frame: DataFrame, what: str) -> DataFrame:
    kept = frame.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        kept.count()  # read now, once: later steps use these rows, not a second read
    except (Py4JError, PySparkException) as exc:  # one line naming what was read, not a JVM stack
        kept.unpersist()
        raise ClusterError(f"reading {what} failed: {runner.failure_line(exc)}") from None
    return kept


def audit_topic(spark: SparkSession, topic: TopicSpec, window: AuditWindow, source_options: Mapping[str, str],
                target_options: Mapping[str, str], rules: CopyRules) -> list[BucketResult]:
    """Every bucket of one topic's audit."""
    # The replica is read first: each copy it holds was on the source before, so the source
    # read that follows holds the original of every copy (a live route keeps writing both).
    shared = min(topic.partitions, topic.target_partitions)
    target = _materialised(read_marks(spark, target_options, topic.target, shared, window),
                           f"{topic.target} on target cluster {rules.target_cluster!r}")
    try:
        source = _materialised(
            without_ranges(read_marks(spark, source_options, topic.source, topic.partitions, window, rules),
                           topic.left_out),  # never copied by design: not expected on the replica
            f"{topic.source} on source cluster {rules.source_cluster!r}")
        try:
            return _compare(spark, topic, source, target)
        finally:
            source.unpersist()
    finally:
        target.unpersist()


def _compare(spark: SparkSession, topic: TopicSpec, source: DataFrame, target: DataFrame) -> list[BucketResult]:
    """Totals per bucket in Spark; digest groups only of the buckets whose totals differ."""
    committed = spark.createDataFrame(
        [(p, c) for p in range(topic.partitions) if (c := topic.committed_of(p)) is not None], COMMITTED_SCHEMA)
    totals = [_totals(topic.source, row) for row in bucket_totals(source, target, committed).collect()]
    settled = {t.key: settle_by_totals(t) for t in totals}
    unsettled = [t for t in totals if settled[t.key] is None]
    groups = _groups(spark, source, target, [t.key for t in unsettled])
    results = [r for r in settled.values() if r is not None]
    results += [compare_bucket(t, groups[t.key], topic.committed_of(t.key.partition)) for t in unsettled]
    return sorted(results, key=lambda r: r.key)


def _totals(topic: str, row: Row) -> BucketTotals:
    def side(name: str) -> Totals:
        return Totals(int(row[f"{name}_count"]), int(row[f"{name}_weight"]))

    return BucketTotals(BucketKey(topic, int(row["partition"]), int(row["bucket"])), side("replicated"),
                        side("pending"), side("target"))


def _groups(spark: SparkSession, source: DataFrame, target: DataFrame,
            keys: list[BucketKey]) -> dict[BucketKey, list[DigestGroup]]:
    found: dict[BucketKey, list[DigestGroup]] = defaultdict(list)
    if not keys:
        return found
    wanted = spark.createDataFrame([(k.partition, k.start_ms) for k in keys], KEYS_SCHEMA)
    topic = keys[0].topic
    for row in unbalanced_groups(source, target, wanted).collect():
        key = BucketKey(topic, int(row["partition"]), int(row["bucket"]))
        found[key].append(DigestGroup(row["digest"], tuple(row["source_offsets"]), tuple(row["target_offsets"])))
    return found


def audit(spark: SparkSession, spec: AuditSpec, properties: tuple[Mapping[str, str], Mapping[str, str]],
          progress: Progress | None = None) -> AuditReport:
    """Audit every topic of ``spec``; ``properties``: the source's and target's librdkafka properties."""
    say = progress or (lambda _line: None)
    started = int(time.time() * 1000)
    rules = CopyRules(spec.source_cluster, spec.target_cluster, spec.stamps_origin)
    source_options = spark_kafka_options(spec.source_cluster, properties[0])
    target_options = spark_kafka_options(spec.target_cluster, properties[1])
    results: list[BucketResult] = []
    for n, topic in enumerate(spec.topics, 1):
        found = audit_topic(spark, topic, spec.window, source_options, target_options, rules)
        results += found
        say(f"topic {topic.source} -> {topic.target} done ({n}/{len(spec.topics)}): {len(found)} buckets,"
            f" {sum(r.source_count for r in found)} source / {sum(r.target_count for r in found)} target records,"
            f" {worst([r.status for r in found]).value}")
    return AuditReport(spec.run_key, spec.route, spec.window, {t.source: t.target for t in spec.topics},
                       tuple(results), started, int(time.time() * 1000), spec.notes)


def build_parser() -> argparse.ArgumentParser:
    """Arguments of the job."""
    return runner.build_parser("audit", __doc__, "the audit spec (JSON, from prepare_audit_spec)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job from a spec file (``spark_jobs.runner``). 0 once the result is written."""
    return runner.run_job("audit", build_parser().parse_args(argv), AuditSpec.read, _run)


def _run(spark: SparkSession, spec: AuditSpec,
         properties: tuple[Mapping[str, str], Mapping[str, str]]) -> tuple[dict[str, Any], str]:
    report = audit(spark, spec, properties, progress=print)
    return report.to_dict(), f"audit {spec.route} {report.status.value}"


if __name__ == "__main__":
    sys.exit(main())
