"""The fleet pipeline on a given SparkSession: read snapshots, audit, plan, write reports.
(The session comes from `kreplica.fleet.job.build_session`, never from here.)"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.window import Window

from kreplica.errors import InputError, KreplicaError, SourceError, UsageError
from kreplica.fleet import report
from kreplica.fleet.adapter import PLAN_FILES, SUMMARY_KEYS, PlanSettings
from kreplica.fleet.frames import (
    Frames,
    Listed,
    batch_texts,
    explode_snapshots,
    file_tasks,
    list_inputs,
    parse_snapshots,
    read_texts,
    spread_files,
)
from kreplica.fleet.outfiles import OutFiles, first_line
from kreplica.fleet.plantask import STAGING, staged_folder
from kreplica.fleet.policy import Policy
from kreplica.fleet.records import short_name
from kreplica.fleet.transforms import (
    FINDING_COLUMNS,
    FINDINGS_SCHEMA,
    LEVEL_RANK,
    cluster_summary,
)
from kreplica.fleet.transforms import audit as audit_frames

Progress = Callable[[str], None]
TOP_FINDINGS = 10


@dataclass
class Loaded:
    snapshots: DataFrame  # readable, one per cluster (PARSED_ROW)
    persisted: DataFrame  # every parsed file (unpersisted when done)
    skipped: list[dict[str, str]]  # {file, error}
    clusters: int
    # per cluster read, counted while parsing: its size (brokers, brokers_down, topics,
    # partitions) and its brokers' load (for the charts); a few numbers per broker
    sizes: list[dict[str, Any]]
    brokers: dict[str, list[dict[str, Any]]]


@dataclass
class Resolved:
    """What the files read came to: the file kept per cluster, and every file skipped."""

    first: dict[str, str]  # cluster_id -> the file read for it (the first by name)
    duplicates: list[str]  # files of a cluster read from an earlier file: skipped
    skipped: list[dict[str, str]]  # {file, error}, by file


def _inputs(spark: SparkSession, input_path: str) -> tuple[DataFrame, Listed]:
    try:
        listed = list_inputs(spark, input_path)
        texts = read_texts(spark, input_path, listed)
    except Exception as exc:  # AnalysisException: path does not exist, not Parquet, ...
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UsageError(f"--input {input_path!r}: Spark cannot read it ({text})") from None
    return texts, listed


def _read_failed(input_path: str, exc: Exception) -> Exception:
    """What a Spark job over the snapshots failing to read them means, in one line."""
    if "Path does not exist" in str(exc) or "PATH_NOT_FOUND" in str(exc):
        return UsageError(f"--input {input_path!r} matches no snapshot files")
    return SourceError(
        f"--input {input_path!r}: Spark could not read the snapshots ({first_line(exc)})"
    )


def resolve(
    meta: list[dict[str, Any]], listed: Listed, input_path: str, progress: Progress
) -> Resolved:
    """From each file read ({cluster_id, file, error}) and the files listed: the file kept per
    cluster, and the files skipped (not a snapshot, a second file for a cluster, empty,
    unreadable), each said through `progress`. No snapshot at all is an error."""
    empty = [short_name(f) for f in listed.empty]
    skipped = [{"file": r["file"], "error": r["error"]} for r in meta if r["error"] is not None]
    first: dict[str, str] = {}
    duplicates: list[str] = []
    for r in sorted((r for r in meta if r["error"] is None), key=lambda r: r["file"]):
        if r["cluster_id"] in first:
            duplicates.append(r["file"])
            skipped.append(
                {
                    "file": r["file"],
                    "error": f"{r['file']}: cluster {r['cluster_id']} again (first in "
                    f"{first[r['cluster_id']]}); skipped",
                }
            )
        else:
            first[r["cluster_id"]] = r["file"]
    # Spark's whole-text reader drops a 0-byte file without a row: named here instead
    skipped += [{"file": f, "error": f"{f}: empty file (0 bytes), not a snapshot"} for f in empty]
    # a row's file is decoded once (`records.row_name`), as Hadoop lists it
    read = {r["file"] for r in meta}
    unread = [short_name(f) for f in listed.files if short_name(f) not in read]
    unread += listed.broken
    skipped += [
        {"file": f, "error": f"{f}: cannot be read (missing, not permitted, or an I/O error)"}
        for f in unread
    ]
    if not meta and (empty or unread):
        what = "empty or unreadable" if empty and unread else "unreadable" if unread else "empty"
        raise InputError(
            f"--input {input_path!r}: every snapshot file is {what}, e.g. {(empty + unread)[0]}"
        )
    if not meta:
        raise UsageError(f"--input {input_path!r} matches no snapshot files")
    skipped.sort(key=lambda s: s["file"])
    for s in skipped:
        progress(f"skipped: {s['error']}")
    files = len(meta) + len(empty) + len(unread)
    progress(f"read {files} snapshot(s): {len(first)} cluster(s), {len(skipped)} skipped")
    return Resolved(first=first, duplicates=duplicates, skipped=skipped)


def load(
    spark: SparkSession,
    input_path: str,
    policy: Policy,
    *,
    layouts: bool,
    progress: Progress,
    meanwhile: Callable[[DataFrame], Any] = lambda good: None,
) -> tuple[Loaded, Any]:
    """The snapshots read, and what `meanwhile` made of the readable ones (called while the
    parsing job runs, and again after it when a cluster's second file must be left out):
    building the queries that read them costs the driver seconds on a fresh JVM, which then
    overlap the parsing."""
    texts, listed = _inputs(spark, input_path)
    # the one job that parses: what the summary and the charts need of each cluster comes back
    # with the file's name (no later job for it), its partitions stay in Spark
    sizes = ("n_brokers", "n_brokers_down", "n_topics", "n_partitions")
    snapshots = parse_snapshots(texts, policy, layouts=layouts, listed=listed).persist()
    good = snapshots.where(F.col("error").isNull())
    with ThreadPoolExecutor(1) as pool:
        parsing = pool.submit(
            snapshots.select("cluster_id", "file", "error", *sizes, "brokers").collect
        )
        made = meanwhile(good)
        try:
            meta = [r.asDict(recursive=True) for r in parsing.result()]
        except Exception as exc:
            raise _read_failed(input_path, exc) from None
    resolved = resolve(meta, listed, input_path, progress)
    kept = set(resolved.first.values())
    if resolved.duplicates:
        good = good.where(~F.col("file").isin(resolved.duplicates))
        made = meanwhile(good)
    read = sorted((r for r in meta if r["error"] is None and r["file"] in kept), key=_cluster)
    loaded = Loaded(
        snapshots=good,
        persisted=snapshots,
        skipped=resolved.skipped,
        clusters=len(resolved.first),
        sizes=[{"cluster_id": r["cluster_id"], **{k[2:]: r[k] for k in sizes}} for r in read],
        brokers={
            r["cluster_id"]: [
                {"cluster_id": r["cluster_id"], "broker": b.pop("id"), **b}
                for b in r["brokers"] or []
            ]
            for r in read
        },
    )
    return loaded, made


def _cluster(row: dict[str, Any]) -> str:
    return str(row["cluster_id"])


def _finding_dict(row: Any) -> dict[str, Any]:
    return {k: row[k] for k in FINDING_COLUMNS if k != "cluster_id"}


def audit(
    spark: SparkSession,
    input_path: str,
    out: OutFiles,
    policy: Policy,
    *,
    worst: int,
    layouts: bool,
    progress: Progress,
) -> dict[str, Any]:
    cores = spark.sparkContext.defaultParallelism
    report.warm_charts()

    def checks(good: DataFrame) -> tuple[Frames, DataFrame]:
        # the exploded tables, built once and kept: every check reads them
        # the parsed rows (cached, a file per task) read by a few tasks: the checks' stages
        # are small, and a task per file would be mostly overhead
        frames = explode_snapshots(good.coalesce(max(2, cores * 2)))
        frames = Frames(
            brokers=frames.brokers.persist(),
            topics=frames.topics,  # read once (by the topic checks)
            partitions=frames.partitions.persist(),
            clusters=frames.clusters,
        )
        return frames, audit_frames(frames)

    loaded, (frames, found) = load(
        spark, input_path, policy, layouts=layouts, progress=progress, meanwhile=checks
    )
    (
        found.repartition("cluster_id")
        .sortWithinPartitions("cluster_id", "level", "code", "topic", "broker")
        .write.mode("overwrite")
        .partitionBy("cluster_id")
        .parquet(out.uri("findings"))
    )
    progress(f"wrote findings to {out.shown('findings')} (Parquet, partitioned by cluster_id)")
    # the summary and the charts read the findings written, not the checks again
    findings = spark.read.schema(FINDINGS_SCHEMA).parquet(out.literal("findings"))
    summary_rows = cluster_summary(findings, loaded.sizes)
    ranked = [r["cluster_id"] for r in summary_rows if r["errors"] or r["warnings"]]
    charted = ranked[:worst]
    top: dict[str, list[dict[str, Any]]] = {}
    if charted:
        rank = F.create_map(*[x for k, v in LEVEL_RANK.items() for x in (F.lit(k), F.lit(v))])
        order = Window.partitionBy("cluster_id").orderBy(
            rank[F.col("level")], F.desc_nulls_last("partitions"), "code", "topic", "broker"
        )
        # at most TOP_FINDINGS rows per charted cluster reach the driver
        window_rows = (
            findings.where(F.col("cluster_id").isin(charted))
            .withColumn("n", F.row_number().over(order))
            .where(F.col("n") <= TOP_FINDINGS)
            .collect()
        )
        for r in sorted(window_rows, key=lambda r: (r["cluster_id"], r["n"])):
            top.setdefault(r["cluster_id"], []).append(_finding_dict(r))
        for cluster_id in charted:
            name = f"charts/{report.safe_name(cluster_id)}.png"
            chart = report.broker_chart(cluster_id, loaded.brokers.get(cluster_id, []))
            out.write_bytes(name, chart)
            top.setdefault(cluster_id, [])
        progress(f"charted the {len(charted)} worst cluster(s) in {out.shown('charts')}")
    clusters = []
    for entry in summary_rows:
        if entry["cluster_id"] in top:
            entry["top_findings"] = top[entry["cluster_id"]]
            entry["chart"] = f"charts/{report.safe_name(entry['cluster_id'])}.png"
        clusters.append(entry)
    totals = {
        k: sum(int(c[k]) for c in clusters)
        for k in ("brokers", "topics", "partitions", "errors", "warnings", "infos")
    }
    totals.update(clusters=len(clusters), skipped=len(loaded.skipped))
    doc: dict[str, Any] = {
        "kreplica_fleet_audit": report.AUDIT_FORMAT,
        "input": input_path,
        "policy": policy.to_dict(),
        "totals": totals,
        "clusters": clusters,
        "skipped": loaded.skipped,
        "findings": out.shown("findings"),
    }
    out.write_text("audit-summary.json", report.json_text(doc))
    markdown = report.audit_markdown(doc)
    out.write_text("audit-summary.md", markdown)
    progress(f"wrote {out.shown('audit-summary.json')} and {out.shown('audit-summary.md')}")
    _done(out, "audit", totals, loaded.skipped)
    for df in (frames.partitions, frames.brokers):
        df.unpersist()
    loaded.persisted.unpersist()
    return {**doc, "markdown": markdown}


PLAN_ROW = T.StructType(
    [
        T.StructField("cluster_id", T.StringType()),
        T.StructField("file", T.StringType()),
        T.StructField("skip", T.StringType()),  # a file that is not a snapshot: why
        T.StructField("status", T.StringType()),
        T.StructField("error_code", T.StringType()),
        T.StructField("error", T.StringType()),
        T.StructField("topics_planned", T.LongType()),
        *[T.StructField(k, T.LongType()) for k in SUMMARY_KEYS],
        T.StructField("has_plan", T.BooleanType()),
        # the plan files' text: null when the executor wrote them itself (a local --out)
        *[T.StructField(column, T.StringType()) for column, _ in PLAN_FILES],
    ]
)


def plan_frame(
    texts: DataFrame,
    policy: Policy,
    settings: PlanSettings,
    *,
    listed: Listed | None = None,
    write_to: str | None = None,
) -> DataFrame:
    """One row per snapshot file (`read_texts`): the file read once and planned in the same
    task (`plantask.plan_text`: the CLI's reader and planner, the whole cluster at once so
    cluster-wide balance sees every topic), files spread a cluster or so per task. With
    `write_to` (a local --out every executor sees: local and single-machine masters), each
    task writes its plan files under `write_to`'s staging folder and the row carries only the
    summary numbers, so no plan passes through the driver; else the row carries the files'
    text."""
    shipped = policy.to_dict()
    columns = [f.name for f in PLAN_ROW.fields]

    def plan_batches(batches: Any) -> Any:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        from kreplica.fleet.outfiles import write_local
        from kreplica.fleet.plantask import plan_text, staged_folder
        from kreplica.fleet.policy import policy_from_dict

        pol = policy_from_dict(shipped)
        arrow = to_arrow_schema(PLAN_ROW)
        for batch in batches:
            for file, text in batch_texts(batch):
                row = plan_text(file, text, pol, settings)
                row["has_plan"] = row.get("reassignment") is not None
                if write_to is not None and row["has_plan"]:
                    for column, name in PLAN_FILES:
                        if row[column] is not None:
                            rel = f"{staged_folder(row['file'])}/{name}"
                            write_local(Path(write_to), rel, row[column].encode("utf-8"))
                            row[column] = None
                yield pa.RecordBatch.from_pylist([{c: row.get(c) for c in columns}], schema=arrow)

    return spread_files(texts, listed, packed=True).mapInArrow(plan_batches, PLAN_ROW)


def _write_plans(frame: DataFrame, out: OutFiles) -> list[Any]:
    """Plan files on a Hadoop URI, written by the executors (their Python has no Hadoop
    client, their JVM has): Spark's text writer puts each file under STAGING/texts/staged=
    <file's hash>/name=<file>/, the driver then renames it to `staged_folder(file)/<file>`
    (no plan bytes through the driver). The rows, without the plans' text."""
    texts = [
        F.struct(F.lit(name).alias("name"), F.col(col).alias("text")) for col, name in PLAN_FILES
    ]
    folder = f"{STAGING}/texts"
    frame = frame.persist()
    try:
        (
            frame.where(F.col("has_plan"))
            .select(
                F.substring(F.sha1(F.col("file")), 1, 24).alias("staged"),
                F.explode(F.array(*texts)).alias("f"),
            )
            .where(F.col("f.text").isNotNull())
            # the writer ends each text with a newline, as plan files already end
            .select("staged", "f.name", F.regexp_replace("f.text", "\n\\z", "").alias("text"))
            .write.mode("overwrite")
            .partitionBy("staged", "name")
            .text(out.uri(folder))
        )
        rows = frame.drop(*[col for col, _ in PLAN_FILES]).collect()
    finally:
        frame.unpersist()
    for row in rows:
        if not row["has_plan"]:
            continue
        staged = staged_folder(row["file"])
        for _, name in PLAN_FILES:
            part = out.only_file(f"{folder}/staged={staged.rsplit('/', 1)[1]}/name={name}")
            if part is not None:
                out.move(part, f"{staged}/{name}")
    out.remove(folder)
    return rows


def plan(
    spark: SparkSession,
    input_path: str,
    out: OutFiles,
    policy: Policy,
    *,
    settings: PlanSettings,
    progress: Progress,
) -> dict[str, Any]:
    texts, listed = _inputs(spark, input_path)
    local = out.out.local
    out.remove(STAGING)  # a run that stopped half-way
    frame = plan_frame(
        texts,
        policy,
        settings,
        listed=listed,
        write_to=str(local) if local is not None else None,
    )
    found: list[dict[str, Any]] = []
    # the driver collects summary rows only: with a local --out the tasks wrote the files,
    # with a Hadoop URI Spark's text writer does (`_write_plans`)
    try:
        with file_tasks(spark, listed):
            rows_in = frame.collect() if local is not None else _write_plans(frame, out)
        for found_row in rows_in:
            row = found_row.asDict()
            for column, _ in PLAN_FILES:
                row.pop(column, None)
            found.append(row)
    except Exception as exc:
        if isinstance(exc, KreplicaError):
            raise
        raise _read_failed(input_path, exc) from None
    meta = [{"cluster_id": r["cluster_id"], "file": r["file"], "error": r["skip"]} for r in found]
    resolved = resolve(meta, listed, input_path, progress)
    kept = set(resolved.first.values())
    rows: list[dict[str, Any]] = []
    for row in found:
        if row["file"] not in kept or row["cluster_id"] is None:
            continue
        # plans/<cluster>/ is this run's plan, or nothing when the cluster has none now
        folder = f"plans/{report.safe_name(row['cluster_id'])}"
        out.remove(folder)
        if row["has_plan"]:
            out.move(staged_folder(row["file"]), folder)
        del row["skip"]
        row["files"] = out.shown(folder) if row.pop("has_plan") else None
        rows.append(row)
    out.remove(STAGING)
    rows.sort(key=lambda r: r["cluster_id"])
    ok = [r for r in rows if r["status"] == "ok"]
    totals: dict[str, Any] = {
        k: sum(int(r[k] or 0) for r in ok)
        for k in (
            "replicas_added",
            "lower_bound_replicas_added",
            "replicas_removed",
            "lower_bound_replicas_removed",
            "existing_replicas_moved",
            "partitions_changed",
            "partitions_created",
            "bytes_to_move",
            "bytes_lower_bound",
        )
    }
    totals.update(
        clusters=len(rows),
        with_changes=sum(1 for r in ok if (r["partitions_changed"] or r["partitions_created"])),
        errors=sum(1 for r in rows if r["status"] == "error"),
        skipped=len(resolved.skipped),
    )
    doc: dict[str, Any] = {
        "kreplica_fleet_plan": 1,
        "input": input_path,
        "policy": policy.to_dict(),
        "settings": vars(settings),
        "totals": totals,
        "clusters": rows,
        "skipped": resolved.skipped,
    }
    progress(f"planned {len(rows)} cluster(s): plans in {out.shown('plans')}")
    out.write_text("plan-summary.json", report.json_text(doc))
    markdown = report.plan_markdown(doc)
    out.write_text("plan-summary.md", markdown)
    progress(f"wrote {out.shown('plan-summary.json')} and {out.shown('plan-summary.md')}")
    _done(out, "plan", totals, resolved.skipped, refused=totals["errors"])
    return {**doc, "markdown": markdown}


def _done(
    out: OutFiles, command: str, totals: dict[str, Any], skipped: list[Any], *, refused: int = 0
) -> None:
    """The success marker, last: the run's counts and whether the run is partial (part of the
    input skipped, or clusters the planner refused)."""
    counts: dict[str, Any] = {k: totals[k] for k in ("clusters", "skipped", "errors")}
    out.mark_done(command, {**counts, "status": "partial" if skipped or refused else "ok"})
