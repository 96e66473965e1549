"""Snapshots in, DataFrames out: `snapshots` (one row per file), then `brokers`, `topics` and
`partitions`. Files are parsed once, by the one snapshot reader, in Python tasks
(`batches.snapshot_batch`) that hand Spark Arrow batches; everything after that is Spark (one
explode per table, no JSON in between)."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kreplica.fleet.policy import Policy, policy_from_dict
from kreplica.fleet.preflight import hadoop_literal

_INTS = T.ArrayType(T.IntegerType())
_META = [
    T.StructField("cluster_id", T.StringType()),
    T.StructField("file", T.StringType()),
    T.StructField("error", T.StringType()),
]
BROKER = T.StructType(
    [
        T.StructField("id", T.IntegerType()),
        T.StructField("rack", T.StringType()),
        T.StructField("alive", T.BooleanType()),
        T.StructField("draining", T.BooleanType()),
        T.StructField("listed", T.BooleanType()),
        T.StructField("replicas", T.LongType()),
        T.StructField("leaders", T.LongType()),
        T.StructField("bytes", T.LongType()),
        # B/s, from a snapshot with rates (null without): its network in and out, and the
        # cluster's bands, max(1.05 x mean, mean + the largest single load)
        T.StructField("nw_in", T.DoubleType()),
        T.StructField("nw_out", T.DoubleType()),
        T.StructField("band_in", T.DoubleType()),
        T.StructField("band_out", T.DoubleType()),
    ]
)
TOPIC = T.StructType(
    [
        T.StructField("topic", T.StringType()),
        T.StructField("partitions", T.IntegerType()),
        T.StructField("rf", T.IntegerType()),
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
PARTITION = T.StructType(
    [
        T.StructField("topic", T.StringType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("replicas", _INTS),
        T.StructField("leader", T.IntegerType()),
        T.StructField("isr", _INTS),
        T.StructField("size_bytes", T.LongType()),
        T.StructField("reassigning", T.BooleanType()),
        T.StructField("racks", T.IntegerType()),
        T.StructField("audited", T.BooleanType()),
        T.StructField("min_isr", T.IntegerType()),
        T.StructField("min_isr_source", T.StringType()),
        T.StructField("target_rf", T.IntegerType()),
        T.StructField("target_racks", T.IntegerType()),
        T.StructField("cap", T.IntegerType()),
        T.StructField("cluster_racks", T.IntegerType()),
    ]
)
# `fleet audit`: one row per file, the cluster's tables as lists (exploded once, in Spark)
PARSED_ROW = T.StructType(
    [
        *_META,
        T.StructField("drain", _INTS),
        T.StructField("n_brokers", T.LongType()),  # the snapshot lists
        T.StructField("n_brokers_down", T.LongType()),
        T.StructField("n_topics", T.LongType()),
        T.StructField("n_partitions", T.LongType()),
        T.StructField("brokers", T.ArrayType(BROKER)),
        T.StructField("topics", T.ArrayType(TOPIC)),
        T.StructField("partitions", T.ArrayType(PARTITION)),
    ]
)

MAX_TASKS = 128
TASKS_PER_CORE = 3
FILES_PER_TASK = 32
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_parquet(path: str) -> bool:
    """A Parquet dataset: a path ending in .parquet, or a local folder holding .parquet files."""
    if path.rstrip("/").endswith(".parquet"):
        return True
    if _URI.match(path) or not os.path.isdir(path):
        return False
    return any(f.endswith(".parquet") for _root, _dirs, files in os.walk(path) for f in files)


def spark_path(path: str) -> str:
    """What Spark reads: a local folder means its *.json files, a local file itself (glob
    characters in their names escaped: a path that exists is a path); globs and URIs pass
    through."""
    if not _URI.match(path) and os.path.isdir(path):
        return os.path.join(hadoop_literal(os.path.abspath(path)), "*.json")
    if not _URI.match(path) and os.path.exists(path):
        return hadoop_literal(path)
    return path


def read_texts(spark: SparkSession, path: str, listed: Listed | None = None) -> DataFrame:
    """(file, text) per snapshot: whole JSON files, or Parquet rows turned back into JSON;
    or, for files `listed` on this machine's file system, rows the tasks read themselves
    (`local_texts`, already spread over tasks)."""
    if listed is not None and listed.local:
        cores = spark.sparkContext.defaultParallelism
        count = len(listed.local)
        tasks = max(cores * TASKS_PER_CORE, -(-count // FILES_PER_TASK))
        return local_texts(spark, listed.local, min(count, tasks))
    if is_parquet(path):
        literal = not _URI.match(path) and os.path.exists(path)  # a path, not a pattern
        raw = spark.read.parquet(hadoop_literal(path) if literal else path)
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
    bytes: int = 0  # of `files`
    # `files` when every one is on the local file system (else empty): what tasks read
    local: list[LocalFile] = field(default_factory=list)


@dataclass(frozen=True)
class LocalFile:
    name: str  # as Spark's whole-text reader names it (`input_file_name`, %-encoded)
    path: str  # on this machine
    bytes: int


def list_inputs(spark: SparkSession, path: str) -> Listed:
    if is_parquet(path):
        return Listed([], [], [])
    pattern = spark_path(path)
    target = spark._jvm.org.apache.hadoop.fs.Path(pattern)  # type: ignore[union-attr]
    fs = target.getFileSystem(spark._jsc.hadoopConfiguration())
    files: list[str] = []
    empty: list[str] = []
    local: list[LocalFile] | None = []
    size = 0
    for status in fs.globStatus(target) or []:
        children = fs.listStatus(status.getPath()) if status.isDirectory() else [status]
        for child in children:
            name = str(child.getPath().getName())
            if not child.isFile() or name.startswith(("_", ".")):
                continue
            (files if child.getLen() else empty).append(str(child.getPath().toString()))
            size += int(child.getLen())
            uri = child.getPath().toUri()
            if local is not None and child.getLen() and str(uri.getScheme()) == "file":
                name_uri = f"file://{uri.getRawPath()}"
                local.append(LocalFile(name_uri, str(uri.getPath()), int(child.getLen())))
            elif child.getLen():
                local = None
    broken = []
    if not _URI.match(pattern):
        if os.path.isdir(path):  # the same files as `pattern`, by Python's glob rules
            found = glob.glob(os.path.join(glob.escape(os.path.abspath(path)), "*.json"))
        else:
            found = [path] if os.path.lexists(path) else glob.glob(path)
        broken = [f for f in found if os.path.islink(f) and not os.path.exists(f)]
    return Listed(sorted(files), sorted(empty), sorted(broken), size, local or [])


LOCAL_ROW = T.StructType(
    [
        T.StructField("file", T.StringType()),
        T.StructField("text", T.StringType()),  # null: the task reads `path`
        T.StructField("path", T.StringType()),
    ]
)


def local_texts(spark: SparkSession, files: list[LocalFile], tasks: int) -> DataFrame:
    """Rows of `read_texts`'s columns (and `path`) whose text the tasks read themselves
    (`batch_texts`): the JVM then neither reads nor ships the files' text (4 s of the audit
    of 1M partitions, measured). Biggest file first, each to the task with the fewest bytes;
    tasks in order of bytes, so the biggest start first."""
    bins: list[list[tuple[str, None, str]]] = [[] for _ in range(max(1, tasks))]
    load = [0] * len(bins)
    for f in sorted(files, key=lambda f: (-f.bytes, f.name)):
        lightest = min(range(len(bins)), key=load.__getitem__)
        bins[lightest].append((f.name, None, f.path))
        load[lightest] += f.bytes
    ordered = [bins[i] for i in sorted(range(len(bins)), key=lambda i: -load[i]) if bins[i]]
    rows = spark.sparkContext.parallelize(ordered, len(ordered)).flatMap(lambda b: b)
    return spark.createDataFrame(rows, LOCAL_ROW)


def batch_texts(batch: Any) -> Iterator[tuple[str, str]]:
    """(file, text) of each row of an Arrow batch of `read_texts` or `local_texts` rows. A
    local file is read here; one that cannot be is left out, as Spark's reader leaves it
    (`pipeline.resolve` names it)."""
    files = batch.column("file").to_pylist()
    texts = batch.column("text").to_pylist()
    names = batch.schema.names
    paths = batch.column("path").to_pylist() if "path" in names else [None] * len(files)
    for file, text, path in zip(files, texts, paths, strict=True):
        if text is None and path is not None:
            try:
                with open(path, "rb") as handle:
                    text = handle.read().decode("utf-8", errors="replace")
            except OSError:
                continue
        yield file, text


@contextmanager
def file_tasks(spark: SparkSession, listed: Listed) -> Iterator[None]:
    """While Spark plans the reading of the snapshot files (`read_texts` up to the first
    action): its reader packs them into about TASKS_PER_CORE tasks per core of even bytes,
    biggest files first (each file whole, in one task), so the cores share big and small
    clusters with a handful of tasks and no shuffle of the files' text. Its defaults would
    put a whole small fleet in one task (128 MiB a task, 4 MiB a file)."""
    if not listed.bytes:
        yield
        return
    cores = spark.sparkContext.defaultParallelism
    split = max(1, -(-listed.bytes // (cores * TASKS_PER_CORE)))
    # a file also costs a little to open: at most FILES_PER_TASK files in a task
    conf = {
        "spark.sql.files.maxPartitionBytes": str(split),
        "spark.sql.files.openCostInBytes": str(max(1, split // FILES_PER_TASK)),
    }
    before = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, old in before.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


def parse_snapshots(
    texts: DataFrame, policy: Policy, *, layouts: bool = True, listed: Listed | None = None
) -> DataFrame:
    """One row per file (PARSED_ROW), parsed once by the CLI's snapshot reader in Python
    tasks and handed to Spark as Arrow batches: cluster_id, file, error (a file that does not
    parse), then the cluster's tables."""
    shipped = policy.to_dict()

    def parse(batches: Any) -> Any:
        from pyspark.sql.pandas.types import to_arrow_schema

        from kreplica.fleet.batches import snapshot_batch

        pol = policy_from_dict(shipped)
        arrow = to_arrow_schema(PARSED_ROW)
        for batch in batches:
            for file, text in batch_texts(batch):
                yield snapshot_batch(file, text, pol, arrow, layouts=layouts)

    return spread_files(texts, listed).mapInArrow(parse, PARSED_ROW)


def spread_files(texts: DataFrame, listed: Listed | None, *, packed: bool = False) -> DataFrame:
    """Local files: as `local_texts` spread them. `packed`: snapshot files as `file_tasks`
    packs them (`fleet plan` of files Spark reads). Else, and for other rows (Parquet),
    spread a row or so per task (up to MAX_TASKS), so the cores take big and small clusters
    as they come and none waits on a task holding several big ones."""
    if "path" in texts.columns or (packed and listed is not None and listed.bytes):
        return texts  # `local_texts` rows, or whole files `file_tasks` packs
    cores = texts.sparkSession.sparkContext.defaultParallelism
    rows = len(listed.files) if listed is not None else 0
    return texts.repartition(min(max(rows, cores * 2), max(MAX_TASKS, cores * 2)))


@dataclass
class Frames:
    brokers: DataFrame
    topics: DataFrame
    partitions: DataFrame
    clusters: DataFrame  # cluster_id, brokers, brokers_down, topics, partitions (counts)


def explode_snapshots(snapshots: DataFrame) -> Frames:
    """brokers (with their load), topics and partitions of every readable snapshot."""
    data = snapshots.where(F.col("error").isNull())
    brokers = (
        data.select("cluster_id", F.explode("brokers").alias("b"))
        .select("cluster_id", F.col("b.id").alias("broker"), "b.*")
        .drop("id")
    )
    topics = data.select("cluster_id", F.explode("topics").alias("t")).select("cluster_id", "t.*")
    partitions = data.select("cluster_id", F.explode("partitions").alias("p")).select(
        "cluster_id", "p.*"
    )
    clusters = data.select(
        "cluster_id",
        F.col("n_brokers").alias("brokers"),
        F.col("n_brokers_down").alias("brokers_down"),
        F.col("n_topics").alias("topics"),
        F.col("n_partitions").alias("partitions"),
    )
    return Frames(brokers=brokers, topics=topics, partitions=partitions, clusters=clusters)
