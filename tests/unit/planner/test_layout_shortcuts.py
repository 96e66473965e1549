"""The layout searches' shortcuts against the plain computations they stand in for: each must
give the same answer (they only save work), on random clusters and topics."""

from __future__ import annotations

import random
from unittest import mock

import hypothesis.strategies as st
from hypothesis import given, settings

from kreplica.kafka import JavaRandom, add_partitions, assign_replicas, striped_place
from kreplica.kafka.layout import (
    _add_call_replicas,
    _aware_replicas,
    _fits_unaware,
    _is_prefix,
    _pin,
    _placeable,
)
from kreplica.kafka.zk import rack_alternated_brokers, replica_index, zk_replicas
from kreplica.planner.striped import _Matcher, _Ring, _Unset, match_striped


@st.composite
def racked(draw: st.DrawFn) -> dict[int, str]:
    ids = draw(st.lists(st.integers(0, 40), min_size=1, max_size=9, unique=True))
    names = ["a", "b", "c", "d"][: draw(st.integers(1, 4))]
    return {b: draw(st.sampled_from(names)) for b in ids}


@settings(max_examples=300, deadline=None)
@given(st.permutations(list(range(9))), st.data())
def test_unaware_fit_is_the_prefix_of_kafkas_replicas(order: list[int], data: st.DataObject):
    n = len(order)
    rf = data.draw(st.integers(1, n))
    first = data.draw(st.integers(0, n - 1))
    shift = data.draw(st.integers(0, 40))
    kafka = zk_replicas(order, None, 0, rf, first, shift)
    observed = data.draw(
        st.one_of(
            st.integers(0, rf + 1).map(lambda k: kafka[:k]),  # Kafka's, or a prefix of it
            st.lists(st.sampled_from(order), max_size=n + 1),  # anything
        )
    )
    assert _fits_unaware(observed, order, rf, first, shift) == _is_prefix(observed, kafka)


@settings(max_examples=200, deadline=None)
@given(racked(), st.data())
def test_memoised_rack_aware_replicas_are_kafkas(rack_of: dict[int, str], data: st.DataObject):
    order = rack_alternated_brokers(rack_of)
    n = len(order)
    rf = data.draw(st.integers(1, n))
    num_racks = len(set(rack_of.values()))
    replicas = _aware_replicas(order, rack_of, rf)
    for first, shift in data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 60)))):
        expected = zk_replicas(order, rack_of, num_racks, rf, first, shift)
        assert replicas(first, shift) == expected
        assert expected[0] == order[first]  # the leader the rack-aware tie-break filters on


@settings(max_examples=200, deadline=None)
@given(racked(), st.booleans(), st.data())
def test_every_add_partitions_call_gives_a_partition_the_same_leader(
    rack_of: dict[int, str], aware: bool, data: st.DataObject
):
    # `_classify` skips trying each call for a partition whose leader is not this one
    order = rack_alternated_brokers(rack_of) if aware else sorted(rack_of)
    n = len(order)
    rf = data.draw(st.integers(1, n))
    add_start = data.draw(st.integers(0, n - 1))
    p = data.draw(st.integers(1, 60))
    for call_start in data.draw(st.lists(st.integers(0, p), min_size=1)):
        kafka = _add_call_replicas(
            order,
            rack_of if aware else None,
            len(set(rack_of.values())) if aware else 0,
            rf,
            add_start,
            call_start,
            p,
        )
        assert kafka[0] == order[(p + add_start) % n]


def _plain_pin(
    at: dict[int, int],
    where: dict[int, int],
    replicas: list[int],
    members: set[int],
    p: int,
    s: int,
) -> bool:
    """The pins as the search took them before `_placeable`: checked and built per call."""
    n = len(members)
    if not replicas or len(replicas) > n or len(set(replicas)) != len(replicas):
        return False
    if not members.issuperset(replicas):
        return False
    first = p % n
    pinned = [(first, replicas[0])]
    pinned += [(replica_index(first, s + p // n, j, n), b) for j, b in enumerate(replicas[1:])]
    if any(at.get(pos, b) != b or where.get(b, pos) != pos for pos, b in pinned):
        return False
    for pos, b in pinned:
        at[pos] = b
        where[b] = pos
    return True


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), st.data())
def test_pinning_is_the_plain_pinning(n: int, data: st.DataObject):
    members = set(range(10, 10 + n))
    brokers = st.sampled_from(sorted(members | {99}))  # 99: a broker not in the list
    parts = data.draw(
        st.dictionaries(st.integers(0, 4 * n), st.lists(brokers, max_size=n + 1), max_size=12)
    )
    shift = data.draw(st.integers(0, 10))
    placeable = _placeable(parts, members, n)
    at: dict[int, int] = {}
    where: dict[int, int] = {}
    plain_at: dict[int, int] = {}
    plain_where: dict[int, int] = {}
    for p in sorted(parts):
        fast = _pin(at, where, placeable[p], n, p, shift)
        assert fast == _plain_pin(plain_at, plain_where, parts[p], members, p, shift)
        assert (at, where) == (plain_at, plain_where)


def _plain_pins(ring: _Ring[int]) -> list[tuple[int, int]]:
    return [(pos, v) for pos in range(ring.size) if not isinstance(v := ring.get(pos), _Unset)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=8, unique=True), st.booleans(), st.data())
def test_ring_pins_are_every_known_position(values: list[int], fixed: bool, data: st.DataObject):
    ring = _Ring(values, fixed)
    assert ring.pins() == _plain_pins(ring)
    for pos, value in data.draw(st.lists(st.tuples(st.integers(0, 7), st.sampled_from(values)))):
        if pos < ring.size and ring.can_pin(pos, value):
            ring.pin(pos, value)
        assert ring.pins() == _plain_pins(ring)
        for known, held in ring.pins():  # a walk taking a pinned broker again copies no ring:
            again = ring.copy()  # pinning it again would change nothing
            assert again.can_pin(known, held)
            again.pin(known, held)
            assert again.pins() == ring.pins()
    before = ring.pins()
    copied = ring.copy()  # a copy's pins are its own (a fixed ring's copy shares no pins)
    for pos in range(copied.size):
        for value in values:
            if copied.can_pin(pos, value):
                copied.pin(pos, value)
    assert ring.pins() == before == _plain_pins(ring)


def _topic(rng: random.Random, racks: dict[int, str | None]) -> dict[int, list[int]]:
    """A topic the striped placer or ZooKeeper mode made, maybe edited or grown."""
    ids = sorted(racks)
    rf = rng.randint(1, len(ids))
    count = rng.randint(1, 3 * len(ids) + 2)
    if rng.random() < 0.5:
        usable = [(b, racks[b], False) for b in ids]
        parts = striped_place(usable, count, rf, rng=JavaRandom(rng.randint(0, 10**6)))
    else:
        parts = assign_replicas(ids, count, rf, rng=JavaRandom(rng.randint(0, 10**6)))
        if rng.random() < 0.3:
            parts = {**parts, **add_partitions(ids, parts, count + rng.randint(1, len(ids)))}
    parts = {p: list(r) for p, r in parts.items()}
    for _ in range(rng.choice([0, 0, 1, 3, count])):  # edited by hand, a few or all
        p = rng.choice(sorted(parts))
        parts[p] = rng.sample(ids, len(parts[p]))
    return parts


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=9, unique=True), st.data())
def test_striped_leader_check_gives_the_walks_from_a_copy(ids: list[int], data: st.DataObject):
    names = [None, "a", "b", "c"][: data.draw(st.integers(1, 4))]
    racks = {b: data.draw(st.sampled_from(names)) for b in ids}
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    parts = _topic(rng, racks)
    extra = data.draw(st.lists(st.integers(31, 40), max_size=2, unique=True))  # unused brokers

    def plain(self: _Matcher, p: int, env: object) -> object:
        return self.walks(p, self.at(p, env))  # type: ignore[arg-type]

    found = match_striped(parts, ids + extra, racks)
    with mock.patch.object(_Matcher, "walks_at", plain):
        assert found == match_striped(parts, ids + extra, racks)


def _plain_infer_layout(parts, brokers, racks):
    """infer_layout's choice over every search, none skipped (the oracle of the shortcut)."""
    from kreplica.kafka.layout import (
        _contiguous_prefix,
        _infer_aware,
        _infer_unaware,
        _infer_unaware_by_votes,
    )

    observed = sorted({b for r in parts.values() for b in r})
    sets = [observed]
    widened = sorted(set(brokers) | set(observed))
    if widened != observed:
        sets.append(widened)
    candidates = []
    i = 0
    for rank, members in enumerate(sets):
        searches = [
            lambda m=members: _infer_unaware(parts, m),
            lambda m=members: _infer_unaware_by_votes(parts, m),
        ]
        if all(racks.get(b) is not None for b in members):
            searches.append(lambda m=members: _infer_aware(parts, m, {b: racks[b] for b in m}))
        for search in searches:
            layout = search()
            if layout is not None:
                score = (
                    len(layout.conforming),
                    _contiguous_prefix(layout.conforming),
                    int(layout.rack_aware),
                    rank,
                )
                candidates.append((score, -i, layout))
            i += 1
    return max(candidates, key=lambda c: c[:2])[2] if candidates else None


@settings(max_examples=200, deadline=None)
@given(racked(), st.data())
def test_a_complete_rack_aware_layout_skips_the_rack_unaware_searches(
    rack_of: dict[int, str], data: st.DataObject
):
    from kreplica.kafka import infer_layout

    ids = sorted(rack_of)
    used = data.draw(st.lists(st.sampled_from(ids), min_size=1, unique=True))
    rf = data.draw(st.integers(1, len(used)))
    count = data.draw(st.integers(1, 12))
    aware = data.draw(st.booleans())
    placed = assign_replicas(
        used,
        count,
        rf,
        racks={b: rack_of[b] for b in used} if aware else None,
        rng=JavaRandom(data.draw(st.integers(0, 1 << 30))),
    )
    parts = {p: list(r) for p, r in placed.items()}
    if data.draw(st.booleans()):  # a partition edited by hand
        p = data.draw(st.integers(0, count - 1))
        parts[p] = list(data.draw(st.permutations(parts[p])))
    assert infer_layout(parts, ids, rack_of) == _plain_infer_layout(parts, ids, rack_of)
