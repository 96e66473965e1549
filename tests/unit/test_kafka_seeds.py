"""The worked examples of the seed articles (../shared/seeds/), an independent oracle:
their outputs were printed by Kafka's own AdminUtils in the articles."""

from __future__ import annotations

import itertools
import subprocess
import sys

from kreplica.kafka import (
    add_partitions,
    assign_replicas,
    infer_layout,
    rack_alternated_brokers,
)


class ScriptedRandom:
    """Returns the given draws in order: Kafka draws the start index, then the shift."""

    def __init__(self, *draws: int) -> None:
        self._draws = iter(draws)

    def next_int(self, bound: int) -> int:
        value = next(self._draws)
        assert 0 <= value < bound
        return value


FIVE = [0, 1, 2, 3, 4]


def test_seed_003_case1_five_brokers_ten_partitions_rf3_start0() -> None:
    assert assign_replicas(FIVE, 10, 3, fixed_start_index=0) == {
        0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
        5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2],
    }  # fmt: skip


def test_seed_003_case2_one_more_round_bumps_the_shift_again() -> None:
    result = assign_replicas(FIVE, 12, 3, fixed_start_index=0)
    assert result[10] == [0, 3, 4]
    assert result[11] == [1, 4, 0]


def test_seed_003_case3_rf4_only_appends_a_replica() -> None:
    assert assign_replicas(FIVE, 10, 4, fixed_start_index=0) == {
        0: [0, 1, 2, 3], 1: [1, 2, 3, 4], 2: [2, 3, 4, 0], 3: [3, 4, 0, 1], 4: [4, 0, 1, 2],
        5: [0, 2, 3, 4], 6: [1, 3, 4, 0], 7: [2, 4, 0, 1], 8: [3, 0, 1, 2], 9: [4, 1, 2, 3],
    }  # fmt: skip


def test_seed_003_add_partitions_restart_from_the_sorted_list() -> None:
    # Created with broker array (0, 1, 4, 2, 3), start 0, shift 2 ...
    created = assign_replicas([0, 1, 4, 2, 3], 2, 3, rng=ScriptedRandom(0, 2))
    assert created == {0: [0, 2, 3], 1: [1, 3, 0]}
    # ... the third partition is not the "natural" [4, 0, 1] but comes from the sorted list.
    third = add_partitions(FIVE, created, 3)
    assert third == {2: [2, 3, 4]}
    fourth = add_partitions(FIVE, created | third, 4)
    assert fourth == {3: [3, 4, 0]}


def test_seed_000_rack_unaware_outputs_are_reachable_by_some_start_and_shift() -> None:
    printed = [
        {0: [3, 2, 0], 1: [0, 3, 1], 2: [1, 0, 2]},
        {0: [3, 1, 2], 1: [0, 2, 3], 2: [1, 3, 0], 3: [2, 0, 1], 4: [3, 2, 0]},
        {
            0: [1, 0, 2], 1: [2, 1, 3], 2: [3, 2, 0], 3: [0, 3, 1], 4: [1, 2, 3],
            5: [2, 3, 0], 6: [3, 0, 1], 7: [0, 1, 2], 8: [1, 3, 0],
        },
    ]  # fmt: skip
    for expected in printed:
        reachable = [
            (start, shift)
            for start, shift in itertools.product(range(4), repeat=2)
            if assign_replicas([0, 1, 2, 3], len(expected), 3, rng=ScriptedRandom(start, shift))
            == expected
        ]
        assert reachable, expected


def test_seed_000_two_racks() -> None:
    racks = {0: "A", 1: "A", 2: "A", 3: "B", 4: "B", 5: "B"}
    assert rack_alternated_brokers(racks) == [0, 3, 1, 4, 2, 5]
    # "partition 0 leads on broker 4: then 2 and 5; partition 1 on 2: then 5 and 0"
    result = assign_replicas(list(racks), 2, 3, racks=racks, rng=ScriptedRandom(3, 0))
    assert result == {0: [4, 2, 5], 1: [2, 5, 0]}


SEED_001_TOPIC = {
    0: [2, 4, 3], 1: [3, 2, 0], 2: [0, 3, 1], 3: [1, 0, 4], 4: [4, 1, 2],
    5: [2, 3, 0], 6: [3, 0, 1], 7: [0, 1, 4], 8: [1, 4, 2], 9: [4, 2, 3],
}  # fmt: skip


def test_seed_001_infers_broker_list_start_and_shift() -> None:
    layout = infer_layout(SEED_001_TOPIC)
    assert layout is not None
    assert list(layout.broker_list) == [2, 3, 0, 1, 4]
    assert layout.start_index == 0
    assert layout.replica_shift == 3
    assert not layout.rack_aware
    assert layout.conforming == tuple(range(10))
    assert layout.nonconforming == ()
    # Raising RF to 4 keeps every replica where it is and appends one.
    wider = layout.extend(10, 4)
    for p, replicas in SEED_001_TOPIC.items():
        assert wider[p][:3] == replicas
        assert len(set(wider[p])) == 4


def test_seed_001_topic_grown_by_add_partitions() -> None:
    layout = infer_layout({0: [0, 2, 3], 1: [1, 3, 0], 2: [2, 3, 4], 3: [3, 4, 0]}, brokers=FIVE)
    assert layout is not None
    # The seed's derivation: the creation order was {0, 1, 4, 2, 3}, start 0, shift 2.
    assert list(layout.broker_list) == [0, 1, 4, 2, 3]
    assert (layout.start_index, layout.replica_shift) == (0, 2)
    assert layout.conforming == (0, 1, 2, 3)
    assert layout.added_batches == ((2, 4),)


def test_seed_001_single_replica_topics() -> None:
    # "0":[2] "1":[4] "2":[0] on brokers 0..5: any order starting 2, 4, 0 keeps the leaders.
    layout = infer_layout({0: [2], 1: [4], 2: [0]}, brokers=range(6))
    assert layout is not None
    assert list(layout.broker_list[:3]) == [2, 4, 0]
    assert sorted(layout.broker_list) == list(range(6))
    # "0":[2] "1":[3] "2":[0] "3":[3] "4":[4]: partition 3 breaks the round robin.
    broken = infer_layout({0: [2], 1: [3], 2: [0], 3: [3], 4: [4]}, brokers=range(6))
    assert broken is not None
    assert list(broken.broker_list[:3]) == [2, 3, 0]
    assert 3 in broken.nonconforming
    assert {0, 1, 2} <= set(broken.conforming)


def test_import_loads_no_third_party_module() -> None:
    # Compare with what the interpreter loaded before the import (site hooks, .pth finders).
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import kreplica.kafka\n"
        "loaded = set(sys.modules) - before\n"
        "allowed = set(sys.stdlib_module_names) | {'kreplica'}\n"
        "print('loaded:', ','.join(sorted(loaded)))\n"
        "print('third-party:', ','.join(sorted(m for m in loaded "
        "if m.split('.')[0] not in allowed)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    lines = dict(line.split(":", 1) for line in done.stdout.splitlines())
    assert "kreplica.kafka" in lines["loaded"].strip().split(",")
    assert lines["third-party"].strip() == ""
