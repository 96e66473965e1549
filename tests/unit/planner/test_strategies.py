"""Table cases and seed examples for the `append` and `kafka` strategies.

Kafka-strategy expectations come from an independent oracle: kreplica.kafka's placement
(checked against Kafka's own vectors), never from the planner's output.
"""

from __future__ import annotations

import dataclasses

import pytest
from planner_helpers import after_matrix, cluster

from kreplica.kafka import JavaRandom, add_partitions, assign_replicas
from kreplica.planner import PlanOptions, TopicRequest, make_plan
from kreplica.planner.context import PlanContext
from kreplica.planner.kafka_strategy import topic_layout

# Seed 002 ("idea 2"): 5 brokers, partitions 0-2 from topic creation, 3-5 added later.
SEED_IDEA2_BEFORE = [[0, 1, 4], [1, 4, 2], [4, 2, 3], [3, 4, 0], [4, 0, 1], [0, 2, 3]]


def test_append_raise_follows_the_ring_seed_example():
    snap = cluster({"t": SEED_IDEA2_BEFORE}, brokers=5)
    plan = make_plan(snap, [TopicRequest("t", rf=4)], PlanOptions(strategy="append"))
    # The seed prints [4,2,3,1] for partition 2, contradicting its own rule ("the next
    # available broker after the last replica": after 3 comes 4, taken, then 0).
    assert after_matrix(snap, plan, "t") == [
        [0, 1, 4, 2],
        [1, 4, 2, 3],
        [4, 2, 3, 0],
        [3, 4, 0, 1],
        [4, 0, 1, 2],
        [0, 2, 3, 4],
    ]


def test_append_lower_truncates_the_tail_seed_example():
    snap = cluster({"t": SEED_IDEA2_BEFORE}, brokers=5)
    plan = make_plan(snap, [TopicRequest("t", rf=2)], PlanOptions(strategy="append"))
    assert after_matrix(snap, plan, "t") == [[0, 1], [1, 4], [4, 2], [3, 4], [4, 0], [0, 2]]


@pytest.mark.parametrize(
    ("racks", "before", "rf", "expected"),
    [
        # the ring says 2 next, but 2 is on rack a like 0: skip to 3 (rack b)
        ({0: "a", 1: "a", 2: "a", 3: "b"}, [[0, 1]], 3, [[0, 1, 3]]),
        # truncation keeps the only replica on rack b and drops a rack-a one instead
        ({0: "a", 1: "a", 2: "b", 3: "a"}, [[0, 2, 1]], 2, [[0, 2]]),
        ({0: "a", 1: "b", 2: "a", 3: "b"}, [[0, 1, 2, 3]], 2, [[0, 1]]),
    ],
)
def test_append_respects_racks(racks, before, rf, expected):
    snap = cluster({"t": before}, brokers=4, racks=racks)
    plan = make_plan(snap, [TopicRequest("t", rf=rf)], PlanOptions(strategy="append"))
    assert after_matrix(snap, plan, "t") == expected


def test_append_new_partitions_continue_the_leader_ring():
    snap = cluster({"t": [[0, 1], [1, 2]]}, brokers=4)
    plan = make_plan(snap, [TopicRequest("t", partitions=4)], PlanOptions(strategy="append"))
    assert after_matrix(snap, plan, "t") == [[0, 1], [1, 2], [2, 3], [3, 0]]


@pytest.mark.parametrize(
    ("n_brokers", "racks", "partitions", "rf", "new_rf", "draw_seed"),
    [
        (5, None, 10, 3, 4, 1),
        (6, None, 12, 2, 5, 2),
        (7, None, 20, 3, 2, 3),
        (6, 3, 12, 2, 3, 4),
        (9, 3, 30, 3, 5, 5),
        (8, 4, 16, 4, 2, 6),
    ],
)
def test_kafka_strategy_equals_kafka_placement_at_the_new_rf(
    n_brokers, racks, partitions, rf, new_rf, draw_seed
):
    """A topic Kafka created at RF r, raised/lowered to r': exactly what Kafka would have
    placed at r' with the same random draws (its placement is prefix-stable)."""
    ids = list(range(n_brokers))
    rack_of = {b: f"r{b % racks}" for b in ids} if racks else None
    created = assign_replicas(ids, partitions, rf, racks=rack_of, rng=JavaRandom(draw_seed))
    wanted = assign_replicas(ids, partitions, new_rf, racks=rack_of, rng=JavaRandom(draw_seed))
    snap = cluster({"t": [created[p] for p in range(partitions)]}, brokers=n_brokers, racks=racks)
    plan = make_plan(snap, [TopicRequest("t", rf=new_rf)], PlanOptions(strategy="kafka"))
    assert after_matrix(snap, plan, "t") == [wanted[p] for p in range(partitions)]
    assert plan.report["fallbacks"] == []


def test_kafka_strategy_adds_partitions_as_zk_add_partitions():
    ids = [0, 1, 2, 3]
    created = assign_replicas(ids, 4, 2, fixed_start_index=1)
    expected_new = add_partitions(ids, created, 7)
    snap = cluster({"t": [created[p] for p in range(4)]}, brokers=4)
    plan = make_plan(snap, [TopicRequest("t", partitions=7)], PlanOptions(strategy="kafka"))
    assert after_matrix(snap, plan, "t")[4:] == [expected_new[p] for p in (4, 5, 6)]


def test_kafka_strategy_falls_back_for_hand_made_partitions():
    before = [[2, 4, 3], [3, 2, 0], [0, 3, 1], [1, 0, 4], [4, 1, 2], [1, 2, 3]]
    snap = cluster({"t": before}, brokers=5)
    plan = make_plan(snap, [TopicRequest("t", rf=4)], PlanOptions(strategy="kafka"))
    fallbacks = plan.report["fallbacks"]
    assert [f["partition"] for f in fallbacks] == [5]
    assert "inferred Kafka layout" in fallbacks[0]["reason"]
    assert [f.code for f in plan.findings] == ["strategy-fallback"]
    after = after_matrix(snap, plan, "t")
    assert after[5][:3] == [1, 2, 3] and len(set(after[5])) == 4


def test_kafka_strategy_falls_back_when_next_broker_is_excluded():
    created = assign_replicas([0, 1, 2, 3, 4], 5, 2, fixed_start_index=0)
    snap = cluster({"t": [created[p] for p in range(5)]}, brokers=5)
    options = PlanOptions(strategy="kafka", exclude_brokers=frozenset({4}))
    plan = make_plan(snap, [TopicRequest("t", rf=3)], options)
    wanted = assign_replicas([0, 1, 2, 3, 4], 5, 3, fixed_start_index=0)
    after = after_matrix(snap, plan, "t")
    for pid in range(5):
        if 4 in wanted[pid][2:]:
            assert after[pid][2] != 4
            assert any(f["partition"] == pid for f in plan.report["fallbacks"])
        else:
            assert after[pid] == wanted[pid]


def test_seed_rf1_case_builds_the_broker_list_from_the_leaders():
    """Seed 001, RF=1: leaders 2,4,0 on brokers 0-5 give broker list 2,4,0,... and, with
    shift 0, partitions [2,4,0] [4,0,1] [0,1,3] at RF 3."""
    snap = cluster({"t": [[2], [4], [0]]}, brokers=6)
    ctx = PlanContext.build(snap, snap.broker_ids(), seed=None)
    layout = topic_layout(ctx, snap.topic("t"))
    assert layout is not None and layout.broker_list[:3] == (2, 4, 0)
    shifted = dataclasses.replace(layout, replica_shift=0)
    assert shifted.extend(3, 3) == {0: [2, 4, 0], 1: [4, 0, 1], 2: [0, 1, 3]}


def test_seed_rf1_plans_keep_leaders_and_follow_a_kafka_layout():
    snap = cluster({"t": [[2], [4], [0]]}, brokers=6)
    for seed in range(5):
        plan = make_plan(snap, [TopicRequest("t", rf=3)], PlanOptions(strategy="kafka", seed=seed))
        after = after_matrix(snap, plan, "t")
        assert [reps[0] for reps in after] == [2, 4, 0]
        ctx = PlanContext.build(snap, snap.broker_ids(), seed=seed)
        layout = topic_layout(ctx, snap.topic("t"))
        assert layout is not None
        options = [
            dataclasses.replace(layout, replica_shift=s).extend(3, 3)
            for s in range(len(layout.broker_list))
        ]
        assert {p: after[p] for p in range(3)} in options


def test_strategies_are_deterministic_and_seed_sensitive_only_in_ties():
    snap = cluster({"t": [[0], [1], [2], [3]]}, brokers=8)
    for strategy in ("balanced", "kafka", "append"):
        a = make_plan(snap, [TopicRequest("t", rf=3)], PlanOptions(strategy=strategy, seed=7))
        b = make_plan(snap, [TopicRequest("t", rf=3)], PlanOptions(strategy=strategy, seed=7))
        assert a == b


def test_seed_rf1_nonconforming_partition_falls_back_keeping_its_leader():
    # seed 001: "0":[2] "1":[3] "2":[0] "3":[3] "4":[4]; partition 3 breaks the pattern
    snap = cluster({"t": [[2], [3], [0], [3], [4]]}, brokers=6)
    plan = make_plan(snap, [TopicRequest("t", rf=3)], PlanOptions(strategy="kafka"))
    after = after_matrix(snap, plan, "t")
    assert [reps[0] for reps in after] == [2, 3, 0, 3, 4]
    assert [f["partition"] for f in plan.report["fallbacks"]] == [3]
    assert all(len(set(reps)) == 3 for reps in after)


def test_kafka_strategy_rf_change_and_new_partitions_together():
    ids = list(range(6))
    created = assign_replicas(ids, 4, 2, fixed_start_index=2)
    at_rf3 = assign_replicas(ids, 4, 3, fixed_start_index=2)
    expected_new = add_partitions(ids, at_rf3, 6)
    snap = cluster({"t": [created[p] for p in range(4)]}, brokers=6)
    plan = make_plan(snap, [TopicRequest("t", rf=3, partitions=6)], PlanOptions(strategy="kafka"))
    after = after_matrix(snap, plan, "t")
    assert after[:4] == [at_rf3[p] for p in range(4)]
    assert after[4:] == [expected_new[4], expected_new[5]]


@pytest.mark.parametrize("strategy", ["kafka", "append"])
def test_lowering_drops_a_lagging_replica_rather_than_the_in_sync_tail(strategy):
    # [0, 1, 2] with 1 out of sync: cutting the tail would leave one in-sync copy (0) and
    # delete a full one (2); like `balanced`, drop the lagging replica instead.
    created = assign_replicas([0, 1, 2, 3, 4], 5, 3, fixed_start_index=0)
    assert created[0] == [0, 1, 2]
    snap = cluster({"t": [created[p] for p in range(5)]}, brokers=5, isr={("t", 0): [0, 2]})
    plan = make_plan(snap, [TopicRequest("t", rf=2)], PlanOptions(strategy=strategy))
    after = after_matrix(snap, plan, "t")
    assert after[0] == [0, 2]
    assert after[1:] == [created[p][:2] for p in range(1, 5)]
    if strategy == "kafka":
        (fallback,) = plan.report["fallbacks"]
        assert fallback["partition"] == 0 and "out of sync" in fallback["reason"]


@pytest.mark.parametrize("strategy", ["kafka", "append"])
def test_lowering_drops_a_replica_on_an_excluded_broker_rather_than_the_tail(strategy):
    created = assign_replicas([0, 1, 2, 3, 4], 5, 3, fixed_start_index=0)
    snap = cluster({"t": [created[p] for p in range(5)]}, brokers=5)
    options = PlanOptions(strategy=strategy, exclude_brokers=frozenset({1}))
    plan = make_plan(snap, [TopicRequest("t", rf=2)], options)
    after = after_matrix(snap, plan, "t")
    for pid in range(5):
        kept = [b for b in created[pid] if b != 1][:2] if 1 in created[pid][1:] else None
        assert after[pid] == (kept or created[pid][:2]), pid
