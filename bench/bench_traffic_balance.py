"""rebalance --by traffic on synthetic skewed clusters (issue 34): plan time, network in / out
per broker before and after (max/mean, CV), bytes moved against the lower bound, and the same
figures after `rebalance --by count` (the count balance, blind to rates) side by side.
Prints figures, asserts nothing.

    .venv/bin/python bench/bench_traffic_balance.py [--sizes 10000x60,100000x200] [--no-count]
        [--mixed]

Each cluster: brokers on 6 racks, RF 3 on three racks, rates lognormal (mu 8, sigma 1: median
3 kB/s) or with `--tail pareto` heavy-tailed (Pareto, alpha 1.2, from 1 kB/s), a tenth of the
partitions idle, fan-out 0-3, and skew: a third of the brokers take twice the
replicas and most leaders of the busiest partitions. `--mixed`: every other row of six
brokers (three per rack among each twelve) has twice the network capacity, and `--by traffic`
balances utilisation (`--capacity`); the figures are then of utilisation, plus the big
brokers' mean load over the small ones'.
"""

from __future__ import annotations

import argparse
import random
import time

from kreplica.model import Broker, ClusterSnapshot, Partition, Topic, TrafficWindow
from kreplica.planner.brokers import rebalance_plan
from kreplica.planner.brokers.traffic_balance import spread_figures, traffic_rebalance_plan
from kreplica.planner.traffic import broker_traffic


def skewed(partitions: int, brokers: int, tail: str, seed: int = 34) -> ClusterSnapshot:
    rng = random.Random(seed)
    racks = [f"r{i}" for i in range(6)]
    nodes = tuple(Broker(i, racks[i % 6]) for i in range(brokers))
    by_rack = {r: [b.id for b in nodes if b.rack == r] for r in racks}
    hot = {b.id for b in nodes if b.id % 3 == 0}
    topics = []
    per_topic = 100
    for t in range(partitions // per_topic):
        name = f"topic-{t:04d}"
        parts = []
        for n in range(per_topic):
            chosen = rng.sample(racks, 3)
            reps = []
            for r in chosen:
                pool = by_rack[r]
                weights = [2 if b in hot else 1 for b in pool]
                reps.append(rng.choices(pool, weights)[0])
            drawn = rng.paretovariate(1.2) * 1000 if tail == "pareto" else rng.lognormvariate(8, 1)
            rate = 0.0 if rng.random() < 0.1 else drawn
            if rate > 20_000 and reps[0] not in hot:
                hot_ones = [b for b in reps if b in hot]
                if hot_ones:  # the busiest partitions mostly led by hot brokers
                    reps.remove(hot_ones[0])
                    reps.insert(0, hot_ones[0])
            parts.append(
                Partition(
                    name,
                    n,
                    tuple(reps),
                    leader=reps[0],
                    size_bytes=int(rate * 3600 * rng.uniform(0.5, 2)) + 2**20,
                    bytes_in_per_s=rate,
                    fanout=rng.randint(0, 3),
                )
            )
        topics.append(Topic(name, tuple(parts)))
    return ClusterSnapshot(nodes, tuple(topics), traffic=TrafficWindow(60.0, "synthetic"))


def applied(snap: ClusterSnapshot, changes: object) -> ClusterSnapshot:
    import dataclasses

    after = {(c.topic, c.partition): c.after for c in changes}  # type: ignore[attr-defined]
    topics = []
    for t in snap.topics:
        parts = []
        for p in t.partitions:
            reps = after.get((p.topic, p.partition))
            parts.append(
                p if reps is None else dataclasses.replace(p, replicas=reps, leader=reps[0])
            )
        topics.append(dataclasses.replace(t, partitions=tuple(parts)))
    return dataclasses.replace(snap, topics=tuple(topics))


def mixed(snap: ClusterSnapshot) -> dict[int, dict[str, float]]:
    """Twice the capacity on every other row of six brokers: half of each rack big."""
    return {
        b.id: dict.fromkeys(("nw_in", "nw_out"), 2e8 if b.id // 6 % 2 == 0 else 1e8)
        for b in snap.brokers
    }


def figures(snap: ClusterSnapshot, caps: dict[int, dict[str, float]] | None = None) -> str:
    loads = broker_traffic(snap)
    out = []
    for name in ("nw_in", "nw_out", "leader_bytes_in"):
        per = {b.id: getattr(b, name) for b in loads}
        if caps is not None and name != "leader_bytes_in":
            big = [v for b, v in per.items() if caps[b][name] > 1e8]
            small = [v for b, v in per.items() if caps[b][name] <= 1e8]
            ratio = (sum(big) / len(big)) / (sum(small) / len(small))
            per = {b: v / caps[b][name] for b, v in per.items()}
            f = spread_figures(per)
            out.append(f"{name}_util {f['max_over_mean']:.2f}/{f['cv']:.2f} big:small {ratio:.2f}")
            continue
        f = spread_figures(per)
        out.append(f"{name} {f['max_over_mean']:.2f}/{f['cv']:.2f}")
    return "  ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000x60,100000x200")
    parser.add_argument("--no-count", action="store_true")
    parser.add_argument("--tail", choices=("pareto", "lognormal"), default="lognormal")
    parser.add_argument("--mixed", action="store_true")
    args = parser.parse_args()
    print("figures: max/mean / CV per broker")
    for size in args.sizes.split(","):
        partitions, brokers = map(int, size.split("x"))
        snap = skewed(partitions, brokers, args.tail)
        caps = mixed(snap) if args.mixed else None
        print(f"\n{partitions} partitions, {brokers} brokers")
        print(f"  before             {figures(snap, caps)}")
        begun = time.perf_counter()
        plan = traffic_rebalance_plan(snap, capacities=caps)
        took = time.perf_counter() - begun
        r = plan.report["traffic"]
        print(f"  --by traffic       {figures(applied(snap, plan.changes), caps)}")
        bound = r["bytes_lower_bound"] or 0
        ratio = f"{r['bytes_moved'] / bound:.2f}x" if bound else "-"
        print(
            f"    {took:.1f} s; {r['leader_changes']} leader changes, {r['replica_moves']} moves, "
            f"{r['bytes_moved'] / 2**30:.2f} GiB moved vs lower bound {bound / 2**30:.2f} GiB "
            f"({ratio}); over the band after: {len(r['brokers_over_band'])}"
        )
        if args.no_count:
            continue
        begun = time.perf_counter()
        counted = rebalance_plan(snap, by="count")
        took = time.perf_counter() - begun
        moved = sum(c.size_bytes or 0 for c in counted.changes if c.added)
        print(f"  --by count         {figures(applied(snap, counted.changes), caps)}")
        changed = len(counted.changes)
        print(f"    {took:.1f} s; {changed} partitions changed, {moved / 2**30:.1f} GiB moved")


if __name__ == "__main__":
    main()
