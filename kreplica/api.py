"""kreplica as a library: read a cluster, plan, write the plan files, apply them.

    import kreplica

    snapshot = kreplica.read_cluster(bootstrap_server="kafka:9092")
    plan = kreplica.plan(snapshot, [kreplica.TopicRequest("orders", rf=3)])
    kreplica.write_plan(plan, snapshot, "orders.json")
    with kreplica.connect(bootstrap_server="kafka:9092") as connection:
        options = kreplica.ApplyOptions(throttle=50_000_000)  # bytes/s
        result = kreplica.apply(connection, "orders.json", options)

The same steps the command line takes (docs/library.md); what the CLI adds is parsing flags,
rendering and exit codes. Re-exported by `kreplica` itself (imported on first use).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kreplica.errors import UsageError
from kreplica.executor import facade
from kreplica.executor.apply_base import ApplyResult
from kreplica.executor.facade import Connection, connect
from kreplica.executor.options import ApplyOptions, Via
from kreplica.executor.verify import Difference
from kreplica.model import ClusterSnapshot, Plan
from kreplica.planner import PlanOptions, TopicRequest, make_plan

PathLike = str | os.PathLike[str]

__all__ = [
    "ApplyOptions",
    "ApplyResult",
    "ClusterSnapshot",
    "Connection",
    "Difference",
    "Plan",
    "PlanOptions",
    "TopicRequest",
    "apply",
    "cancel",
    "connect",
    "plan",
    "read_cluster",
    "resume",
    "verify",
    "write_plan",
]


def read_cluster(
    *,
    snapshot: PathLike | None = None,
    bootstrap_server: str | None = None,
    zookeeper: str | None = None,
    client_config: Mapping[str, str] | None = None,
    zk_auth: Sequence[tuple[str, str]] | None = None,
    timeout_s: float = 15.0,
    topics: Iterable[str] | None = None,
    sizes: bool = True,
) -> ClusterSnapshot:
    """The cluster's brokers, racks, topics and partitions (and, with `sizes`, partition sizes
    and disks): from one source, a snapshot file, the brokers' AdminClient API or ZooKeeper.
    `topics`: only these (planning balances against the whole cluster: leave it None).
    The whole cluster with sizes is read as the CLI reads it (into columns where the source
    can: kreplica/columns.py), so `plan` takes the same planner, and gives the same plan, as
    the CLI's commands."""
    from kreplica.sources import open_source

    whole = topics is None and sizes
    if whole and snapshot is not None:
        from kreplica.sources.snapshot import load_snapshot_columnar

        return load_snapshot_columnar(Path(snapshot))
    source = open_source(
        snapshot=snapshot if snapshot is None else Path(snapshot),
        bootstrap_server=bootstrap_server,
        zookeeper=zookeeper,
        client_config=dict(client_config) if client_config else None,
        zk_auth=list(zk_auth) if zk_auth else None,
        timeout_s=timeout_s,
        read_sizes=sizes,
    )
    try:
        if whole and getattr(source, "columnar", False):
            reader: Any = source  # the live sources that read into columns (admin, zookeeper)
            snap: ClusterSnapshot = reader.snapshot(None, columnar=True)
            return snap
        return source.snapshot(list(topics) if topics is not None else None)
    finally:
        source.close()


def plan(
    snapshot: ClusterSnapshot,
    requests: Iterable[TopicRequest],
    options: PlanOptions | None = None,
) -> Plan:
    """The smallest change giving each requested topic its shape (RF, partition count, racks
    repaired), pure and deterministic: the same snapshot and requests give the same plan."""
    return make_plan(snapshot, list(requests), options if options is not None else PlanOptions())


def write_plan(
    plan: Plan, snapshot: ClusterSnapshot, path: PathLike, *, overwrite: bool = False
) -> dict[str, Path]:
    """PLAN.json (Kafka's reassignment JSON, for kafka-reassign-partitions or `apply`), its
    rollback PLAN.rollback.json and the kreplica plan document PLAN.kreplica.json (what apply
    checks for drift), the same bytes `kreplica ... --out PLAN.json` writes. Returns the paths
    by kind (reassignment, rollback, plan_document)."""
    from kreplica.planner.serialize import plan_files

    out = Path(path)
    paths = facade.plan_paths(out)
    del paths["journal"]
    existing = [str(p) for p in paths.values() if p.exists()]
    if existing and not overwrite:
        raise UsageError(f"{', '.join(existing)} exist(s) already; pass overwrite=True")
    documents = plan_files(plan, snapshot)
    for key, target in paths.items():
        text = json.dumps(documents[key], indent=2, ensure_ascii=False) + "\n"
        target.write_text(text, encoding="utf-8")
    return paths


def apply(
    connection: Connection,
    plan_path: PathLike,
    options: ApplyOptions | None = None,
    *,
    progress: Callable[[Mapping[str, Any]], None] | None = None,
    via: Via = "kafka",
) -> ApplyResult:
    """Apply a written plan and wait until it is done: preflight (right cluster, no drift,
    nothing else in flight), throttles on the moving replicas only, waves, the throttles
    restored, every step journalled in PLAN.journal.jsonl beside it. `progress`: called with
    each of the journal's events (a dict) as it happens."""
    plan = facade.load_plan_to_apply(Path(plan_path))  # the one read of the plan files
    result: ApplyResult = facade.apply(connection, plan, options, progress=progress, via=via)
    return result


def resume(
    connection: Connection,
    plan_path: PathLike,
    options: ApplyOptions | None = None,
    *,
    progress: Callable[[Mapping[str, Any]], None] | None = None,
    via: Via = "kafka",
) -> ApplyResult:
    """Continue an interrupted apply from its journal: nothing is submitted twice."""
    plan = facade.load_plan_to_apply(Path(plan_path))
    result: ApplyResult = facade.resume(connection, plan, options, progress=progress, via=via)
    return result


def verify(connection: Connection, plan_path: PathLike) -> list[Difference]:
    """The plan's partitions not as planned (empty: done, nothing of it moving)."""
    return facade.verify(connection, facade.load_plan(Path(plan_path)))


def cancel(connection: Connection, plan_path: PathLike, *, force: bool = False) -> list[str]:
    """Cancel the plan's moves in flight (they go back to their old replicas) and restore its
    throttles; returns the partitions cancelled ("topic-partition")."""
    outcome = facade.cancel(connection, facade.load_plan(Path(plan_path)), force=force)
    return [f"{t}-{p}" for t, p in outcome.cancelled]
