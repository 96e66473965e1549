"""The batch check of Kafka's default layout against the per-topic search it stands in for."""

from __future__ import annotations

import json
import random
from typing import Any

import hypothesis.strategies as st
import numpy as np
from hypothesis import HealthCheck, given, settings

from kreplica.columns import ColumnarSnapshot
from kreplica.fleet.synth import synth_fleet
from kreplica.kafka import add_partitions
from kreplica.kafka.randoms import JavaRandom
from kreplica.kafka.zk import assign_replicas, rack_alternated_brokers
from kreplica.planner.explain import (
    KRAFT_STRIPED,
    ZOOKEEPER,
    default_or_closest,
    layout_verdict,
)
from kreplica.planner.layout_arrays import zookeeper_default_topics
from kreplica.sources.snapshot import (
    dump_snapshot,
    parse_snapshot_columnar,
    parse_snapshot_text_columnar,
)
from tests.conftest import VECTORS


def _columnar(doc: dict[str, Any]) -> ColumnarSnapshot:
    snapshot = parse_snapshot_columnar(doc)
    assert isinstance(snapshot, ColumnarSnapshot) and snapshot.columns is not None
    return snapshot


def _doc(brokers: list[tuple[int, str | None]], topics: dict[str, dict[int, list[int]]]) -> Any:
    return {
        "kreplica_snapshot": 1,
        "brokers": [{"id": b, "rack": r} for b, r in brokers],
        "topics": [
            {
                "name": name,
                "partitions": [
                    {"partition": p, "replicas": reps} for p, reps in sorted(parts.items())
                ],
            }
            for name, parts in sorted(topics.items())
        ],
    }


def _agrees(snapshot: ColumnarSnapshot) -> tuple[np.ndarray, list[Any]]:
    """The mask, and the search's verdicts; every topic the mask confirms is Kafka's default
    to the search too, and to the audit's short search. (The placement the search names may be
    KRaft's striped one: a topic both explain, the striped placer without an add-partitions
    call, goes to it.)"""
    assert snapshot.columns is not None
    mask = zookeeper_default_topics(snapshot.columns, snapshot.brokers)
    verdicts = [
        layout_verdict(snapshot, snapshot.columns.materialise(i))
        for i in range(len(snapshot.columns.topics))
    ]
    for i, (confirmed, verdict) in enumerate(zip(mask, verdicts, strict=True)):
        if confirmed:
            name = snapshot.columns.topics[i].name
            assert verdict[0] is True and verdict[1] in (ZOOKEEPER, KRAFT_STRIPED), name
            topic = snapshot.columns.materialise(i)
            assert default_or_closest(snapshot, topic) == (True, None), name
    return mask, verdicts


def test_a_rack_unaware_creation_on_racks_is_confirmed_as_the_search_says_default() -> None:
    """Found by hypothesis: ZooKeeper mode places {0: [3], 1: [4]} rack-unaware (start 3;
    kafka-topics --disable-rack-aware on a racked cluster); the search explains it by a
    creation plus an add-partitions call, ties it with KRaft's striped placement, and names
    that. Kafka's default either way, which is what the audit asks."""
    brokers = [(0, "a"), (1, "a"), (2, "a"), (3, "b"), (4, "a")]
    mask, verdicts = _agrees(_columnar(_doc(brokers, {"t1": {0: [3], 1: [4]}})))
    assert list(mask) == [True] and verdicts[0][0] is True


def test_synthetic_fleet_agrees_with_the_search() -> None:
    confirmed = 0
    for cluster in synth_fleet(6, 6000, seed=11):
        mask, _ = _agrees(parse_snapshot_text_columnar(dump_snapshot(cluster)))
        confirmed += int(mask.sum())
    assert confirmed > 50  # most synthetic topics are Kafka-made: the table answers them


def test_kafka_vectors_of_creation_are_confirmed() -> None:
    vectors = json.loads((VECTORS / "kafka_assignment_vectors.json").read_text())
    checked = 0
    for v in vectors:
        if v["algorithm"] not in ("rack_unaware", "rack_aware") or "expected" not in v:
            continue
        if v.get("start_partition_id", -1) not in (-1, 0) or v.get("expected_error"):
            continue
        racks = v.get("racks") or {}
        brokers = [(b, racks.get(str(b))) for b in sorted(v["brokers"])]
        if v["algorithm"] == "rack_unaware" and v["brokers"] != sorted(v["brokers"]):
            continue  # Kafka indexed an unsorted list: the search's job, not the table's
        parts = {int(p): reps for p, reps in v["expected"].items()}
        mask, verdicts = _agrees(_columnar(_doc(brokers, {"t": parts})))
        assert mask[0] == (verdicts[0] == (True, ZOOKEEPER)), v["source"]
        assert mask[0], v["source"]
        checked += 1
    assert checked >= 5


@st.composite
def clusters(draw: Any) -> tuple[list[tuple[int, str | None]], dict[str, dict[int, list[int]]]]:
    n = draw(st.integers(1, 9))
    ids = sorted(draw(st.sets(st.integers(0, 40), min_size=n, max_size=n)))
    rack_count = draw(st.integers(0, 3))
    names = ["a", "b", "c"][:rack_count]
    racks: dict[int, str | None] = {
        b: (draw(st.sampled_from(names)) if names and draw(st.integers(0, 9)) else None)
        for b in ids
    }
    if rack_count and draw(st.booleans()):
        racks = {b: draw(st.sampled_from(names)) for b in ids}
    seed = draw(st.integers(0, 2**31 - 1))
    rng = random.Random(seed)
    topics: dict[str, dict[int, list[int]]] = {}
    for t in range(draw(st.integers(1, 5))):
        rf = rng.randint(1, n)
        count = rng.randint(1, 3 * n + 2)
        aware = all(r is not None for r in racks.values()) and rng.random() < 0.6
        parts = assign_replicas(
            ids,
            count,
            rf,
            racks=racks if aware else None,
            rng=JavaRandom(rng.randint(0, 10**6)),
        )
        kind = rng.random()
        if kind < 0.25:  # grown later by ZK add-partitions
            grown = add_partitions(
                ids, parts, count + rng.randint(1, 2 * n), racks=racks if aware else None
            )
            parts = {**parts, **grown}
        elif kind < 0.45:  # one partition edited by hand
            p = rng.randrange(count)
            parts[p] = list(reversed(parts[p]))
        elif kind < 0.55:  # a broker list Kafka was given out of order
            shuffled = ids[:]
            rng.shuffle(shuffled)
            parts = assign_replicas(shuffled, count, rf, rng=JavaRandom(rng.randint(0, 10**6)))
        topics[f"t{t}"] = {p: list(r) for p, r in parts.items()}
    return [(b, racks[b]) for b in ids], topics


@given(clusters())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_never_confirms_what_the_search_refutes(cluster: Any) -> None:
    brokers, topics = cluster
    _agrees(_columnar(_doc(brokers, topics)))


def test_confirms_creation_over_whole_list_and_not_edits() -> None:
    brokers = [(1, "x"), (2, "x"), (3, "y"), (4, "y"), (5, "z"), (6, "z")]
    racks = dict(brokers)
    ids = [b for b, _ in brokers]
    made = assign_replicas(ids, 14, 3, rng=JavaRandom(5))
    aware = assign_replicas(ids, 9, 3, racks=racks, rng=JavaRandom(9))
    edited = {p: list(r) for p, r in made.items()}
    edited[3] = [edited[3][1], edited[3][0], edited[3][2]]
    topics = {"aware": aware, "edited": edited, "made": made}
    mask, verdicts = _agrees(_columnar(_doc(brokers, topics)))
    assert list(mask) == [True, False, True]  # topics sorted by name
    assert verdicts[1][0] is False
    assert rack_alternated_brokers(racks) != ids  # the aware topic used the other list


def test_topics_the_table_cannot_answer() -> None:
    # partition ids with a gap, mixed replication factors, a replica on an unlisted broker
    brokers = [(0, None), (1, None), (2, None)]
    topics = {
        "gap": {0: [0, 1], 2: [2, 0]},
        "mixed": {0: [0, 1], 1: [1, 2, 0]},
        "stray": {0: [0, 7]},
    }
    mask, _ = _agrees(_columnar(_doc(brokers, topics)))
    assert not mask.any()


def test_snapshot_without_brokers_or_topics() -> None:
    empty = _columnar(_doc([], {"t": {0: [1]}}))
    assert empty.columns is not None
    assert not zookeeper_default_topics(empty.columns, empty.brokers).any()


@given(clusters())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_short_search_gives_the_verdict(cluster: Any) -> None:
    """`default_or_closest` stops at the first layout that reproduces every partition: its
    answer is still `layout_verdict`'s (the placement named only for a layout not Kafka's
    default)."""
    brokers, topics = cluster
    snapshot = _columnar(_doc(brokers, topics))
    assert snapshot.columns is not None
    for i in range(len(snapshot.columns.topics)):
        topic = snapshot.columns.materialise(i)
        default, placement = layout_verdict(snapshot, topic)
        assert default_or_closest(snapshot, topic) == (default, None if default else placement)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.integers(0, 60), st.sampled_from("abcde"), min_size=1, max_size=16),
    st.data(),
)
def test_aware_replicas_are_kafkas_for_every_first_index_and_shift(
    racks: dict[int, str], data: st.DataObject
) -> None:
    """The vectorised scan gives `zk_replicas` over the rack-alternated list, pair by pair."""
    from kreplica.kafka.zk import zk_replicas
    from kreplica.planner.layout_arrays import aware_replicas

    order = rack_alternated_brokers(racks)
    n = len(order)
    rf = data.draw(st.integers(1, n))
    names = sorted(set(racks.values()))
    rack = np.asarray([names.index(racks[b]) for b in order], dtype=np.int64)
    shifts = max(n - 1, 1)
    first = np.repeat(np.arange(n, dtype=np.int64), shifts)
    shift = np.tile(np.arange(shifts, dtype=np.int64), n)
    got = aware_replicas(np.asarray(order, dtype=np.int64), rack, len(names), rf, first, shift)
    for f, s, positions in zip(first.tolist(), shift.tolist(), got.tolist(), strict=True):
        expected = zk_replicas(order, racks, len(names), rf, f, s)
        assert [order[i] for i in positions] == expected
