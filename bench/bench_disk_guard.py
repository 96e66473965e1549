"""What the disk guard costs a plan: the same RF raise planned from a snapshot without disk
figures (no guard) and with two log dirs per broker (guard on; and --log-dirs balanced).

    .venv/bin/python bench/bench_disk_guard.py [--topics 2000 --partitions 10000]

Prints seconds per plan (best of 3) for each case; no assertion (figures, not a test).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.planner_clusters import generated_cluster
from kreplica.model import LogDir
from kreplica.planner import PlanOptions, TopicRequest, make_plan


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--brokers", type=int, default=12)
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=10000)
    args = parser.parse_args()
    plain = generated_cluster(
        brokers=args.brokers, racks=3, topics=args.topics, partitions=args.partitions, rf=2
    )
    tib = 2**40
    disks = (LogDir("/d1", 4 * tib, 3 * tib), LogDir("/d2", 4 * tib, 2 * tib))
    with_disks = dataclasses.replace(
        plain, brokers=tuple(dataclasses.replace(b, disks=disks) for b in plain.brokers)
    )
    requests = [TopicRequest(t.name, rf=3) for t in plain.topics]
    cases = [
        ("no disk data (unchecked)", plain, PlanOptions()),
        ("disk guard, --log-dirs any", with_disks, PlanOptions()),
        ("disk guard, --log-dirs balanced", with_disks, PlanOptions(log_dirs="balanced")),
    ]
    print(f"{args.brokers} brokers, {args.topics} topics, {args.partitions} partitions, RF 2 -> 3")
    for name, snap, options in cases:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            plan = make_plan(snap, requests, options)
            best = min(best, time.perf_counter() - start)
        print(f"{name:34s} {best:7.2f} s  ({len(plan.changes)} partitions changed)")


if __name__ == "__main__":
    main()
