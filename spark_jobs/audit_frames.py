"""The audit's DataFrame transforms: Kafka rows -> marks -> per-bucket totals -> unbalanced digest groups.

Pure ``DataFrame -> DataFrame`` functions; only Spark's built-in functions (no Python
UDF), so executors need nothing of MirrorFlow. The digest is the one of
``replicator.domain.audit.digest_text``, built column by column.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from replicator.domain.audit import WEIGHT_HEX_DIGITS
from replicator.domain.audit_report import AuditWindow
from replicator.domain.provenance import ORIGIN_HEADER

HEADERS_TYPE = "array<struct<key:string,value:binary>>"  # Spark's Kafka source, includeHeaders=true
WEIGHT = "decimal(38,0)"  # a sum of 60-bit weights: no overflow below 2^68 records
MARKS_SCHEMA = f"partition INT, offset BIGINT, timestamp_ms BIGINT, bucket BIGINT, digest STRING, weight {WEIGHT}"
KEYS_SCHEMA = "partition INT, bucket BIGINT"
COMMITTED_SCHEMA = "partition INT, committed BIGINT"


def _hex_or_null(column: Column) -> Column:
    return F.coalesce(F.hex(column), F.lit("~"))


def digest_column() -> Column:
    """sha256 of ``k=<hex>;v=<hex>;h=<name hex>:<value hex>,...;t=<ms>`` (``~`` for null)."""
    headers = F.transform(
        F.coalesce(F.col("headers"), F.array().cast(HEADERS_TYPE)),
        lambda h: F.concat(_hex_or_null(h["key"]), F.lit(":"), _hex_or_null(h["value"])),
    )
    text = F.concat(
        F.lit("k="), _hex_or_null(F.col("key")), F.lit(";v="), _hex_or_null(F.col("value")),
        F.lit(";h="), F.array_join(headers, ","), F.lit(";t="), F.unix_millis("timestamp").cast("string"),
    )
    return F.sha2(text, 256)


@dataclass(frozen=True, slots=True)
class CopyRules:
    """What a route does to a record it copies (``replicator.domain.provenance``)."""

    source_cluster: str
    target_cluster: str
    stamps_origin: bool


def _origin(headers: Column) -> Column:
    """The value of the first non-empty origin header, or null (``provenance.origin_of``)."""
    named = F.filter(headers, lambda h: (h["key"] == ORIGIN_HEADER) & (F.length(h["value"]) > 0))
    return F.try_element_at(named, F.lit(1))["value"]


def as_copied(records: DataFrame, rules: CopyRules) -> DataFrame:
    """Source rows as the route writes them: records born on the target left out (``should_skip``),
    an origin header appended where the route stamps one and the record has none (``with_origin``)."""
    headers = F.coalesce(F.col("headers"), F.array().cast(HEADERS_TYPE))
    origin = _origin(headers)
    kept = records.where(origin.isNull() | (origin != F.encode(F.lit(rules.target_cluster), "UTF-8")))
    if not rules.stamps_origin:
        return kept
    stamp = F.array(F.struct(F.lit(ORIGIN_HEADER).alias("key"),
                             F.encode(F.lit(rules.source_cluster), "UTF-8").alias("value")))
    return kept.withColumn("headers", F.when(origin.isNull(), F.concat(headers, stamp)).otherwise(headers))


def marks(records: DataFrame, window: AuditWindow) -> DataFrame:
    """Kafka source rows -> (partition, offset, timestamp_ms, bucket, digest, weight) inside the window."""
    stamped = records.withColumn("timestamp_ms", F.unix_millis("timestamp"))
    inside = stamped.where((F.col("timestamp_ms") >= window.start_ms) & (F.col("timestamp_ms") < window.end_ms))
    digest = digest_column()
    return inside.select(
        "partition", "offset", "timestamp_ms",
        (F.col("timestamp_ms") - F.pmod("timestamp_ms", F.lit(window.bucket_ms))).alias("bucket"),
        digest.alias("digest"),
        F.conv(F.substring(digest, 1, WEIGHT_HEX_DIGITS), 16, 10).cast(WEIGHT).alias("weight"),
    )


def without_ranges(marks_frame: DataFrame, ranges: tuple[tuple[int, int, int], ...]) -> DataFrame:
    """``marks_frame`` less the records at source offsets ``[start, end)`` of each ``(partition, start, end)``."""
    if not ranges:
        return marks_frame
    clauses = [(F.col("partition") == partition) & (F.col("offset") >= start) & (F.col("offset") < end)
               for partition, start, end in ranges]
    inside = reduce(operator.or_, clauses)
    return marks_frame.where(~inside)


def _sums(where: Column, prefix: str) -> list[Column]:
    zero = F.lit(0).cast(WEIGHT)
    return [F.sum(F.when(where, 1).otherwise(0)).cast("bigint").alias(f"{prefix}_count"),
            F.sum(F.when(where, F.col("weight")).otherwise(zero)).cast(WEIGHT).alias(f"{prefix}_weight")]


def bucket_totals(source: DataFrame, target: DataFrame, committed: DataFrame) -> DataFrame:
    """Per (partition, bucket): count and digest sum of the source's replicated and pending records,
    and of the target's records. ``committed``: (partition, committed offset), absent = none."""
    pending = F.col("committed").isNull() | (F.col("offset") >= F.col("committed"))
    sides = source.join(F.broadcast(committed), "partition", "left").groupBy("partition", "bucket").agg(
        *_sums(~pending, "replicated"), *_sums(pending, "pending"))
    copies = target.groupBy("partition", "bucket").agg(*_sums(F.lit(True), "target"))
    joined = sides.join(copies, ["partition", "bucket"], "full_outer")
    filled = [F.coalesce(F.col(c), F.lit(0).cast(t)).alias(c) for c, t in joined.dtypes
              if c not in ("partition", "bucket")]
    return joined.select("partition", "bucket", *filled)


def unbalanced_groups(source: DataFrame, target: DataFrame, keys: DataFrame) -> DataFrame:
    """For the (partition, bucket) ``keys``: digests whose record counts differ, with both sides' offsets."""
    def offsets(marks_: DataFrame, name: str) -> DataFrame:
        chosen = marks_.join(F.broadcast(keys), ["partition", "bucket"])
        return chosen.groupBy("partition", "bucket", "digest").agg(F.collect_list("offset").alias(name))

    none = F.array().cast("array<bigint>")
    groups = offsets(source, "source_offsets").join(offsets(target, "target_offsets"),
                                                    ["partition", "bucket", "digest"], "full_outer")
    both = groups.select("partition", "bucket", "digest",
                         F.coalesce("source_offsets", none).alias("source_offsets"),
                         F.coalesce("target_offsets", none).alias("target_offsets"))
    return both.where(F.size("source_offsets") != F.size("target_offsets"))
