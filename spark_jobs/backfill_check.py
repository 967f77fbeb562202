"""After a backfill: every source record of its ranges is on the replica, where the copy landed.

Not the time-window audit: the backfilled records land after newer ones on the
replica, and Kafka's offset-by-time lookup (which the audit reads the target with)
stops at the first record at or after a time, so an older record written later is
cut out of any window. The check reads by offsets instead: the source ranges (as the
route copies them) and, per partition, the target offsets the producer's delivery
reports gave, and compares the records' digests (key, value, headers, timestamp).
Records of the route appended meanwhile between those target offsets are not the
backfill's and are left out of the comparison.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from replicator.runbooks.backfill.spec import BackfillSpec
from spark_jobs.audit_frames import CopyRules, as_copied, digest_column

_READ = {"includeHeaders": "true", "kafka.isolation.level": "read_committed", "failOnDataLoss": "true"}


def _read(spark: SparkSession, options: Mapping[str, str], topic: str,
          ranges: Mapping[int, tuple[int, int]]) -> DataFrame:
    return (spark.read.format("kafka").options(**options, **_READ)
            .option("assign", json.dumps({topic: sorted(ranges)}))
            .option("startingOffsets", json.dumps({topic: {str(p): a for p, (a, _) in ranges.items()}}))
            .option("endingOffsets", json.dumps({topic: {str(p): b for p, (_, b) in ranges.items()}})).load())


def check(spark: SparkSession, spec: BackfillSpec, landed: Mapping[str, list[int]], source_options: Mapping[str, str],
          target_options: Mapping[str, str]) -> dict[str, Any]:
    """Per partition: source records, found once, missing (first offsets), duplicated; ``missing`` in all."""
    wanted = {r.partition: (r.start, r.end) for r in spec.ranges if r.count > 0}
    if not wanted:
        return {"missing": 0, "duplicates": 0, "partitions": {}}
    rules = CopyRules(spec.source_cluster, spec.target_cluster, spec.stamps_origin)
    source = as_copied(_read(spark, source_options, spec.topic, wanted), rules)
    source = source.select("partition", "offset", digest_column().alias("digest"))
    on_target = {int(p): (a, b) for p, (a, b) in landed.items()}
    if on_target:
        target = _read(spark, target_options, spec.target_topic, on_target)
        target = target.groupBy("partition", digest_column().alias("digest")).agg(F.count("*").alias("t"))
    else:  # nothing was written: every source record of the ranges is missing
        target = spark.createDataFrame([], "partition int, digest string, t long")
    by_digest = source.groupBy("partition", "digest").agg(F.count("*").alias("s"),
                                                          F.sort_array(F.collect_list("offset")).alias("offsets"))
    joined = by_digest.join(target, ["partition", "digest"], "left").fillna(0, ["t"])
    rows = joined.groupBy("partition").agg(
        F.sum("s").alias("source"),
        F.sum(F.greatest(F.col("s") - F.col("t"), F.lit(0))).alias("missing"),
        F.sum(F.greatest(F.col("t") - F.col("s"), F.lit(0))).alias("duplicates"),
        F.sort_array(F.flatten(F.collect_list(F.when(F.col("t") < F.col("s"), F.slice("offsets", 1, 10))
                                              ))).alias("missing_offsets")).collect()
    parts = {str(r["partition"]): {"source": int(r["source"]), "missing": int(r["missing"]),
                                   "duplicates": int(r["duplicates"]), "first_missing": list(r["missing_offsets"][:10])}
             for r in rows}
    return {"missing": sum(v["missing"] for v in parts.values()),
            "duplicates": sum(v["duplicates"] for v in parts.values()), "partitions": parts}
