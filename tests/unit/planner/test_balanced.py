"""Table-driven before/after cases for the default `balanced` strategy."""

from __future__ import annotations

import dataclasses
import re

import pytest
from planner_helpers import after_matrix, cluster

from kreplica.errors import PlanInfeasible, UnknownTopicError, UsageError
from kreplica.planner import PlanOptions, TopicRequest, make_plan

# (name, brokers, racks, before matrix, request kwargs, expected after matrix)
CASES = [
    (
        "raise 1->2 without racks: least-loaded follower per partition",
        3,
        None,
        [[0], [1], [2]],
        {"rf": 2},
        [[0, 1], [1, 2], [2, 0]],
    ),
    (
        "raise 2->3 with 3 racks: the missing rack is taken",
        6,
        3,
        [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 0]],
        {"rf": 3},
        [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 0], [5, 0, 1]],
    ),
    (
        "lower 3->2: leader kept, the busiest other replica goes, ties drop the tail",
        4,
        None,
        [[0, 1, 2], [1, 2, 3], [2, 3, 0], [3, 0, 1]],
        {"rf": 2},
        [[0, 1], [1, 2], [2, 3], [3, 0]],
    ),
    (
        "add partitions at RF 2: leaders rotate to the brokers leading least",
        4,
        None,
        [[0, 1], [1, 0]],
        {"partitions": 4},
        [[0, 1], [1, 0], [2, 3], [3, 2]],
    ),
    (
        "rack repair: one move per partition, leader kept",
        4,
        {0: "a", 1: "a", 2: "b", 3: "b"},
        [[0, 1], [2, 3], [0, 2]],
        {"fix_racks": True},
        [[0, 3], [2, 1], [0, 2]],
    ),
]


@pytest.mark.parametrize(
    ("brokers", "racks", "before", "request_kwargs", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_balanced_table(brokers, racks, before, request_kwargs, expected):
    snap = cluster({"t": before}, brokers=brokers, racks=racks)
    plan = make_plan(snap, [TopicRequest("t", **request_kwargs)])
    assert after_matrix(snap, plan, "t") == expected


def test_lowering_prefers_out_of_sync_replicas():
    snap = cluster({"t": [[0, 1, 2]]}, brokers=3, isr={("t", 0): [0, 1]})
    plan = make_plan(snap, [TopicRequest("t", rf=2)])
    assert after_matrix(snap, plan, "t") == [[0, 1]]


def test_report_counts_against_lower_bound():
    snap = cluster({"t": [[0, 1]] * 4}, brokers=4, sizes={"t": 100})
    plan = make_plan(snap, [TopicRequest("t", rf=3, partitions=6)])
    r = plan.report
    assert r["replicas_added"] == 4 * 1 + 2 * 3
    assert r["lower_bound_replicas_added"] == 4 * 1 + 2 * 3
    assert r["existing_replicas_moved"] == 0
    assert r["bytes_to_move"] == r["bytes_lower_bound"] == 400
    assert r["partitions_created"] == 2
    assert r["partitions_changed"] == 4
    assert r["leaders_changed"] == 0
    assert set(r["broker_replicas_after"]) == {0, 1, 2, 3}
    assert sum(r["broker_replicas_after"].values()) == 6 * 3
    assert sum(r["broker_replicas_peak"].values()) == 8 + 10


def test_infeasible_rf_names_excluded_broker():
    snap = cluster({"t": [[0, 1]]}, brokers=4)
    with pytest.raises(PlanInfeasible) as err:
        make_plan(snap, [TopicRequest("t", rf=4)], PlanOptions(exclude_brokers=frozenset({3})))
    assert "RF 4 needs 4 eligible brokers, 3 are eligible (broker 3 is excluded" in str(err.value)


@pytest.mark.parametrize(
    ("request_", "options", "error"),
    [
        (TopicRequest("nope", rf=2), PlanOptions(), UnknownTopicError),
        (TopicRequest("t", rf=2), PlanOptions(strategy="random"), UsageError),
        (TopicRequest("t", rf=0), PlanOptions(), UsageError),
        (TopicRequest("t", rf=2), PlanOptions(brokers=frozenset({0, 9})), UsageError),
        (TopicRequest("t", partitions=1), PlanOptions(), PlanInfeasible),
    ],
)
def test_bad_requests_raise_kreplica_errors(request_, options, error):
    snap = cluster({"t": [[0, 1], [1, 2]]}, brokers=3)
    with pytest.raises(error):
        make_plan(snap, [request_], options)


def test_lowering_to_min_isr_needs_force():
    snap = cluster({"t": [[0, 1, 2]]}, brokers=3, configs={"t": {"min.insync.replicas": "2"}})
    with pytest.raises(PlanInfeasible, match="`force`"):
        make_plan(snap, [TopicRequest("t", rf=2)])
    plan = make_plan(snap, [TopicRequest("t", rf=2)], PlanOptions(force=True))
    assert [f.code for f in plan.findings] == ["rf-below-min-isr"]


@pytest.mark.parametrize("strategy", ["balanced", "append", "kafka"])
def test_lowering_to_one_keeps_the_current_leader_even_when_not_preferred(strategy):
    snap = cluster({"t": [[0, 1, 2]]}, brokers=3)
    part = snap.topics[0].partitions[0]
    led_by_1 = type(snap)(
        snap.brokers,
        (type(snap.topics[0])("t", (type(part)("t", 0, (0, 1, 2), leader=1),)),),
    )
    # RF 1 <= Kafka's default min.insync.replicas=1: lowering there needs --force
    options = PlanOptions(strategy=strategy, force=True)
    plan = make_plan(led_by_1, [TopicRequest("t", rf=1)], options)
    assert [c.after for c in plan.changes] == [(1,)]


def test_rack_repair_alone_works_with_few_eligible_brokers():
    snap = cluster({"t": [[0, 1, 2]]}, brokers=4, racks={0: "a", 1: "a", 2: "a", 3: "b"})
    plan = make_plan(snap, [TopicRequest("t", fix_racks=True)], PlanOptions(brokers=frozenset({3})))
    assert [c.after for c in plan.changes] == [(0, 1, 3)] or [c.after for c in plan.changes] == [
        (0, 3, 2)
    ]
    assert plan.report["rack_violations_after"] == 0


def test_imbalance_is_one_aggregated_finding():
    snap = cluster({"a": [[0, 1]] * 6, "b": [[0, 1]] * 6}, brokers=4)
    plan = make_plan(snap, [TopicRequest("a", rf=2), TopicRequest("b", rf=2)])
    imbalance = [f for f in plan.findings if f.code == "imbalance"]
    assert len(imbalance) == 1 and "2 topic(s)" in imbalance[0].message


def test_dead_brokers_get_no_new_replicas_and_a_warning_when_asked_for():
    snap = cluster({"t": [[0, 1]]}, brokers=4, dead=[3])
    plan = make_plan(snap, [TopicRequest("t", rf=3)], PlanOptions(brokers=frozenset({0, 1, 2, 3})))
    assert [c.after for c in plan.changes] == [(0, 1, 2)]
    assert [f.code for f in plan.findings] == ["offline-broker"]


@pytest.mark.parametrize("strategy", ["balanced", "append", "kafka"])
@pytest.mark.parametrize(
    ("matrix", "text"), [([[0, 0]], "broker(s) 0 twice"), ([[]], "no replicas")]
)
def test_corrupt_partitions_are_refused_with_a_fix(strategy, matrix, text):
    snap = cluster({"t": matrix}, brokers=3)
    with pytest.raises(PlanInfeasible, match=re.escape(text)):
        make_plan(snap, [TopicRequest("t", rf=2, fix_racks=True)], PlanOptions(strategy=strategy))


def test_rack_repair_moves_the_idle_preferred_leader_rather_than_the_current_leader():
    # replicas [0, 1] share rack a; broker 1 leads now, so the move takes broker 0 away
    snap = cluster({"t": [[0, 1]]}, brokers=3, racks={0: "a", 1: "a", 2: "b"})
    part = snap.topics[0].partitions[0]
    led_by_1 = type(snap)(
        snap.brokers,
        (type(snap.topics[0])("t", (type(part)("t", 0, (0, 1), leader=1),)),),
    )
    plan = make_plan(led_by_1, [TopicRequest("t", fix_racks=True)])
    assert [c.after for c in plan.changes] == [(2, 1)]


def test_rack_repair_keeps_the_current_leader_when_it_is_broker_0():
    # as above with the ids swapped: broker id 0 leading must not read as "no leader"
    snap = cluster({"t": [[1, 0]]}, brokers=3, racks={0: "a", 1: "a", 2: "b"})
    part = dataclasses.replace(snap.topics[0].partitions[0], leader=0)
    led_by_0 = dataclasses.replace(
        snap, topics=(dataclasses.replace(snap.topics[0], partitions=(part,)),)
    )
    plan = make_plan(led_by_0, [TopicRequest("t", fix_racks=True)])
    assert [c.after for c in plan.changes] == [(2, 0)]


def test_a_request_that_grows_nothing_is_not_refused_for_too_few_brokers():
    # partition 1 has fewer replicas than partition 0 (the topic RF), but no RF was asked:
    # nothing grows, so two live brokers are enough to repair racks
    snap = cluster({"t": [[0, 1, 2], [0, 1]]}, brokers=3, racks={0: "a", 1: "a", 2: "b"}, dead=[2])
    plan = make_plan(snap, [TopicRequest("t", fix_racks=True)])
    assert plan.changes == ()
