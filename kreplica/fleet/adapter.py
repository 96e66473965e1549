"""The per-cluster planning adapter: one snapshot + the fleet policy -> one plan (pure, stdlib).

The Spark job calls `plan_cluster` once per cluster (grouped by cluster: cluster-wide balance
needs the whole cluster); so do the tests, without Spark. With `--rf N` and no policy file the
requests are exactly `kreplica plan --topics '.*' --rf N`'s, so the reassignment is the CLI's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kreplica.errors import KreplicaError, flag_words
from kreplica.fleet.policy import Policy
from kreplica.model import ClusterSnapshot
from kreplica.planner import PlanOptions, TopicRequest, make_plan
from kreplica.planner.options import Strategy
from kreplica.planner.serialize import plan_document, reassignment_json

# The numbers of the fleet plan summary, taken from the plan's report.
SUMMARY_KEYS = (
    "partitions_changed",
    "partitions_created",
    "replicas_added",
    "lower_bound_replicas_added",
    "replicas_removed",
    "lower_bound_replicas_removed",
    "existing_replicas_moved",
    "leaders_changed",
    "bytes_to_move",
    "bytes_lower_bound",
    "cross_rack_bytes",
    "rack_violations_before",
    "rack_violations_after",
)


@dataclass(frozen=True)
class PlanSettings:
    """Plan-wide options the fleet passes to the planner (the CLI's defaults)."""

    strategy: Strategy = "balanced"
    seed: int | None = None
    force: bool = False
    skip_in_flight: bool = False
    replace_dead: bool = False


def cluster_key(snapshot: ClusterSnapshot, file_stem: str) -> str:
    """How the fleet names a cluster: its id, else the snapshot file's name."""
    return snapshot.cluster_id or file_stem


def requests_for(snapshot: ClusterSnapshot, policy: Policy, key: str) -> list[TopicRequest]:
    """One request per topic the policy gives a target (exempt topics left out)."""
    cluster = policy.cluster(key, snapshot.cluster_id)
    requests: list[TopicRequest] = []
    for name in topic_names(snapshot):
        if cluster.is_exempt(name):
            continue
        target = policy.target(name)
        if target.rf is None and target.racks is None:
            continue
        requests.append(TopicRequest(topic=name, rf=target.rf, fix_racks=target.racks is not None))
    return requests


def topic_names(snapshot: ClusterSnapshot) -> list[str]:
    """The topics' names in order; a ColumnarSnapshot's without building its topics (the
    array planner never needs them)."""
    names = getattr(snapshot, "topic_names", None)
    return list(names()) if names is not None else [t.name for t in snapshot.topics]


def plan_cluster(
    snapshot: ClusterSnapshot,
    policy: Policy,
    *,
    key: str,
    file: str = "",
    settings: PlanSettings = PlanSettings(),
) -> dict[str, Any]:
    """Plan one cluster. Returns a JSON-ready row: status, the summary numbers, and the
    reassignment, the plan document and the partitions to create as JSON text (None when the
    cluster could not be planned; `new_partitions` also None when it creates none).
    A refusal (e.g. an RF at or below min.insync.replicas) is that cluster's error, not the
    fleet's."""
    row: dict[str, Any] = {
        "cluster_id": key,
        "file": file,
        "status": "ok",
        "error_code": None,
        "error": None,
        "topics_planned": 0,
        "reassignment": None,
        "plan_document": None,
        "new_partitions": None,
        **dict.fromkeys(SUMMARY_KEYS),
    }
    requests = requests_for(snapshot, policy, key)
    row["topics_planned"] = len(requests)
    if not requests:
        row["status"] = "nothing-to-plan"
        return row
    cluster = policy.cluster(key, snapshot.cluster_id)
    options = PlanOptions(
        strategy=settings.strategy,
        exclude_brokers=cluster.drain,
        seed=settings.seed,
        force=settings.force,
        skip_in_flight=settings.skip_in_flight,
        replace_dead=settings.replace_dead,
    )
    try:
        plan = make_plan(snapshot, requests, options)
    except KreplicaError as exc:
        # the fleet command's flags are the CLI's
        row.update(status="error", error_code=exc.code, error=flag_words(exc.message))
        return row
    for k in SUMMARY_KEYS:
        value = plan.report.get(k)
        row[k] = value if isinstance(value, int) else None
    row["reassignment"] = dump_json(reassignment_json(plan))
    document = plan_document(plan, snapshot)
    row["plan_document"] = dump_json(document)
    new = document.get("new_partitions")
    if new:  # as the fleet's summaries are written: sorted keys
        row["new_partitions"] = dump_json(new, sort_keys=True)
    return row


# The files of one cluster's plan under OUT/plans/<cluster>/, from the row's text columns.
PLAN_FILES = (
    ("reassignment", "reassignment.json"),
    ("plan_document", "plan.json"),
    ("new_partitions", "new_partitions.json"),
)


def dump_json(data: Any, *, sort_keys: bool = False) -> str:
    """As `kreplica plan --out` writes its files: indented by two spaces, UTF-8 as is. orjson
    writes it (the standard encoder was a third of planning a cluster); what orjson refuses
    (an integer over 64 bits) goes to the standard encoder, laid out alike."""
    import orjson

    option = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
    option |= orjson.OPT_SORT_KEYS if sort_keys else 0
    try:
        return (orjson.dumps(data, default=_as_dict, option=option) + b"\n").decode("utf-8")
    except orjson.JSONEncodeError:
        text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=sort_keys, default=_as_dict)
        return text + "\n"


def _as_dict(value: Any) -> Any:
    """A report's other mappings, as dicts (what JSON has no type for)."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
