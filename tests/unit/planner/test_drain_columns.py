"""The drain on columns (planner/brokers/drain_arrays.py) against the object drain (drain.py).

Both solve the same exact balance (spreadflow.solve_balanced) over their classes, so on
random clusters they move exactly the drained replicas, reach the same least cost of
replicas per staying broker and per topic, refuse with the same words, and report the same
counts. Which partition takes which broker may differ where costs tie, and so may the
preferred leaders that follow: each engine's leaders are the most even its own placement
allows (within one of the window optimum, as test_drain_balance checks for the object
drain). The object drain splits a drained leader's class by its rows' in-sync replicas,
the column drain tells them apart in the leader step only; neither is better in general
(on 1,000 random clusters: 4 leader spreads one lower for the objects, 3 for the columns).
"""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_column_run import columnar
from test_drain_balance import after_of, costs, make_cluster, rack, window_optimum

from kreplica.errors import PlanInfeasible
from kreplica.model import Broker, ClusterSnapshot, LogDir, Partition, Topic
from kreplica.planner.brokers import drain_plan
from kreplica.planner.brokers.drain_arrays import DrainBrokers, drain_classes
from kreplica.planner.options import PlanOptions


def _degraded(snap: ClusterSnapshot, seed: int) -> ClusterSnapshot:
    """Now and then a dead broker, leaders off the first replica, sizes."""
    rng = random.Random(seed)
    dead = rng.choice([b.id for b in snap.brokers]) if rng.random() < 0.3 else None
    topics = []
    for t in snap.topics:
        parts = []
        for p in t.partitions:
            leader = rng.choice(p.replicas) if rng.random() < 0.3 else p.replicas[0]
            size = rng.choice([None, 1, 7, rng.randint(1, 10**6)]) if rng.random() < 0.5 else 5
            parts.append(
                Partition(
                    t.name, p.partition, p.replicas, leader=leader, isr=p.isr, size_bytes=size
                )
            )
        topics.append(Topic(t.name, tuple(parts), {}))
    return ClusterSnapshot(
        brokers=tuple(Broker(b.id, rack=b.rack, alive=b.id != dead) for b in snap.brokers),
        topics=tuple(topics),
        cluster_id=snap.cluster_id,
    )


def _plan_or_refusal(snap: ClusterSnapshot, drained: set[int], options: PlanOptions) -> object:
    try:
        return drain_plan(snap, drained, options=options)
    except PlanInfeasible as e:
        return str(e)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 2**31),
    st.integers(4, 9),
    st.sampled_from(["none", "even", "uneven"]),
    st.integers(1, 4),
    st.integers(1, 3),
    st.booleans(),
)
def test_column_drain_reaches_the_object_drains_optimum(
    seed: int, n: int, racks: str, n_topics: int, k: int, exclude: bool
) -> None:
    snap = _degraded(make_cluster(seed, n, racks, n_topics), seed)
    rng = random.Random(seed)
    drained = set(rng.sample(range(n), k))
    options = PlanOptions(exclude_brokers=frozenset({rng.randrange(n)}) if exclude else frozenset())
    objects = _plan_or_refusal(snap, drained, options)
    cols = _plan_or_refusal(columnar(snap), drained, options)
    if isinstance(objects, str) or isinstance(cols, str):
        event("refused")
        assert cols == objects  # the same refusal, word for word
        return
    event("planned")
    assert objects.report["engine"]["name"] == "objects"
    assert cols.report["engine"]["name"] == "columns"
    stay = [b.id for b in snap.brokers if b.alive and b.id not in drained | options.exclude_brokers]
    after_o, after_c = after_of(snap, objects), after_of(snap, cols)
    assert costs(snap, after_c, stay) == costs(snap, after_o, stay)  # the same optimum
    for key in (
        "replicas_added",
        "replicas_removed",
        "lower_bound_replicas_added",
        "bytes_lower_bound",
        "bytes_to_move",
        "replicas_left_on_drained",
        "partitions_led_by_drained",
        "cluster_spread_after",
        "cluster_spread_before",
        "topic_spread_before",
        "drained_brokers",
        "partitions_changed",
    ):
        assert cols.report[key] == objects.report[key], key
    # elect-after names the preferred leaders each plan changes (its placement's choice)
    codes = [f.code for f in cols.findings]
    assert sorted(c for c in codes if c != "elect-after") == sorted(
        f.code for f in objects.findings if f.code != "elect-after"
    )
    led = cols.report["partitions_led_by_drained"]
    evened = [old for old, _ in cols.report["preferred_leader_changes"].values()]
    assert ("elect-after" in codes) == bool(led or set(evened) - drained)
    before = {(t.name, p.partition): p for t in snap.topics for p in t.partitions}
    lead_base = dict.fromkeys(stay, 0)
    lgroups = []
    for key, p in before.items():
        new = after_c[key]
        assert not set(new) & drained
        assert len(set(new)) == len(new)
        rest = [b for b in p.replicas if b not in drained]
        assert new[: len(new)] and set(rest) <= set(new)
        assert len({rack(snap, b) for b in new}) >= len({rack(snap, b) for b in p.replicas})
        if set(p.replicas) & drained:
            cands = [b for b in new if b in stay and (b in p.in_sync or b not in p.replicas)]
            if cands:
                assert new[0] in cands
                lgroups.append((1, [(0, 1, cands)], 1))
                continue
        else:
            assert new == p.replicas  # untouched
        if new[0] in lead_base:
            lead_base[new[0]] += 1
    lead = Counter(reps[0] for reps in after_c.values())
    if lgroups and stay:
        assert max(lead[b] for b in stay) - min(lead[b] for b in stay) <= (
            window_optimum(lgroups, lead_base) + 1
        )
    changed = cols.report["preferred_leader_changes"]
    assert changed == {
        f"{k[0]}-{k[1]}": [p.replicas[0], after_c[k][0]]
        for k, p in before.items()
        if p.replicas[0] != after_c[k][0]
    }


def test_keep_rack_share_takes_the_object_run() -> None:
    snap = make_cluster(3, 6, "even", 2)
    plan = drain_plan(columnar(snap), [0], keep_rack_share=True)
    assert plan.report["engine"]["name"] == "objects"
    assert "keep_rack_share" in plan.report["engine"]["why"]
    plan = drain_plan(columnar(snap), [0])
    assert plan.report["engine"]["name"] == "columns"


def _with_disks(snap: ClusterSnapshot, seed: int) -> ClusterSnapshot:
    """Sizes on every partition, disks on every broker, some of them nearly full."""
    rng = random.Random(seed)
    topics = tuple(
        Topic(
            t.name,
            tuple(
                Partition(t.name, p.partition, p.replicas, isr=p.isr, size_bytes=rng.randint(1, 9))
                for p in t.partitions
            ),
            {},
        )
        for t in snap.topics
    )
    brokers = tuple(
        Broker(
            b.id,
            rack=b.rack,
            disks=(LogDir("/d", total_bytes=1000, usable_bytes=rng.choice([110, 120, 140, 900])),),
        )
        for b in snap.brokers
    )
    return ClusterSnapshot(brokers=brokers, topics=topics, cluster_id=snap.cluster_id)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31), st.integers(4, 8), st.sampled_from(["none", "even", "uneven"]))
def test_with_a_disk_guard_the_columns_plan_fits_or_leave_it_to_the_objects(
    seed: int, n: int, racks: str
) -> None:
    """A placement that fits every disk is the balanced one; one that does not goes to the
    object drain, which steers around the full disks or refuses."""
    snap = _with_disks(make_cluster(seed, n, racks, 3), seed)
    drained = {random.Random(seed).randrange(n)}
    objects = _plan_or_refusal(snap, drained, PlanOptions())
    cols = _plan_or_refusal(columnar(snap), drained, PlanOptions())
    if isinstance(cols, str):
        event("refused")
        assert cols == objects
        return
    if cols.report["engine"]["name"] == "objects":
        event("objects")
        assert "disk headroom" in cols.report["engine"]["why"]
        assert not isinstance(objects, str)
        assert after_of(snap, cols) == after_of(snap, objects)
        return
    event("columns")
    assert cols.report["disk"]["checked"] is True  # measured: no broker under its headroom
    # the balanced optimum, as without disk figures (the object drain, steering around full
    # disks replica by replica, may give up the rack rule's fresh racks for room instead)
    free = ClusterSnapshot(
        brokers=tuple(Broker(b.id, rack=b.rack) for b in snap.brokers),
        topics=snap.topics,
        cluster_id=snap.cluster_id,
    )
    balanced = drain_plan(free, drained)
    stay = [b.id for b in snap.brokers if b.id not in drained]
    assert costs(snap, after_of(snap, cols), stay) == costs(free, after_of(free, balanced), stay)


def test_classes_are_bounded_by_topics_and_rack_patterns() -> None:
    """Many partitions, one topic: their classes are their rack patterns, and whether the
    drained broker led them (not their in-sync replicas, not one class per partition)."""
    racks = "abc"
    n = 12
    rng = random.Random(5)
    parts = []
    for p in range(600):
        reps = rng.sample(range(n), 3)
        isr = tuple(b for b in reps if rng.random() < 0.7) or tuple(reps[:1])
        parts.append(Partition("t", p, tuple(reps), isr=isr))
    snap = ClusterSnapshot(
        brokers=tuple(Broker(b, rack=racks[b % 3]) for b in range(n)),
        topics=(Topic("t", tuple(parts), {}),),
        cluster_id="x",
    )
    ids = list(range(n))
    dense = np.array([p.replicas for p in parts], dtype=np.int64)
    drained = np.array([b == 0 for b in ids])
    brokers = DrainBrokers(
        np.array([b % 3 for b in ids], dtype=np.int64),
        np.arange(n, dtype=np.int64),
        ~drained,
        drained,
    )
    rows = np.flatnonzero((dense == 0).any(axis=1))
    classes = drain_classes(dense, np.zeros(len(parts), dtype=np.int64), rows, ["t"], brokers)
    assert len(rows) > 100
    # one unit each; the racks of the two staying replicas: a pair of racks or one rack
    # twice (6 patterns), led by broker 0 or not
    assert len(classes) <= 12
    assert sum(len(g.members) for g, _ in classes) == len(rows)
    led = {r for g, is_led in classes if is_led for _, r in g.members}
    assert led == set(rows[dense[rows, 0] == 0].tolist())
    plan = drain_plan(columnar(snap), [0])
    assert sum(len(c.added) for c in plan.changes) == len(rows)
    assert plan.report["engine"]["name"] == "columns"
    after = after_of(snap, plan)
    for p in parts:  # a drained leader's partition leads from an in-sync or a new replica
        if p.replicas[0] == 0:
            new = after[("t", p.partition)]
            assert new[0] in p.in_sync or new[0] not in p.replicas


@pytest.mark.parametrize("racks", ["none", "even", "uneven"])
def test_refusals_are_the_object_drains(racks: str) -> None:
    snap = make_cluster(21, 5, racks, 3)
    for drained in ({0, 1, 2}, {0, 1, 2, 3}, {1}):
        objects = _plan_or_refusal(snap, drained, PlanOptions())
        cols = _plan_or_refusal(columnar(snap), drained, PlanOptions())
        if isinstance(objects, str) or isinstance(cols, str):
            assert cols == objects
