"""drain / add-brokers / replace / rebalance: hypothesis invariants over random clusters, plus
compact table cases for the refusals and the rack rules.

Invariants: the lower bound is met (drain, replace, add-brokers) or reported and never above
the moves (rebalance); no replica stays on a drained or replaced broker; no partition spans
fewer racks after; partitions a plan does not list are identical; a replica that stays keeps
its position; same input, same plan.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planner_helpers import cluster

from kreplica.errors import PlanInfeasible, ReassignmentInProgress, UsageError
from kreplica.model import Broker, ClusterSnapshot, Partition, Plan, Topic
from kreplica.planner import PlanOptions
from kreplica.planner.brokers import (
    add_brokers_plan,
    drain_plan,
    rebalance_plan,
    replace_plan,
)
from kreplica.planner.evaluate import distinct_racks, spread

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _random_cluster(
    seed: int, *, n: int, n_racks: int, sized: bool, hold: Sequence[int] | None = None
) -> ClusterSnapshot:
    """Topics with RF 1-3 laid out at random over `hold` (default: every broker)."""
    rng = random.Random(seed)
    ids = list(range(n))
    holders = list(hold) if hold is not None else ids
    racks = {b: f"r{rng.randrange(n_racks)}" for b in ids} if n_racks else {}
    topics = []
    for t in range(rng.randint(1, 3)):
        rf = rng.randint(1, min(3, len(holders)))
        parts = []
        for p in range(rng.randint(1, 30)):
            reps = tuple(rng.sample(holders, rf))
            size = rng.randint(1, 10**6) if sized else None
            parts.append(Partition(f"t{t}", p, reps, leader=reps[0], size_bytes=size))
        topics.append(Topic(f"t{t}", tuple(parts)))
    return ClusterSnapshot(
        brokers=tuple(Broker(b, rack=racks.get(b)) for b in ids),
        topics=tuple(topics),
        cluster_id="test",
    )


def _assignment(snapshot: ClusterSnapshot, plan: Plan | None = None) -> dict:
    out = {(t.name, p.partition): tuple(p.replicas) for t in snapshot.topics for p in t.partitions}
    for c in plan.changes if plan else ():
        out[(c.topic, c.partition)] = tuple(c.after)
    return out


def _common(snapshot: ClusterSnapshot, plan: Plan) -> None:
    """No duplicates, racks never fewer, unlisted partitions identical, deterministic."""
    racks = snapshot.racks()
    before = _assignment(snapshot)
    after = _assignment(snapshot, plan)
    listed = {(c.topic, c.partition) for c in plan.changes}
    live = snapshot.live_broker_ids()
    for key, reps in after.items():
        assert len(set(reps)) == len(reps), (key, reps)
        assert len(reps) == len(before[key]), (key, reps)
        if key not in listed:
            assert reps == before[key]
            continue
        assert distinct_racks(racks, reps) >= distinct_racks(racks, before[key]), (key, reps)
        assert all(b in live for b in reps if b not in before[key])


def _moves(plan: Plan) -> int:
    return sum(len(c.added) for c in plan.changes)


def _positions_kept(snapshot: ClusterSnapshot, plan: Plan, moved: set[int] | None) -> None:
    """Every replica that stays keeps its position (moved ones are replaced in place), but
    for a drained partition whose new preferred leader the drain chose (it is put first, the
    others keep their order)."""
    before = _assignment(snapshot)
    releaded = plan.report.get("preferred_leader_changes", {})
    for c in plan.changes:
        old = before[(c.topic, c.partition)]
        if f"{c.topic}-{c.partition}" in releaded:
            new_leader = c.after[0]
            assert set(old) & set(moved or ()), c  # only partitions the drain touches
            rest = list(c.after[1:])
            kept = [b for b in old if b in rest]
            assert kept == [b for b in rest if b in old], (c, old)
            assert new_leader in old or new_leader in c.added
            continue
        for i, b in enumerate(old):
            if moved is not None and b in moved:
                assert c.after[i] != b
            elif b in c.after:
                assert c.after[i] == b, (c, old)


@SETTINGS
@given(
    st.integers(0, 2**32),
    st.integers(2, 14),
    st.integers(0, 4),
    st.booleans(),
    st.integers(1, 3),
)
def test_drain_properties(seed: int, n: int, n_racks: int, sized: bool, k: int) -> None:
    snap = _random_cluster(seed, n=n, n_racks=n_racks, sized=sized)
    rng = random.Random(seed + 1)
    drained = set(rng.sample(range(n), min(k, n - 1)))
    try:
        plan = drain_plan(snap, drained)
    except PlanInfeasible as exc:
        stay = [b for b in range(n) if b not in drained]
        racks = snap.racks()
        justified = False
        for reps in _assignment(snap).values():
            if not drained & set(reps):
                continue
            kept = [b for b in reps if b not in drained]
            reachable = distinct_racks(racks, kept + stay)
            if len(reps) > len(stay) or reachable < distinct_racks(racks, reps):
                justified = True
        assert justified, str(exc)
        return
    _common(snap, plan)
    after = _assignment(snap, plan)
    assert not any(b in drained for reps in after.values() for b in reps)
    on_drained = sum(1 for reps in _assignment(snap).values() for b in reps if b in drained)
    report = plan.report
    assert _moves(plan) == on_drained == report["lower_bound_replicas_added"]
    assert report["replicas_added"] == report["lower_bound_replicas_added"]
    if sized:
        assert report["bytes_to_move"] == report["bytes_lower_bound"]
    _positions_kept(snap, plan, drained)
    assert drain_plan(snap, drained) == plan


@SETTINGS
@given(st.integers(0, 2**32), st.integers(2, 12), st.integers(0, 4))
def test_replace_properties(seed: int, n: int, n_racks: int) -> None:
    snap = _random_cluster(seed, n=n + 1, n_racks=n_racks, sized=True, hold=range(n))
    rng = random.Random(seed)
    old = rng.randrange(n)
    new = n if rng.random() < 0.7 else rng.choice([b for b in range(n + 1) if b != old])
    try:
        plan = replace_plan(snap, old, new)
    except PlanInfeasible:
        assert any(old in r and new in r for r in _assignment(snap).values())
        return
    before = _assignment(snap)
    after = _assignment(snap, plan)
    for key, reps in before.items():
        assert after[key] == tuple(new if b == old else b for b in reps)
    assert plan.report["replicas_added"] == plan.report["lower_bound_replicas_added"]
    assert plan.report["bytes_to_move"] == plan.report["bytes_lower_bound"]


@SETTINGS
@given(
    st.integers(0, 2**32),
    st.integers(2, 12),
    st.integers(1, 3),
    st.integers(0, 4),
    st.sampled_from(["count", "bytes"]),
)
def test_add_brokers_properties(seed: int, n_old: int, n_new: int, n_racks: int, by: str) -> None:
    n = n_old + n_new
    snap = _random_cluster(seed, n=n, n_racks=n_racks, sized=True, hold=range(n_old))
    new = set(range(n_old, n))
    plan = add_brokers_plan(snap, new, by=by)
    _common(snap, plan)
    _positions_kept(snap, plan, None)
    for c in plan.changes:
        assert set(c.added) <= new
        assert not set(c.removed) & new
    report = plan.report
    counts = report["broker_replicas_after"]
    short = any(f.code == "share-not-reached" for f in plan.findings)
    if by == "count":
        share = report["share"]
        if not short:
            assert _moves(plan) == report["lower_bound_replicas_added"]
            assert all(counts[b] >= share for b in new)
        assert _moves(plan) <= report["lower_bound_replicas_added"]  # never past the share
        if n_racks == 0:
            assert not short
        assert report["bytes_lower_bound"] <= (report["bytes_to_move"] or 0) or short
    else:
        assert report["bytes_to_move"] == report["bytes_lower_bound"]
        sizes = report["broker_bytes_in"]
        assert all(sizes[b] <= report["new_broker_deficit"][b] for b in new)
        assert _moves(plan) >= report["lower_bound_replicas_added"]
    assert add_brokers_plan(snap, new, by=by) == plan


@SETTINGS
@given(
    st.integers(0, 2**32),
    st.integers(2, 12),
    st.integers(0, 4),
    st.sampled_from(["count", "bytes"]),
    st.one_of(st.none(), st.integers(0, 20)),
    st.one_of(st.none(), st.integers(0, 5 * 10**6)),
)
def test_rebalance_properties(
    seed: int, n: int, n_racks: int, by: str, max_moves: int | None, max_bytes: int | None
) -> None:
    snap = _random_cluster(seed, n=n, n_racks=n_racks, sized=True)
    plan = rebalance_plan(snap, by=by, max_moves=max_moves, max_bytes=max_bytes)
    _common(snap, plan)
    report = plan.report
    moves = _moves(plan)
    assert report["lower_bound_replicas_added"] <= moves
    assert moves <= (max_moves if max_moves is not None else moves)
    assert (report["bytes_to_move"] or 0) <= (max_bytes if max_bytes is not None else 10**18)
    for topic, value in report["topic_spread_after"].items():
        assert value <= max(1, report["topic_spread_before"][topic])
    if max_moves is None and max_bytes is None:
        if n_racks == 0:
            assert all(v <= 1 for v in report["topic_spread_after"].values())
            if by == "count":
                assert report["cluster_spread_after"] <= 1
        if all(t.replication_factor > 1 for t in snap.topics):  # RF 1: moving is leading
            assert report["leader_spread_after"] <= max(1, report["leader_spread_before"])
        if by == "count":  # evening a topic may load a rack's only broker while fixing racks
            assert report["cluster_spread_after"] <= max(1, report["cluster_spread_before"]) or (
                report["rack_violations_after"] < report["rack_violations_before"]
            )
    # a reorder changes the preferred leader only: no data for it
    for c in plan.changes:
        if not c.added:
            assert set(c.after) == set(c.before or ()) and c.after != c.before
    assert rebalance_plan(snap, by=by, max_moves=max_moves, max_bytes=max_bytes) == plan


# --- tables --------------------------------------------------------------------------------


def test_drain_same_rack_first_and_leader_position() -> None:
    snap = cluster(
        {"a": [[0, 1, 2], [1, 2, 0], [3, 4, 5]]},
        brokers=6,
        racks={0: "x", 1: "y", 2: "z", 3: "x", 4: "y", 5: "z"},
    )
    plan = drain_plan(snap, [0])
    after = {c.partition: c.after for c in plan.changes}
    # broker 3 is the only one of 0's rack; positions kept but the leader's: 1 and 3 lead
    # a partition already, so 2 (in sync) takes it
    assert after == {0: (2, 3, 1), 1: (1, 2, 3)}
    assert plan.report["preferred_leader_changes"] == {"a-0": [0, 2]}
    assert plan.report["leader_spread_after"] == 1
    assert plan.report["replicas_added"] == plan.report["lower_bound_replicas_added"] == 2
    assert any(f.code == "elect-after" for f in plan.findings)


def test_drain_fresh_rack_when_own_rack_is_empty_but_spread_allows() -> None:
    # RF 2 on racks x,y; drain the only x broker: z keeps 2 racks
    snap = cluster({"a": [[0, 1]]}, brokers=3, racks={0: "x", 1: "y", 2: "z"})
    plan = drain_plan(snap, [0])
    assert plan.changes[0].after == (2, 1)


def test_drain_refusals() -> None:
    racks = {0: "x", 1: "y", 2: "z", 3: "x", 4: "y", 5: "z"}
    snap = cluster({"a": [[0, 1, 2]]}, brokers=6, racks=racks)
    with pytest.raises(UsageError, match="broker 9 is not in this cluster"):
        drain_plan(snap, [9])
    with pytest.raises(PlanInfeasible, match="empties rack"):
        drain_plan(snap, [0, 3])
    with pytest.raises(PlanInfeasible, match="leaves 2 broker"):
        drain_plan(cluster({"a": [[0, 1, 2]]}, brokers=4), [0, 3])
    moving = cluster({"a": [[0, 1]]}, brokers=3)
    part = moving.topics[0].partitions[0]
    import dataclasses

    moving = dataclasses.replace(
        moving,
        topics=(
            dataclasses.replace(
                moving.topics[0],
                partitions=(dataclasses.replace(part, adding_replicas=(1,)),),
            ),
        ),
    )
    with pytest.raises(ReassignmentInProgress):
        drain_plan(moving, [0])
    skipped = drain_plan(moving, [0], options=PlanOptions(skip_in_flight=True))
    assert not skipped.changes


def test_drain_dead_broker_and_other_dead_refused() -> None:
    snap = cluster({"a": [[0, 1], [2, 1]]}, brokers=4, dead=[0])
    plan = drain_plan(snap, [0])  # draining a dead broker is the usual case
    assert [c.after for c in plan.changes] == [(3, 1)] or [c.after for c in plan.changes] == [
        (2, 1)
    ]
    with pytest.raises(PlanInfeasible, match="dead broker"):
        drain_plan(snap, [1])


def test_replace_refuses_overlap_and_dead_target() -> None:
    snap = cluster({"a": [[0, 1], [1, 2]]}, brokers=4, dead=[3])
    with pytest.raises(PlanInfeasible, match="already holds"):
        replace_plan(snap, 0, 1)
    with pytest.raises(PlanInfeasible, match="is down"):
        replace_plan(snap, 0, 3)
    with pytest.raises(UsageError):
        replace_plan(snap, 0, 8)


def test_add_brokers_takes_small_partitions_from_the_fullest() -> None:
    snap = cluster({"big": [[0], [1]], "small": [[0], [0], [1]]}, brokers=3)
    sizes = {"big": 100, "small": 1}
    import dataclasses

    snap = dataclasses.replace(
        snap,
        topics=tuple(
            dataclasses.replace(
                t,
                partitions=tuple(
                    dataclasses.replace(p, size_bytes=sizes[t.name]) for p in t.partitions
                ),
            )
            for t in snap.topics
        ),
    )
    plan = add_brokers_plan(snap, [2])
    assert [(c.topic, c.before, c.after) for c in plan.changes] == [("small", (0,), (2,))]
    assert plan.report["lower_bound_replicas_added"] == 1
    assert plan.report["bytes_lower_bound"] == 1


def test_rebalance_reorders_leaders_without_data() -> None:
    snap = cluster({"a": [[0, 1], [0, 1], [0, 1], [0, 1]]}, brokers=2)
    plan = rebalance_plan(snap)
    assert plan.report["replicas_added"] == 0
    assert sorted(c.after for c in plan.changes) == [(1, 0), (1, 0)]
    assert plan.report["leader_spread_after"] == 0


def test_rebalance_budget_and_bad_by() -> None:
    snap = cluster({"a": [[0], [0], [0], [0]]}, brokers=4)
    assert _moves(rebalance_plan(snap, max_moves=1)) == 1
    assert _moves(rebalance_plan(snap)) == 3
    with pytest.raises(UsageError, match="`by`"):
        rebalance_plan(snap, by="disk")
    with pytest.raises(UsageError, match="size"):
        rebalance_plan(snap, by="bytes")
    assert spread({0: 1}) == 0
