"""`kreplica explain` from a snapshot's columns against the per-topic explanation it stands in
for: the same documents on random clusters (Kafka-placed in both modes, near and far from it)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kreplica.columns import ColumnarSnapshot
from kreplica.kafka import JavaRandom, assign_replicas, infer_layout, striped_place
from kreplica.kafka.zk import add_partitions
from kreplica.planner.explain import explain_topic
from kreplica.planner.explain_arrays import explain_columns, explain_topics
from kreplica.planner.layout_arrays import aware_creation_layouts
from kreplica.sources.snapshot import parse_snapshot, parse_snapshot_columnar


def _placed(rng: random.Random, ids: list[int], racks: dict[int, str | None]) -> dict[int, Any]:
    """One topic's assignment: Kafka's placement in either mode over all or some brokers, a
    later add-partitions, or by hand; now and then a partition edited or left out."""
    users = sorted(rng.sample(ids, rng.randint(1, len(ids))))
    rf = rng.randint(1, len(users))
    partitions = rng.randint(1, 2 * len(users) + 2)
    seed = rng.randrange(1 << 40)
    named = {b: r for b, r in racks.items() if b in users and r is not None}
    kind = rng.choice(["zk", "zk", "striped", "grown", "hand"])
    if kind == "zk":
        aware = named if len(named) == len(users) and rng.random() < 0.8 else None
        placed = assign_replicas(users, partitions, rf, racks=aware, rng=JavaRandom(seed))
    elif kind == "striped":
        usable = [(b, racks[b], False) for b in users]
        placed = striped_place(usable, partitions, rf, rng=JavaRandom(seed))
    elif kind == "grown":
        aware = named if len(named) == len(users) else None
        first = assign_replicas(users, partitions, rf, racks=aware, rng=JavaRandom(seed))
        more = partitions + rng.randint(1, len(users))
        placed = {**first, **add_partitions(users, first, more, racks=aware)}
    else:
        placed = {p: rng.sample(users, rf) for p in range(partitions)}
    layout = {int(p): list(r) for p, r in placed.items()}
    if rng.random() < 0.3:
        p = rng.randrange(len(layout))
        layout[p] = rng.sample(ids, len(layout[p]))
    if rng.random() < 0.2 and len(layout) > 1:
        del layout[rng.randrange(1, len(layout))]
    return layout


def _snapshot_doc(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    ids = sorted(rng.sample(range(40), rng.randint(1, 12)))
    names = ["eu-1a", "eu-1b", "eu-1c", "us-2"][: rng.randint(1, 4)]
    rackless = rng.random() < 0.2
    racks = {b: (None if rackless and rng.random() < 0.5 else rng.choice(names)) for b in ids}
    topics = {f"t{i}": _placed(rng, ids, racks) for i in range(rng.randint(1, 6))}
    return {
        "kreplica_snapshot": 1,
        "brokers": [{"id": b, "rack": racks[b], "alive": rng.random() > 0.1} for b in ids],
        "topics": [
            {
                "name": name,
                "partitions": [
                    {"partition": p, "replicas": reps} for p, reps in sorted(parts.items())
                ],
            }
            for name, parts in topics.items()
        ],
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32))
def test_explaining_the_columns_gives_each_topics_explanation(seed: int) -> None:
    doc = _snapshot_doc(seed)
    columnar = parse_snapshot_columnar(doc)
    assert isinstance(columnar, ColumnarSnapshot) and columnar.columns is not None
    objects = parse_snapshot(doc)
    names = [t.name for t in objects.topics]
    rng = random.Random(seed)
    if rng.random() < 0.3:  # some topics, in any order (`explain --topic`)
        names = rng.sample(names, rng.randint(1, len(names)))
    found = explain_columns(columnar, columnar.columns, names)
    assert found == [explain_topic(objects, name) for name in names]


def test_kafka_placed_topics_skip_the_searches() -> None:
    """Rack-aware ZooKeeper-mode topics over a cluster with empty brokers too (the shape of
    bench_ops.py) are answered from the arrays, with the layout the search finds; a topic
    whose every leader the whole cluster's list could also give goes to the search."""
    rng = random.Random(7)
    racks = {b: f"rack-{b % 3}" for b in range(14)}
    users = list(range(12))  # brokers 12 and 13 hold nothing yet
    topics = []
    for t in range(8):
        aware = {b: racks[b] for b in users}
        placed = assign_replicas(users, 12, 3, racks=aware, rng=JavaRandom(rng.randrange(1 << 31)))
        parts = [{"partition": p, "replicas": placed[p]} for p in range(12)]
        topics.append({"name": f"t{t}", "partitions": parts})
    doc = {
        "kreplica_snapshot": 1,
        "brokers": [{"id": b, "rack": r} for b, r in racks.items()],
        "topics": topics,
    }
    columnar = parse_snapshot_columnar(doc)
    assert isinstance(columnar, ColumnarSnapshot) and columnar.columns is not None
    layouts = aware_creation_layouts(columnar.columns, columnar.brokers)
    assert layouts
    objects = parse_snapshot(doc)
    for i, layout in layouts.items():
        assignment = objects.topics[i].assignment()
        assert layout == infer_layout(assignment, objects.broker_ids(), objects.racks())
    names = [t.name for t in objects.topics]
    assert explain_topics(columnar, names) == [explain_topic(objects, n) for n in names]
