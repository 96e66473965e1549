"""`check`, the plan files, and `explain`."""

from __future__ import annotations

import json

import pytest
from planner_helpers import cluster

from kreplica.errors import InputError
from kreplica.kafka import add_partitions, assign_replicas
from kreplica.planner import PlanOptions, TopicRequest, check_reassignment, explain_topic, make_plan
from kreplica.planner.serialize import (
    new_partitions_list,
    parse_reassignment_json,
    plan_document,
    reassignment_json,
    rollback_json,
)


def _kafka_json(*rows):
    return {
        "version": 1,
        "partitions": [{"topic": t, "partition": p, "replicas": r} for t, p, r in rows],
    }


def _codes(findings):
    return sorted({(f.level, f.code) for f in findings})


@pytest.fixture
def snap():
    return cluster(
        {"t": [[0, 1], [1, 2], [2, 3], [3, 0]], "u": [[0, 1, 2]]},
        brokers=4,
        racks={0: "a", 1: "b", 2: "a", 3: "b"},
        configs={"u": {"min.insync.replicas": "2"}},
    )


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([("t", 0, [0, 9])], ("error", "unknown-broker")),
        ([("t", 0, [0, 0])], ("error", "duplicate-broker")),
        ([("t", 7, [0, 1])], ("error", "unknown-partition")),
        ([("nope", 0, [0, 1])], ("error", "unknown-partition")),
        ([("t", 0, [0, 1]), ("t", 0, [0, 1])], ("error", "duplicate-partition")),
        ([("t", 0, [0, 1, 3])], ("warning", "rf-mismatch")),
        ([("t", 0, [0, 2])], ("warning", "rack-violation")),
        ([("u", 0, [0, 1])], ("warning", "rf-below-min-isr")),
        ([("u", 0, [0])], ("error", "rf-below-min-isr")),
        ([("t", 0, [2, 3]), ("t", 1, [3, 0]), ("t", 2, [0, 1])], ("warning", "movement")),
        ([("t", 0, [0, 3])], ("info", "movement")),
        ([("t", p, [0, 1]) for p in range(4)], ("warning", "leader-skew")),
    ],
)
def test_check_findings(snap, rows, expected):
    assert expected in _codes(check_reassignment(snap, _kafka_json(*rows)))


def test_check_of_a_clean_plan_has_no_errors(snap):
    plan = make_plan(snap, [TopicRequest("t", rf=3, partitions=6)])
    findings = check_reassignment(snap, plan_document(plan, snap))
    assert [f for f in findings if f.level == "error"] == []
    codes = {f.code for f in findings}
    assert "unknown-partition" not in codes  # new partitions are known from the document


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ([], "the top level"),
        ({"version": 2, "partitions": []}, "version"),
        ({"version": 1}, "partitions"),
        (
            {"version": 1, "partitions": [{"topic": "t", "partition": "0", "replicas": []}]},
            "partitions[0].partition",
        ),
        (
            {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, "x"]}]},
            "partitions[0].replicas[1]",
        ),
        (
            {
                "version": 1,
                "partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": []}],
            },
            "partitions[0].log_dirs",
        ),
        (
            {"kreplica_plan": 1, "reassignment": {"version": 1, "partitions": [5]}},
            "reassignment.partitions[0]",
        ),
    ],
)
def test_malformed_reassignment_names_the_path(snap, data, path):
    with pytest.raises(InputError) as err:
        check_reassignment(snap, data)
    assert f"{path} " in str(err.value)


def test_plan_files_shape_and_roundtrip(snap):
    plan = make_plan(snap, [TopicRequest("t", rf=3, partitions=5)])
    forward = reassignment_json(plan)
    assert forward["version"] == 1
    assert [(e["topic"], e["partition"]) for e in forward["partitions"]] == [
        ("t", p) for p in range(4)
    ]
    for entry in forward["partitions"]:
        assert entry["log_dirs"] == ["any"] * len(entry["replicas"]) and len(entry["replicas"]) == 3
    back = rollback_json(plan)
    assert [e["replicas"] for e in back["partitions"]] == [[0, 1], [1, 2], [2, 3], [3, 0]]
    assert new_partitions_list(plan)[0]["partition"] == 4
    parsed = parse_reassignment_json(forward)
    assert parsed == [(c.topic, c.partition, c.after) for c in plan.reassignments]
    doc = plan_document(plan, snap)
    assert doc["kreplica_plan"] == 1 and doc["cluster_id"] == "test-cluster"
    assert doc["snapshot_fingerprint"] == snap.fingerprint()
    assert parse_reassignment_json(doc) == parsed
    assert json.loads(json.dumps(doc)) == doc


def test_plan_document_bytes_are_deterministic(snap):
    def render():
        plan = make_plan(snap, [TopicRequest("t", rf=3), TopicRequest("u", partitions=3)])
        return json.dumps(plan_document(plan, snap), sort_keys=True)

    assert render() == render()


def test_explain_seed_001_topic():
    # seed 001: this 10-partition topic was created with broker list {2,3,0,1,4},
    # start index 0 and replica shift 3
    before = [[2, 4, 3], [3, 2, 0], [0, 3, 1], [1, 0, 4], [4, 1, 2],
              [2, 3, 0], [3, 0, 1], [0, 1, 4], [1, 4, 2], [4, 2, 3]]  # fmt: skip
    snap = cluster({"t": before}, brokers=5)
    doc = explain_topic(snap, "t")
    assert doc["layout"]["kafka_default"] is True
    assert doc["layout"]["broker_list"] == [2, 3, 0, 1, 4]
    assert (doc["layout"]["start_index"], doc["layout"]["replica_shift"]) == (0, 3)
    assert doc["layout"]["nonconforming_partitions"] == []
    assert doc["partitions"] == 10 and doc["replication_factor"] == 3
    assert doc["balance"]["spread"] == 0
    json.dumps(doc)


def test_explain_detects_added_and_hand_made_partitions():
    created = assign_replicas([0, 1, 4, 2, 3], 2, 3, fixed_start_index=0)
    added = add_partitions([0, 1, 2, 3, 4], created, 4)
    matrix = [created[0], created[1], added[2], added[3], [3, 1, 0]]
    snap = cluster({"t": matrix}, brokers=5)
    layout = explain_topic(snap, "t")["layout"]
    assert layout["kafka_default"] is False
    assert layout["added_partitions"] == [2, 3]
    assert layout["nonconforming_partitions"] == [4]


def test_explain_racks():
    snap = cluster({"t": [[0, 2], [0, 1]]}, brokers=4, racks={0: "a", 1: "b", 2: "a", 3: "b"})
    doc = explain_topic(snap, "t")
    assert doc["racks"] == {"violations": [0], "racks_per_partition_min": 1}
    assert "1 partition(s) violate rack diversity" in doc["summary"]


def test_options_exclude_brokers_keeps_new_replicas_off_them(snap):
    plan = make_plan(snap, [TopicRequest("t", rf=3)], PlanOptions(exclude_brokers=frozenset({3})))
    assert all(3 not in c.added for c in plan.changes)


def test_new_partitions_of_an_unknown_topic_are_errors(snap):
    doc = {
        "kreplica_plan": 1,
        "reassignment": {"version": 1, "partitions": []},
        "new_partitions": [{"topic": "ghost", "partition": 0, "replicas": [0, 1]}],
    }
    assert ("error", "unknown-partition") in _codes(check_reassignment(snap, doc))


def test_explain_summary_does_not_count_added_partitions_among_the_odd_ones():
    created = assign_replicas([0, 1, 4, 2, 3], 2, 3, fixed_start_index=0)
    added = add_partitions([0, 1, 2, 3, 4], created, 4)
    matrix = [created[0], created[1], added[2], added[3], [3, 1, 0]]
    summary = explain_topic(cluster({"t": matrix}, brokers=5), "t")["summary"]
    assert "except 1 partition(s) [4]" in summary
    assert "of which" not in summary  # [2, 3] fit the layout: they are not among the odd ones
    assert "partition(s) [2, 3] match a later add-partitions" in summary
