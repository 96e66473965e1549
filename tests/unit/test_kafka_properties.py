"""Properties Kafka's own placement tests assert (vectors/kafka_property_checks.md).

Kafka draws the start index and the replica shift independently, so its tests with random
starts only sample the n*n outcome space; here the shapes from AdminRackAwareTest are checked
for every (start, shift) pair through a scripted random source, and hypothesis covers the rest.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kreplica.kafka import (
    JavaRandom,
    MockRandom,
    add_partitions,
    assign_replicas,
    infer_layout,
    java_compare_strings,
    java_string_hash,
    rack_alternated_brokers,
    striped_place,
)


class ScriptedRandom:
    """Returns the given draws in order: start index first, then the replica shift."""

    def __init__(self, *draws: int) -> None:
        self._draws: Iterator[int] = iter(draws)

    def next_int(self, bound: int) -> int:
        value = next(self._draws)
        assert 0 <= value < bound
        return value


def check_replica_distribution(
    assignment: Mapping[int, Sequence[int]],
    racks: Mapping[int, str],
    n_brokers: int,
    n_partitions: int,
    rf: int,
    *,
    rack_aware: bool = True,
    leaders: bool = True,
    replicas: bool = True,
) -> None:
    """RackAwareTest.checkReplicaDistribution."""
    assert len(assignment) == n_partitions
    for replica_list in assignment.values():
        assert len(replica_list) == rf
        assert len(set(replica_list)) == rf, replica_list
        if rack_aware:
            assert len({racks[b] for b in replica_list}) == rf, replica_list
    if leaders:
        leader_counts = Counter(r[0] for r in assignment.values())
        assert set(leader_counts.values()) == {n_partitions // n_brokers}, leader_counts
        assert len(leader_counts) == n_brokers
    if replicas:
        replica_counts = Counter(b for r in assignment.values() for b in r)
        assert set(replica_counts.values()) == {n_partitions * rf // n_brokers}, replica_counts
        assert len(replica_counts) == n_brokers


FIRST_RACKS = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
TWELVE_RACKS = {
    0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1",
    6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack1", 11: "rack3",
}  # fmt: skip

# (test name, racks, partitions, RF, checks: rack-aware, leaders, replicas)
ADMIN_RACK_AWARE_SHAPES = [
    ("testAssignmentWithRackAware", FIRST_RACKS, 6, 3, (True, True, True)),
    (
        "testAssignmentWithRackAwareWithUnevenRacks",
        {0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"},
        12,
        3,
        (True, True, False),
    ),
    ("testAssignmentWith2ReplicasRackAware", FIRST_RACKS, 12, 2, (True, True, True)),
    ("testAssignmentWith2ReplicasRackAwareWith6Partitions", FIRST_RACKS, 6, 2, (True, True, True)),
    (
        "testAssignmentWith2ReplicasRackAwareWith6PartitionsAnd3Brokers",
        {0: "rack1", 1: "rack2", 4: "rack3"},
        3,
        2,
        (True, True, True),
    ),
    ("testLargeNumberPartitionsAssignment", TWELVE_RACKS, 96, 3, (True, True, True)),
    ("testAssignmentWithRackAwareWithUnevenReplicas", FIRST_RACKS, 13, 3, (True, False, False)),
]


@pytest.mark.parametrize(
    ("racks", "partitions", "rf", "checks"),
    [pytest.param(r, p, f, c, id=name) for name, r, p, f, c in ADMIN_RACK_AWARE_SHAPES],
)
def test_admin_rack_aware_shapes_hold_for_every_start_and_shift(
    racks: dict[int, str], partitions: int, rf: int, checks: tuple[bool, bool, bool]
) -> None:
    n = len(racks)
    for start, shift in itertools.product(range(n), repeat=2):
        assignment = assign_replicas(
            list(racks), partitions, rf, racks=racks, rng=ScriptedRandom(start, shift)
        )
        rack_aware, leaders, replicas = checks
        check_replica_distribution(
            assignment,
            racks,
            n,
            partitions,
            rf,
            rack_aware=rack_aware,
            leaders=leaders,
            replicas=replicas,
        )


def test_rack_expansion_from_partition_12() -> None:
    """testRackAwareExpansion: brokers 6..11, 12 partitions starting at partition id 12."""
    racks = {6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}
    for start, shift in itertools.product(range(6), repeat=2):
        assignment = assign_replicas(
            list(racks),
            12,
            2,
            racks=racks,
            start_partition_id=12,
            rng=ScriptedRandom(start, shift),
        )
        assert sorted(assignment) == list(range(12, 24))
        check_replica_distribution(assignment, racks, 6, 12, 2)


@pytest.mark.parametrize("rf", [5, 2])
def test_more_and_fewer_replicas_than_racks(rf: int) -> None:
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    for start, shift in itertools.product(range(6), repeat=2):
        assignment = assign_replicas(
            list(racks), 6, rf, racks=racks, rng=ScriptedRandom(start, shift)
        )
        for replicas in assignment.values():
            assert len(set(replicas)) == rf
            assert len({racks[b] for b in replicas}) == min(rf, 3)


def test_single_rack() -> None:
    racks = dict.fromkeys(range(6), "rack1")
    for start, shift in itertools.product(range(6), repeat=2):
        assignment = assign_replicas(
            list(racks), 6, 3, racks=racks, rng=ScriptedRandom(start, shift)
        )
        assert Counter(r[0] for r in assignment.values()) == Counter(range(6))
        assert all(len(set(r)) == 3 for r in assignment.values())


def test_skip_broker_with_replica_already_assigned() -> None:
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    assignment = assign_replicas(list(racks), 6, 4, racks=racks, fixed_start_index=2)
    assert all(len(set(r)) == 4 for r in assignment.values())


# ---------------------------------------------------------------------------------------------
# hypothesis: ZK placement


@st.composite
def zk_shapes(draw: st.DrawFn) -> tuple[list[int], int, int, int, int, dict[int, str] | None]:
    brokers = draw(st.lists(st.integers(0, 1000), min_size=1, max_size=12, unique=True))
    n = len(brokers)
    rf = draw(st.integers(1, n))
    partitions = draw(st.integers(1, 40))
    start = draw(st.integers(0, n - 1))
    shift = draw(st.integers(0, n - 1))
    racks = None
    if draw(st.booleans()):
        names = draw(
            st.lists(
                st.sampled_from(["a", "b", "c", "B", "rack10", "rack2"]), min_size=n, max_size=n
            )
        )
        racks = dict(zip(brokers, names, strict=True))
    return brokers, rf, partitions, start, shift, racks


@settings(max_examples=300, deadline=None)
@given(zk_shapes())
def test_zk_placement_invariants(
    shape: tuple[list[int], int, int, int, int, dict[int, str] | None],
) -> None:
    brokers, rf, partitions, start, shift, racks = shape
    assignment = assign_replicas(
        brokers, partitions, rf, racks=racks, rng=ScriptedRandom(start, shift)
    )
    order = rack_alternated_brokers(racks) if racks else brokers
    n = len(order)
    assert sorted(assignment) == list(range(partitions))
    for p, replicas in assignment.items():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf  # never two replicas on one broker
        assert set(replicas) <= set(brokers)
        # leader rotation: partition p leads on the (p + start)-th broker of the list
        assert replicas[0] == order[(p + start) % n]
        if racks:
            distinct_racks = len(set(racks.values()))
            assert len({racks[b] for b in replicas}) == min(rf, distinct_racks)
    if not racks and partitions % n == 0:
        # Each full round of n partitions gives every broker one leadership and rf replicas.
        assert set(Counter(r[0] for r in assignment.values()).values()) == {partitions // n}
        assert set(Counter(b for r in assignment.values() for b in r).values()) == {
            partitions * rf // n
        }


@settings(max_examples=200, deadline=None)
@given(zk_shapes(), st.integers(0, 2))
def test_raising_rf_only_appends(
    shape: tuple[list[int], int, int, int, int, dict[int, str] | None], extra: int
) -> None:
    brokers, rf, partitions, start, shift, racks = shape
    higher = min(len(brokers), rf + extra)
    low = assign_replicas(brokers, partitions, rf, racks=racks, rng=ScriptedRandom(start, shift))
    high = assign_replicas(
        brokers, partitions, higher, racks=racks, rng=ScriptedRandom(start, shift)
    )
    for p in low:
        assert high[p][:rf] == low[p]


@settings(max_examples=200, deadline=None)
@given(zk_shapes(), st.integers(1, 20))
def test_add_partitions_continues_from_partition_zero(
    shape: tuple[list[int], int, int, int, int, dict[int, str] | None], added: int
) -> None:
    brokers, rf, partitions, start, shift, racks = shape
    existing = assign_replicas(
        brokers, partitions, rf, racks=racks, rng=ScriptedRandom(start, shift)
    )
    new = add_partitions(brokers, existing, partitions + added, racks=racks)
    assert sorted(new) == list(range(partitions, partitions + added))
    sorted_brokers = sorted(brokers)
    index = next((i for i, b in enumerate(sorted_brokers) if b >= existing[0][0]), 0)
    # Same as one assignReplicasToBrokers call with fixed start at partition 0's leader.
    assert new == assign_replicas(
        sorted_brokers,
        added,
        rf,
        racks=racks,
        fixed_start_index=index,
        start_partition_id=partitions,
    )
    for replicas in new.values():
        assert len(set(replicas)) == rf


# ---------------------------------------------------------------------------------------------
# hypothesis: KRaft striped placement


@st.composite
def kraft_brokers(draw: st.DrawFn) -> list[tuple[int, str | None, bool]]:
    ids = draw(st.lists(st.integers(0, 500), min_size=1, max_size=12, unique=True))
    racks = draw(
        st.lists(st.sampled_from([None, "a", "b", "c", "d"]), min_size=len(ids), max_size=len(ids))
    )
    fenced = draw(st.lists(st.booleans(), min_size=len(ids), max_size=len(ids)))
    if all(fenced):
        fenced[0] = False
    return list(zip(ids, racks, fenced, strict=True))


@settings(max_examples=300, deadline=None)
@given(kraft_brokers(), st.integers(1, 30), st.data(), st.integers(0, 2**31))
def test_striped_invariants(
    brokers: list[tuple[int, str | None, bool]], partitions: int, data: st.DataObject, seed: int
) -> None:
    rf = data.draw(st.integers(1, len(brokers)))
    result = striped_place(brokers, partitions, rf, rng=JavaRandom(seed))
    fenced = {b for b, _, f in brokers if f}
    assert sorted(result) == list(range(partitions))
    for replicas in result.values():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert replicas[0] not in fenced  # a fenced broker is never the leader
    # Determinism: the same seed gives the same placement.
    assert striped_place(brokers, partitions, rf, rng=JavaRandom(seed)) == result


def test_striped_balanced_racks_spread_evenly() -> None:
    """TopicCommandIntegrationTest#testCreateAlterTopicWithRackAware (KRaft) shape."""
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack1", 4: "rack3", 5: "rack3"}
    brokers = [(b, r, False) for b, r in racks.items()]
    for seed in range(50):
        result = striped_place(brokers, 18, 3, rng=JavaRandom(seed))
        check_replica_distribution(result, racks, 6, 18, 3)


def test_striped_shares_randomness_across_calls() -> None:
    brokers = [(b, None, False) for b in range(4)]
    rng = MockRandom()
    first = striped_place(brokers, 3, 2, rng=rng)
    second = striped_place(brokers, 3, 2, rng=rng)
    fresh = striped_place(brokers, 3, 2, rng=MockRandom())
    assert first == fresh
    assert second != first  # the shared generator has moved on


# ---------------------------------------------------------------------------------------------
# Java semantics


def test_java_string_order_and_hash() -> None:
    assert java_compare_strings("B", "a") < 0
    assert java_compare_strings("rack10", "rack2") < 0
    assert java_compare_strings("rack1", "rack1") == 0
    # Non-BMP characters compare by UTF-16 code unit, unlike Python's code-point order.
    assert java_compare_strings("\U0001f600", "\uffff") < 0
    assert "\U0001f600" > "\uffff"
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322  # documented value of "hello".hashCode()
    assert java_string_hash("polygenelubricants") == -(2**31)  # a well-known Integer.MIN_VALUE


def test_java_random_known_sequence() -> None:
    # new java.util.Random(42): nextInt(10) x5 -> 0, 3, 8, 4, 0 (widely published sequence)
    rng = JavaRandom(42)
    assert [rng.next_int(10) for _ in range(5)] == [0, 3, 8, 4, 0]
    with pytest.raises(ValueError):
        JavaRandom(1).next_int(0)


@settings(max_examples=200, deadline=None)
@given(st.integers(-(2**63), 2**63 - 1), st.integers(1, 2**31 - 1))
def test_java_random_bounds(seed: int, bound: int) -> None:
    rng = JavaRandom(seed)
    for _ in range(5):
        assert 0 <= rng.next_int(bound) < bound


# ---------------------------------------------------------------------------------------------
# infer_layout round trips


@settings(max_examples=300, deadline=None)
@given(zk_shapes(), st.integers(0, 2))
def test_infer_layout_recovers_kafka_placements(
    shape: tuple[list[int], int, int, int, int, dict[int, str] | None], extra_rf: int
) -> None:
    brokers, rf, partitions, start, shift, racks = shape
    assignment = assign_replicas(
        brokers, partitions, rf, racks=racks, rng=ScriptedRandom(start, shift)
    )
    layout = infer_layout(assignment, brokers=brokers, racks=racks)
    assert layout is not None
    assert layout.conforming == tuple(range(partitions))
    assert layout.nonconforming == ()
    assert layout.extend(partitions, rf) == assignment
    # Whatever the layout chose for the unseen positions, more replicas only append.
    higher = min(len(brokers), rf + extra_rf)
    extended = layout.extend(partitions, higher)
    for p, replicas in assignment.items():
        assert extended[p][:rf] == replicas
        assert len(set(extended[p])) == higher


@settings(max_examples=200, deadline=None)
@given(zk_shapes(), st.lists(st.integers(1, 8), min_size=1, max_size=3))
def test_infer_layout_recognises_zk_add_partitions(
    shape: tuple[list[int], int, int, int, int, dict[int, str] | None], additions: list[int]
) -> None:
    brokers, rf, partitions, start, shift, racks = shape
    assignment = assign_replicas(
        brokers, partitions, rf, racks=racks, rng=ScriptedRandom(start, shift)
    )
    for added in additions:
        assignment.update(add_partitions(brokers, assignment, len(assignment) + added, racks=racks))
    layout = infer_layout(assignment, brokers=brokers, racks=racks)
    assert layout is not None
    assert layout.conforming == tuple(sorted(assignment))
    assert layout.extend(len(assignment), rf) == assignment


def test_infer_layout_marks_manual_partitions_nonconforming() -> None:
    assignment = assign_replicas(list(range(6)), 12, 3, rng=ScriptedRandom(2, 4))
    assignment[7] = [assignment[7][1], assignment[7][0], assignment[7][2]]  # a manual swap
    layout = infer_layout(assignment)
    assert layout is not None
    assert layout.nonconforming == (7,)
    assert set(layout.conforming) == set(range(12)) - {7}


def test_a_hand_edited_early_partition_costs_only_itself() -> None:
    assignment = assign_replicas(list(range(6)), 12, 3, rng=ScriptedRandom(2, 4))
    original = dict(assignment)
    # Rotated replicas of partition 1 still fit *some* layout on their own, which would
    # derail a search that trusts the partitions from 0 on.
    assignment[1] = [assignment[1][2], assignment[1][0], assignment[1][1]]
    layout = infer_layout(assignment)
    assert layout is not None
    assert layout.nonconforming == (1,)
    extended = layout.extend(12, 3)
    assert all(extended[p] == original[p] for p in range(12) if p != 1)


def test_infer_layout_rejects_what_kafka_cannot_produce() -> None:
    assert infer_layout({}) is None
    assert infer_layout({1: [0, 1]}) is None  # no partition 0
    assert infer_layout({0: [1, 1]}) is None  # duplicate replica


def test_infer_layout_is_fast_for_60_brokers() -> None:
    """Correctness at scale (speed itself is measured by bench/kafka_infer_layout.py)."""
    brokers = [JavaRandom(7).next_int(1000) + 1000 * i for i in range(60)]
    assignment = assign_replicas(brokers, 600, 3, rng=JavaRandom(11))
    layout = infer_layout(assignment, brokers=brokers)
    assert layout is not None
    assert len(layout.conforming) == 600
    assert layout.extend(600, 3) == assignment


@st.composite
def arbitrary_assignments(
    draw: st.DrawFn,
) -> tuple[dict[int, list[int]], list[int] | None, dict[int, str | None] | None]:
    pool = draw(st.lists(st.integers(0, 30), min_size=1, max_size=10, unique=True))
    partition_ids = draw(st.lists(st.integers(0, 25), min_size=1, max_size=20, unique=True))
    assignment = {
        p: draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4)) for p in partition_ids
    }
    brokers = draw(st.none() | st.just(pool))
    racks = draw(
        st.none()
        | st.fixed_dictionaries({b: st.sampled_from([None, "x", "y", "z"]) for b in pool})
        | st.fixed_dictionaries({b: st.sampled_from(["x", "y", "z"]) for b in pool})
    )
    return assignment, brokers, racks


@settings(max_examples=400, deadline=None)
@given(arbitrary_assignments())
def test_infer_layout_conforming_means_extend_keeps_current_replicas(
    case: tuple[dict[int, list[int]], list[int] | None, dict[int, str | None] | None],
) -> None:
    assignment, brokers, racks = case
    layout = infer_layout(assignment, brokers=brokers, racks=racks)
    if layout is None:
        return
    assert sorted(layout.conforming + layout.nonconforming) == sorted(assignment)
    assert 0 in layout.conforming
    rf = max(len(r) for r in assignment.values())
    extended = layout.extend(max(assignment) + 1, rf)
    for p in layout.conforming:
        assert extended[p][: len(assignment[p])] == assignment[p]
    for p in layout.nonconforming:
        assert extended[p][: len(assignment[p])] != assignment[p]
