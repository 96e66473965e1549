"""kreplica.planner.striped: recognising KRaft's StripedReplicaPlacer in an assignment.

Every layout striped_place (the bit-exact port) produces must be recognised in full; layouts
the placer cannot produce must not be.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kreplica.kafka import JavaRandom, MockRandom, assign_replicas, striped_place
from kreplica.planner.striped import match_striped
from tests.conftest import VECTORS

SIX = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}  # the sandbox's 6 brokers on 3 racks


def _usable(racks: dict[int, str | None]) -> list[tuple[int, str | None, bool]]:
    return [(b, racks[b], False) for b in sorted(racks)]


@st.composite
def clusters(draw: st.DrawFn) -> tuple[dict[int, str | None], int, int, int]:
    ids = draw(st.lists(st.integers(0, 30), min_size=1, max_size=10, unique=True))
    rack_count = draw(st.integers(0, 4))  # 0: no broker has a rack
    names = ["r" + "x" * i for i in range(rack_count)]
    # A KRaft broker without a rack is its own pseudo rack: allow a few among racked ones.
    rack_of = st.sampled_from([*names, None]) if names else st.just(None)
    racks = {b: draw(rack_of) for b in ids}
    rf = draw(st.integers(1, len(ids)))
    partitions = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**40))
    return racks, rf, partitions, seed


@settings(max_examples=400, deadline=None)
@given(clusters())
def test_every_striped_layout_is_recognised(case: tuple[dict[int, str | None], int, int, int]):
    racks, rf, partitions, seed = case
    layout = striped_place(_usable(racks), partitions, rf, rng=JavaRandom(seed))
    match = match_striped(layout, list(racks), racks)
    assert match is not None
    assert match.nonconforming == ()
    assert match.fitting == tuple(range(partitions))
    assert match.cycle_length == len(racks)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.integers(1, 3), st.integers(1, 60), st.integers(0, 2**32))
def test_rackless_striped_layouts_are_recognised(brokers, rf, partitions, seed):
    rf = min(rf, brokers)
    racks: dict[int, str | None] = dict.fromkeys(range(brokers))
    layout = striped_place(_usable(racks), partitions, rf, rng=MockRandom(seed))
    match = match_striped(layout, list(racks))
    assert match is not None and match.nonconforming == ()
    assert match.racks == (None,)


def test_kafka_vectors_without_fenced_brokers_are_recognised():
    vector_file = VECTORS / "kafka_assignment_vectors.json"
    vectors = json.loads(vector_file.read_text())
    checked = 0
    for vector in vectors:
        if vector["algorithm"] != "striped":
            continue
        for call in vector["calls"]:
            usable: list[dict[str, Any]] = call["usable_brokers"]
            if "error" in call["expected"] or any(b["fenced"] for b in usable):
                continue
            layout = {int(p): r for p, r in call["expected"].items()}
            racks = {b["id"]: b["rack"] for b in usable}
            match = match_striped(layout, list(racks), racks)
            assert match is not None and match.nonconforming == (), vector["source"]
            checked += 1
    assert checked >= 3  # testSuccessfulPlacement, testEvenDistribution (200 partitions), ...


def test_a_rack_that_gave_all_its_brokers_one_cycle_earlier_gives_nothing():
    # 3 brokers on 3 racks, RF 1: partitions 3 and 4 both land on broker 2. The placer's
    # BrokerList for the rack at partition 4's offset still holds the epoch it had one cycle
    # (3 partitions) earlier, with its only broker used, so the leader moves on a rack.
    racks: dict[int, str | None] = {1: "a", 2: "b", 3: "c"}
    layout = striped_place(_usable(racks), 7, 1, rng=JavaRandom(0))
    assert layout == {0: [3], 1: [1], 2: [2], 3: [2], 4: [2], 5: [1], 6: [1]}
    match = match_striped(layout, list(racks), racks)
    assert match is not None and match.nonconforming == ()


def test_a_partition_cut_to_a_prefix_of_its_replicas_still_fits():
    # Only the last partition: the placer's bookkeeping for later partitions would need the
    # replicas that were cut, so a partition cut in the middle also unsettles its successors.
    layout = striped_place(_usable(SIX), 12, 3, rng=JavaRandom(5))
    layout[11] = layout[11][:2]
    match = match_striped(layout, list(SIX), SIX)
    assert match is not None and match.nonconforming == ()
    layout[11] = [layout[11][1], layout[11][0]]
    match = match_striped(layout, list(SIX), SIX)
    assert match is not None and match.nonconforming == (11,)


def test_a_leader_rack_that_does_not_alternate_is_rejected():
    # Racks must alternate per partition: two partitions in a row led from rack a cannot be.
    layout = {0: [1, 2], 1: [4, 5], 2: [1, 2], 3: [4, 5], 4: [1, 2], 5: [4, 5]}
    match = match_striped(layout, list(SIX), SIX)
    assert match is None or len(match.fitting) <= 3


def test_brokers_that_do_not_rotate_inside_a_rack_are_rejected():
    # Racks alternate a, b, c, a, b, c as the placer does, but rack a hands broker 1 twice in
    # a row and rack b broker 2 twice (in one cycle each rack's brokers take turns).
    layout = {0: [1, 2, 3], 1: [2, 3, 4], 2: [3, 1, 2], 3: [1, 2, 3], 4: [2, 3, 1], 5: [3, 1, 2]}
    match = match_striped(layout, list(SIX), SIX)
    assert match is not None
    assert 3 in match.nonconforming and len(match.fitting) < 6


def test_two_replicas_on_one_rack_before_every_rack_has_one_is_rejected():
    layout = striped_place(_usable(SIX), 6, 3, rng=JavaRandom(1))
    leader = layout[2][0]
    [rack_mate] = [b for b in SIX if SIX[b] == SIX[leader] and b != leader]
    layout[2] = [leader, rack_mate, layout[2][1]]
    match = match_striped(layout, list(SIX), SIX)
    assert match is not None and 2 in match.nonconforming


def test_a_partition_edited_by_hand_costs_itself():
    layout = striped_place(_usable(SIX), 24, 3, rng=JavaRandom(11))
    layout[9] = list(reversed(layout[9]))
    match = match_striped(layout, list(SIX), SIX)
    assert match is not None
    assert 9 in match.nonconforming and len(match.fitting) >= 20


def test_zookeeper_layouts_are_not_taken_for_striped_ones():
    fitted = []
    for seed in range(20):
        layout = assign_replicas(sorted(SIX), 12, 3, racks=SIX, rng=JavaRandom(seed))
        match = match_striped(layout, list(SIX), SIX)
        fitted.append(len(match.fitting) if match else 0)
    assert max(fitted) <= 6  # never most of the 12 partitions


@pytest.mark.parametrize("broken", [{0: []}, {0: [1, 1]}, {0: [1, 99]}])
def test_impossible_partitions_never_fit(broken):
    racks: dict[int, str | None] = {1: "a", 2: "b"}
    match = match_striped(broken, [1, 2], racks)
    assert match is None or 0 in match.nonconforming


def test_nothing_to_match():
    assert match_striped({}, [1, 2, 3]) is None


@st.composite
def first_cycle_topics(draw: st.DrawFn) -> tuple[dict[int, list[int]], dict[int, str | None]]:
    """A topic whose partitions all fall in the striped placer's first cycle: striped or ZK
    layouts, hand-made ones, and each with a few partitions edited or missing."""
    ids = draw(st.lists(st.integers(0, 40), min_size=1, max_size=14, unique=True))
    names = ["r" + "x" * i for i in range(draw(st.integers(0, 4)))]
    rack_of = st.sampled_from([*names, None]) if names else st.just(None)
    racks = {b: draw(rack_of) for b in ids}
    rf = draw(st.integers(1, len(ids)))
    partitions = draw(st.integers(1, len(ids)))
    seed = draw(st.integers(0, 2**40))
    kind = draw(st.sampled_from(["striped", "zookeeper", "hand-made"]))
    if kind == "striped":
        placed = striped_place(_usable(racks), partitions, rf, rng=JavaRandom(seed))
    elif kind == "zookeeper":
        named = {b: r for b, r in racks.items() if r is not None}
        aware = named if len(named) == len(ids) else None
        placed = assign_replicas(sorted(ids), partitions, rf, racks=aware, rng=JavaRandom(seed))
    else:
        placed = {
            p: draw(st.permutations(ids))[: draw(st.integers(1, rf))] for p in range(partitions)
        }
    layout = {int(p): list(r) for p, r in placed.items()}
    for p in draw(st.lists(st.integers(0, partitions - 1), max_size=3)):
        layout[p] = draw(st.permutations(ids))[: len(layout[p])]
    if partitions > 1 and draw(st.booleans()):
        del layout[draw(st.integers(0, partitions - 1))]
    return layout, racks


@settings(max_examples=600, deadline=None)
@given(first_cycle_topics())
def test_first_cycle_answer_is_the_search_answer(
    case: tuple[dict[int, list[int]], dict[int, str | None]],
):
    """With every partition in the first cycle, match_striped skips the search: the partitions
    it finds fitting are the search's, on random layouts near and far from the placer's."""
    from kreplica.planner.striped import _first_cycle_fits, _Matcher, _one_cycle

    layout, racks = case
    members: dict[str | None, list[int]] = {}
    for b in sorted(racks):
        members.setdefault(racks[b], []).append(b)
    used = {b for replicas in layout.values() for b in replicas}
    for length in {len(racks), len(used)}:
        if _one_cycle(layout, length):
            searched = _Matcher(layout, racks, members, length).run()
            assert _first_cycle_fits(layout, racks, members) == searched
