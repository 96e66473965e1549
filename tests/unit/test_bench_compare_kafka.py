"""bench/compare_kafka.py's bookkeeping: how it reads Kafka's --generate output, counts the
replicas a plan copies, and lays out assignments for the byte comparison with AssignBench.
(The timings themselves are only printed by the bench, never asserted.)"""

from __future__ import annotations

import importlib.util
import json
import sys
from array import array
from pathlib import Path
from types import ModuleType

import pytest

from kreplica.kafka import assign_replicas

BENCH = Path(__file__).resolve().parents[2] / "bench" / "compare_kafka.py"


@pytest.fixture(scope="module")
def ck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compare_kafka_under_test", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _doc(assignment: dict[tuple[str, int], list[int]]) -> str:
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
                for (t, p), r in assignment.items()
            ],
        },
        separators=(",", ":"),
    )


def test_generate_output_is_read_as_current_and_proposed(ck: ModuleType) -> None:
    current = {("a", 0): [1, 2], ("a", 1): [2, 3], ("b", 0): [3, 1]}
    proposed = {("a", 0): [2, 1], ("a", 1): [3, 4], ("b", 0): [4, 5]}
    text = (
        "Current partition replica assignment\n"
        f"{_doc(current)}\n\n"
        "Proposed partition reassignment configuration\n"
        f"{_doc(proposed)}\n"
    )
    assert ck._generate_output(text) == (current, proposed)
    with pytest.raises(ck.SandboxError):
        ck._generate_output("Current partition replica assignment\n" + _doc(current))


def test_copies_counts_new_replicas_dropped_replicas_and_leaders(ck: ModuleType) -> None:
    current = {("a", 0): [1, 2], ("a", 1): [2, 3], ("a", 2): [3, 1]}
    target = {
        ("a", 0): [1, 2, 4],  # one copy, nothing dropped, leader kept
        ("a", 1): [4, 5],  # two copies, two dropped, leader changed
        ("a", 2): [1, 3],  # same replicas, leader changed
    }
    assert ck._copies(current, target) == (3, 2, 2)


def test_flat_lays_out_partition_then_replicas_in_partition_order(ck: ModuleType) -> None:
    result = assign_replicas(list(range(1, 7)), 10, 3, fixed_start_index=2)
    shuffled = dict(reversed(list(result.items())))
    ints = array("i")
    ints.frombytes(ck._flat(shuffled))
    if sys.byteorder != "little":
        ints.byteswap()
    assert list(ints) == [x for p in range(10) for x in (p, *result[p])]


def test_brokers_and_racks_match_the_java_driver(ck: ModuleType) -> None:
    brokers, racks = ck._brokers_and_racks(7, 3)
    assert brokers == [1, 2, 3, 4, 5, 6, 7]
    assert [racks[b] for b in brokers] == ["r0", "r1", "r2", "r0", "r1", "r2", "r0"]
    assert set(ck._brokers_and_racks(4, 0)[1].values()) == {None}
    # The Java side builds the same: "r" + ((i - 1) % RACKS), Optional.empty() for 0 racks.
    java = (BENCH.parent / "java" / "AssignBench.java").read_text()
    assert '"r" + ((i - 1) % nRacks)' in java
