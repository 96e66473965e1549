"""Cancelling a plan: its reassignments in flight go back to their old replicas (unless that
leaves a partition under min.insync.replicas, cancelguard), its moves between log dirs
stop, and its throttles are restored; an apply running elsewhere is asked to stop
through a marker file beside the journal."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kreplica.errors import (
    ReassignmentInProgress,
    UnsafeCancel,
)
from kreplica.executor import events as ev
from kreplica.executor.apply_base import (
    Cluster,
    Key,
    _key_text,
)
from kreplica.executor.authz import CLUSTER, Need, throttle_needs
from kreplica.executor.cancelguard import cancel_risks, refusal_text
from kreplica.executor.dirmoves import DirKey, ReplicaLog
from kreplica.executor.events import Emit
from kreplica.executor.journal import Journal
from kreplica.executor.planfile import PlanFile
from kreplica.executor.throttle_records import journal_throttles, restore_journal_throttles


def cancel_marker(journal: Journal) -> Path:
    """The file `cancel` leaves for an apply of the same plan that is running elsewhere."""
    return journal.path.with_name(journal.path.name + ".cancel")


def _marker_forced(marker: Path) -> list[Any]:
    """The partitions a `cancel --force` put at risk, as its marker file names them."""
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    forced = data.get("forced") if isinstance(data, dict) else None
    return list(forced) if isinstance(forced, list) else []


def cancel_dir_moves(cluster: Cluster, plan: PlanFile) -> list[DirKey]:
    """Stop the plan's moves between log dirs still running: AlterReplicaLogDirs back to the
    dir each replica is in (the broker drops the future log), as Kafka's tool cancels them."""
    if not plan.dirs:
        return []
    logs: Mapping[DirKey, ReplicaLog] = cluster.replica_logs(
        plan.dir_topics, sorted({b for _, _, b in plan.dirs})
    )
    back = {
        k: logs[k].path
        for k, path in plan.dirs.items()
        if k in logs and logs[k].future_path is not None
    }
    cluster.alter_replica_log_dirs(back)
    return sorted(back)


def cancel_plan(
    cluster: Cluster,
    plan: PlanFile,
    journal: Journal,
    emit: Emit = lambda e: None,
    *,
    force: bool = False,
) -> tuple[list[Key], bool]:
    """Stop the plan's moves still in flight (KIP-455 cancel: they return to their old
    replicas) and restore the throttles kreplica set. When an apply of this plan is running
    (it holds the journal's lock), it is asked to stop and restores the throttles itself.

    Refused (UnsafeCancel, nothing changed) when a partition would keep fewer live in-sync
    replicas than its min.insync.replicas (`cancel_risks`); `force` cancels anyway and the
    journal records the partitions it put at risk.
    Returns the partitions cancelled and whether a running apply was asked to stop."""
    in_flight = cluster.in_flight()
    ours = sorted(k for k in plan.targets if k in in_flight)
    risks = (
        cancel_risks(cluster.snapshot(plan.topics), in_flight, ours, plan.before) if ours else []
    )
    if risks and not force:
        raise UnsafeCancel(refusal_text(risks))
    forced = [r.as_dict() for r in risks]
    for risk in risks:
        emit(
            {
                "event": "warning",
                "message": f"`force`: {risk.name} returns to {list(risk.original)} with "
                f"{len(risk.kept)} live in-sync replica(s), under min.insync.replicas "
                f"{risk.needed}",
            }
        )
    # refused before anything is cancelled or restored
    _, set_by_us = journal_throttles(journal.read())
    needs = throttle_needs(set_by_us, "restore the throttles kreplica set")
    needs.append(Need("cluster", CLUSTER, "ALTER", "cancel partition reassignments"))
    cluster.require(needs)
    try:
        with journal.lock():
            if ours:
                event: ev.Cancel = {
                    "event": "cancel",
                    "partitions": [_key_text(k) for k in ours],
                }
                if forced:
                    event["forced"] = forced
                journal.append(event)
                cluster.alter_reassignments(dict.fromkeys(ours))
            dirs_back = cancel_dir_moves(cluster, plan)
            if dirs_back:
                journal.append(
                    {"event": "cancel", "partitions": [f"{t}-{p}@{b}" for t, p, b in dirs_back]}
                )
            restore_journal_throttles(cluster, journal, emit)
            cancel_marker(journal).unlink(missing_ok=True)
            moved_dirs = sorted({(t, p) for t, p, _ in dirs_back} - set(ours))
            return ours + moved_dirs, False
    except ReassignmentInProgress:  # an apply holds the lock: it writes the journal
        cancel_marker(journal).write_text(json.dumps({"forced": forced}) + "\n", encoding="utf-8")
        if ours:
            cluster.alter_reassignments(dict.fromkeys(ours))
        dirs_back = cancel_dir_moves(cluster, plan)  # the apply sends them back too: harmless
        return ours + sorted({(t, p) for t, p, _ in dirs_back} - set(ours)), True
