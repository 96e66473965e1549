"""From a snapshot file's text to the records the Spark job reads (pure, stdlib only).

Each snapshot is parsed by the one snapshot reader (`kreplica.sources.snapshot`), so a file the
CLI refuses is refused here with the same message, and then skipped. What Spark gets is the
snapshot in its file form plus, per topic, what the fleet needs beside it: the effective
min.insync.replicas, the policy's targets, and whether the layout is Kafka's default
(`explain_topic`). Spark reads that JSON with a fixed schema (`kreplica.fleet.frames`).
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from kreplica.errors import KreplicaError
from kreplica.fleet.adapter import cluster_key
from kreplica.fleet.policy import Policy
from kreplica.model import ClusterSnapshot, Topic
from kreplica.planner.explain import layout_verdict
from kreplica.sources.snapshot import parse_snapshot_text, snapshot_to_dict


def file_stem(file: str) -> str:
    name = posixpath.basename(file.rstrip("/"))
    return name[:-5] if name.endswith(".json") else name


def short_name(file: str) -> str:
    """A file URI as people wrote it: file:/x/y.json -> /x/y.json."""
    for prefix in ("file://", "file:"):
        if file.startswith(prefix):
            return file[len(prefix) :]
    return file


def parse_record(file: str, text: str) -> tuple[ClusterSnapshot | None, str | None]:
    """The snapshot in `text`, or the one-line reason it cannot be read."""
    origin = short_name(file)
    try:
        return parse_snapshot_text(text, origin=origin), None
    except KreplicaError as exc:
        return None, exc.message
    except (ValueError, RecursionError) as exc:
        return None, f"{origin}: cannot be read as a snapshot ({exc})"


def _layout(snapshot: ClusterSnapshot, topic: Topic) -> tuple[bool | None, str | None]:
    """`kreplica explain`'s verdict on the topic's layout (its short form: the rest of
    `explain_topic`, balance and racks, is the audit's own checks)."""
    try:
        return layout_verdict(snapshot, topic)
    except KreplicaError:
        return None, None


def enriched(
    snapshot: ClusterSnapshot, policy: Policy, key: str, *, layouts: bool = True
) -> dict[str, Any]:
    """The snapshot's file form plus the fleet's per-topic and per-cluster fields."""
    data = snapshot_to_dict(snapshot)
    cluster = policy.cluster(key, snapshot.cluster_id)
    data["fleet_cluster"] = key
    data["fleet_drain"] = sorted(cluster.drain)
    for raw, topic in zip(data["topics"], snapshot.topics, strict=True):
        target = policy.target(topic.name)
        default, placement = _layout(snapshot, topic) if layouts else (None, None)
        raw["fleet"] = {
            "min_isr": topic.min_insync_replicas,
            "min_isr_source": topic.min_insync_replicas_source,
            "exempt": cluster.is_exempt(topic.name),
            "target_rf": target.rf,
            "target_min_insync": target.min_insync,
            "target_racks": target.racks,
            "max_partitions_per_broker": target.max_partitions_per_broker,
            "kafka_default": default,
            "placement": placement,
        }
    return data


def record_row(file: str, text: str, policy: Policy, *, layouts: bool = True) -> dict[str, Any]:
    """One row of the job's `snapshots` frame: cluster, file, error or enriched JSON."""
    snapshot, error = parse_record(file, text)
    origin = short_name(file)
    if snapshot is None:
        return {"cluster_id": None, "file": origin, "error": error, "json": None}
    key = cluster_key(snapshot, file_stem(origin))
    body = json.dumps(enriched(snapshot, policy, key, layouts=layouts), separators=(",", ":"))
    return {"cluster_id": key, "file": origin, "error": None, "json": body}
