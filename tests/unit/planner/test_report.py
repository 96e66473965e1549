"""Report figures, computed by hand for small clusters."""

from __future__ import annotations

import dataclasses

from planner_helpers import cluster

from kreplica.planner import TopicRequest, make_plan


def test_bytes_peak_and_cross_rack_by_hand():
    # racks: 0,1 on a; 2,3 on b. t-0 [0,1] grows to 3: the new replica must be on rack b.
    snap = cluster(
        {"t": [[0, 1]], "other": [[2, 3]]},
        brokers=4,
        racks={0: "a", 1: "a", 2: "b", 3: "b"},
        sizes={"t": 1000, "other": 5},
    )
    plan = make_plan(snap, [TopicRequest("t", rf=3)])
    (change,) = plan.changes
    new = change.added[0]
    assert new in (2, 3)
    r = plan.report
    assert r["bytes_to_move"] == 1000 and r["bytes_lower_bound"] == 1000
    assert r["cross_rack_bytes"] == 1000  # leader 0 is on rack a, the copy goes to rack b
    assert r["broker_bytes_in"] == {
        0: 0,
        1: 0,
        2: 1000 if new == 2 else 0,
        3: 1000 if new == 3 else 0,
    }
    assert r["broker_bytes_out"] == {0: 1000, 1: 0, 2: 0, 3: 0}
    assert r["broker_replicas_before"] == {0: 1, 1: 1, 2: 1, 3: 1}
    assert r["broker_replicas_peak"][new] == 2
    assert r["broker_replicas_after"] == r["broker_replicas_peak"]
    assert r["broker_leaders_before"] == {0: 1, 1: 0, 2: 1, 3: 0}
    assert r["broker_leaders_after"] == r["broker_leaders_before"]
    assert r["rack_violations_before"] == 1 and r["rack_violations_after"] == 0
    assert r["topic_spread_before"] == {"t": 1} and r["topic_spread_after"] == {"t": 1}
    assert r["cluster_spread_before"] == 0 and r["cluster_spread_after"] == 1


def test_unknown_sizes_give_none_bytes():
    snap = cluster({"t": [[0, 1]]}, brokers=3)
    r = make_plan(snap, [TopicRequest("t", rf=3)]).report
    assert r["bytes_to_move"] is None and r["bytes_lower_bound"] is None
    assert r["cross_rack_bytes"] is None


def test_rack_repair_lower_bound_counts_only_unavoidable_moves():
    # [0,1] both on rack a, 2 racks: raising to 3 adds a rack-b replica, so no move is needed;
    # keeping RF 2 needs one move.
    racks = {0: "a", 1: "a", 2: "b", 3: "b"}
    snap = cluster({"t": [[0, 1]]}, brokers=4, racks=racks, sizes={"t": 10})
    raised = make_plan(snap, [TopicRequest("t", rf=3, fix_racks=True)]).report
    assert raised["lower_bound_replicas_added"] == 1 and raised["lower_bound_replicas_removed"] == 0
    assert raised["replicas_added"] == 1 and raised["existing_replicas_moved"] == 0
    kept = make_plan(snap, [TopicRequest("t", fix_racks=True)]).report
    assert kept["lower_bound_replicas_added"] == 1 and kept["lower_bound_replicas_removed"] == 1
    assert kept["existing_replicas_moved"] == 1 and kept["bytes_to_move"] == 10


def test_new_partition_leaders_rotate_over_racks_and_brokers():
    snap = cluster({"t": [[0, 1]]}, brokers=6, racks=3)
    plan = make_plan(snap, [TopicRequest("t", partitions=7)])
    leaders = [c.after[0] for c in plan.new_partitions]
    assert len(set(leaders)) == 6  # every broker leads exactly one new partition
    racks = [f"r{b % 3}" for b in [0, *leaders]]
    assert sorted(racks.count(r) for r in {"r0", "r1", "r2"}) == [2, 2, 3]


def test_copies_are_charged_to_the_current_leader_even_when_it_is_broker_0():
    # Preferred leader 1, current leader 0: followers fetch from 0, so 0 sends the bytes
    # (broker id 0 must not read as "no leader").
    base = cluster({"t": [[1, 0]]}, brokers=3, racks={0: "a", 1: "b", 2: "b"}, sizes={"t": 7})
    (topic,) = base.topics
    part = dataclasses.replace(topic.partitions[0], leader=0)
    snap = dataclasses.replace(base, topics=(dataclasses.replace(topic, partitions=(part,)),))
    r = make_plan(snap, [TopicRequest("t", rf=3)]).report
    assert r["broker_bytes_out"] == {0: 7, 1: 0, 2: 0}
    assert r["cross_rack_bytes"] == 7  # 0 (rack a) to 2 (rack b)
