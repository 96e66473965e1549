"""Generated clusters for the planner benchmarks (deterministic for a given seed)."""

from __future__ import annotations

import random

from kreplica.kafka import JavaRandom, assign_replicas
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic


def generated_cluster(
    *,
    brokers: int,
    racks: int,
    topics: int,
    partitions: int,
    rf: int,
    seed: int = 1,
    hand_made_share: float = 0.0,
    sized: bool = True,
) -> ClusterSnapshot:
    """`partitions` spread over `topics` (at least 1 each), laid out by Kafka's rack-aware
    placement with random draws; `hand_made_share` of the topics get random layouts."""
    rng = random.Random(seed)
    ids = list(range(brokers))
    rack_of = {b: f"rack-{b % racks}" for b in ids} if racks else {}
    counts = [1] * topics
    for _ in range(partitions - topics):
        counts[rng.randrange(topics)] += 1
    built = []
    for t, count in enumerate(counts):
        name = f"topic-{t:05d}"
        if rng.random() < hand_made_share:
            matrix = [rng.sample(ids, rf) for _ in range(count)]
        else:
            placed = assign_replicas(
                ids, count, rf, racks=rack_of or None, rng=JavaRandom(rng.randrange(1 << 31))
            )
            matrix = [placed[p] for p in range(count)]
        built.append(
            Topic(
                name,
                tuple(
                    Partition(
                        name,
                        p,
                        tuple(reps),
                        size_bytes=rng.randrange(1 << 20, 1 << 32) if sized else None,
                    )
                    for p, reps in enumerate(matrix)
                ),
            )
        )
    return ClusterSnapshot(
        brokers=tuple(Broker(b, rack=rack_of.get(b)) for b in ids),
        topics=tuple(built),
        cluster_id=f"bench-{seed}",
    )


def write_scale_snapshot(
    path: str,
    *,
    brokers: int,
    racks: int,
    partitions: int,
    rf: int = 2,
    per_topic: int = 500,
    misplaced_share: float = 0.02,
    seed: int = 1,
    empty: int = 0,
) -> None:
    """A snapshot file as `kreplica snapshot` writes it (leader, ISR, sizes) for the scale
    benchmark: topics of `per_topic` partitions (fewer for the last one) laid out by Kafka's
    placement (rack-aware when `racks`); `misplaced_share` of the topics (the first, then every
    1/share-th) are laid out as if there were no racks, so rack repair has work; `empty`
    brokers more (ids after the others, racks in turn) hold nothing, as if just added."""
    import orjson

    rng = random.Random(seed)
    ids = list(range(brokers))
    rack_of = {b: f"rack-{b % racks}" for b in range(brokers + empty)} if racks else None
    topics = []
    left, t = partitions, 0
    while left > 0:
        count = min(per_topic, left)
        left -= count
        # every (1/misplaced_share)-th topic, the first included, ignores the racks
        every = round(1 / misplaced_share) if misplaced_share else 0
        aware = rack_of is not None and not (every and t % every == 0)
        placed = assign_replicas(
            ids,
            count,
            rf,
            racks=rack_of if aware else None,
            rng=JavaRandom(rng.randrange(1 << 31)),
        )
        topics.append(
            {
                "name": f"topic-{t:05d}",
                "configs": {},
                "partitions": [
                    {
                        "partition": p,
                        "replicas": placed[p],
                        "leader": placed[p][0],
                        "isr": placed[p],
                        "size_bytes": rng.randrange(1 << 20, 1 << 32),
                    }
                    for p in range(count)
                ],
            }
        )
        t += 1
    doc = {
        "kreplica_snapshot": 1,
        "cluster_id": f"scale-{brokers}-{racks}-{partitions}",
        "source": "bench/planner_clusters.py",
        "captured_at": None,
        "brokers": [
            {"id": b, "rack": rack_of[b] if rack_of else None, "host": f"10.0.{b // 250}.{b % 250}"}
            for b in range(brokers + empty)
        ],
        "topics": topics,
    }
    with open(path, "wb") as f:
        f.write(orjson.dumps(doc))
