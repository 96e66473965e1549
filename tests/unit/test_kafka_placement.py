"""kreplica.kafka against the shared Kafka vectors (taken from Kafka's tests and Kafka 3.9 runs).

Expected values are read from the vector file, never pasted here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kreplica import kafka
from kreplica.errors import ExitCode, PlanInfeasible, UsageError
from kreplica.kafka import (
    JavaRandom,
    KafkaAssignmentError,
    MockRandom,
    StripedRackList,
    add_partitions,
    assign_replicas,
    java_hashmap_order,
    rack_alternated_brokers,
    scala_longmap_order,
    striped_place,
)
from tests.conftest import VECTORS

VECTOR_FILE = VECTORS / "kafka_assignment_vectors.json"

ALL_VECTORS: list[dict[str, Any]] = json.loads(VECTOR_FILE.read_text())


def _vectors(*algorithms: str) -> list[Any]:
    return [
        pytest.param(v, id=f"{v['algorithm']}-{i}-{v['source'].rsplit('#', 1)[-1]}")
        for i, v in enumerate(ALL_VECTORS)
        if v["algorithm"] in algorithms
    ]


def _int_keys(mapping: dict[str, Any]) -> dict[int, Any]:
    return {int(k): v for k, v in mapping.items()}


def _racks(vector: dict[str, Any]) -> dict[int, str | None] | None:
    racks = vector.get("racks")
    return None if racks is None else _int_keys(racks)


def _rng(spec: dict[str, Any] | None) -> JavaRandom | None:
    if spec is None:
        return None
    if spec["kind"] == "JavaRandom":
        return JavaRandom(spec["seed"])
    if spec["kind"] == "MockRandom":
        return MockRandom(spec["seed"])
    raise AssertionError(f"unknown rng kind in vector file: {spec['kind']}")


def _assert_kafka_error(exc: KafkaAssignmentError, exception: str, message: str) -> None:
    assert type(exc).__name__ == exception
    assert exc.kafka_exception == exception
    assert str(exc) == message


@pytest.mark.parametrize("vector", _vectors("rack_unaware", "rack_aware"))
def test_assign_replicas_vector(vector: dict[str, Any]) -> None:
    def run() -> dict[int, list[int]]:
        return assign_replicas(
            vector["brokers"],
            vector["partitions"],
            vector["replication_factor"],
            racks=_racks(vector),
            fixed_start_index=vector["fixed_start_index"],
            start_partition_id=vector["start_partition_id"],
            rng=_rng(vector["rng"]),
        )

    if "expected_error" in vector:
        with pytest.raises(KafkaAssignmentError) as caught:
            run()
        error = vector["expected_error"]
        _assert_kafka_error(caught.value, error["exception"], error["message"])
    else:
        assert run() == _int_keys(vector["expected"])


@pytest.mark.parametrize("vector", _vectors("zk_add_partitions"))
def test_add_partitions_vector(vector: dict[str, Any]) -> None:
    partition0 = vector["partition0_replicas"]
    # Kafka reads only partition 0 and the partition count of the existing assignment.
    existing = dict.fromkeys(range(vector["existing_partitions"]), partition0)
    result = add_partitions(
        vector["brokers"], existing, vector["new_total_partitions"], racks=_racks(vector)
    )
    assert result == _int_keys(vector["expected"])
    # The vector also records the parameters Kafka derived; the generic call must agree.
    assert result == assign_replicas(
        sorted(vector["brokers"]),
        vector["partitions"],
        vector["replication_factor"],
        racks=_racks(vector),
        fixed_start_index=vector["fixed_start_index"],
        start_partition_id=vector["start_partition_id"],
    )


@pytest.mark.parametrize("vector", _vectors("rack_alternated_list"))
def test_rack_alternated_list_vector(vector: dict[str, Any]) -> None:
    racks = _int_keys(vector["racks"])
    assert rack_alternated_brokers(racks) == vector["expected"]
    # Input order must not matter.
    assert rack_alternated_brokers(dict(reversed(list(racks.items())))) == vector["expected"]


def _usable(call: dict[str, Any]) -> list[tuple[int, str | None, bool]]:
    return [(b["id"], b["rack"], b["fenced"]) for b in call["usable_brokers"]]


@pytest.mark.parametrize("vector", _vectors("striped"))
def test_striped_vector(vector: dict[str, Any]) -> None:
    rng = _rng(vector["rng"])
    assert rng is not None
    for call in vector["calls"]:
        expected = call["expected"]
        rf = call["replication_factor"]

        def run(call: dict[str, Any] = call, rf: int = rf) -> dict[int, list[int]]:
            assert rng is not None
            if call["api"] == "StripedReplicaPlacer.place":
                return striped_place(_usable(call), call["partitions"], rf, rng=rng)
            assert call["api"] == "RackList.place", call["api"]
            rack_list = StripedRackList(rng, _usable(call))
            return {p: rack_list.place(rf) for p in range(call["partitions"])}

        if "error" in expected:
            with pytest.raises(KafkaAssignmentError) as caught:
                run()
            _assert_kafka_error(caught.value, expected["error"], expected["message"])
        else:
            result = run()
            assert result == _int_keys(expected)
            if "expected_pair_counts" in vector:  # the only thing Kafka's own test asserts
                pairs: dict[str, int] = {}
                for replicas in result.values():
                    key = ",".join(map(str, replicas))
                    pairs[key] = pairs.get(key, 0) + 1
                assert pairs == vector["expected_pair_counts"]


@pytest.mark.parametrize("vector", _vectors("striped_broker_list"))
def test_striped_broker_list_vector(vector: dict[str, Any]) -> None:
    broker_list = kafka._BrokerList()
    broker_list.brokers.extend(vector["brokers"])  # built with add(), never initialize()d
    for epoch, expected in vector["steps"]:
        assert broker_list.next(epoch) == expected
    assert kafka._BrokerList().next(0) == -1


@pytest.mark.parametrize("vector", _vectors("java_hashmap_order"))
def test_java_hashmap_order_vector(vector: dict[str, Any]) -> None:
    assert java_hashmap_order(vector["insertion_order"]) == vector["expected"]


@pytest.mark.parametrize("vector", _vectors("scala_longmap_order"))
def test_scala_longmap_order_vector(vector: dict[str, Any]) -> None:
    order = scala_longmap_order(vector["insertion_order"], vector["initial_buffer_size"])
    assert order == vector["expected"]


def test_every_placement_vector_is_exercised() -> None:
    covered = {
        "rack_unaware",
        "rack_aware",
        "zk_add_partitions",
        "rack_alternated_list",
        "striped",
        "striped_broker_list",
        "java_hashmap_order",
        "scala_longmap_order",
    }
    # reassign_throttles belongs to the executor's throttle calculation, not to this module.
    unknown = {v["algorithm"] for v in ALL_VECTORS} - covered - {"reassign_throttles"}
    assert not unknown, f"vector kinds without a test here: {sorted(unknown)}"


def test_kafka_errors_are_plan_infeasible_with_kafka_message() -> None:
    with pytest.raises(PlanInfeasible) as caught:
        assign_replicas([0, 1], 3, 3)
    assert str(caught.value) == "Replication factor: 3 larger than available brokers: 2."
    assert caught.value.exit_code == ExitCode.INFEASIBLE


def test_add_partitions_refusals_use_kafkas_messages() -> None:
    existing = {0: [1, 2], 1: [2, 0]}
    cases = [
        ({}, 3, "UnknownTopicOrPartitionException", "The topic 'orders' does not exist."),
        (
            existing,
            1,
            "InvalidPartitionsException",
            "Topic currently has 2 partitions, which is higher than the requested 1.",
        ),
        (existing, 2, "InvalidPartitionsException", "Topic already has 2 partitions."),
        (
            {1: [1, 2], 2: [2, 0]},
            4,
            "AdminOperationException",
            "Unexpected existing replica assignment for topic 'orders', partition id 0 is "
            "missing. Assignment: Map(1 -> ReplicaAssignment(replicas=1,2, addingReplicas=, "
            "removingReplicas=), 2 -> ReplicaAssignment(replicas=2,0, addingReplicas=, "
            "removingReplicas=))",
        ),
    ]
    for current, total, exception, message in cases:
        with pytest.raises(KafkaAssignmentError) as caught:
            add_partitions([0, 1, 2], current, total, topic="orders")
        _assert_kafka_error(caught.value, exception, message)
    with pytest.raises(KafkaAssignmentError) as caught:
        add_partitions([0, 1, 2], existing, 4, racks={0: "a", 1: "b"})
    _assert_kafka_error(
        caught.value,
        "AdminOperationException",
        "Not all brokers have rack information. Add --disable-rack-aware in command line to "
        "make replica assignment without rack information.",
    )
    with pytest.raises(KafkaAssignmentError) as caught:
        add_partitions([0, 1], {0: [0, 1, 2]}, 2)
    _assert_kafka_error(
        caught.value,
        "InvalidReplicationFactorException",
        "Replication factor: 3 larger than available brokers: 2.",
    )


def test_unknown_topic_maps_to_the_source_exit_code() -> None:
    with pytest.raises(KafkaAssignmentError) as caught:
        add_partitions([0, 1], {}, 2)
    assert caught.value.exit_code == ExitCode.SOURCE


def test_default_random_source_is_deterministic() -> None:
    brokers = list(range(7))
    first = assign_replicas(brokers, 20, 3)
    assert assign_replicas(brokers, 20, 3) == first
    assert first == assign_replicas(brokers, 20, 3, rng=JavaRandom(kafka.DEFAULT_SEED))


def test_striped_place_accepts_broker_objects() -> None:
    from dataclasses import dataclass

    from kreplica.model import Broker

    @dataclass
    class Usable:
        id: int
        rack: str | None
        fenced: bool

    as_tuples = [(0, "a", False), (1, "b", True), (2, "b", False), (3, None, False)]
    as_objects = [Usable(*t) for t in as_tuples]
    assert striped_place(as_objects, 8, 2, rng=JavaRandom(3)) == striped_place(
        as_tuples, 8, 2, rng=JavaRandom(3)
    )
    # kreplica's own Broker has no `fenced`: every broker counts as unfenced.
    model_brokers = [Broker(id=b, rack=r) for b, r, _ in as_tuples]
    unfenced = [(b, r, False) for b, r, _ in as_tuples]
    assert striped_place(model_brokers, 8, 2, rng=JavaRandom(3)) == striped_place(
        unfenced, 8, 2, rng=JavaRandom(3)
    )


def test_striped_error_wording_follows_the_kafka_line() -> None:
    fenced = [(1, None, True)]
    two = [(1, None, False), (2, None, False)]
    expectations = [
        ("3.9", "All brokers are currently fenced.", "registered."),
        ("4.2.0", "All brokers are currently fenced.", "registered."),
        (
            "4.3.1",
            "All brokers are currently fenced, or have all their log directories cordoned.",
            "registered or some brokers have all their log directories cordoned.",
        ),
    ]
    for version, fenced_message, too_few_tail in expectations:
        with pytest.raises(KafkaAssignmentError) as caught:
            striped_place(fenced, 1, 1, rng=JavaRandom(1), kafka_version=version)
        assert str(caught.value) == fenced_message
        with pytest.raises(KafkaAssignmentError) as caught:
            striped_place(two, 1, 3, rng=JavaRandom(1), kafka_version=version)
        assert str(caught.value) == (
            "The target replication factor of 3 cannot be reached because only 2 broker(s) are "
            + too_few_tail
        )
    with pytest.raises(UsageError):
        striped_place(two, 1, 1, rng=JavaRandom(1), kafka_version="four")
