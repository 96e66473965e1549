"""The column run (planner/brokers/column_run.py) against the object run (run.py): the same
moves give the same plan, report, findings and refusals; its rack rule and disk guard are
Run's, row by row."""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kreplica.columns import ColumnarSnapshot
from kreplica.errors import PlanInfeasible
from kreplica.model import Broker, ClusterSnapshot, LogDir, Partition, Topic
from kreplica.planner.brokers.column_run import ColumnRun, column_refusal
from kreplica.planner.brokers.run import Run
from kreplica.planner.options import PlanOptions
from kreplica.sources.snapshot import parse_snapshot_columnar, snapshot_to_dict

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def columnar(snapshot: ClusterSnapshot) -> ColumnarSnapshot:
    out = parse_snapshot_columnar(json.loads(json.dumps(snapshot_to_dict(snapshot))))
    assert isinstance(out, ColumnarSnapshot) and out.columns is not None
    return out


def cluster(seed: int, *, n: int, n_racks: int, disks: int | None = None) -> ClusterSnapshot:
    """Topics of RF 1-3 at random over n brokers, some partitions on one rack, sizes with
    ties, now and then a dead broker and brokers with disk figures."""
    rng = random.Random(seed)
    racks = {b: f"r{rng.randrange(n_racks)}" for b in range(n)} if n_racks else {}
    topics = []
    for t in range(rng.randint(1, 4)):
        rf = rng.randint(1, min(3, n))
        parts = []
        for p in range(rng.randint(1, 30)):
            reps = tuple(rng.sample(range(n), rf))
            size = rng.choice([None, 1, 2, 10, rng.randint(1, 10**6)]) if t else 5
            parts.append(Partition(f"t{t}", p, reps, leader=reps[-1], isr=reps, size_bytes=size))
        topics.append(Topic(f"t{t}", tuple(parts)))
    dead = rng.randrange(n) if n > 2 and rng.random() < 0.3 else None
    brokers = tuple(
        Broker(
            b,
            rack=racks.get(b),
            alive=b != dead,
            disks=None
            if disks is None
            else (LogDir("/d", total_bytes=disks * 4, usable_bytes=disks),),
        )
        for b in range(n)
    )
    return ClusterSnapshot(brokers=brokers, topics=tuple(topics), cluster_id="c")


def _moves(snap: ClusterSnapshot, seed: int) -> list[tuple[str, int, int, int]]:
    """Random moves (topic, partition, old, new) among live brokers, one per partition."""
    rng = random.Random(seed)
    live = sorted(snap.live_broker_ids())
    out = []
    for t in snap.topics:
        for p in t.partitions:
            if rng.random() < 0.4:
                old = rng.choice(p.replicas)
                free = [b for b in live if b not in p.replicas]
                if free:
                    out.append((t.name, p.partition, old, rng.choice(free)))
    return out


def _both(snap: ClusterSnapshot, options: PlanOptions) -> tuple[Run, ColumnRun]:
    eligible = sorted(b for b in snap.live_broker_ids() if b not in options.exclude_brokers)
    col = columnar(snap)
    assert column_refusal(col, options) is None
    return Run.start(snap, eligible, options, None), ColumnRun.start(col, eligible, options, None)


def _apply(run: Run, crun: ColumnRun, moves: list[tuple[str, int, int, int]]) -> None:
    """Each move where the object run's rack rule and disk guard allow it, on both runs,
    asking the column run the same questions."""
    index = {t.name: i for i, t in enumerate(crun.columns.topics)}
    for topic, pid, old, new in moves:
        i = index[topic]
        row = int(crun.columns.start[i]) + pid
        slot = int(np.flatnonzero(crun.work[row] == crun.lookup[old])[0])
        rows, slots = np.array([row]), np.array([slot])
        dense_new = crun.to_dense(np.array([new]))
        ok = run.rack_ok((topic, pid), old, new)
        assert bool(crun.rack_ok(rows, slots, dense_new)[0]) == ok
        if not ok:
            continue
        fits = run.fits((topic, pid), new)
        assert bool(crun.fits(rows, dense_new)[0]) == fits
        if fits:
            run.move((topic, pid), old, new)
            crun.move(rows, slots, dense_new)


def _reorder(run: Run, crun: ColumnRun, rng: random.Random) -> None:
    """Some partitions led by another of their replicas, on both runs (a reorder alone adds
    no replica: with every move refused by the disk guard, both runs refuse the plan)."""
    index = {t.name: i for i, t in enumerate(crun.columns.topics)}
    for key in sorted(run.work):
        if rng.random() < 0.3:
            leader = rng.choice(run.work[key])
            run.reorder(key, leader)
            row = int(crun.columns.start[index[key[0]]]) + key[1]
            crun.reorder(np.array([row]), crun.to_dense(np.array([leader])))


def _outcome(make):  # type: ignore[no-untyped-def]
    try:
        plan = make()
    except PlanInfeasible as e:
        return ("refused", str(e))
    return (list(plan.changes), plan.report, plan.findings)


@SETTINGS
@given(
    st.integers(0, 2**32),
    st.integers(2, 12),
    st.integers(0, 4),
    st.sampled_from([None, 3, 10**6, 10**7]),
)
def test_the_same_moves_give_the_object_runs_plan(
    seed: int, n: int, n_racks: int, disks: int | None
) -> None:
    snap = cluster(seed, n=n, n_racks=n_racks, disks=disks)
    run, crun = _both(snap, PlanOptions())
    _apply(run, crun, _moves(snap, seed))
    _reorder(run, crun, random.Random(seed + 1))
    for key in ("replicas", "bytes"):
        loads = getattr(crun, key).tolist()
        want = run.ctx.cluster_replicas if key == "replicas" else run.ctx.cluster_bytes
        assert loads == [want[b] for b in crun.ids.tolist()]
    assert _outcome(lambda: crun.plan("op", {"x": 1})) == _outcome(lambda: run.plan("op", {"x": 1}))


def test_a_run_that_moves_nothing_is_measured_as_the_object_run_measures_it() -> None:
    snap = cluster(7, n=6, n_racks=3)
    run, crun = _both(snap, PlanOptions())
    plan = crun.plan("rebalance")
    assert len(plan.changes) == 0
    assert plan.report == run.plan("rebalance").report


def test_reorder_puts_the_named_replica_first_and_keeps_the_others_in_order() -> None:
    snap = ClusterSnapshot(
        brokers=tuple(Broker(b) for b in range(4)),
        topics=(Topic("t", (Partition("t", 0, (0, 1, 2, 3)), Partition("t", 1, (3, 2, 1, 0)))),),
    )
    _, crun = _both(snap, PlanOptions())
    crun.reorder(np.array([0, 1]), crun.to_dense(np.array([2, 0])))
    assert crun.ids[crun.work].tolist() == [[2, 0, 1, 3], [0, 3, 2, 1]]
    assert crun.leaders.tolist() == [1, 0, 1, 0]


def test_snapshots_the_column_run_leaves_to_the_object_run() -> None:
    snap = cluster(3, n=5, n_racks=2)
    assert column_refusal(snap, PlanOptions()) == "the snapshot is not in columns"
    assert "balanced" in str(column_refusal(columnar(snap), PlanOptions(log_dirs="balanced")))
    gone = ClusterSnapshot(
        brokers=(Broker(0), Broker(1)), topics=(Topic("t", (Partition("t", 0, (0, 9)),)),)
    )
    assert "does not list" in str(column_refusal(columnar(gone), PlanOptions()))
    far = ClusterSnapshot(
        brokers=(Broker(0), Broker(2**31 - 1)),
        topics=(Topic("t", (Partition("t", 0, (0, 2**31 - 1)),)),),
    )
    assert "above 10,000,000" in str(column_refusal(columnar(far), PlanOptions()))


def test_an_unknown_topic_in_scope_is_refused_in_the_snapshots_words() -> None:
    snap = cluster(3, n=5, n_racks=2)
    with pytest.raises(Exception) as want:
        snap.topic("nope")
    with pytest.raises(type(want.value), match=re.escape(str(want.value))):
        ColumnRun.start(columnar(snap), [0, 1], PlanOptions(), ["nope"])


@pytest.mark.parametrize("skip", [False, True])
def test_rows_in_flight_are_refused_or_left_out_in_the_object_runs_words(skip: bool) -> None:
    """The columns never hold a partition in flight (their readers build objects then), so
    a caller names those rows: the refusal, or the finding with skip_in_flight, is Run's."""
    import dataclasses

    from kreplica.errors import KreplicaError

    snap = cluster(11, n=6, n_racks=3)
    flying = {(t.name, p.partition) for t in snap.topics for p in t.partitions[:12:5]}
    moving_snap = dataclasses.replace(
        snap,
        topics=tuple(
            dataclasses.replace(
                t,
                partitions=tuple(
                    dataclasses.replace(p, adding_replicas=p.replicas[:1])
                    if (t.name, p.partition) in flying
                    else p
                    for p in t.partitions
                ),
            )
            for t in snap.topics
        ),
    )
    options = PlanOptions(skip_in_flight=skip)
    run = Run.start(moving_snap, [0, 1, 2], options, None)
    crun = ColumnRun.start(columnar(snap), [0, 1, 2], options, None)
    keys = sorted(run.parts)
    moving = np.array([k in flying for k in keys])
    if not skip:
        with pytest.raises(KreplicaError) as want:
            run.in_flight(keys, options)
        with pytest.raises(type(want.value), match=re.escape(str(want.value))):
            crun.in_flight(crun.scope_rows(), moving)
        return
    kept = run.in_flight(keys, options)
    rows = crun.in_flight(crun.scope_rows(), moving)
    assert [keys[r] for r in rows.tolist()] == kept
    assert crun.findings == run.findings and len(crun.findings) == 1


def test_bytes_per_broker_are_exact_past_what_a_float_holds() -> None:
    big = 2**53 + 1  # a float sum of two of these loses the odd bytes
    snap = ClusterSnapshot(
        brokers=tuple(Broker(b) for b in range(3)),
        topics=(
            Topic("t", tuple(Partition("t", p, (0, 1 + p % 2), size_bytes=big) for p in range(4))),
        ),
    )
    run, crun = _both(snap, PlanOptions())
    assert (
        crun.bytes.tolist()
        == [run.ctx.cluster_bytes[b] for b in range(3)]
        == [4 * big, 2 * big, 2 * big]
    )
    _apply(run, crun, [("t", 0, 0, 2)])
    assert crun.bytes.tolist() == [run.ctx.cluster_bytes[b] for b in range(3)]
