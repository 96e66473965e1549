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
