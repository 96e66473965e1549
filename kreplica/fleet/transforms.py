"""The audit as DataFrame transformations: each check takes the fleet's frames and returns
findings, one row per (cluster, topic or broker, check), with a count of the partitions it
covers and one example partition. Small and deterministic: tested on small frames.

Findings columns: cluster_id, level (error|warning|info), code, topic, broker, partitions,
partition (an example), value, expected, message.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

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
LEVEL_RANK = {"error": 0, "warning": 1, "info": 2}
# A cluster's replica (or leader) counts per live broker may differ by this share of the mean
# (and always by 1) before the audit calls it skew.
SKEW_TOLERANCE = 0.1


def _finding(
    df: DataFrame,
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
) -> DataFrame:
    def _or_null(c: Column | None, kind: str) -> Column:
        return (c if c is not None else F.lit(None)).cast(kind)

    return df.select(
        F.col("cluster_id"),
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


def _audited(frames: Frames) -> DataFrame:
    """Partitions of topics the policy does not exempt, with their topic's fields."""
    topics = frames.topics.where(~F.coalesce(F.col("exempt"), F.lit(False)))
    return frames.partitions.join(topics.drop("partitions", "rf"), ["cluster_id", "topic"])


def _per_topic(df: DataFrame, *extra: Column) -> DataFrame:
    return df.groupBy("cluster_id", "topic").agg(
        F.count(F.lit(1)).alias("n"), F.min("partition").alias("example"), *extra
    )


def rf_below_policy(frames: Frames) -> DataFrame:
    bad = _audited(frames).where(
        F.col("target_rf").isNotNull() & (F.size("replicas") < F.col("target_rf"))
    )
    grouped = _per_topic(bad, F.min(F.size("replicas")).alias("rf"), F.max("target_rf").alias("t"))
    return _finding(
        grouped,
        "error",
        "rf-below-policy",
        F.format_string(
            "topic %s: %d partition(s) with RF %d, policy asks %d (e.g. partition %d)",
            "topic",
            "n",
            "rf",
            "t",
            "example",
        ),
        topic=F.col("topic"),
        partitions=F.col("n"),
        partition=F.col("example"),
        value=F.col("rf"),
        expected=F.col("t"),
    )


def rf_at_or_below_min_insync(frames: Frames) -> DataFrame:
    bad = _audited(frames).where(F.size("replicas") <= F.col("min_isr"))
    grouped = _per_topic(
        bad,
        F.min(F.size("replicas")).alias("rf"),
        F.max("min_isr").alias("m"),
        F.first("min_isr_source").alias("src"),
    )
    return _finding(
        grouped,
        "error",
        "rf-at-or-below-min-insync",
        F.format_string(
            "topic %s: RF %d <= min.insync.replicas=%d (%s) on %d partition(s): acks=all "
            "producers fail as soon as one replica is unavailable",
            "topic",
            "rf",
            "m",
            "src",
            "n",
        ),
        topic=F.col("topic"),
        partitions=F.col("n"),
        partition=F.col("example"),
        value=F.col("rf"),
        expected=F.col("m") + 1,
    )


def min_insync_below_policy(frames: Frames) -> DataFrame:
    topics = frames.topics.where(
        ~F.coalesce(F.col("exempt"), F.lit(False))
        & F.col("target_min_insync").isNotNull()
        & (F.col("min_isr") < F.col("target_min_insync"))
    )
    return _finding(
        topics,
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
    )


def _replica_rows(frames: Frames) -> DataFrame:
    """One row per replica: cluster, topic, partition, position, broker."""
    return frames.partitions.select(
        "cluster_id", "topic", "partition", F.posexplode("replicas").alias("pos", "broker")
    )


def rack_violations(frames: Frames) -> DataFrame:
    """Partitions on fewer racks than they can span: min(RF, racks in the cluster), or the
    policy's racks per partition when it asks for fewer."""
    racks = frames.brokers.where(F.col("alive") & F.col("rack").isNotNull())
    cluster_racks = racks.groupBy("cluster_id").agg(F.countDistinct("rack").alias("cluster_racks"))
    spans = (
        _replica_rows(frames)
        .join(
            frames.brokers.select("cluster_id", "broker", "rack"), ["cluster_id", "broker"], "left"
        )
        .groupBy("cluster_id", "topic", "partition")
        .agg(F.countDistinct("rack").alias("spanned"), F.count(F.lit(1)).alias("rf"))
    )
    topics = frames.topics.where(~F.coalesce(F.col("exempt"), F.lit(False))).select(
        "cluster_id", "topic", "target_racks"
    )
    required = F.least(
        F.col("rf"),
        F.coalesce(F.col("target_racks"), F.col("cluster_racks")),
        F.col("cluster_racks"),
    )
    bad = (
        spans.join(cluster_racks, "cluster_id")
        .join(topics, ["cluster_id", "topic"])
        .withColumn("required", required)
        .where(F.col("spanned") < F.col("required"))
    )
    grouped = _per_topic(bad, F.min("spanned").alias("s"), F.max("required").alias("r"))
    return _finding(
        grouped,
        "error",
        "rack-violation",
        F.format_string(
            "topic %s: %d partition(s) on %d rack(s) where %d are possible (e.g. partition %d)",
            "topic",
            "n",
            "s",
            "r",
            "example",
        ),
        topic=F.col("topic"),
        partitions=F.col("n"),
        partition=F.col("example"),
        value=F.col("s"),
        expected=F.col("r"),
    )


def under_replicated(frames: Frames) -> DataFrame:
    bad = _audited(frames).where(F.col("isr").isNotNull() & (F.size("isr") < F.size("replicas")))
    grouped = _per_topic(bad, F.min(F.size("isr")).alias("i"))
    return _finding(
        grouped,
        "warning",
        "under-replicated",
        F.format_string(
            "topic %s: %d partition(s) with replicas out of sync (fewest in sync: %d; e.g. "
            "partition %d)",
            "topic",
            "n",
            "i",
            "example",
        ),
        topic=F.col("topic"),
        partitions=F.col("n"),
        partition=F.col("example"),
        value=F.col("i"),
    )


def leader_not_preferred(frames: Frames) -> DataFrame:
    leader = F.col("leader")
    bad = _audited(frames).where(
        leader.isNotNull() & (leader >= 0) & (leader != F.try_element_at("replicas", F.lit(1)))
    )
    grouped = _per_topic(bad)
    return _finding(
        grouped,
        "info",
        "leader-not-preferred",
        F.format_string(
            "topic %s: %d partition(s) led by another replica than the preferred (first) one; "
            "`kreplica elect` moves leadership back (e.g. partition %d)",
            "topic",
            "n",
            "example",
        ),
        topic=F.col("topic"),
        partitions=F.col("n"),
        partition=F.col("example"),
    )


def offline_partitions(frames: Frames) -> DataFrame:
    bad = _audited(frames).where(F.col("leader") == -1)
    grouped = _per_topic(bad)
    return _finding(
        grouped,
        "error",
        "offline",
        F.format_string("topic %s: %d partition(s) without a leader", "topic", "n"),
        topic=F.col("topic"),
        partitions=F.col("n"),
        partition=F.col("example"),
    )


def layout_not_default(frames: Frames) -> DataFrame:
    topics = frames.topics.where(
        ~F.coalesce(F.col("exempt"), F.lit(False)) & (F.col("kafka_default") == F.lit(False))
    )
    return _finding(
        topics,
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
    )


def broker_load(frames: Frames) -> DataFrame:
    """Per broker of every cluster: replicas, leaders (now) and bytes; brokers holding
    nothing included. Replicas on brokers the snapshot does not list are counted too."""
    replicas = (
        frames.partitions.select("cluster_id", F.explode("replicas").alias("broker"), "size_bytes")
        .groupBy("cluster_id", "broker")
        .agg(
            F.count(F.lit(1)).alias("replicas"),
            F.sum(F.coalesce("size_bytes", F.lit(0))).alias("bytes"),
        )
    )
    # The leader now: the recorded one, else the preferred one (a snapshot without state).
    now = F.coalesce(F.col("leader"), F.try_element_at("replicas", F.lit(1)))
    leaders = (
        frames.partitions.where(now >= 0)
        .groupBy("cluster_id", now.alias("broker"))
        .agg(F.count(F.lit(1)).alias("leaders"))
    )
    brokers = frames.brokers.select("cluster_id", "broker", "rack", "alive", "draining")
    return (
        brokers.join(replicas, ["cluster_id", "broker"], "full")
        .join(leaders, ["cluster_id", "broker"], "left")
        .select(
            "cluster_id",
            "broker",
            "rack",
            F.coalesce("alive", F.lit(False)).alias("alive"),
            F.coalesce("draining", F.lit(False)).alias("draining"),
            F.coalesce("replicas", F.lit(0)).alias("replicas"),
            F.coalesce("leaders", F.lit(0)).alias("leaders"),
            F.coalesce("bytes", F.lit(0)).alias("bytes"),
        )
    )


def _listed(frames: Frames) -> DataFrame:
    return frames.brokers.select("cluster_id", "broker", F.lit(True).alias("listed"))


def broker_findings(frames: Frames, load: DataFrame) -> DataFrame:
    """Replicas on dead or unknown brokers, on brokers being drained, and skew."""
    load = load.join(_listed(frames), ["cluster_id", "broker"], "left")
    dead = load.where((~F.col("alive")) & (F.col("replicas") > 0))
    dead_f = _finding(
        dead,
        "error",
        "replicas-on-dead-broker",
        F.format_string(
            "broker %d is %s and holds %d replica(s)",
            "broker",
            F.when(F.col("listed").isNull(), F.lit("not in the cluster")).otherwise(F.lit("down")),
            "replicas",
        ),
        broker=F.col("broker"),
        value=F.col("replicas"),
        expected=F.lit(0),
    )
    drained = load.where(F.col("draining") & (F.col("replicas") > 0))
    drained_f = _finding(
        drained,
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
    )
    live = load.where(F.col("alive") & ~F.col("draining") & F.col("listed").isNotNull())
    stats = live.groupBy("cluster_id").agg(
        F.max("replicas").alias("rmax"),
        F.min("replicas").alias("rmin"),
        F.avg("replicas").alias("ravg"),
        F.max("leaders").alias("lmax"),
        F.min("leaders").alias("lmin"),
        F.avg("leaders").alias("lavg"),
        F.count(F.lit(1)).alias("nb"),
    )
    out = [dead_f, drained_f]
    for what, hi, lo, avg in (
        ("replica", "rmax", "rmin", "ravg"),
        ("leader", "lmax", "lmin", "lavg"),
    ):
        spread = F.col(hi) - F.col(lo)
        skewed = stats.where((spread > 1) & (spread > F.ceil(F.col(avg) * F.lit(SKEW_TOLERANCE))))
        out.append(
            _finding(
                skewed,
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
    return reduce(DataFrame.unionByName, out)


def max_partitions_per_broker(frames: Frames) -> DataFrame:
    """Replicas of the topics a rule covers, per broker, against the rule's maximum."""
    topics = frames.topics.where(
        F.col("max_partitions_per_broker").isNotNull() & ~F.coalesce(F.col("exempt"), F.lit(False))
    ).select("cluster_id", "topic", F.col("max_partitions_per_broker").alias("cap"))
    counts = (
        _replica_rows(frames)
        .join(topics, ["cluster_id", "topic"])
        .groupBy("cluster_id", "broker", "cap")
        .agg(F.count(F.lit(1)).alias("n"))
        .where(F.col("n") > F.col("cap"))
    )
    return _finding(
        counts,
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
    )


CHECKS = (
    rf_below_policy,
    rf_at_or_below_min_insync,
    min_insync_below_policy,
    rack_violations,
    under_replicated,
    offline_partitions,
    leader_not_preferred,
    layout_not_default,
    max_partitions_per_broker,
)


def audit(frames: Frames, load: DataFrame | None = None) -> DataFrame:
    """Every check, as one findings frame."""
    load = broker_load(frames) if load is None else load
    parts = [check(frames) for check in CHECKS] + [broker_findings(frames, load)]
    return reduce(DataFrame.unionByName, parts)


def cluster_summary(findings: DataFrame, frames: Frames) -> DataFrame:
    """Per cluster: brokers, topics, partitions, findings by level, partitions affected by
    errors, and a rank (worst first: errors, then partitions in error, then warnings)."""
    sizes = (
        frames.topics.groupBy("cluster_id")
        .agg(F.count(F.lit(1)).alias("topics"), F.sum("partitions").alias("partitions"))
        .join(
            frames.brokers.groupBy("cluster_id").agg(
                F.count(F.lit(1)).alias("brokers"),
                F.sum(F.when(F.col("alive"), 0).otherwise(1)).alias("brokers_down"),
            ),
            "cluster_id",
            "full",
        )
    )
    counts = findings.groupBy("cluster_id").agg(
        F.sum(F.when(F.col("level") == "error", 1).otherwise(0)).alias("errors"),
        F.sum(F.when(F.col("level") == "warning", 1).otherwise(0)).alias("warnings"),
        F.sum(F.when(F.col("level") == "info", 1).otherwise(0)).alias("infos"),
        F.sum(
            F.when(F.col("level") == "error", F.coalesce("partitions", F.lit(0))).otherwise(0)
        ).alias("partitions_in_error"),
    )
    by_code = findings.groupBy("cluster_id", "code").agg(F.count(F.lit(1)).alias("n"))
    codes = by_code.groupBy("cluster_id").agg(
        F.map_from_entries(F.array_sort(F.collect_list(F.struct("code", "n")))).alias("by_code")
    )
    return (
        sizes.join(counts, "cluster_id", "left")
        .join(codes, "cluster_id", "left")
        .select(
            "cluster_id",
            F.coalesce("brokers", F.lit(0)).alias("brokers"),
            F.coalesce("brokers_down", F.lit(0)).alias("brokers_down"),
            F.coalesce("topics", F.lit(0)).alias("topics"),
            F.coalesce("partitions", F.lit(0)).cast("long").alias("partitions"),
            F.coalesce("errors", F.lit(0)).alias("errors"),
            F.coalesce("warnings", F.lit(0)).alias("warnings"),
            F.coalesce("infos", F.lit(0)).alias("infos"),
            F.coalesce("partitions_in_error", F.lit(0)).alias("partitions_in_error"),
            "by_code",
        )
        .orderBy(F.desc("errors"), F.desc("partitions_in_error"), F.desc("warnings"), "cluster_id")
    )
