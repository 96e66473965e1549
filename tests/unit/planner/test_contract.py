"""The planner API the CLI is written against: names, keys and types."""

from __future__ import annotations

import json

from planner_helpers import cluster

from kreplica.planner import STRATEGIES, PlanOptions, TopicRequest, explain_topic, make_plan

REPORT_KEYS = {
    "strategy": str,
    "replicas_added": int,
    "replicas_removed": int,
    "existing_replicas_moved": int,
    "lower_bound_replicas_added": int,
    "lower_bound_replicas_removed": int,
    "bytes_to_move": (int, type(None)),
    "bytes_lower_bound": (int, type(None)),
    "cross_rack_bytes": (int, type(None)),
    "leaders_changed": int,
    "rack_violations_before": int,
    "rack_violations_after": int,
    "broker_replicas_before": dict,
    "broker_replicas_peak": dict,
    "broker_replicas_after": dict,
    "broker_leaders_before": dict,
    "broker_leaders_after": dict,
    "broker_bytes_in": dict,
    "broker_bytes_out": dict,
    "topic_spread_before": dict,
    "topic_spread_after": dict,
    "cluster_spread_before": int,
    "cluster_spread_after": int,
    "fallbacks": list,
    "partitions_changed": int,
    "partitions_created": int,
}


def test_strategies_tuple():
    assert STRATEGIES == ("balanced", "kafka", "append")


def test_report_has_every_contract_key_for_every_strategy():
    snap = cluster({"t": [[0, 1], [1, 2]], "u": [[2, 0]]}, brokers=4, racks=2, sizes={"t": 7})
    for strategy in STRATEGIES:
        plan = make_plan(
            snap, [TopicRequest("t", rf=3, partitions=3)], PlanOptions(strategy=strategy)
        )
        report = plan.report
        for key, kind in REPORT_KEYS.items():
            assert isinstance(report[key], kind), (strategy, key)
        for key in [k for k in REPORT_KEYS if k.startswith("broker_")]:
            assert sorted(report[key]) == [0, 1, 2, 3], key
        for fallback in report["fallbacks"]:
            assert set(fallback) == {"topic", "partition", "reason"}
        assert list(plan.changes) == sorted(plan.changes, key=lambda c: (c.topic, c.partition))
        json.dumps(report, sort_keys=True)


def test_explain_has_every_contract_key():
    doc = explain_topic(cluster({"t": [[0, 1], [1, 2]]}, brokers=3), "t")
    assert {
        "topic",
        "partitions",
        "replication_factor",
        "layout",
        "balance",
        "racks",
        "summary",
    } <= set(doc)
    assert {
        "kafka_default",
        "broker_list",
        "start_index",
        "replica_shift",
        "nonconforming_partitions",
        "added_partitions",
        "rack_aware",
    } <= set(doc["layout"])
    assert {"replicas_per_broker", "leaders_per_broker", "spread"} <= set(doc["balance"])
    assert {"violations", "racks_per_partition_min"} <= set(doc["racks"])
    assert isinstance(doc["summary"], str)
