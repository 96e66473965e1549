"""A plan document is refused when it belongs to another cluster or its partitions drifted."""

from __future__ import annotations

import dataclasses

import pytest
from planner_helpers import cluster

from kreplica.errors import StalePlan
from kreplica.model import ClusterSnapshot, Partition, Topic
from kreplica.planner import PlanOptions, TopicRequest, check_reassignment, make_plan
from kreplica.planner.serialize import (
    parse_plan_before,
    parse_reassignment_json,
    plan_document,
    plan_files,
    reassignment_json,
)
from kreplica.planner.staleness import ensure_plan_is_current

BEFORE = cluster({"orders": [[0, 1], [1, 2], [2, 0]]}, brokers=4)


def _document(snapshot: ClusterSnapshot, **request: int) -> dict[str, object]:
    plan = make_plan(snapshot, [TopicRequest("orders", **request)], PlanOptions())
    return plan_document(plan, snapshot)


def _with_replicas(
    snapshot: ClusterSnapshot, partition: int, replicas: tuple[int, ...]
) -> ClusterSnapshot:
    topic = snapshot.topic("orders")
    parts = tuple(
        dataclasses.replace(p, replicas=replicas) if p.partition == partition else p
        for p in topic.partitions
    )
    return dataclasses.replace(snapshot, topics=(Topic("orders", parts, topic.configs),))


def test_a_fresh_plan_is_current() -> None:
    doc = _document(BEFORE, rf=3)
    ensure_plan_is_current(BEFORE, doc)
    assert all(f.level != "error" for f in check_reassignment(BEFORE, doc))


def test_another_cluster_is_refused_naming_both_ids() -> None:
    doc = _document(BEFORE, rf=3)
    other = dataclasses.replace(BEFORE, cluster_id="other-cluster")
    with pytest.raises(StalePlan) as err:
        check_reassignment(other, doc)
    assert "other-cluster" in str(err.value) and str(doc["cluster_id"]) in str(err.value)


def test_a_drifted_partition_is_refused_naming_it() -> None:
    doc = _document(BEFORE, rf=3)
    drifted = _with_replicas(BEFORE, 1, (3, 2))
    with pytest.raises(StalePlan, match=r"orders-1 was \[1, 2\] and is now \[3, 2\]"):
        ensure_plan_is_current(drifted, doc)


def test_a_partition_created_since_is_refused() -> None:
    doc = _document(BEFORE, partitions=4)
    topic = BEFORE.topic("orders")
    grown = dataclasses.replace(
        BEFORE,
        topics=(Topic("orders", (*topic.partitions, Partition("orders", 3, (3, 0))), {}),),
    )
    with pytest.raises(StalePlan, match="orders-3 was to be created and exists now"):
        ensure_plan_is_current(grown, doc)


def test_bare_kafka_json_records_no_origin_and_passes() -> None:
    plan = make_plan(BEFORE, [TopicRequest("orders", rf=3)], PlanOptions())
    drifted = _with_replicas(BEFORE, 1, (3, 2))
    ensure_plan_is_current(drifted, reassignment_json(plan))


def _applied(snapshot: ClusterSnapshot, doc: dict[str, object]) -> ClusterSnapshot:
    """The snapshot with the document's reassignment done."""
    after = snapshot
    for topic, partition, replicas in parse_reassignment_json(doc):
        assert topic == "orders"
        after = _with_replicas(after, partition, replicas)
    return after


def test_the_rollback_has_a_plan_document_made_from_the_plans_after_state() -> None:
    plan = make_plan(BEFORE, [TopicRequest("orders", rf=3)], PlanOptions())
    files = plan_files(plan, BEFORE)
    back = files["rollback_document"]
    assert back["cluster_id"] == BEFORE.cluster_id and back["rollback_of"] == plan.strategy
    assert back["reassignment"] == files["rollback"] and back["rollback"] == files["reassignment"]
    assert parse_plan_before(back) == parse_reassignment_json(files["reassignment"])
    applied = _applied(BEFORE, files["plan_document"])
    # right after the plan: the rollback is current and would undo it
    ensure_plan_is_current(applied, back)
    assert parse_reassignment_json(back) == parse_reassignment_json(files["rollback"])
    # the plan's partitions changed since (RF raised again): the rollback is stale
    later = _with_replicas(applied, 0, (0, 1, 2, 3))
    with pytest.raises(StalePlan, match=r"orders-0 was \[0, 1, \d\] and is now \[0, 1, 2, 3\]"):
        check_reassignment(later, back)
    # and before the plan was applied, too (its before-state is the plan's after-state)
    with pytest.raises(StalePlan):
        ensure_plan_is_current(BEFORE, back)
