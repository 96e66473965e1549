"""From a snapshot file's text to the records the Spark job reads (pure, stdlib only).

Each snapshot is parsed by the one snapshot reader (`kreplica.sources.snapshot`), so a file the
CLI refuses is refused here with the same message, and then skipped. What Spark gets (as Arrow
batches, `kreplica.fleet.frames`) is the snapshot's brokers, topics and partitions plus, per
topic, what the fleet needs beside them: the effective min.insync.replicas, the policy's
targets, and `kreplica explain`'s verdict on the layout.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from kreplica.errors import KreplicaError
from kreplica.fleet.adapter import cluster_key
from kreplica.fleet.policy import ClusterPolicy, Policy, Target
from kreplica.model import ClusterSnapshot, Topic
from kreplica.planner.explain import default_or_closest
from kreplica.sources.snapshot import parse_snapshot_text, parse_snapshot_text_columnar


def file_stem(file: str) -> str:
    name = posixpath.basename(file.rstrip("/"))
    return name[:-5] if name.endswith(".json") else name


def short_name(file: str) -> str:
    """A file URI as people wrote it: file:/x/y.json -> /x/y.json."""
    for prefix in ("file://", "file:"):
        if file.startswith(prefix):
            return file[len(prefix) :]
    return file


def row_name(file: str) -> str:
    """A file as Spark's reader names it (`input_file_name`: a %-encoded URI), as people wrote
    it: file:///x/a%20b.json -> /x/a b.json. What a row carries, messages show and a snapshot
    without a cluster id is named after. Hadoop lists names decoded: `short_name` for those."""
    return short_name(unquote(file))


def parse_record(
    file: str, text: str, *, columnar: bool = False
) -> tuple[ClusterSnapshot | None, str | None]:
    """The snapshot in `text`, or the one-line reason it cannot be read. `columnar`: as
    `kreplica plan --snapshot` reads it (partitions in arrays for the array planner when it
    can be; the same snapshot and the same errors either way)."""
    origin = row_name(file)
    parse = parse_snapshot_text_columnar if columnar else parse_snapshot_text
    try:
        return parse(text, origin=origin), None
    except KreplicaError as exc:
        return None, exc.message
    except (ValueError, RecursionError) as exc:
        return None, f"{origin}: cannot be read as a snapshot ({exc})"


def topic_layouts(snapshot: ClusterSnapshot) -> list[tuple[bool | None, str | None]]:
    """What the audit asks of each topic's layout, in the snapshot's topic order (by name):
    (True, None) for Kafka's default, (False, the closest placement or None) else, as
    `kreplica explain` says (`explain.default_or_closest`); (None, None) for a topic it cannot
    judge. The one place the audit asks for layouts."""
    from kreplica.columns import ColumnarSnapshot

    if isinstance(snapshot, ColumnarSnapshot) and not snapshot.materialised:
        from kreplica.planner.layout_arrays import zookeeper_default_topics

        columns = snapshot.columns
        assert columns is not None  # a ColumnarSnapshot not materialised has its columns
        # the topics Kafka placed exactly are known from one table for the whole cluster;
        # the search runs for the others, one topic's objects at a time (not every topic's,
        # as `snapshot.topics` would build)
        placed = zookeeper_default_topics(columns, snapshot.brokers).tolist()
        return [
            (True, None) if placed[i] else _layout(snapshot, columns.materialise(i))
            for i in range(len(columns.topics))
        ]
    return [_layout(snapshot, topic) for topic in snapshot.topics]


def _layout(snapshot: ClusterSnapshot, topic: Topic) -> tuple[bool | None, str | None]:
    try:
        return default_or_closest(snapshot, topic)
    except KreplicaError:
        return None, None


PARTITION_FIELDS = (
    "topic",
    "partition",
    "replicas",
    "leader",
    "isr",
    "size_bytes",
    "reassigning",
    "racks",  # distinct racks its replicas are on
    # its topic's and cluster's fields, repeated: the per-partition checks need no join
    "audited",  # the policy does not exempt the topic
    "min_isr",
    "min_isr_source",
    "target_rf",
    "target_racks",
    "cap",  # the policy's max partitions per broker
    "cluster_racks",  # distinct racks of the cluster's live brokers
)


def fleet_record(
    snapshot: ClusterSnapshot, policy: Policy, key: str, *, layouts: bool = True
) -> dict[str, Any]:
    """What the audit reads of one snapshot, as plain lists for Arrow: the cluster's drain
    list, its brokers with their load (replicas, leaders now, bytes; a broker the snapshot does
    not list but replicas name is there too, not alive), its topics (with the policy's targets,
    the effective min.insync.replicas and the layout verdict) and its partitions column by
    column. `kreplica.fleet.batches` builds the same record from a columnar snapshot's arrays."""
    cluster = policy.cluster(key, snapshot.cluster_id)
    replicas: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    held: Counter[int] = Counter()  # bytes
    topics: list[dict[str, Any]] = []
    parts: dict[str, list[Any]] = {f: [] for f in PARTITION_FIELDS}
    rack_of = {b.id: b.rack for b in snapshot.brokers if b.rack is not None}
    cluster_racks = live_racks(snapshot)
    verdicts = topic_layouts(snapshot) if layouts else [(None, None)] * len(snapshot.topics)
    for topic, verdict in zip(snapshot.topics, verdicts, strict=True):
        n = len(topic.partitions)
        rf = len(topic.partitions[0].replicas) if topic.partitions else 0
        target = policy.target(topic.name)
        topics.append(topic_entry(topic, n, rf, target, cluster.is_exempt(topic.name), verdict))
        parts["topic"] += [topic.name] * n
        parts["audited"] += [not topics[-1]["exempt"]] * n
        parts["min_isr"] += [topic.min_insync_replicas] * n
        parts["min_isr_source"] += [topic.min_insync_replicas_source] * n
        parts["target_rf"] += [target.rf] * n
        parts["target_racks"] += [target.racks] * n
        parts["cap"] += [target.max_partitions_per_broker] * n
        parts["cluster_racks"] += [cluster_racks] * n
        spans: dict[tuple[int, ...], int] = {}
        for p in topic.partitions:
            replicas.update(p.replicas)
            if p.size_bytes:
                for b in p.replicas:
                    held[b] += p.size_bytes
            # the leader now: the recorded one, else the preferred one (no state recorded)
            now = p.leader if p.leader is not None else (p.replicas[0] if p.replicas else -1)
            if now >= 0:
                leaders[now] += 1
            spanned = spans.get(p.replicas)
            if spanned is None:
                spanned = spans[p.replicas] = len({rack_of.get(b) for b in p.replicas} - {None})
            parts["racks"].append(spanned)
            parts["partition"].append(p.partition)
            parts["replicas"].append(p.replicas)
            parts["leader"].append(p.leader)
            parts["isr"].append(p.isr)
            parts["size_bytes"].append(p.size_bytes)
            parts["reassigning"].append(bool(p.adding_replicas or p.removing_replicas))
    return cluster_record(
        snapshot, cluster, broker_entries(snapshot, cluster, replicas, leaders, held), topics, parts
    )


def live_racks(snapshot: ClusterSnapshot) -> int:
    """Distinct racks of the cluster's live brokers."""
    return len({b.rack for b in snapshot.brokers if b.alive and b.rack is not None})


def topic_entry(
    topic: Topic,
    partitions: int,
    rf: int,
    target: Target,
    exempt: bool,
    verdict: tuple[bool | None, str | None],
) -> dict[str, Any]:
    """One topic's row: its counts, min.insync.replicas, the policy's targets and the layout
    verdict (`topic` may be a shell without its partitions: `partitions` and `rf` count)."""
    return {
        "topic": topic.name,
        "partitions": partitions,
        "rf": rf,
        "min_isr": topic.min_insync_replicas,
        "min_isr_source": topic.min_insync_replicas_source,
        "exempt": exempt,
        "target_rf": target.rf,
        "target_min_insync": target.min_insync,
        "target_racks": target.racks,
        "max_partitions_per_broker": target.max_partitions_per_broker,
        "kafka_default": verdict[0],
        "placement": verdict[1],
    }


def traffic_entries(snapshot: ClusterSnapshot, cluster: ClusterPolicy) -> dict[int, dict[str, Any]]:
    """Per listed broker, from a snapshot taken with `snapshot --traffic`: its network in and
    out (B/s) and the cluster's bands over its live brokers not being drained (what
    `rebalance --by traffic` brings them within); none without rates."""
    if snapshot.traffic is None:
        return {}
    from kreplica.planner.traffic import bands, broker_traffic

    loads = broker_traffic(snapshot)
    among = [b.id for b in snapshot.brokers if b.alive and b.id not in cluster.drain]
    top_in, top_out = bands(snapshot, loads, among)
    return {
        b.id: {"nw_in": b.nw_in, "nw_out": b.nw_out, "band_in": top_in, "band_out": top_out}
        for b in loads
    }


NO_TRAFFIC = dict.fromkeys(("nw_in", "nw_out", "band_in", "band_out"))


def broker_entries(
    snapshot: ClusterSnapshot,
    cluster: ClusterPolicy,
    replicas: Mapping[int, int],
    leaders: Mapping[int, int],
    held: Mapping[int, int],
) -> list[dict[str, Any]]:
    """Per broker, its load (replicas, leaders now, bytes: absent counts 0; network in and
    out with the bands when the snapshot carries rates, else null): the listed ones (holding
    something or not), then any other that replicas name, by id."""
    listed = {b.id: b for b in snapshot.brokers}
    traffic = traffic_entries(snapshot, cluster)
    return [
        {
            "id": b,
            "rack": listed[b].rack if b in listed else None,
            "alive": listed[b].alive if b in listed else False,
            "draining": b in listed and b in cluster.drain,
            "listed": b in listed,
            "replicas": replicas.get(b, 0),
            "leaders": leaders.get(b, 0),
            "bytes": held.get(b, 0),
            **traffic.get(b, NO_TRAFFIC),
        }
        for b in [*listed, *sorted(set(replicas) - set(listed))]
    ]


def cluster_record(
    snapshot: ClusterSnapshot,
    cluster: ClusterPolicy,
    brokers: list[dict[str, Any]],
    topics: list[dict[str, Any]],
    partitions: Mapping[str, Any],
) -> dict[str, Any]:
    """The record around its brokers, topics and partition columns (lists or arrays)."""
    return {
        "drain": sorted(cluster.drain),
        "n_brokers": len(snapshot.brokers),
        "n_brokers_down": sum(1 for b in snapshot.brokers if not b.alive),
        "n_topics": len(topics),
        "n_partitions": sum(t["partitions"] for t in topics),
        "brokers": brokers,
        "topics": topics,
        "partitions": partitions,
    }


def record_row(file: str, text: str, policy: Policy, *, layouts: bool = True) -> dict[str, Any]:
    """One parsed snapshot: cluster, file, and the one-line error of a file that does not
    parse, else its `fleet_record` under "record"."""
    snapshot, error = parse_record(file, text)
    origin = row_name(file)
    if snapshot is None:
        return {"cluster_id": None, "file": origin, "error": error, "record": None}
    key = cluster_key(snapshot, file_stem(origin))
    record = fleet_record(snapshot, policy, key, layouts=layouts)
    return {"cluster_id": key, "file": origin, "error": None, "record": record}
