"""Plans as files: Kafka's reassignment JSON, the rollback, new partitions and the kreplica
envelope kept beside them. Deterministic: sorted by (topic, partition), no clock."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from kreplica.errors import InputError
from kreplica.gcpause import gc_paused
from kreplica.model import ClusterSnapshot, Finding, Plan

PLAN_FORMAT_VERSION = 1


def _entries(rows: list[tuple[str, int, tuple[int, ...]]]) -> dict[str, Any]:
    rows.sort()
    with gc_paused():  # a dict and two lists per partition: see kreplica/gcpause.py
        return {
            "version": 1,
            "partitions": [
                {
                    "topic": topic,
                    "partition": partition,
                    "replicas": list(replicas),
                    "log_dirs": ["any"] * len(replicas),
                }
                for topic, partition, replicas in rows
            ],
        }


# `lazy`: for a plan of the array planner, the partition list as a LazyEntries
# (serialize_arrays.py: text written from the arrays by cli/output.py, in pieces) instead of
# a list of dicts. Without it (the library's default) the list is always a list of dicts.


def _columnar(plan: Plan, lazy: bool) -> bool:
    return lazy and bool(getattr(plan.changes, "columnar", False))


def _lazy(plan: Plan, *, after: bool, log_dirs: bool = True) -> Any:
    from kreplica.planner.serialize_arrays import LazyEntries

    return LazyEntries(plan.changes, after=after, log_dirs=log_dirs)  # type: ignore[arg-type]


def reassignment_json(plan: Plan, *, lazy: bool = False) -> dict[str, Any]:
    """What `kafka-reassign-partitions --execute` takes: changed existing partitions only.
    `log_dirs` names a dir where the plan chose one (PartitionChange.log_dirs), else "any"."""
    if _columnar(plan, lazy):
        return {"version": 1, "partitions": _lazy(plan, after=True)}
    moves = plan.reassignments  # a property that filters every change: read it once
    out = _entries([(c.topic, c.partition, c.after) for c in moves])
    dirs = {(c.topic, c.partition): c.log_dirs for c in moves if c.log_dirs}
    if dirs:
        for entry in out["partitions"]:
            named = dirs.get((entry["topic"], entry["partition"]))
            if named is not None:
                entry["log_dirs"] = list(named)
    return out


def rollback_json(plan: Plan, *, lazy: bool = False) -> dict[str, Any]:
    """The same partitions with their replicas before the plan (undo file)."""
    if _columnar(plan, lazy):
        return {"version": 1, "partitions": _lazy(plan, after=False)}
    return _entries([(c.topic, c.partition, c.before or ()) for c in plan.reassignments])


def new_partitions_list(plan: Plan) -> list[dict[str, Any]]:
    return [
        {"topic": c.topic, "partition": c.partition, "replicas": list(c.after)}
        for c in sorted(plan.new_partitions, key=lambda c: (c.topic, c.partition))
    ]


def plan_files(plan: Plan, snapshot: ClusterSnapshot, *, lazy: bool = False) -> dict[str, Any]:
    """The four plan files' documents by sibling key (reassignment, rollback, plan_document,
    rollback_document), the partition lists built once: the plan documents hold the others
    (20,000 partitions are 18 MB of plan files, and building their dicts was most of writing
    them)."""
    reassignment = reassignment_json(plan, lazy=lazy)
    rollback = rollback_json(plan, lazy=lazy)
    document = plan_document(
        plan, snapshot, lazy=lazy, reassignment=reassignment, rollback=rollback
    )
    after: Any
    if _columnar(plan, lazy):
        after = _lazy(plan, after=True, log_dirs=False)
    else:
        after = _rows([(c.topic, c.partition, c.after) for c in plan.reassignments])
    return {
        "reassignment": reassignment,
        "rollback": rollback,
        "plan_document": document,
        "rollback_document": rollback_document(document, after),
    }


def rollback_document(
    document: Mapping[str, Any], after: Any, after_dirs: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The plan document of PLAN.rollback.json: the same cluster, and as before-state the
    plan's after-state (`after`: its rows; `after_dirs`: where a dir plan puts each moved
    replica), so a rollback made stale by later changes is refused like any stale plan."""
    out: dict[str, Any] = {
        "kreplica_plan": PLAN_FORMAT_VERSION,
        "cluster_id": document.get("cluster_id"),
        "strategy": "rollback",
        "rollback_of": document.get("strategy"),
        "before": after,
    }
    if after_dirs is not None:
        out["before_dirs"] = after_dirs
    out.update(
        {
            "reassignment": document["rollback"],
            "new_partitions": [],  # Kafka cannot remove partitions: the rollback keeps them
            "rollback": document["reassignment"],
            "report": {},
            "findings": [],
        }
    )
    if "write_rates" in document:  # the same partitions move back: the same writes
        out["write_rates"] = document["write_rates"]
    return out


def plan_document(
    plan: Plan,
    snapshot: ClusterSnapshot,
    *,
    lazy: bool = False,
    reassignment: dict[str, Any] | None = None,
    rollback: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The kreplica envelope: where the plan came from, the before-state apply checks for
    drift, the plan itself, its rollback and its report. `lazy`: see `_columnar`;
    `reassignment`, `rollback`: their documents when already built (plan_files)."""
    before: Any
    if _columnar(plan, lazy):
        before = _lazy(plan, after=False, log_dirs=False)
    else:
        before = _rows([(c.topic, c.partition, c.before or ()) for c in plan.reassignments])
    out: dict[str, Any] = {
        "kreplica_plan": PLAN_FORMAT_VERSION,
        "cluster_id": plan.cluster_id if plan.cluster_id is not None else snapshot.cluster_id,
        "snapshot_fingerprint": plan.snapshot_fingerprint,
        "strategy": plan.strategy,
        "before": before,
        "reassignment": reassignment or reassignment_json(plan, lazy=lazy),
        "new_partitions": new_partitions_list(plan),
        "rollback": rollback or rollback_json(plan, lazy=lazy),
        "report": json.loads(json.dumps(dict(plan.report), sort_keys=True)),
        "findings": findings_json(plan.findings),
    }
    rates = write_rates_json(plan, snapshot)
    if rates is not None:
        out["write_rates"] = rates
    return out


def write_rates_json(plan: Plan, snapshot: ClusterSnapshot) -> dict[str, Any] | None:
    """The write rates of the partitions the plan copies (a replica added), from a snapshot
    that carries measured traffic (None: it carries none): apply checks them against its
    throttle and counts them in its ETA. Partitions measured without a rate are left out."""
    if snapshot.traffic is None:
        return None
    moved = {(c.topic, c.partition) for c in plan.reassignments if c.added}
    rates = {
        (p.topic, p.partition): p.bytes_in_per_s
        for t in snapshot.topics
        for p in t.partitions
        if (p.topic, p.partition) in moved
    }
    return {
        "window_s": snapshot.traffic.window_s,
        "measured_at": snapshot.traffic.measured_at,
        "partitions": rate_rows(rates),
    }


def rate_rows(rates: Mapping[tuple[str, int], float | None]) -> list[dict[str, Any]]:
    """Write rates as the plan document and apply's journal hold them, sorted; unknown ones
    (None) left out."""
    return [
        {"topic": t, "partition": p, "bytes_in_per_s": round(rate, 1)}
        for (t, p), rate in sorted(rates.items())
        if rate is not None
    ]


def parse_rate_rows(rows: Any) -> dict[tuple[str, int], float]:
    """(topic, partition) -> bytes/s from `rate_rows`' rows; a malformed row is left out (a
    partition without a rate is measured, or not checked, as one the plan has no rate for)."""
    out: dict[tuple[str, int], float] = {}
    for row in rows if isinstance(rows, list) else []:
        if not isinstance(row, dict):
            continue
        topic, partition, rate = row.get("topic"), row.get("partition"), row.get("bytes_in_per_s")
        if (
            isinstance(topic, str)
            and isinstance(partition, int)
            and isinstance(rate, int | float)
            and not isinstance(rate, bool)
            and rate >= 0
        ):
            out[(topic, partition)] = float(rate)
    return out


def _rows(rows: list[tuple[str, int, tuple[int, ...]]]) -> list[dict[str, Any]]:
    """A before- or after-state as the plan documents hold it, sorted."""
    return [{"topic": t, "partition": p, "replicas": list(r)} for t, p, r in sorted(rows)]


def findings_json(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    """Findings as the plan document and the --output json envelope carry them."""
    return [
        {
            "level": f.level,
            "code": f.code,
            "message": f.message,
            "topic": f.topic,
            "partition": f.partition,
        }
        for f in findings
    ]


def _bad(path: str, problem: str) -> InputError:
    return InputError(
        f"reassignment JSON: {path} {problem}; expected Kafka's "
        '{"version": 1, "partitions": [{"topic", "partition", "replicas"}]} or a kreplica plan'
    )


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(path, f"must be an integer, got {json.dumps(value)}")
    return value


def _reassignment_root(data: Any) -> Mapping[str, Any]:
    if not isinstance(data, dict):
        raise _bad("the top level", "must be an object")
    if "kreplica_plan" in data:
        inner = data.get("reassignment")
        if not isinstance(inner, dict):
            raise _bad("reassignment", "must be an object in a kreplica plan")
        return inner
    return data


Row = tuple[str, int, tuple[int, ...]]


def parse_reassignment_json(data: Any) -> list[Row]:
    """(topic, partition, replicas) rows of Kafka's reassignment JSON or of a kreplica plan
    document (its `reassignment` part), in file order. Bad shapes raise InputError naming
    the path, e.g. `partitions[3].replicas[1]`."""
    root = _reassignment_root(data)
    prefix = "reassignment." if isinstance(data, dict) and "kreplica_plan" in data else ""
    version = root.get("version", 1)
    if version != 1:
        raise _bad(f"{prefix}version", f"must be 1, got {json.dumps(version)}")
    return _partition_rows(root.get("partitions"), f"{prefix}partitions", log_dirs=True)


def parse_log_dirs(data: Any) -> dict[tuple[str, int], tuple[str, ...]]:
    """(topic, partition) -> the log dir asked for each replica ("any": the broker chooses),
    for the rows of a reassignment that give `log_dirs` (checked by parse_reassignment_json)."""
    root = _reassignment_root(data)
    dirs: dict[tuple[str, int], tuple[str, ...]] = {}
    for entry in root.get("partitions") or []:
        if isinstance(entry, dict) and isinstance(entry.get("log_dirs"), list):
            dirs[(entry["topic"], entry["partition"])] = tuple(entry["log_dirs"])
    return dirs


def parse_new_partitions(data: Any) -> list[Row]:
    """The `new_partitions` rows of a kreplica plan document ([] for Kafka's format)."""
    if not isinstance(data, dict) or "kreplica_plan" not in data:
        return []
    return _partition_rows(data.get("new_partitions", []), "new_partitions", log_dirs=False)


def parse_plan_before(data: Any) -> list[Row]:
    """The `before` rows of a kreplica plan document: the replicas the plan was made from
    ([] for Kafka's format, which records none)."""
    if not isinstance(data, dict) or "kreplica_plan" not in data:
        return []
    return _partition_rows(data.get("before", []), "before", log_dirs=False)


def _partition_rows(entries: Any, path: str, *, log_dirs: bool) -> list[Row]:
    if not isinstance(entries, list):
        raise _bad(path, "must be a list")
    rows: list[Row] = []
    for i, entry in enumerate(entries):
        where = f"{path}[{i}]"
        if not isinstance(entry, dict):
            raise _bad(where, "must be an object")
        topic = entry.get("topic")
        if not isinstance(topic, str) or not topic:
            raise _bad(f"{where}.topic", f"must be a topic name, got {json.dumps(topic)}")
        partition = _int(entry.get("partition"), f"{where}.partition")
        if partition < 0:
            raise _bad(f"{where}.partition", f"must be >= 0, got {partition}")
        replicas = entry.get("replicas")
        if not isinstance(replicas, list):
            raise _bad(
                f"{where}.replicas", f"must be a list of broker ids, got {json.dumps(replicas)}"
            )
        ids = tuple(_int(b, f"{where}.replicas[{j}]") for j, b in enumerate(replicas))
        dirs = entry.get("log_dirs")
        if (
            log_dirs
            and dirs is not None
            and (
                not isinstance(dirs, list)
                or len(dirs) != len(ids)
                or not all(isinstance(d, str) for d in dirs)
            )
        ):
            raise _bad(
                f"{where}.log_dirs",
                f'must be a list of {len(ids)} paths or "any" (one per replica)',
            )
        rows.append((topic, partition, ids))
    return rows
