"""Per-partition summary of a Kafka topic read through Spark's Kafka source.

    python -m spark_jobs.topic_summary --bootstrap 127.0.0.1:19092 --topic orders

Prints, per partition: records, first and last offset, first and last timestamp,
and how many records carry headers. With ``--output FILE`` it also writes the
rows as JSON lines. The audit job builds on the same reading code.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def read_topic(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    """The whole topic (earliest to latest offsets) as Spark's Kafka source rows."""
    return (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("includeHeaders", "true")
        .load()
    )


def partition_summary(records: DataFrame) -> DataFrame:
    """One row per partition: count, offset range, timestamp range (epoch ms), records with headers."""
    has_headers = F.when(F.size(F.coalesce("headers", F.array())) > 0, 1).otherwise(0)
    return (
        records.groupBy("topic", "partition")
        .agg(
            F.count(F.lit(1)).alias("records"),
            F.min("offset").alias("first_offset"),
            F.max("offset").alias("last_offset"),
            F.min(F.unix_millis("timestamp")).alias("first_timestamp_ms"),
            F.max(F.unix_millis("timestamp")).alias("last_timestamp_ms"),
            F.sum(has_headers).alias("with_headers"),
        )
        .orderBy("partition")
    )


def build_parser() -> argparse.ArgumentParser:
    """Arguments of the job."""
    parser = argparse.ArgumentParser(prog="spark_jobs.topic_summary", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True, help="bootstrap servers of the cluster")
    parser.add_argument("--topic", required=True, help="topic to summarise")
    parser.add_argument("--master", default=None, help="Spark master (default local[2])")
    parser.add_argument("--output", default=None, help="also write the rows as JSON lines here")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; the only function that builds a SparkSession."""
    from spark_jobs.session import build_session

    args = build_parser().parse_args(argv)
    spark = build_session("mirrorflow-topic-summary", args.master)
    try:
        rows = [row.asDict() for row in partition_summary(read_topic(spark, args.bootstrap, args.topic)).collect()]
    finally:
        spark.stop()
    for row in rows:
        print(" ".join(f"{key}={value}" for key, value in row.items()))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(row, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
