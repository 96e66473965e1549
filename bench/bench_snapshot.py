"""Snapshot time for a topic set with 10,000 partitions on a real sandbox cluster (prints figures).

    .venv/bin/python bench/bench_snapshot.py [--partitions 10000] [--topics 20] [--rf 2]
        [--runs 3] [--mode zk|kraft] [--keep]

Starts a 3-broker sandbox (racks a, b, c; `--mode zk` is Kafka 3.9 with ZooKeeper, `kraft`
Kafka 4.x), creates `--topics` topics sharing `--partitions` partitions (Kafka places them), then
times, per run, a full snapshot of those topics: open the source (connect) + `snapshot(topics)`.
ZooKeeper source (ZK mode only) and AdminClient source. Both sources' results are checked to
agree. `--keep` leaves the cluster running for another run (`kreplica sandbox down --name
bench-snapshot` stops it). Jars must be fetched already (`python -m kreplica.sandbox fetch`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import replace

from kreplica import sandbox
from kreplica.model import ClusterSnapshot
from kreplica.sources.admin import AdminSource
from kreplica.sources.zookeeper import ZooKeeperSource
from kreplica.testing import TopicSpec, create_topics

NAME = "bench-snapshot"


def _timed(label: str, runs: int, take: Callable[[], ClusterSnapshot]) -> ClusterSnapshot:
    times = []
    snapshot = None
    for _ in range(runs):
        started = time.perf_counter()
        snapshot = take()
        times.append(time.perf_counter() - started)
    assert snapshot is not None
    partitions = sum(len(t.partitions) for t in snapshot.topics)
    print(
        f"{label:<26} {partitions:6d} partitions  median {statistics.median(times):6.2f}s  "
        f"min {min(times):6.2f}s  max {max(times):6.2f}s  "
        f"({partitions / statistics.median(times):,.0f} partitions/s)"
    )
    return snapshot


def _comparable(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    topics = tuple(
        replace(t, partitions=tuple(replace(p, size_bytes=None) for p in t.partitions))
        for t in snapshot.topics
    )
    return replace(snapshot, topics=topics, source=None, captured_at=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--rf", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mode", choices=("zk", "kraft"), default="zk")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running")
    args = parser.parse_args()

    per_topic, extra = divmod(args.partitions, args.topics)
    specs = [
        TopicSpec(
            f"bench-{i:03d}",
            partitions=per_topic + (1 if i < extra else 0),
            replication_factor=args.rf,
        )
        for i in range(args.topics)
    ]
    names = [s.name for s in specs]
    print(
        f"cpus {os.cpu_count()}, mode {args.mode}, 3 brokers, racks a,b,c, {args.topics} topics, "
        f"{args.partitions} partitions, RF {args.rf}, runs {args.runs}"
    )

    started = time.perf_counter()
    info = sandbox.status(NAME)
    if info is None or info.mode != args.mode:
        if info is not None:
            sandbox.down(NAME)
        info = sandbox.up(mode=args.mode, brokers=3, racks=("a", "b", "c"), name=NAME)
    print(f"{'cluster up':<26} {time.perf_counter() - started:6.2f}s")
    try:
        started = time.perf_counter()
        with AdminSource(info.bootstrap_servers) as probe:
            existing = {t.name for t in probe.snapshot().topics}
        missing = [s for s in specs if s.name not in existing]
        for spec in missing:  # one by one: KRaft refuses "excessively large" batches
            create_topics(info.bootstrap_servers, [spec], timeout_s=600)
        print(f"{'topics created':<26} {time.perf_counter() - started:6.2f}s")

        def admin_snapshot() -> ClusterSnapshot:
            with AdminSource(info.bootstrap_servers, timeout_s=60) as source:
                return source.snapshot(names)

        from_admin = _timed("AdminClient source", args.runs, admin_snapshot)
        if info.zookeeper is not None:
            zookeeper = info.zookeeper

            def zk_snapshot() -> ClusterSnapshot:
                with ZooKeeperSource(zookeeper, timeout_s=60) as source:
                    return source.snapshot(names)

            from_zk = _timed("ZooKeeper source", args.runs, zk_snapshot)
            agree = _comparable(from_zk) == _comparable(from_admin)
            print(f"sources agree: {agree}")
    finally:
        if not args.keep:
            sandbox.down(NAME)


if __name__ == "__main__":
    main()
