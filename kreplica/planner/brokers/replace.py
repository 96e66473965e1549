"""replace_plan: broker B takes exactly broker A's replicas, positions kept: on the column
run for a snapshot in columns (one vectorised pass), else on the object run; the same checks,
texts and plan either way (test_replace_columns.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.model import ClusterSnapshot, Finding, Plan
from kreplica.planner.brokers.dispatch import pick_engine
from kreplica.planner.brokers.run import (
    Run,
    check_known,
    check_live,
    ids_text,
)
from kreplica.planner.options import PlanOptions
from kreplica.planner.plan import with_engine
from kreplica.planner.report import LowerBound

if TYPE_CHECKING:
    from kreplica.planner.brokers.column_run import I64, ColumnRun


def replace_plan(
    snapshot: ClusterSnapshot,
    old: int,
    new: int,
    *,
    options: PlanOptions = PlanOptions(),
) -> Plan:
    """Broker `new` takes exactly broker `old`'s replicas, each in the same position."""
    check_known("`old`", [old], snapshot)
    check_known("`new`", [new], snapshot)
    if old == new:
        raise UsageError(f"`old` and `new` are both {old}; name two different brokers")
    check_live("`new`", [new], snapshot)
    eligible = sorted(b for b in snapshot.live_broker_ids() if b != old)
    engine, why = pick_engine(snapshot, options, "replace")
    make = _replace_on_columns if engine == "columns" else _replace_on_objects
    return with_engine(make(snapshot, old, new, eligible, options), engine, why)


def _cannot_take(new: int, old: int, topic: str, partition: int, replicas: list[int]) -> str:
    return (
        f"broker {new} already holds a replica of {topic}-{partition} {replicas}, so it "
        f"cannot take broker {old}'s; drain broker {old} instead"
    )


def _dead_too(topic: str, partition: int, dead: list[int]) -> str:
    return (
        f"{topic}-{partition} also has a replica on dead broker(s) {ids_text(dead)} and Kafka "
        "rejects a plan naming it; replace those first or bring them back"
    )


def _rack_finding(snapshot: ClusterSnapshot, old: int, new: int, worse: int) -> Finding:
    racks = snapshot.racks()
    return Finding(
        "warning",
        "rack-spread",
        f"broker {new} is on rack {racks.get(new)!r} and broker {old} on "
        f"{racks.get(old)!r}: {worse} partition(s) span fewer racks after; "
        f"`kreplica drain --brokers {old}` keeps the spread",
    )


def _replace_on_objects(
    snapshot: ClusterSnapshot, old: int, new: int, eligible: list[int], options: PlanOptions
) -> Plan:
    run = Run.start(snapshot, eligible, options, None)
    touched = [k for k in sorted(run.parts) if old in run.work[k]]
    touched = run.in_flight(touched, options)
    for key in touched:
        if new in run.work[key]:
            raise PlanInfeasible(_cannot_take(new, old, *key, list(run.work[key])))
        dead = run.has_dead(key, besides=[old])
        if dead:
            raise PlanInfeasible(_dead_too(*key, dead))
    worse = 0
    for key in touched:
        before = len(run.racks_of(run.work[key]))
        run.move(key, old, new)
        worse += len(run.racks_of(run.work[key])) < before
        run.bound.add_partition(1, 1, run.parts[key].size_bytes)
    if worse:
        run.findings.append(_rack_finding(snapshot, old, new, worse))
    return run.plan("replace", {"replaced_broker": old, "replacement_broker": new})


def _replace_on_columns(
    snapshot: ClusterSnapshot, old: int, new: int, eligible: list[int], options: PlanOptions
) -> Plan:
    """_replace_on_objects on the column run: the rows holding `old`, checked and moved at
    once (rows are in key order, so the first refused row is the object run's first)."""
    import numpy as np

    from kreplica.columns import NO_SIZE
    from kreplica.planner.brokers.column_run import ColumnRun

    run = ColumnRun.start(snapshot, eligible, options, None)
    o, n = run.to_dense(np.array([old, new])).tolist()
    rows = run.scope_rows()
    rows = run.in_flight(rows[(run.work[rows] == o).any(axis=1)])
    reps = run.work[rows]
    clash = (reps == n).any(axis=1)
    dead = (reps >= 0) & (reps != o) & ~run.live[np.maximum(reps, 0)]
    refused = np.flatnonzero(clash | dead.any(axis=1))
    if len(refused):
        i = int(refused[0])
        row = int(rows[i])
        topic = run.columns.topics[int(run.topic_row[row])].name
        partition = int(run.columns.partition[row])
        ids = run.ids[reps[i][reps[i] >= 0]].tolist()
        if clash[i]:
            raise PlanInfeasible(_cannot_take(new, old, topic, partition, ids))
        raise PlanInfeasible(_dead_too(topic, partition, run.ids[reps[i][dead[i]]].tolist()))
    before = _racks_per_row(run, reps)
    slots = np.argmax(reps == o, axis=1)
    run.move(rows, slots, np.full(len(rows), n, dtype=np.int64))
    worse = int((_racks_per_row(run, run.work[rows]) < before).sum())
    if worse:
        run.findings.append(_rack_finding(snapshot, old, new, worse))
    sizes = run.columns.size[rows]
    unknown = bool((sizes == NO_SIZE).any())
    run.bound = LowerBound(len(rows), len(rows), None if unknown else int(sizes.sum()))
    return run.plan("replace", {"replaced_broker": old, "replacement_broker": new})


def _racks_per_row(run: ColumnRun, reps: I64) -> I64:
    """Distinct racks per row of dense replicas (-1 pads)."""
    import numpy as np

    racks = np.sort(run.racks(reps), axis=1)
    first = np.ones(racks.shape, dtype=bool)
    first[:, 1:] = racks[:, 1:] != racks[:, :-1]
    out: I64 = ((racks >= 0) & first).sum(axis=1)
    return out
