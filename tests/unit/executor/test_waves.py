"""Waves and replica-at-a-time chains: tables for the rules, hypothesis for the invariants."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kreplica.errors import UsageError
from kreplica.executor.moves import Move
from kreplica.executor.waves import (
    busy_brokers,
    expand_steps,
    in_flight_replicas,
    order_moves,
    plan_waves,
    replica_at_a_time,
    wave_load,
)


def m(p: int, before: tuple[int, ...], after: tuple[int, ...], size: int | None = None) -> Move:
    return Move("t", p, before, after, size)


# ------------------------------------------------------------------------------------ moves


def test_move_properties() -> None:
    move = Move("orders", 3, (1, 2, 3), (1, 4, 2), 100)
    assert move.key == ("orders", 3)
    assert move.added == (4,)
    assert move.removed == (3,)
    assert move.bytes_to_copy == 100
    assert move.name == "orders-3"
    assert Move("t", 0, (1, 2), (1,)).bytes_to_copy == 0
    assert Move("t", 0, (1,), (2,)).bytes_to_copy is None


# ------------------------------------------------------------------------------------ waves


def test_busy_brokers() -> None:
    assert busy_brokers(m(0, (1, 2), (1, 3))) == {1, 2, 3}
    assert busy_brokers(m(0, (1, 2, 3), (1, 2))) == set()  # nothing copied
    assert busy_brokers(m(0, (1, 2), (2, 1))) == set()


def test_no_limits_is_one_wave_in_plan_order() -> None:
    moves = [m(p, (1,), (2,)) for p in range(5)]
    assert plan_waves(moves, max_partitions=None, max_per_broker=None) == [moves]
    assert plan_waves([], max_partitions=3, max_per_broker=1) == []


def test_max_partitions() -> None:
    moves = [m(p, (p,), (p + 10,)) for p in range(5)]
    waves = plan_waves(moves, max_partitions=2, max_per_broker=None)
    assert [[x.partition for x in w] for w in waves] == [[0, 1], [2, 3], [4]]


def test_max_per_broker_lets_later_moves_fill_the_wave() -> None:
    moves = [m(0, (1,), (2,)), m(1, (1,), (3,)), m(2, (4,), (5,)), m(3, (2,), (6,))]
    waves = plan_waves(moves, max_partitions=None, max_per_broker=1)
    assert [[x.partition for x in w] for w in waves] == [[0, 2], [1, 3]]
    assert all(max(wave_load(w).values()) == 1 for w in waves)


def test_removal_only_moves_are_not_held_by_broker_limits() -> None:
    moves = [m(p, (1, 2, 3), (1, 2)) for p in range(4)]
    assert len(plan_waves(moves, max_partitions=None, max_per_broker=1)) == 1
    assert len(plan_waves(moves, max_partitions=3, max_per_broker=1)) == 2


def test_order_by_size_unknown_last_ties_in_plan_order() -> None:
    moves = [m(0, (1,), (2,), 5), m(1, (1,), (2,)), m(2, (1,), (2,), 9), m(3, (1,), (2,), 5)]
    assert [x.partition for x in order_moves(moves, "largest")] == [2, 0, 3, 1]
    assert [x.partition for x in order_moves(moves, "smallest")] == [0, 3, 2, 1]
    assert [x.partition for x in order_moves(moves, "plan")] == [0, 1, 2, 3]
    waves = plan_waves(moves, max_partitions=1, max_per_broker=None, order="largest")
    assert [w[0].partition for w in waves] == [2, 0, 3, 1]


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        ({"max_partitions": 0, "max_per_broker": None}, "max partitions"),
        ({"max_partitions": None, "max_per_broker": -1}, "max per broker"),
        ({"max_partitions": None, "max_per_broker": None, "order": "biggest"}, "biggest"),
    ],
)
def test_bad_limits_are_usage_errors(kwargs: dict[str, object], word: str) -> None:
    with pytest.raises(UsageError, match=word):
        plan_waves([m(0, (1,), (2,))], **kwargs)  # type: ignore[arg-type]


def test_steps_of_one_partition_never_share_a_wave_and_keep_order() -> None:
    steps = expand_steps([m(0, (1, 2, 3), (4, 5, 6)), m(1, (1, 2), (1, 2, 3))])
    waves = plan_waves(steps, max_partitions=None, max_per_broker=None)
    assert [[(x.partition, x.after) for x in w] for w in waves] == [
        [(0, (4, 2, 3)), (1, (1, 2, 3))],
        [(0, (4, 5, 3))],
        [(0, (4, 5, 6))],
    ]


# ------------------------------------------------------------------------- replica at a time


@pytest.mark.parametrize(
    ("before", "after", "chain"),
    [
        ((1, 2, 3), (1, 2, 3), []),
        ((1, 2, 3), (2, 1, 3), [(2, 1, 3)]),
        ((1,), (1, 2, 3), [(1, 2), (1, 2, 3)]),
        ((1, 2, 3), (1, 2), [(1, 2)]),
        ((1, 2, 3), (1,), [(1,)]),
        ((1, 2, 3), (1, 4, 3), [(1, 4, 3)]),
        ((1, 2, 3), (4, 5, 6), [(4, 2, 3), (4, 5, 3), (4, 5, 6)]),
        ((1, 2, 3), (2, 3, 4), [(2, 3, 4)]),  # one replacement is one step
        ((1, 2, 3), (4, 2), [(1, 2), (4, 2)]),  # drop 3 first, then 1 -> 4 at its position
        ((1, 2, 3), (2, 5), [(1, 2), (2, 5)]),  # 3 goes first: the leader leaves last
        ((1, 2), (3, 1, 4), [(1, 3), (3, 1, 4)]),  # 2 -> 3, then 4 added, ends in target order
    ],
)
def test_replica_at_a_time_table(
    before: tuple[int, ...], after: tuple[int, ...], chain: list[tuple[int, ...]]
) -> None:
    steps = replica_at_a_time(Move("t", 0, before, after, 7))
    assert [s.after for s in steps] == chain
    assert all(s.size_bytes == 7 and s.key == ("t", 0) for s in steps)


# ------------------------------------------------------------------------------- properties

brokers = st.integers(0, 11)
replica_sets = st.lists(brokers, min_size=1, max_size=6, unique=True).map(tuple)


@st.composite
def move_lists(draw: st.DrawFn) -> list[Move]:
    count = draw(st.integers(0, 25))
    moves = []
    for p in range(count):
        before = draw(replica_sets)
        after = draw(replica_sets.filter(lambda a, b=before: a != b))  # type: ignore[misc]
        size = draw(st.none() | st.integers(0, 10**9))
        moves.append(Move(draw(st.sampled_from(["a", "b"])), p, before, after, size))
    return moves


limits = st.none() | st.integers(1, 5)


@settings(max_examples=100, deadline=None)
@given(
    move_lists(), limits, limits, st.sampled_from(["plan", "largest", "smallest"]), st.booleans()
)
def test_waves_hold_every_move_once_and_respect_limits(
    moves: list[Move],
    max_partitions: int | None,
    max_per_broker: int | None,
    order: str,
    steps: bool,
) -> None:
    work = expand_steps(moves) if steps else moves
    waves = plan_waves(
        work, max_partitions=max_partitions, max_per_broker=max_per_broker, order=order
    )
    flat = [x for w in waves for x in w]
    assert sorted(flat, key=repr) == sorted(work, key=repr)  # each move exactly once
    assert all(waves), "no empty wave"
    for wave in waves:
        if max_partitions is not None:
            assert len(wave) <= max_partitions
        if max_per_broker is not None:
            assert all(n <= max_per_broker for n in wave_load(wave).values())
        assert len({x.key for x in wave}) == len(wave)
    # the steps of one partition run in chain order
    position = {id(x): i for i, w in enumerate(waves) for x in w}
    for key in {x.key for x in work}:
        chain = [x for x in work if x.key == key]
        ordered = [x for x in order_moves(work, order) if x.key == key]
        assert [position[id(x)] for x in ordered] == sorted(position[id(x)] for x in chain)
    # deterministic
    again = plan_waves(
        work, max_partitions=max_partitions, max_per_broker=max_per_broker, order=order
    )
    assert again == waves


@settings(max_examples=500, deadline=None)
@given(replica_sets, replica_sets)
def test_chains_end_at_target_and_never_exceed_rf_plus_one(
    before: tuple[int, ...], after: tuple[int, ...]
) -> None:
    move = Move("t", 0, before, after, 1)
    steps = replica_at_a_time(move)
    if before == after:
        assert steps == []
        return
    assert steps[0].before == before
    assert steps[-1].after == after
    bound = max(len(before), len(after)) + 1
    for prev, step in itertools.pairwise(steps):
        assert prev.after == step.before
    for step in steps:
        assert step.before != step.after
        assert len(set(step.after)) == len(step.after)
        assert in_flight_replicas(step) <= bound
        assert len(step.added) <= 1  # one replica copied at a time
    # data is copied only to brokers of the target, each exactly once
    copied = [b for step in steps for b in step.added]
    assert sorted(copied) == sorted(move.added)
    # only a pure reorder leaves the replica set alone
    if set(before) == set(after):
        assert len(steps) == 1
    else:
        assert all(set(s.before) != set(s.after) for s in steps)
