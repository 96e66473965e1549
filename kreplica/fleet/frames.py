"""Snapshots in, DataFrames out: `snapshots` (one row per file), then `brokers`, `topics` and
`partitions`. Files are parsed by the one snapshot reader in Python (`records.record_row`);
everything after that is Spark: `from_json` with a fixed schema and explodes."""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kreplica.fleet.policy import Policy, policy_from_dict

SNAPSHOT_ROW = T.StructType(
    [
        T.StructField("cluster_id", T.StringType()),
        T.StructField("file", T.StringType()),
        T.StructField("error", T.StringType()),
        T.StructField("json", T.StringType()),
    ]
)

_FLEET_TOPIC = T.StructType(
    [
        T.StructField("min_isr", T.IntegerType()),
        T.StructField("min_isr_source", T.StringType()),
        T.StructField("exempt", T.BooleanType()),
        T.StructField("target_rf", T.IntegerType()),
        T.StructField("target_min_insync", T.IntegerType()),
        T.StructField("target_racks", T.IntegerType()),
        T.StructField("max_partitions_per_broker", T.IntegerType()),
        T.StructField("kafka_default", T.BooleanType()),
        T.StructField("placement", T.StringType()),
    ]
)
_INTS = T.ArrayType(T.IntegerType())
SNAPSHOT_SCHEMA = T.StructType(
    [
        T.StructField("cluster_id", T.StringType()),
        T.StructField("fleet_cluster", T.StringType()),
        T.StructField("fleet_drain", _INTS),
        T.StructField(
            "brokers",
            T.ArrayType(
                T.StructType(
                    [
                        T.StructField("id", T.IntegerType()),
                        T.StructField("rack", T.StringType()),
                        T.StructField("alive", T.BooleanType()),
                    ]
                )
            ),
        ),
        T.StructField(
            "topics",
            T.ArrayType(
                T.StructType(
                    [
                        T.StructField("name", T.StringType()),
                        T.StructField("fleet", _FLEET_TOPIC),
                        T.StructField(
                            "partitions",
                            T.ArrayType(
                                T.StructType(
                                    [
                                        T.StructField("partition", T.IntegerType()),
                                        T.StructField("replicas", _INTS),
                                        T.StructField("leader", T.IntegerType()),
                                        T.StructField("isr", _INTS),
                                        T.StructField("size_bytes", T.LongType()),
                                        T.StructField("adding_replicas", _INTS),
                                        T.StructField("removing_replicas", _INTS),
                                    ]
                                )
                            ),
                        ),
                    ]
                )
            ),
        ),
    ]
)

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_parquet(path: str) -> bool:
    """A Parquet dataset: a path ending in .parquet, or a local folder holding .parquet files."""
    if path.rstrip("/").endswith(".parquet"):
        return True
    if _URI.match(path) or not os.path.isdir(path):
        return False
    return any(f.endswith(".parquet") for _root, _dirs, files in os.walk(path) for f in files)


def spark_path(path: str) -> str:
    """What Spark reads: a local folder means its *.json files; globs and URIs pass through."""
    if not _URI.match(path) and os.path.isdir(path):
        return os.path.join(os.path.abspath(path), "*.json")
    return path


def read_texts(spark: SparkSession, path: str) -> DataFrame:
    """(file, text) per snapshot: whole JSON files, or Parquet rows turned back into JSON."""
    if is_parquet(path):
        raw = spark.read.parquet(path)
        cols = [F.col(c) for c in raw.columns]
        return raw.select(
            F.concat(
                F.input_file_name(),
                F.lit("#"),
                F.coalesce(F.col("cluster_id").cast("string"), F.lit("?"))
                if "cluster_id" in raw.columns
                else F.lit("?"),
            ).alias("file"),
            F.to_json(F.struct(*cols)).alias("text"),
        )
    # a file that cannot be opened is skipped (and named by the caller, from `list_inputs`),
    # not the end of the whole job
    reader = spark.read.option("ignoreCorruptFiles", "true").option("ignoreMissingFiles", "true")
    return reader.text(spark_path(path), wholetext=True).select(
        F.input_file_name().alias("file"), F.col("value").alias("text")
    )


@dataclass
class Listed:
    """The files `read_texts` is given, listed by the same glob through Hadoop's file system:
    Spark's whole-text reader drops a 0-byte file without a row, and (with the options
    `read_texts` sets) a file it cannot open; both must be named, not lost."""

    files: list[str]  # with bytes
    empty: list[str]  # 0 bytes
    broken: list[str]  # local symbolic links to nothing (Hadoop does not list them)


def list_inputs(spark: SparkSession, path: str) -> Listed:
    if is_parquet(path):
        return Listed([], [], [])
    pattern = spark_path(path)
    target = spark._jvm.org.apache.hadoop.fs.Path(pattern)  # type: ignore[union-attr]
    fs = target.getFileSystem(spark._jsc.hadoopConfiguration())
    files: list[str] = []
    empty: list[str] = []
    for status in fs.globStatus(target) or []:
        children = fs.listStatus(status.getPath()) if status.isDirectory() else [status]
        for child in children:
            name = str(child.getPath().getName())
            if not child.isFile() or name.startswith(("_", ".")):
                continue
            (files if child.getLen() else empty).append(str(child.getPath().toString()))
    broken = []
    if not _URI.match(pattern):
        broken = [f for f in glob.glob(pattern) if os.path.islink(f) and not os.path.exists(f)]
    return Listed(sorted(files), sorted(empty), sorted(broken))


def parse_snapshots(texts: DataFrame, policy: Policy, *, layouts: bool = True) -> DataFrame:
    """One row per file: cluster_id, file, error (a file that does not parse), json."""
    shipped = policy.to_dict()

    def parse(rows: Any) -> Any:
        from kreplica.fleet.records import record_row

        pol = policy_from_dict(shipped)
        for row in rows:
            yield record_row(row["file"], row["text"], pol, layouts=layouts)

    # Small files land in one input split: spread them so every core parses (and explains).
    spread = max(2, texts.sparkSession.sparkContext.defaultParallelism * 2)
    rdd = texts.repartition(spread).rdd.mapPartitions(parse)
    return texts.sparkSession.createDataFrame(rdd, SNAPSHOT_ROW)


@dataclass
class Frames:
    brokers: DataFrame
    topics: DataFrame
    partitions: DataFrame


def explode_snapshots(snapshots: DataFrame) -> Frames:
    """brokers, topics and partitions of every readable snapshot."""
    data = snapshots.where(F.col("error").isNull()).select(
        F.col("cluster_id"), F.from_json("json", SNAPSHOT_SCHEMA).alias("s")
    )
    drain = data.select("cluster_id", F.col("s.fleet_drain").alias("drain"))
    brokers = (
        data.select("cluster_id", F.explode("s.brokers").alias("b"))
        .join(drain, "cluster_id")
        .select(
            "cluster_id",
            F.col("b.id").alias("broker"),
            F.col("b.rack").alias("rack"),
            F.coalesce(F.col("b.alive"), F.lit(True)).alias("alive"),
            F.coalesce(F.array_contains("drain", F.col("b.id")), F.lit(False)).alias("draining"),
        )
    )
    topic_rows = data.select("cluster_id", F.explode("s.topics").alias("t"))
    topics = topic_rows.select(
        "cluster_id",
        F.col("t.name").alias("topic"),
        F.size("t.partitions").alias("partitions"),
        F.coalesce(
            F.size(F.try_element_at("t.partitions", F.lit(1)).getField("replicas")), F.lit(0)
        ).alias("rf"),
        F.col("t.fleet.min_isr").alias("min_isr"),
        F.col("t.fleet.min_isr_source").alias("min_isr_source"),
        F.col("t.fleet.exempt").alias("exempt"),
        F.col("t.fleet.target_rf").alias("target_rf"),
        F.col("t.fleet.target_min_insync").alias("target_min_insync"),
        F.col("t.fleet.target_racks").alias("target_racks"),
        F.col("t.fleet.max_partitions_per_broker").alias("max_partitions_per_broker"),
        F.col("t.fleet.kafka_default").alias("kafka_default"),
        F.col("t.fleet.placement").alias("placement"),
    )
    partitions = topic_rows.select(
        "cluster_id", F.col("t.name").alias("topic"), F.explode("t.partitions").alias("p")
    ).select(
        "cluster_id",
        "topic",
        F.col("p.partition").alias("partition"),
        F.col("p.replicas").alias("replicas"),
        F.col("p.leader").alias("leader"),
        F.col("p.isr").alias("isr"),
        F.col("p.size_bytes").alias("size_bytes"),
        (
            (F.coalesce(F.size("p.adding_replicas"), F.lit(0)) > 0)
            | (F.coalesce(F.size("p.removing_replicas"), F.lit(0)) > 0)
        ).alias("reassigning"),
    )
    return Frames(brokers=brokers, topics=topics, partitions=partitions)
