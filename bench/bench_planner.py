"""Plan time and peak memory of make_plan on a large generated cluster (prints, no asserts).

.venv/bin/python bench/bench_planner.py [--brokers 60 --racks 6 --topics 2000
                                         --partitions 50000 --strategy balanced]
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from planner_clusters import generated_cluster

from kreplica.planner import STRATEGIES, PlanOptions, TopicRequest, make_plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=60)
    parser.add_argument("--racks", type=int, default=6)
    parser.add_argument("--topics", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=50_000)
    parser.add_argument("--rf", type=int, default=2)
    parser.add_argument("--new-rf", type=int, default=3)
    parser.add_argument("--strategy", choices=[*STRATEGIES, "all"], default="all")
    args = parser.parse_args()

    t0 = time.perf_counter()
    snap = generated_cluster(
        brokers=args.brokers,
        racks=args.racks,
        topics=args.topics,
        partitions=args.partitions,
        rf=args.rf,
    )
    print(
        f"cluster: {args.brokers} brokers, {args.racks} racks, {args.topics} topics, "
        f"{args.partitions} partitions, RF {args.rf} -> {args.new_rf} for every topic "
        f"(generated in {time.perf_counter() - t0:.1f} s)"
    )
    requests = [TopicRequest(t.name, rf=args.new_rf) for t in snap.topics]
    strategies = STRATEGIES if args.strategy == "all" else (args.strategy,)
    for strategy in strategies:
        options = PlanOptions(strategy=strategy)
        start = time.perf_counter()
        plan = make_plan(snap, requests, options)
        elapsed = time.perf_counter() - start
        # a second, traced run for memory: tracing slows Python down several times
        tracemalloc.start()
        make_plan(snap, requests, options)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        r = plan.report
        print(
            f"{strategy:>9}: plan {elapsed:6.2f} s, peak {peak / 2**20:5.1f} MiB (tracemalloc), "
            f"{len(plan.changes)} partitions changed, {r['replicas_added']} replicas added "
            f"(lower bound {r['lower_bound_replicas_added']}), "
            f"cluster spread {r['cluster_spread_before']} -> {r['cluster_spread_after']}"
        )


if __name__ == "__main__":
    main()
