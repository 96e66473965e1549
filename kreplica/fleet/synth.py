"""Synthetic fleets (`kreplica fleet synth`): snapshots that look like real clusters (pure).

Per cluster: 3 to 24 brokers, usually on 3 racks (some on 2, some without racks, now and then
one broker down); topics with partition counts operators pick (1 to 128), an RF mix (mostly 3,
some 2 and 1, a few 4), min.insync.replicas overrides on some topics, sizes with a heavy tail
(a few hot topics and hot partitions hold most bytes). Most topics are laid out by Kafka's own
placement (`kreplica.kafka.assign_replicas`), some grown later with add-partitions, some
hand-assigned; a few partitions have a replica out of sync or a leader off the preferred
replica. The same seed gives the same fleet, byte for byte.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from kreplica import kafka
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from kreplica.sources.snapshot import write_snapshot

PARTITION_CHOICES = (1, 3, 6, 8, 12, 12, 16, 24, 24, 32, 48, 50, 64, 100, 128)
RF_CHOICES = (3,) * 14 + (2,) * 4 + (1,) + (4,)
WORDS = (
    "orders", "payments", "clicks", "events", "audit", "metrics", "logs", "users", "carts",
    "search", "billing", "shipments", "inventory", "alerts", "sessions", "ads", "fraud",
)  # fmt: skip


def cluster_sizes(clusters: int, partitions: int, rng: random.Random) -> list[int]:
    """Partitions per cluster: skewed (a few big clusters), summing to `partitions`."""
    weights = [rng.lognormvariate(0.0, 0.8) for _ in range(clusters)]
    total = sum(weights)
    sizes = [max(1, int(partitions * w / total)) for w in weights]
    diff = partitions - sum(sizes)
    i = 0
    while diff != 0:  # spread the rounding over the clusters, never below 1
        j = i % clusters
        if diff > 0:
            sizes[j] += 1
            diff -= 1
        elif sizes[j] > 1:
            sizes[j] -= 1
            diff += 1
        i += 1
    return sizes


def _brokers(rng: random.Random, partitions: int) -> list[Broker]:
    n = rng.choice((3, 4, 5, 6, 6, 6, 9, 9, 12, 12))
    if partitions > 20_000:
        n = max(n, rng.choice((12, 18, 24)))
    layout = rng.random()
    if layout < 0.1:
        racks: list[str | None] = [None] * n
    elif layout < 0.25:
        racks = [f"rack-{'ab'[i % 2]}" for i in range(n)]
    else:
        racks = [f"eu-west-1{'abc'[i % 3]}" for i in range(n)]
    dead = rng.randrange(n) if rng.random() < 0.05 else -1
    first = rng.choice((0, 1, 1, 100))
    return [
        Broker(
            id=first + i,
            rack=racks[i],
            host=f"10.0.{first % 200}.{i + 10}",
            port=9092,
            alive=i != dead,
        )
        for i in range(n)
    ]


def _layout(rng: random.Random, brokers: list[Broker], count: int, rf: int) -> dict[int, list[int]]:
    ids = [b.id for b in brokers]
    racks = {b.id: b.rack for b in brokers}
    has_racks = all(r is not None for r in racks.values())
    kind = rng.random()
    java = kafka.JavaRandom(rng.randrange(1 << 30))
    if kind < 0.15:  # hand-made: whatever someone typed
        return {p: rng.sample(ids, rf) for p in range(count)}
    if kind < 0.3 and count > 1:  # created smaller, grown later with add-partitions
        first = max(1, count // rng.choice((2, 3, 4)))
        base = kafka.assign_replicas(ids, first, rf, racks=racks if has_racks else None, rng=java)
        grown = kafka.add_partitions(ids, base, count, racks=racks if has_racks else None)
        return {**base, **grown}
    return kafka.assign_replicas(ids, count, rf, racks=racks if has_racks else None, rng=java)


def synth_cluster(index: int, partitions: int, rng: random.Random) -> ClusterSnapshot:
    brokers = _brokers(rng, partitions)
    live = [b.id for b in brokers if b.alive]
    topics: list[Topic] = []
    left = partitions
    used: set[str] = set()
    while left > 0:
        count = min(left, rng.choice(PARTITION_CHOICES))
        left -= count
        rf = min(rng.choice(RF_CHOICES), len(brokers))
        name = f"{rng.choice(WORDS)}.{rng.choice(WORDS)}-{rng.randrange(1000):03d}"
        while name in used:
            name += "x"
        used.add(name)
        configs: dict[str, str] = {}
        roll = rng.random()
        if roll < 0.3:
            configs["min.insync.replicas"] = "2"
        elif roll < 0.33 and rf <= 3:
            configs["min.insync.replicas"] = str(rf)  # a mistake: RF <= min.insync
        hot = rng.paretovariate(1.2)  # a few hot topics hold most bytes
        base_size = int(rng.lognormvariate(17.0, 1.5) * hot)
        parts: list[Partition] = []
        for p, replicas in sorted(_layout(rng, brokers, count, rf).items()):
            leader = replicas[0]
            isr: list[int] = [r for r in replicas if r in live]
            if len(isr) < len(replicas) or rng.random() < 0.01:  # a lagging replica
                isr = isr[:-1] if len(isr) > 1 and rng.random() < 0.5 else isr
            if leader not in isr or rng.random() < 0.03:
                leader = isr[1] if len(isr) > 1 else (isr[0] if isr else -1)
            size = int(base_size * rng.paretovariate(3.0))
            parts.append(
                Partition(
                    topic=name,
                    partition=p,
                    replicas=tuple(replicas),
                    leader=leader,
                    isr=tuple(isr),
                    size_bytes=size,
                )
            )
        topics.append(Topic(name=name, partitions=tuple(parts), configs=configs))
    return ClusterSnapshot(
        brokers=tuple(brokers),
        topics=tuple(sorted(topics, key=lambda t: t.name)),
        cluster_id=f"synth-{index:04d}",
        source="synthetic",
        captured_at="2026-01-01T00:00:00Z",
    )


def synth_fleet(clusters: int, partitions: int, seed: int = 0) -> Iterator[ClusterSnapshot]:
    """`clusters` snapshots with `partitions` partitions in all (at least 1 each)."""
    rng = random.Random(seed)
    sizes = cluster_sizes(clusters, max(partitions, clusters), rng)
    for index, size in enumerate(sizes):
        yield synth_cluster(index, size, random.Random(f"{seed}/{index}"))


def write_fleet(
    out: Path, clusters: int, partitions: int, seed: int = 0, *, processes: int = 1
) -> list[Path]:
    """Write a synthetic fleet as OUT/<cluster_id>.json snapshot files; `processes` > 1
    writes clusters in that many processes (each cluster has its own random stream, so the
    files are the same)."""
    out.mkdir(parents=True, exist_ok=True)
    sizes = cluster_sizes(clusters, max(partitions, clusters), random.Random(seed))
    jobs = [(out, seed, index, size) for index, size in enumerate(sizes)]
    if processes <= 1:
        return [_write_cluster(job) for job in jobs]
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(processes) as pool:
        # biggest first, so no process is left with a big one at the end
        order = sorted(range(len(jobs)), key=lambda i: -sizes[i])
        written = dict(zip(order, pool.imap(_write_cluster, [jobs[i] for i in order]), strict=True))
    return [written[i] for i in range(len(jobs))]


def _write_cluster(job: tuple[Path, int, int, int]) -> Path:
    out, seed, index, size = job
    snapshot = synth_cluster(index, size, random.Random(f"{seed}/{index}"))
    path = out / f"{snapshot.cluster_id}.json"
    write_snapshot(snapshot, path)
    return path
