"""Planning on a degraded cluster: dead brokers, real leaders and ISR, moves in flight."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kreplica.errors import ExitCode, PlanInfeasible, ReassignmentInProgress
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from kreplica.planner import STRATEGIES, PlanOptions, TopicRequest, make_plan

RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}


def _cluster(
    partitions: list[tuple[list[int], int | None, list[int] | None]],
    *,
    dead: tuple[int, ...] = (6,),
    configs: dict[str, str] | None = None,
    moving: dict[int, tuple[int, ...]] | None = None,
    extra_topics: tuple[Topic, ...] = (),
) -> ClusterSnapshot:
    """Brokers 1-6 on racks a,b,c; topic `events` from (replicas, leader, isr) triples."""
    parts = tuple(
        Partition(
            "events",
            pid,
            tuple(reps),
            leader=leader,
            isr=tuple(isr) if isr is not None else None,
            size_bytes=1000,
            adding_replicas=(moving or {}).get(pid, ()),
        )
        for pid, (reps, leader, isr) in enumerate(partitions)
    )
    topic = Topic("events", parts, configs if configs is not None else {"min.insync.replicas": "1"})
    return ClusterSnapshot(
        brokers=tuple(Broker(b, rack=RACKS[b], alive=b not in dead) for b in sorted(RACKS)),
        topics=(topic, *extra_topics),
        cluster_id="degraded",
    )


def _after(snap: ClusterSnapshot, plan) -> dict[int, tuple[int, ...]]:
    after = {p.partition: p.replicas for p in snap.topic("events").partitions}
    after.update({c.partition: c.after for c in plan.changes if c.topic == "events"})
    return after


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_lowering_drops_the_dead_and_lagging_replicas_and_keeps_the_real_leader(strategy):
    snap = _cluster(
        [
            ([6, 1, 2], 1, [1, 2]),  # dead preferred leader, broker 1 leads
            ([3, 4, 5], 4, [4, 5]),  # 3 out of sync
            ([1, 2, 3], 2, [2, 3]),  # preferred leader 1 out of sync, 2 leads
            ([2, 3, 4], 2, [2, 3, 4]),
        ]
    )
    plan = make_plan(snap, [TopicRequest("events", rf=2)], PlanOptions(strategy=strategy))
    after = _after(snap, plan)
    assert after[0] == (1, 2)
    assert after[1] == (4, 5)
    assert after[2] == (2, 3)  # the leader now goes first: no leadership change
    assert after[3][0] == 2 and len(after[3]) == 2
    assert plan.report["leaders_changed"] == 0


def test_lowering_never_removes_the_leader_even_when_it_is_not_first():
    snap = _cluster([([1, 2, 3], 3, [1, 2, 3])], dead=())
    for rf in (1, 2):
        plan = make_plan(snap, [TopicRequest("events", rf=rf)], PlanOptions(force=True))
        after = _after(snap, plan)[0]
        assert 3 in after and len(after) == rf
        assert after[0] in (1, 3)  # the preferred leader stays, or the leader takes its place


def test_raising_rf_with_a_dead_replica_is_refused_naming_the_broker_and_the_fix():
    snap = _cluster([([6, 1, 2], 1, [1, 2]), ([1, 2, 3], 1, None)])
    with pytest.raises(PlanInfeasible) as err:
        make_plan(snap, [TopicRequest("events", rf=4)])
    message = str(err.value)
    assert err.value.exit_code == ExitCode.INFEASIBLE
    assert "dead broker(s) 6" in message and "`replace_dead`" in message
    assert "1 partition(s)" in message and "events: 0" in message


def test_replace_dead_puts_a_live_broker_of_the_same_rack_in_the_dead_ones_place():
    snap = _cluster([([6, 1, 2], 1, [1, 2]), ([1, 2, 3], 1, None)])
    plan = make_plan(snap, [TopicRequest("events", rf=4)], PlanOptions(replace_dead=True))
    after = _after(snap, plan)
    # broker 3 is on rack c like 6; the leader now (1) takes the dead preferred leader's place
    assert after[0][:3] == (1, 3, 2)
    assert len(after[0]) == 4 and 6 not in after[0]
    report = plan.report
    assert report["replicas_added"] == report["lower_bound_replicas_added"] == 3
    assert report["replicas_removed"] == report["lower_bound_replicas_removed"] == 1
    assert report["existing_replicas_moved"] == 1
    assert any(f.code == "dead-broker" for f in plan.findings)


def test_too_few_live_replicas_for_the_new_rf_is_refused_unless_replaced():
    snap = _cluster([([6, 5, 1], 1, [1])], dead=(5, 6))
    with pytest.raises(PlanInfeasible, match="dead broker"):
        make_plan(snap, [TopicRequest("events", rf=2)])
    plan = make_plan(snap, [TopicRequest("events", rf=2)], PlanOptions(replace_dead=True))
    after = _after(snap, plan)[0]
    assert len(after) == 2 and 1 in after and not {5, 6} & set(after)


def test_a_dead_broker_is_never_a_target_even_when_its_rack_is_unknown():
    snap = _cluster([([6, 1, 2], 1, [1, 2]), ([2, 3, 4], 2, None), ([4, 5, 1], 4, None)])
    brokers = tuple(b for b in snap.brokers if b.id != 6)  # ZooKeeper forgot broker 6
    snap = replace(snap, brokers=brokers)
    plan = make_plan(snap, [TopicRequest("events", rf=4)], PlanOptions(replace_dead=True))
    assert all(6 not in c.after for c in plan.changes)
    warning = next(f for f in plan.findings if f.code == "dead-broker")
    assert "rack unknown" in warning.message


def test_adding_partitions_is_not_blocked_by_a_dead_replica_elsewhere():
    snap = _cluster([([6, 1, 2], 1, [1, 2]), ([1, 2, 3], 1, None)])
    plan = make_plan(snap, [TopicRequest("events", partitions=4)])
    assert [c.partition for c in plan.changes] == [2, 3]
    assert all(6 not in c.after for c in plan.changes)


def test_a_partition_in_flight_is_refused_with_exit_6_or_left_out():
    snap = _cluster([([1, 2, 3, 4], 1, [1, 2, 3]), ([2, 3, 4], 2, None)], dead=(), moving={0: (4,)})
    with pytest.raises(ReassignmentInProgress) as err:
        make_plan(snap, [TopicRequest("events", rf=2)])
    assert err.value.exit_code == ExitCode.IN_PROGRESS
    assert "events: 0" in str(err.value) and "`skip_in_flight`" in str(err.value)
    plan = make_plan(snap, [TopicRequest("events", rf=2)], PlanOptions(skip_in_flight=True))
    assert [c.partition for c in plan.changes] == [1]
    assert any(f.code == "skipped-in-flight" for f in plan.findings)


def test_reports_count_actual_leaders_now_and_preferred_leaders_after():
    snap = _cluster([([6, 1, 2], 1, [1, 2]), ([3, 4, 5], 4, [4, 5])])
    plan = make_plan(snap, [TopicRequest("events", rf=2)])
    report = plan.report
    assert report["broker_leaders_before"][1] == 1 and report["broker_leaders_before"][6] == 0
    assert report["broker_preferred_leaders_before"][6] == 1
    assert report["broker_leaders_after"][1] == 1 and report["broker_leaders_after"][4] == 1


def test_balanced_keeps_the_append_placement_when_its_own_is_less_even():
    """The reported case: 3 brokers, RF 1 -> 2 with leaders 8, 13, 6, 8, 13, 6."""
    parts = tuple(Partition("t", p, (b,)) for p, b in enumerate((8, 13, 6, 8, 13, 6)))
    snap = ClusterSnapshot(
        brokers=tuple(Broker(b) for b in (6, 8, 13)), topics=(Topic("t", parts),)
    )
    plans = {
        s: make_plan(snap, [TopicRequest("t", rf=2)], PlanOptions(strategy=s)) for s in STRATEGIES
    }
    best = min(p.report["topic_spread_after"]["t"] for p in plans.values())
    assert plans["balanced"].report["topic_spread_after"]["t"] == best == 0


# --- properties ------------------------------------------------------------------------------


@st.composite
def degraded_cases(draw):
    rng = random.Random(draw(st.integers(0, 2**32)))
    n = draw(st.integers(3, 14))
    ids = list(range(1, n + 1))
    n_racks = draw(st.integers(0, 4))
    racks = {b: f"r{b % n_racks}" for b in ids} if n_racks else {}
    dead = set(rng.sample(ids, draw(st.integers(0, min(2, n - 2)))))
    forgotten = {b for b in dead if draw(st.booleans())}  # ZooKeeper dropped its registration
    topics = []
    for t in range(draw(st.integers(1, 2))):
        rf = draw(st.integers(1, min(4, n)))
        parts = []
        for p in range(draw(st.integers(1, 40))):
            reps = rng.sample(ids, rf)
            live = [b for b in reps if b not in dead]
            leader = rng.choice(live) if live else -1
            isr = [b for b in reps if b == leader or (b not in dead and rng.random() < 0.7)]
            parts.append(
                Partition(f"t{t}", p, tuple(reps), leader=leader, isr=tuple(isr), size_bytes=10)
            )
        topics.append(Topic(f"t{t}", tuple(parts)))
    snapshot = ClusterSnapshot(
        brokers=tuple(
            Broker(b, rack=racks.get(b), alive=b not in dead) for b in ids if b not in forgotten
        ),
        topics=tuple(topics),
    )
    requests = [
        TopicRequest(t.name, rf=draw(st.integers(1, 4)), fix_racks=draw(st.booleans()))
        for t in topics
    ]
    return snapshot, requests, draw(st.sampled_from(STRATEGIES))


def _try(snapshot, requests, options):
    try:
        return make_plan(snapshot, requests, options)
    except PlanInfeasible as exc:
        assert "eligible" in str(exc) or "dead broker" in str(exc), exc
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(degraded_cases())
def test_degraded_plans_name_no_dead_broker_and_keep_leader_and_in_sync_copies(case):
    snapshot, requests, strategy = case
    plan = _try(snapshot, requests, PlanOptions(strategy=strategy, replace_dead=True, force=True))
    assume(plan is not None)
    live = snapshot.live_broker_ids()
    parts = {(t.name, p.partition): p for t in snapshot.topics for p in t.partitions}
    rf = {r.topic: r.rf for r in requests}
    repaired = {r.topic for r in requests if r.fix_racks}
    for c in plan.changes:
        assert all(b in live for b in c.after), c
        part = parts[(c.topic, c.partition)]
        if part.leader is not None and part.leader in live:
            assert part.leader in c.after, (c, part)
        if c.topic in repaired:
            continue  # rack repair may trade an in-sync copy for a rack: the user asked for it
        if len(c.after) < len(part.replicas):  # lowering: as many in-sync copies as fit
            in_sync_live = [b for b in part.replicas if b in part.isr and b in live]
            kept = [b for b in c.after if b in in_sync_live]
            assert len(kept) >= min(rf[c.topic], len(in_sync_live)), (c, part)
            if c.leader_now in c.after:
                assert c.after[0] == c.leader_now or c.after[0] == part.replicas[0], c


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(degraded_cases())
def test_balanced_spread_is_never_worse_than_kafka_or_append(case):
    """Per topic, for one requested topic at a time: with several, balanced weighs the other
    strategies' placements under its own cluster loads, where a kafka fallback may land
    elsewhere than in a whole kafka plan (README, Strategies)."""
    snapshot, requests, _ = case
    requests = requests[:1]
    plans = {
        s: _try(snapshot, requests, PlanOptions(strategy=s, replace_dead=True, force=True))
        for s in STRATEGIES
    }
    assume(all(p is not None for p in plans.values()))
    balanced = plans.pop("balanced")
    for other in plans.values():
        if other.report["replicas_added"] != balanced.report["replicas_added"]:
            continue
        for topic, value in balanced.report["topic_spread_after"].items():
            assert value <= other.report["topic_spread_after"][topic]


def test_refusals_come_before_anything_is_planned_for_every_strategy():
    snap = _cluster([([6, 1, 2], 1, [1, 2])])
    for strategy in STRATEGIES:
        with pytest.raises(PlanInfeasible):
            make_plan(snap, [TopicRequest("events", rf=4, fix_racks=True)], PlanOptions(strategy))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=4),
    st.lists(st.integers(0, 6), max_size=2),
    st.integers(0, 7),
)
def test_spread_floor_is_the_lowest_spread_any_placement_reaches(eligible, fixed, added):
    """Brute force over every way to put `added` replicas on the eligible brokers."""
    from itertools import product

    from kreplica.planner.evaluate import spread_floor

    best = min(
        max([*(e + x for e, x in zip(eligible, extra, strict=True)), *fixed])
        - min([*(e + x for e, x in zip(eligible, extra, strict=True)), *fixed])
        for extra in product(range(added + 1), repeat=len(eligible))
        if sum(extra) == added
    )
    floor = spread_floor(
        {100 + i: v for i, v in enumerate(fixed)}, dict(enumerate(eligible)), added
    )
    assert floor == best


def test_the_imbalance_note_blames_the_old_layout_only_when_no_placement_does_better():
    # broker 1 holds every replica; the 3 new replicas cannot even that out
    lopsided = ClusterSnapshot(
        brokers=tuple(Broker(b) for b in (1, 2, 3, 4)),
        topics=(Topic("t", tuple(Partition("t", p, (1,)) for p in range(3))),),
    )
    plan = make_plan(lopsided, [TopicRequest("t", rf=2)])
    note = next(f for f in plan.findings if f.code == "imbalance")
    assert "no placement of the new ones does better" in note.message
    assert plan.report["topic_spread_after"]["t"] == 2
