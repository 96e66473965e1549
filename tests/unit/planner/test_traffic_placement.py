"""drain and add-brokers by traffic (planner/brokers/traffic_placement.py): with rates in the
snapshot, the same replicas and preferred leaders per broker as the count plan, every rule
kept, the largest network in and out never above the count plan's (lower on skewed
clusters); without rates, the count plan byte for byte."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kreplica.model import Broker, ClusterSnapshot, LogDir, Partition, Plan, Topic, TrafficWindow
from kreplica.planner.brokers import add_brokers_plan, drain_plan
from kreplica.planner.brokers.traffic_balance import spread_figures
from kreplica.planner.serialize import reassignment_json
from kreplica.planner.traffic import broker_traffic

WINDOW = TrafficWindow(60.0, "2026-11-28T00:00:00Z")
RANDOM_CLUSTERS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
SHAPES = {
    "seed": st.integers(0, 10_000),
    "brokers": st.integers(6, 12),
    "racks": st.integers(1, 4),
    "rf": st.integers(2, 3),
}


def _cluster(
    seed: int, brokers: int, partitions: int, racks: int, rf: int, new: tuple[int, ...] = ()
) -> ClusterSnapshot:
    """Brokers 0..brokers-1 on `racks` racks; `new` hold nothing; rates heavy-tailed."""
    rng = random.Random(seed)
    nodes = tuple(Broker(i, f"r{i % racks}") for i in range(brokers))
    old = [b.id for b in nodes if b.id not in new]
    topics = []
    for t in range(3):
        parts = []
        for n in range(partitions // 3):
            reps = rng.sample(old, rf)
            parts.append(
                Partition(
                    f"t{t}",
                    n,
                    tuple(reps),
                    leader=reps[0],
                    size_bytes=rng.randint(1, 50) * 2**20,
                    bytes_in_per_s=rng.paretovariate(1.1) * 1e3,
                    fanout=rng.choice([0, 1, 2, None]),
                )
            )
        topics.append(Topic(f"t{t}", tuple(parts)))
    return ClusterSnapshot(nodes, tuple(topics), traffic=WINDOW)


def _without_rates(snap: ClusterSnapshot) -> ClusterSnapshot:
    return dataclasses.replace(snap, traffic=None)


def _applied(snap: ClusterSnapshot, plan: Plan) -> ClusterSnapshot:
    """The snapshot after the plan, its preferred leaders elected."""
    after = {(c.topic, c.partition): c.after for c in plan.changes}

    def one(p: Partition) -> Partition:
        reps = after.get((p.topic, p.partition), p.replicas)
        return dataclasses.replace(p, replicas=reps, leader=reps[0], isr=None)

    topics = tuple(
        dataclasses.replace(t, partitions=tuple(one(p) for p in t.partitions)) for t in snap.topics
    )
    return dataclasses.replace(snap, topics=topics)


def _check_against_count_plan(snap: ClusterSnapshot, rated: Plan, counted: Plan) -> None:
    """Same counts, the rules kept, loads no higher: recomputed from the plans' replicas."""
    by_traffic, by_count = _applied(snap, rated), _applied(snap, counted)
    loads, loads0 = broker_traffic(by_traffic), broker_traffic(by_count)
    assert [(b.id, b.replicas, b.leaders) for b in loads] == [
        (b.id, b.replicas, b.leaders) for b in loads0
    ]
    assert rated.report["replicas_added"] == counted.report["replicas_added"]
    racks = snap.racks()
    alive = snap.live_broker_ids()
    count_racks = {
        (c.topic, c.partition): len({racks[b] for b in c.after}) for c in counted.changes
    }
    for c in rated.changes:
        assert len(set(c.after)) == len(c.after)  # no broker twice
        assert set(c.after) <= alive
        # no fewer racks than the count plan gives it (the disk guard may already cost one)
        before = len({racks[b] for b in c.before})
        assert len({racks[b] for b in c.after}) >= count_racks.get((c.topic, c.partition), before)
    assert max(b.nw_in for b in loads) <= max(b.nw_in for b in loads0) + 1e-3
    assert max(b.nw_out for b in loads) <= max(b.nw_out for b in loads0) + 1e-3


@RANDOM_CLUSTERS
@given(**SHAPES, drained=st.integers(1, 2))
def test_drain_by_traffic_keeps_the_count_plan_and_lowers_no_load(
    seed: int, brokers: int, racks: int, rf: int, drained: int
) -> None:
    snap = _cluster(seed, brokers, 90, racks, rf)
    gone = list(range(drained))
    rated = drain_plan(snap, gone)
    counted = drain_plan(_without_rates(snap), gone)
    _check_against_count_plan(snap, rated, counted)
    assert rated.report["replicas_added"] == sum(
        1 for t in snap.topics for p in t.partitions for b in p.replicas if b in gone
    )


@RANDOM_CLUSTERS
@given(**SHAPES, added=st.integers(1, 3))
def test_add_brokers_by_traffic_keeps_the_count_plan_and_lowers_no_load(
    seed: int, brokers: int, racks: int, rf: int, added: int
) -> None:
    new = tuple(range(brokers - added, brokers))
    snap = _cluster(seed, brokers, 90, racks, rf, new)
    rated = add_brokers_plan(snap, new)
    counted = add_brokers_plan(_without_rates(snap), new)
    _check_against_count_plan(snap, rated, counted)


def _max_in(snap: ClusterSnapshot, plan: Plan) -> float:
    return max(b.nw_in for b in broker_traffic(_applied(snap, plan)))


def test_drain_spreads_a_drained_brokers_heavy_partitions() -> None:
    """Broker 0 holds six partitions at 100 kB/s among light ones: by count, several land on
    one broker; by traffic, each on another."""
    nodes = tuple(Broker(i, None) for i in range(8))
    parts = []
    for n in range(56):
        reps = (0, 1 + n % 7, 1 + (n + 3) % 7)
        rate = 1e5 if n % 8 == 0 else 10.0
        parts.append(Partition("t", n, reps, leader=reps[0], size_bytes=1, bytes_in_per_s=rate))
    snap = ClusterSnapshot(nodes, (Topic("t", tuple(parts)),), traffic=WINDOW)
    rated, counted = drain_plan(snap, [0]), drain_plan(_without_rates(snap), [0])
    _check_against_count_plan(snap, rated, counted)
    assert _max_in(snap, rated) < _max_in(snap, counted)
    traffic = rated.report["traffic"]
    assert traffic["after"]["nw_in"]["max"] < traffic["count_plan"]["nw_in"]["max"]
    assert any(f.code == "traffic-placement" for f in rated.findings)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_add_brokers_takes_load_off_the_hottest_brokers(seed: int) -> None:
    new = (10, 11)
    snap = _cluster(seed, 12, 300, 3, 3, new)
    rated, counted = add_brokers_plan(snap, new), add_brokers_plan(_without_rates(snap), new)
    _check_against_count_plan(snap, rated, counted)
    assert _max_in(snap, rated) < _max_in(snap, counted)
    after = {b.id: b.nw_in for b in broker_traffic(_applied(snap, rated))}
    before = {b.id: b.nw_in for b in broker_traffic(_applied(snap, counted))}
    # the new brokers take heavier replicas than the count plan's, and the loads spread less
    # (the mean is the same: each replica counts once either way)
    assert sum(after[n] for n in new) > sum(before[n] for n in new)
    assert spread_figures(after)["cv"] < spread_figures(before)["cv"]


@pytest.mark.parametrize("operation", ["drain", "add"])
def test_without_rates_the_plan_is_the_count_plan_byte_for_byte(operation: str) -> None:
    """Rates on the partitions but no measured window (a snapshot without `traffic`): the
    count plan exactly, no traffic report, no finding."""
    new = (10, 11)
    snap = _without_rates(_cluster(7, 12, 120, 3, 3, new if operation == "add" else ()))
    bare = dataclasses.replace(
        snap,
        topics=tuple(
            dataclasses.replace(
                t,
                partitions=tuple(
                    dataclasses.replace(p, bytes_in_per_s=None, fanout=None) for p in t.partitions
                ),
            )
            for t in snap.topics
        ),
    )

    def plan(s: ClusterSnapshot) -> Plan:
        return drain_plan(s, [0]) if operation == "drain" else add_brokers_plan(s, new)

    one, two = plan(snap), plan(bare)
    assert json.dumps(reassignment_json(one)) == json.dumps(reassignment_json(two))
    assert "traffic" not in one.report
    assert not any(f.code == "traffic-placement" for f in one.findings)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), operation=st.sampled_from(["drain", "add"]))
def test_the_disk_guard_holds_by_traffic(seed: int, operation: str) -> None:
    """Tight disks (room for a few partitions on some brokers): the bytes each broker
    receives by traffic stay within its room, as the count plan's do."""
    from kreplica.errors import PlanInfeasible
    from kreplica.planner.disk import DiskGuard
    from kreplica.planner.options import PlanOptions

    rng = random.Random(seed)
    new = (10, 11) if operation == "add" else ()
    snap = _cluster(seed, 12, 90, 3, 3, new)
    gib = 2**30
    brokers = tuple(
        dataclasses.replace(
            b, disks=(LogDir("/d", total_bytes=10 * gib, usable_bytes=rng.choice([1, 2, 9]) * gib),)
        )
        for b in snap.brokers
    )
    snap = dataclasses.replace(snap, brokers=brokers)

    def plan(s: ClusterSnapshot) -> Plan:
        return drain_plan(s, [0]) if operation == "drain" else add_brokers_plan(s, new)

    try:
        counted = plan(_without_rates(snap))
    except PlanInfeasible:
        return  # no count plan fits these disks: nothing to place by traffic
    rated = plan(snap)
    _check_against_count_plan(snap, rated, counted)
    guard = DiskGuard.build(snap, PlanOptions().disk_headroom)
    assert guard is not None
    incoming: dict[int, int] = {}
    for c in rated.changes:
        for b in set(c.after) - set(c.before):
            incoming[b] = incoming.get(b, 0) + (c.size_bytes or 0)
    for b, got in incoming.items():
        room = guard.room(b)
        assert room is not None and got <= room
