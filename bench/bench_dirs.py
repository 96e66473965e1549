"""How long drain-dir and balance-dirs take to plan on big JBOD clusters (pure planning, no
Kafka), and how many bytes they move next to their lower bound.

    .venv/bin/python bench/bench_dirs.py [--brokers 12] [--dirs 4] [--partitions 50000]

A generated cluster (bench/planner_clusters.py, RF 3, random sizes) gets `--dirs` log dirs per
broker, each on a disk twice the size of the broker's fullest dir; each replica lands in a
random dir, skewed so that dir 0 holds about half. Prints, per run: seconds to plan (wall and
CPU; a shared machine inflates wall time), moves, bytes moved, the lower bound, and the worst
spread of a broker's dirs (max - min replica bytes) before and after.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.planner_clusters import generated_cluster
from kreplica.model import ClusterSnapshot, LogDir
from kreplica.planner.dirs import DirPlan, balance_dirs, drain_dir

TB = 10**12


def jbod(snap: ClusterSnapshot, dirs: int, seed: int) -> ClusterSnapshot:
    rng = random.Random(seed)
    paths = [f"/data/{k}" for k in range(dirs)]
    used: dict[tuple[int, str], int] = {}
    topics = []
    for t in snap.topics:
        parts = []
        for p in t.partitions:
            chosen = tuple(
                paths[0] if rng.random() < 0.5 else rng.choice(paths) for _ in p.replicas
            )
            size = p.size_bytes or rng.randrange(1, 2 * 10**9)
            for b, d in zip(p.replicas, chosen, strict=True):
                used[(b, d)] = used.get((b, d), 0) + size
            parts.append(
                dataclasses.replace(
                    p,
                    size_bytes=size,
                    replica_dirs=chosen,
                    replica_sizes=tuple(size for _ in p.replicas),
                )
            )
        topics.append(dataclasses.replace(t, partitions=tuple(parts)))
    # every dir of a broker on a disk twice the size of its fullest dir
    size = {b.id: 2 * max(used.get((b.id, d), 0) for d in paths) + TB for b in snap.brokers}
    brokers = tuple(
        dataclasses.replace(
            b,
            log_dirs=None,
            disks=tuple(LogDir(d, size[b.id], size[b.id] - used.get((b.id, d), 0)) for d in paths),
        )
        for b in snap.brokers
    )
    return dataclasses.replace(snap, brokers=brokers, topics=tuple(topics))


def spread(plan: DirPlan, after: bool) -> int:
    worst = 0
    for b in plan.brokers:
        values = [r.bytes_after if after else r.bytes_before for r in plan.rows if r.broker == b]
        worst = max(worst, max(values) - min(values))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=12)
    parser.add_argument("--dirs", type=int, default=4)
    parser.add_argument("--partitions", type=int, default=50_000)
    args = parser.parse_args()
    base = generated_cluster(
        brokers=args.brokers, racks=3, topics=max(1, args.partitions // 50),
        partitions=args.partitions, rf=3,
    )  # fmt: skip
    snap = jbod(base, args.dirs, seed=7)
    replicas = sum(len(p.replicas) for t in snap.topics for p in t.partitions)
    print(
        f"cluster: {args.brokers} brokers x {args.dirs} dirs, {args.partitions} partitions, "
        f"{replicas} replicas"
    )
    for name, run in (
        ("balance-dirs (all brokers)", lambda: balance_dirs(snap)),
        ("drain-dir (broker 0, /data/0)", lambda: drain_dir(snap, broker=0, path="/data/0")),
    ):
        started, cpu = time.perf_counter(), time.process_time()
        plan = run()
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(
            f"{name:<30} {seconds:6.2f} s wall {cpu:6.2f} s cpu {len(plan.moves):>7} moves  "
            f"{plan.bytes_moved / 1e9:10.1f} GB moved  lower bound "
            f"{plan.lower_bound_bytes / 1e9:10.1f} GB  worst dir spread "
            f"{spread(plan, False) / 1e9:.1f} -> {spread(plan, True) / 1e9:.1f} GB"
        )


if __name__ == "__main__":
    main()
