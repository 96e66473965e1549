"""The array planner's shape operations against the object planner: RF lowered by one replica
(planner/shrink_arrays.py), the RF raise around a dead broker (--replace-dead) and rack repair
alone (planner/racks_arrays.py).

- on random clusters with racks, the array plan removes exactly one replica per partition,
  never the current leader, one the object planner's rules (all but load) rank first; its
  topic spreads are never above the object planner's (which may use kafka or append) and
  every other figure of the report but the counts after is the same;
- on Kafka-placed topics with empty brokers the array plan reaches the lowest spread any
  removal gives, as the object planner does;
- removal_window is the lowest spread of counts that only go down (brute force), and the
  object planner's shortcut on it (no kafka/append comparison once reached) changes no plan;
- around a dead broker, every figure but where the new replicas go is the object planner's,
  topic spreads never above, each dead replica replaced in its slot by a broker on its rack;
- rack repair alone is the object planner's plan, report and findings exactly.
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_arrays import columnar, random_cluster

from kreplica.kafka import JavaRandom, assign_replicas
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from kreplica.planner import PlanOptions, TopicRequest, arrays, make_plan
from kreplica.planner import plan as object_plan
from kreplica.planner.evaluate import removal_window

# what lowering RF by one changes only through which replica goes (spreads and the counts
# after), and the object planner's note of which of its placements it kept
CHOICE = {
    "topic_spread_after",
    "cluster_spread_after",
    "broker_replicas_after",
    "placement_from",
    "engine",  # arrays here, objects there
}


def _rule_rank(snap: ClusterSnapshot, p: Partition, b: int, leader: int) -> tuple[int, ...]:
    """pick_removal's key without the load (everything here is alive and in sync)."""
    racks = snap.racks()
    shared = sum(racks[x] == racks[b] for x in p.replicas) > 1
    return (b != leader, p.replicas.index(b) > 0, shared)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 100_000),
    brokers=st.integers(3, 12),
    racks=st.integers(1, 4),
    rf=st.integers(3, 4),
    sizes=st.booleans(),
)
def test_lowering_by_one_on_arrays_is_never_less_even_than_the_object_planner(
    seed, brokers, racks, rf, sizes
):
    rng = random.Random(seed)
    brokers = max(brokers, rf)
    snap = random_cluster(
        rng, brokers=brokers, racks=racks, topics=rng.randint(1, 4), rf=rf, sizes=sizes
    )
    col = columnar(snap)
    names = [t.name for t in snap.topics]
    requests = [
        TopicRequest(topic=n, rf=rf - 1) for n in rng.sample(names, rng.randint(1, len(names)))
    ]
    options = PlanOptions(force=True)
    assert arrays.refusal(col, requests, options) is None
    plan = make_plan(col, requests, options)
    expected = make_plan(snap, requests, options)
    assert getattr(plan.changes, "columnar", False)
    assert plan.report["engine"]["name"] == "arrays"
    assert not col.materialised
    for key in set(expected.report) - CHOICE:
        assert plan.report[key] == expected.report[key], key
    for name, value in plan.report["topic_spread_after"].items():
        assert value <= expected.report["topic_spread_after"][name], name
    assert [(c.topic, c.partition) for c in plan.changes] == [
        (c.topic, c.partition) for c in expected.changes
    ]
    parts = {(t.name, p.partition): p for t in snap.topics for p in t.partitions}
    for c in plan.changes:
        p = parts[(c.topic, c.partition)]
        leader = p.current_leader
        gone = [b for b in p.replicas if b not in c.after]
        assert len(gone) == 1 and c.after == tuple(b for b in p.replicas if b != gone[0])
        assert gone[0] != leader
        best = max(_rule_rank(snap, p, b, leader) for b in p.replicas)
        assert _rule_rank(snap, p, gone[0], leader) == best


def _kafka_placed(brokers: int, racks: int, empty: int, topics: int) -> ClusterSnapshot:
    """Topics of `brokers` partitions at RF 3 as Kafka places them, plus `empty` brokers."""
    rack_of = {b: f"r{b % racks}" for b in range(brokers + empty)}
    rng = random.Random(5)
    out = []
    for t in range(topics):
        placed = assign_replicas(
            list(range(brokers)),
            brokers,
            3,
            racks={b: rack_of[b] for b in range(brokers)},
            rng=JavaRandom(rng.randrange(1 << 31)),
        )
        out.append(
            Topic(
                f"t{t}",
                tuple(Partition(f"t{t}", p, tuple(placed[p])) for p in range(brokers)),
            )
        )
    return ClusterSnapshot(
        tuple(Broker(b, rack=rack_of[b]) for b in range(brokers + empty)), tuple(out), "c"
    )


def test_kafka_placed_topics_reach_the_lowest_spread_any_removal_gives():
    snap = _kafka_placed(brokers=30, racks=3, empty=2, topics=6)
    col = columnar(snap)
    requests = [TopicRequest(topic=t.name, rf=2) for t in snap.topics]
    plan = make_plan(col, requests)
    expected = make_plan(snap, requests)
    assert getattr(plan.changes, "columnar", False)
    # every broker holds 3 replicas of each topic; the empty ones none: 2 is the floor
    assert set(plan.report["topic_spread_after"].values()) == {2}
    assert expected.report["topic_spread_after"] == plan.report["topic_spread_after"]


@pytest.mark.parametrize("seed", range(40))
def test_removal_window_is_the_lowest_spread_of_counts_that_only_go_down(seed):
    rng = random.Random(seed)
    counts = [rng.randint(0, 4) for _ in range(rng.randint(1, 5))]
    total = rng.randint(0, sum(counts))
    low, high = removal_window(counts, total)
    best = min(
        max(after) - min(after)
        for after in itertools.product(*(range(c + 1) for c in counts))
        if sum(after) == total
    )
    assert high - low == best


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), racks=st.integers(1, 3))
def test_the_object_planners_removal_shortcut_changes_no_plan(seed, racks, monkeypatch_module):
    rng = random.Random(seed)
    snap = random_cluster(rng, brokers=rng.randint(3, 9), racks=racks, topics=3, rf=3)
    requests = [TopicRequest(topic=t.name, rf=2) for t in snap.topics]
    plan = make_plan(snap, requests)
    with monkeypatch_module.context() as m:
        m.setattr(object_plan, "removal_floor", lambda ctx, topic, work: 0)
        compared = make_plan(snap, requests)
    assert plan == compared


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as m:
        yield m


# --- the RF raise with replicas on a dead broker (--replace-dead) ------------------------------

# what depends on which brokers the new replicas go to
PLACED = CHOICE | {
    "broker_replicas_peak",
    "broker_bytes_in",
    "broker_bytes_out",
    "broker_leaders_after",
    "cross_rack_bytes",
}


def _one_dead(snap: ClusterSnapshot, rng: random.Random) -> ClusterSnapshot:
    """One broker down: out of every ISR, its partitions led by another replica, by no one
    (-1), or unknown."""
    dead = rng.choice(snap.brokers).id
    brokers = tuple(Broker(b.id, b.rack, alive=b.id != dead) for b in snap.brokers)
    topics = []
    for t in snap.topics:
        parts = []
        for p in t.partitions:
            if dead in p.replicas:
                isr = tuple(b for b in p.replicas if b != dead)
                leader = rng.choice([isr[0], None, -1]) if isr else -1
                p = Partition(p.topic, p.partition, p.replicas, leader, isr, p.size_bytes)
            parts.append(p)
        topics.append(Topic(t.name, tuple(parts)))
    return ClusterSnapshot(brokers, tuple(topics), "c")


def _but_imbalance(findings):
    return [f for f in findings if f.code != "imbalance"]


@example(seed=98, rf=2, racks=4)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), rf=st.integers(1, 3), racks=st.integers(2, 4))
def test_raising_rf_around_a_dead_broker_on_arrays_matches_the_object_planners_figures(
    seed, rf, racks
):
    rng = random.Random(seed)
    snap = _one_dead(
        random_cluster(rng, brokers=rng.randint(4, 12), racks=racks, topics=3, rf=rf), rng
    )
    col = columnar(snap)
    requests = [TopicRequest(topic=t.name, rf=rf + 1) for t in snap.topics]
    options = PlanOptions(replace_dead=True)
    assert arrays.refusal(col, requests, PlanOptions()) == "a broker is down"
    if arrays.refusal(col, requests, options) is not None:
        return  # too few brokers or racks for the rules: the object planner's (dispatch tests)
    plan = make_plan(col, requests, options)
    expected = make_plan(snap, requests, options)
    assert getattr(plan.changes, "columnar", False) and not col.materialised
    for key in set(expected.report) - PLACED:
        assert plan.report[key] == expected.report[key], key
    for name, value in plan.report["topic_spread_after"].items():
        assert value <= expected.report["topic_spread_after"][name], name
    # the imbalance note names the worst spread, which the arrays may leave lower (seed 98,
    # racks 4: 2 against 3); it is there only where the object planner's is
    assert _but_imbalance(plan.findings) == _but_imbalance(expected.findings)
    codes = {f.code for f in expected.findings}
    assert "imbalance" not in {f.code for f in plan.findings} - codes
    alive = {b.id for b in snap.brokers if b.alive}
    racks_of = snap.racks()
    parts = {(t.name, p.partition): p for t in snap.topics for p in t.partitions}
    for c in plan.changes:
        p = parts[(c.topic, c.partition)]
        assert set(c.after) <= alive and len(set(c.after)) == rf + 1
        dead = [b for b in p.replicas if b not in alive]
        kept = [b for b in p.replicas if b in alive]
        assert [b for b in c.after if b in kept] == kept  # live replicas stay, in order
        if dead:  # its place goes to a broker on its rack
            swapped = c.after[p.replicas.index(dead[0])] if p.replicas[0] != dead[0] else None
            if swapped is not None:
                assert racks_of[swapped] == racks_of[dead[0]]
            leader = p.leader if p.leader is not None and p.leader in alive else None
            if p.replicas[0] == dead[0] and leader is not None:
                assert c.after[0] == leader  # the leader now is the preferred one


# --- rack repair alone (--fix-racks) ---------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 100_000),
    racks=st.integers(1, 4),
    rf=st.integers(1, 3),
    sizes=st.booleans(),
)
def test_rack_repair_on_arrays_is_the_object_planners_plan_exactly(seed, racks, rf, sizes):
    rng = random.Random(seed)
    snap = random_cluster(
        rng, brokers=rng.randint(max(3, rf), 12), racks=racks, topics=3, rf=rf, sizes=sizes
    )
    col = columnar(snap)
    names = [t.name for t in snap.topics]
    requests = [TopicRequest(topic=n, fix_racks=True) for n in rng.sample(names, rng.randint(1, 3))]
    assert arrays.refusal(col, requests, PlanOptions()) is None
    plan = make_plan(col, requests)
    expected = make_plan(snap, requests)
    assert plan.report["engine"]["name"] == "arrays" and not col.materialised
    assert list(plan.changes) == list(expected.changes)
    assert {k: v for k, v in plan.report.items() if k != "engine"} == {
        k: v for k, v in expected.report.items() if k != "engine"
    }
    assert plan.findings == expected.findings
