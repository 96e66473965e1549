"""The audit as DataFrame transformations: each check takes the fleet's frames and returns
findings, one row per (cluster, topic or broker, check), with a count of the partitions it
covers and one example partition. Small and deterministic: tested on small frames.

Findings columns: cluster_id, level (error|warning|info), code, topic, broker, partitions,
partition (an example), value, expected, message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kreplica.fleet.frames import Frames

FINDING_COLUMNS = (
    "cluster_id",
    "level",
    "code",
    "topic",
    "broker",
    "partitions",
    "partition",
    "value",
    "expected",
    "message",
)
FINDINGS_SCHEMA = T.StructType(
    [
        T.StructField("level", T.StringType()),
        T.StructField("code", T.StringType()),
        T.StructField("topic", T.StringType()),
        T.StructField("broker", T.IntegerType()),
        T.StructField("partitions", T.LongType()),
        T.StructField("partition", T.IntegerType()),
        T.StructField("value", T.LongType()),
        T.StructField("expected", T.LongType()),
        T.StructField("message", T.StringType()),
        # the folder the row is in (partitionBy): a string, even for a cluster named 123
        T.StructField("cluster_id", T.StringType()),
    ]
)
LEVEL_RANK = {"error": 0, "warning": 1, "info": 2}
# A cluster's replica (or leader) counts per live broker may differ by this share of the mean
# (and always by 1) before the audit calls it skew.
SKEW_TOLERANCE = 0.1


def _struct(
    keep: Column,
    level: str,
    code: str,
    message: Column,
    *,
    topic: Column | None = None,
    broker: Column | None = None,
    partitions: Column | None = None,
    partition: Column | None = None,
    value: Column | None = None,
    expected: Column | None = None,
) -> Column:
    """One possible finding of a row, typed alike so several fit one array."""

    def _or_null(c: Column | None, kind: str) -> Column:
        return (c if c is not None else F.lit(None)).cast(kind)

    return F.struct(
        F.coalesce(keep, F.lit(False)).alias("keep"),
        F.lit(level).alias("level"),
        F.lit(code).alias("code"),
        _or_null(topic, "string").alias("topic"),
        _or_null(broker, "int").alias("broker"),
        _or_null(partitions, "long").alias("partitions"),
        _or_null(partition, "int").alias("partition"),
        _or_null(value, "long").alias("value"),
        _or_null(expected, "long").alias("expected"),
        message.alias("message"),
    )


def _found(df: DataFrame, *structs: Column) -> DataFrame:
    """The findings of each row: the structs it keeps, one row each."""
    kept = F.filter(F.array(*structs), lambda f: f["keep"])
    return df.select("cluster_id", F.explode(kept).alias("f")).select(
        "cluster_id", *[F.col(f"f.{c}").alias(c) for c in FINDING_COLUMNS[1:]]
    )


def _count_if(cond: Column) -> Column:
    return F.count(F.when(cond, F.lit(1)))


def partition_findings(frames: Frames) -> DataFrame:
    """Every per-partition check in one aggregation per topic: RF below the policy, RF at or
    below min.insync.replicas, rack diversity, under-replicated, offline, leader not the
    preferred one. Each counts its partitions and names the first (an example)."""
    rf = F.size("replicas")
    leader = F.col("leader")
    required = F.least(
        rf, F.coalesce(F.col("target_racks"), F.col("cluster_racks")), F.col("cluster_racks")
    )
    checks = {
        "rfp": F.col("target_rf").isNotNull() & (rf < F.col("target_rf")),
        "rfm": rf <= F.col("min_isr"),
        # a cluster without live racked brokers has no rack requirement
        "rack": (F.col("cluster_racks") > 0) & (rf > 0) & (F.col("racks") < required),
        "urp": F.col("isr").isNotNull() & (F.size("isr") < rf),
        "off": leader == -1,
        "lnp": leader.isNotNull()
        & (leader >= 0)
        & (leader != F.try_element_at("replicas", F.lit(1))),
    }
    aggs = []
    for name, cond in checks.items():
        aggs += [
            _count_if(cond).alias(f"{name}_n"),
            F.min(F.when(cond, F.col("partition"))).alias(f"{name}_ex"),
        ]
    aggs += [
        F.min(F.when(checks["rfp"], rf)).alias("rfp_rf"),
        F.max(F.when(checks["rfp"], F.col("target_rf"))).alias("rfp_t"),
        F.min(F.when(checks["rfm"], rf)).alias("rfm_rf"),
        F.max(F.when(checks["rfm"], F.col("min_isr"))).alias("rfm_m"),
        F.max("min_isr_source").alias("src"),  # the topic's: one value
        F.min(F.when(checks["rack"], F.col("racks"))).alias("rack_s"),
        F.max(F.when(checks["rack"], required)).alias("rack_r"),
        F.min(F.when(checks["urp"], F.size("isr"))).alias("urp_i"),
    ]
    grouped = frames.partitions.where(F.col("audited")).groupBy("cluster_id", "topic").agg(*aggs)

    def one(name: str, level: str, code: str, message: Column, **kw: Column) -> Column:
        return _struct(
            F.col(f"{name}_n") > 0,
            level,
            code,
            message,
            topic=F.col("topic"),
            partitions=F.col(f"{name}_n"),
            partition=F.col(f"{name}_ex"),
            **kw,
        )

    return _found(
        grouped,
        one(
            "rfp",
            "error",
            "rf-below-policy",
            F.format_string(
                "topic %s: %d partition(s) with RF %d, policy asks %d (e.g. partition %d)",
                "topic",
                "rfp_n",
                "rfp_rf",
                "rfp_t",
                "rfp_ex",
            ),
            value=F.col("rfp_rf"),
            expected=F.col("rfp_t"),
        ),
        one(
            "rfm",
            "error",
            "rf-at-or-below-min-insync",
            F.format_string(
                "topic %s: RF %d <= min.insync.replicas=%d (%s) on %d partition(s): acks=all "
                "producers fail as soon as one replica is unavailable",
                "topic",
                "rfm_rf",
                "rfm_m",
                "src",
                "rfm_n",
            ),
            value=F.col("rfm_rf"),
            expected=F.col("rfm_m") + 1,
        ),
        one(
            "rack",
            "error",
            "rack-violation",
            F.format_string(
                "topic %s: %d partition(s) on %d rack(s) where %d are possible (e.g. partition %d)",
                "topic",
                "rack_n",
                "rack_s",
                "rack_r",
                "rack_ex",
            ),
            value=F.col("rack_s"),
            expected=F.col("rack_r"),
        ),
        one(
            "urp",
            "warning",
            "under-replicated",
            F.format_string(
                "topic %s: %d partition(s) with replicas out of sync (fewest in sync: %d; e.g. "
                "partition %d)",
                "topic",
                "urp_n",
                "urp_i",
                "urp_ex",
            ),
            value=F.col("urp_i"),
        ),
        one(
            "off",
            "error",
            "offline",
            F.format_string("topic %s: %d partition(s) without a leader", "topic", "off_n"),
        ),
        one(
            "lnp",
            "info",
            "leader-not-preferred",
            F.format_string(
                "topic %s: %d partition(s) led by another replica than the preferred (first) "
                "one; `kreplica elect` moves leadership back (e.g. partition %d)",
                "topic",
                "lnp_n",
                "lnp_ex",
            ),
        ),
    )


def topic_findings(frames: Frames) -> DataFrame:
    """min.insync.replicas below the policy, and a layout that is not Kafka's default."""
    topics = frames.topics.where(~F.coalesce(F.col("exempt"), F.lit(False)))
    return _found(
        topics,
        _struct(
            F.col("target_min_insync").isNotNull()
            & (F.col("min_isr") < F.col("target_min_insync")),
            "warning",
            "min-insync-below-policy",
            F.format_string(
                "topic %s: min.insync.replicas=%d (%s), policy asks %d",
                "topic",
                "min_isr",
                "min_isr_source",
                "target_min_insync",
            ),
            topic=F.col("topic"),
            partitions=F.col("partitions"),
            value=F.col("min_isr"),
            expected=F.col("target_min_insync"),
        ),
        _struct(
            F.col("kafka_default") == F.lit(False),
            "info",
            "layout-not-kafka-default",
            F.format_string(
                "topic %s: layout is not Kafka's default placement (closest: %s); "
                "`kreplica explain` says more",
                "topic",
                F.coalesce(F.col("placement"), F.lit("none")),
            ),
            topic=F.col("topic"),
            partitions=F.col("partitions"),
        ),
    )


def broker_findings(frames: Frames) -> DataFrame:
    """Replicas on dead or unknown brokers, on brokers being drained, and skew."""
    load = frames.brokers
    per_broker = _found(
        load.where(F.col("replicas") > 0),
        _struct(
            ~F.col("alive"),
            "error",
            "replicas-on-dead-broker",
            F.format_string(
                "broker %d is %s and holds %d replica(s)",
                "broker",
                F.when(~F.col("listed"), F.lit("not in the cluster")).otherwise(F.lit("down")),
                "replicas",
            ),
            broker=F.col("broker"),
            value=F.col("replicas"),
            expected=F.lit(0),
        ),
        _struct(
            F.col("draining"),
            "warning",
            "replicas-on-drained-broker",
            F.format_string(
                "broker %d is being drained (policy) and still holds %d replica(s); "
                "`kreplica drain --brokers %d` plans the moves",
                "broker",
                "replicas",
                "broker",
            ),
            broker=F.col("broker"),
            value=F.col("replicas"),
            expected=F.lit(0),
        ),
    )
    per_broker = per_broker.unionByName(_over_band(load))
    live = load.where(F.col("alive") & ~F.col("draining") & F.col("listed"))
    stats = live.groupBy("cluster_id").agg(
        F.max("replicas").alias("rmax"),
        F.min("replicas").alias("rmin"),
        F.avg("replicas").alias("ravg"),
        F.max("leaders").alias("lmax"),
        F.min("leaders").alias("lmin"),
        F.avg("leaders").alias("lavg"),
        F.count(F.lit(1)).alias("nb"),
    )
    skews = []
    for what, hi, lo, avg in (
        ("replica", "rmax", "rmin", "ravg"),
        ("leader", "lmax", "lmin", "lavg"),
    ):
        spread = F.col(hi) - F.col(lo)
        skews.append(
            _struct(
                (spread > 1) & (spread > F.ceil(F.col(avg) * F.lit(SKEW_TOLERANCE))),
                "warning",
                f"{what}-skew",
                F.format_string(
                    f"{what}s per live broker range from %d to %d (mean %.1f over %d brokers)",
                    lo,
                    hi,
                    avg,
                    "nb",
                ),
                value=spread,
                expected=F.greatest(F.lit(1), F.ceil(F.col(avg) * F.lit(SKEW_TOLERANCE))),
            )
        )
    return per_broker.unionByName(_found(stats, *skews))


def _over_band(load: DataFrame) -> DataFrame:
    """Live brokers not being drained whose network in or out (a snapshot with rates) is
    over the band `rebalance --by traffic` plans to."""
    counted = load.where(F.col("alive") & ~F.col("draining") & F.col("listed"))
    return _found(
        counted,
        *(
            _struct(
                F.col(f"nw_{what}") > F.col(f"band_{what}"),
                "warning",
                "traffic-over-band",
                F.format_string(
                    f"broker %d network {what} %.0f B/s is over the band, %.0f B/s (max(1.05 x "
                    "mean, mean + the largest partition's)); `kreplica rebalance --by traffic` "
                    "plans the moves",
                    "broker",
                    f"nw_{what}",
                    f"band_{what}",
                ),
                broker=F.col("broker"),
                value=F.round(F.col(f"nw_{what}")),
                expected=F.round(F.col(f"band_{what}")),
            )
            for what in ("in", "out")
        ),
    )


def max_partitions_per_broker(frames: Frames) -> DataFrame:
    """Replicas of the topics a rule covers, per broker, against the rule's maximum."""
    counts = (
        frames.partitions.where(F.col("audited") & F.col("cap").isNotNull())
        .select("cluster_id", "cap", F.explode("replicas").alias("broker"))
        .groupBy("cluster_id", "broker", "cap")
        .agg(F.count(F.lit(1)).alias("n"))
    )
    return _found(
        counts,
        _struct(
            F.col("n") > F.col("cap"),
            "warning",
            "max-partitions-per-broker",
            F.format_string(
                "broker %d holds %d replicas of topics the policy caps at %d per broker",
                "broker",
                "n",
                "cap",
            ),
            broker=F.col("broker"),
            value=F.col("n"),
            expected=F.col("cap"),
        ),
    )


CHECKS = (partition_findings, topic_findings, broker_findings, max_partitions_per_broker)


def audit(frames: Frames) -> DataFrame:
    """Every check, as one findings frame: a few aggregations over the persisted tables."""
    return reduce(DataFrame.unionByName, [check(frames) for check in CHECKS])


def cluster_summary(
    findings: DataFrame, sizes: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Per cluster: brokers, topics, partitions, findings by level and code, partitions
    affected by errors; worst first (errors, then partitions in error, then warnings). One
    small aggregation (a row per cluster, level and code) reaches the driver; `sizes` are the
    clusters' (cluster_id, brokers, brokers_down, topics, partitions), counted while
    parsing."""
    counts = (
        findings.groupBy("cluster_id", "level", "code")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(F.coalesce("partitions", F.lit(0))).alias("partitions"),
        )
        .collect()
    )
    rows: dict[str, dict[str, Any]] = {}
    for r in sizes:
        if not (r["topics"] or r["brokers"]):
            continue  # nothing to count
        rows[r["cluster_id"]] = {
            "cluster_id": r["cluster_id"],
            "brokers": r["brokers"],
            "brokers_down": r["brokers_down"],
            "topics": r["topics"],
            "partitions": r["partitions"],
            "errors": 0,
            "warnings": 0,
            "infos": 0,
            "partitions_in_error": 0,
            "by_code": {},
        }
    for c in counts:
        row = rows.get(c["cluster_id"])
        if row is None:
            continue
        row[{"error": "errors", "warning": "warnings", "info": "infos"}[c["level"]]] += c["n"]
        if c["level"] == "error":
            row["partitions_in_error"] += c["partitions"]
        row["by_code"][c["code"]] = row["by_code"].get(c["code"], 0) + c["n"]
    out = sorted(rows.values(), key=lambda r: r["cluster_id"])
    out.sort(key=lambda r: (-r["errors"], -r["partitions_in_error"], -r["warnings"]))
    for row in out:
        row["by_code"] = dict(sorted(row["by_code"].items()))
    return out
