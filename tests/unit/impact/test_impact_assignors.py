"""The Java consumer assignors: the seed's worked examples and invariants on random groups."""

from __future__ import annotations

import random

import pytest

from kreplica.errors import InputError
from kreplica.impact.assignors import (
    ASSIGNORS,
    GroupSpec,
    assign,
    assignment_json,
    compare,
    parse_group_document,
)


def _group(topics: dict[str, int], members: dict[str, list[str]]) -> GroupSpec:
    return parse_group_document(
        {"members": [{"id": m, "topics": ts} for m, ts in members.items()], "topics": topics}
    )


def _ranges(result: dict[str, list[tuple[str, int]]], topic: str) -> dict[str, list[int]]:
    return {m: [p for t, p in tps if t == topic] for m, tps in result.items()}


def test_seed_range_10_and_11_partitions_three_consumers() -> None:
    three = {"C1": ["T1"], "C2": ["T1"], "C3": ["T1"]}
    ten = assign("range", _group({"T1": 10}, three))
    assert _ranges(ten, "T1") == {"C1": [0, 1, 2, 3], "C2": [4, 5, 6], "C3": [7, 8, 9]}
    eleven = assign("range", _group({"T1": 11}, three))
    assert _ranges(eleven, "T1") == {"C1": [0, 1, 2, 3], "C2": [4, 5, 6, 7], "C3": [8, 9, 10]}


def test_seed_range_two_topics_first_consumer_gets_two_more() -> None:
    both = {c: ["T1", "T2"] for c in ("C1", "C2", "C3")}
    result = assign("range", _group({"T1": 10, "T2": 10}, both))
    for topic in ("T1", "T2"):
        assert _ranges(result, topic) == {"C1": [0, 1, 2, 3], "C2": [4, 5, 6], "C3": [7, 8, 9]}
    assert len(result["C1"]) - len(result["C3"]) == 2


def test_seed_roundrobin_three_topics_different_subscriptions() -> None:
    # the seed prints the last one as "T0-P3"; T0 has three partitions, it is T2-P3
    group = _group(
        {"T0": 3, "T1": 2, "T2": 4},
        {"C0": ["T0", "T1"], "C1": ["T1", "T2"], "C2": ["T2", "T0"]},
    )
    assert assignment_json(assign("roundrobin", group)) == {
        "C0": ["T0-0", "T0-2", "T1-1"],
        "C1": ["T1-0", "T2-0", "T2-2"],
        "C2": ["T0-1", "T2-1", "T2-3"],
    }


def test_seed_roundrobin_five_partitions_two_consumers() -> None:
    result = assign("roundrobin", _group({"T": 5}, {"C0": ["T"], "C1": ["T"]}))
    assert _ranges(result, "T") == {"C0": [0, 2, 4], "C1": [1, 3]}


def test_static_members_sort_by_instance_id_first() -> None:
    group = parse_group_document(
        {
            "members": [
                {"id": "a", "topics": ["T"]},
                {"id": "z", "topics": ["T"], "instance": "i-1"},
            ],
            "topics": {"T": 4},
        }
    )
    assert _ranges(assign("range", group), "T") == {"z": [0, 1], "a": [2, 3]}


def test_sticky_keeps_owned_partitions_when_a_topic_grows() -> None:
    group = parse_group_document(
        {
            "members": [
                {"id": "C1", "topics": ["T"], "owned": ["T-0", "T-3"]},
                {"id": "C2", "topics": ["T"], "owned": ["T-1", "T-4"]},
                {"id": "C3", "topics": ["T"], "owned": ["T-2", "T-5"]},
            ],
            "topics": {"T": 9},
        }
    )
    for name in ("sticky", "cooperative-sticky"):
        result = assign(name, group)
        assert ("T", 0) in result["C1"] and ("T", 3) in result["C1"]
        assert sorted(len(v) for v in result.values()) == [3, 3, 3]


def test_cooperative_sticky_holds_back_partitions_changing_owner() -> None:
    group = parse_group_document(
        {
            "members": [
                {"id": "C1", "topics": ["T"], "owned": ["T-0", "T-1", "T-2", "T-3"]},
                {"id": "C2", "topics": ["T"], "owned": []},
            ],
            "topics": {"T": 4},
        }
    )
    eager = assign("sticky", group)
    coop = assign("cooperative-sticky", group)
    assert sorted(len(v) for v in eager.values()) == [2, 2]
    assert coop["C2"] == []  # first round: C1 revokes; C2 gets them in the follow-up rebalance
    assert len(coop["C1"]) == 2
    follow_up = assign("cooperative-sticky", group.after(coop))
    assert sorted(len(v) for v in follow_up.values()) == [2, 2]


@pytest.mark.parametrize("name", ASSIGNORS)
def test_every_subscribed_partition_is_assigned_once_to_a_subscriber(name: str) -> None:
    rnd = random.Random(name)
    for _ in range(150):
        topics = {f"t{i}": rnd.randint(0, 9) for i in range(rnd.randint(1, 4))}
        members = {
            f"m{j}": rnd.sample(sorted(topics), rnd.randint(1, len(topics)))
            for j in range(rnd.randint(1, 5))
        }
        result = assign(name, _group(topics, members))
        seen = [tp for tps in result.values() for tp in tps]
        assert len(seen) == len(set(seen))
        for member, tps in result.items():
            assert all(t in members[member] for t, _ in tps)
        if name != "cooperative-sticky":  # it may hold partitions back for a round
            wanted = {(t, p) for ts in members.values() for t in ts for p in range(topics[t])}
            assert set(seen) == wanted


def test_compare_counts_owner_changes_and_members_above_share() -> None:
    before = {"C1": [("T", 0), ("T", 1)], "C2": [("T", 2)]}
    after = {"C1": [("T", 0)], "C2": [("T", 1), ("T", 2), ("T", 3)]}
    diff = compare(before, after)
    assert diff["changed_owner"] == ["T-1"]
    assert diff["newly_assigned"] == ["T-3"]
    assert diff["above_share"] == {"C2": 3}


@pytest.mark.parametrize(
    "doc",
    [
        [],
        {"members": []},
        {"members": [{"id": "a", "topics": "T"}], "topics": {}},
        {"members": [{"id": "a", "topics": ["T"]}, {"id": "a", "topics": ["T"]}]},
        {"members": [{"id": "a", "topics": ["T"], "owned": ["T-9"]}], "topics": {"T": 3}},
        {"members": [{"id": "a", "topics": ["T"], "owned": ["nope"]}], "topics": {"T": 3}},
    ],
)
def test_bad_group_files_are_input_errors(doc: object) -> None:
    with pytest.raises(InputError):
        parse_group_document(doc)
