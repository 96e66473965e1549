"""New partitions planned on the arrays against the object planner, on one snapshot file.

    .venv/bin/python bench/compare_add_partitions.py SNAPSHOT [--partitions 750]
        [--strategy balanced|kafka]

Every topic grown to --partitions, planned by make_plan on the snapshot read into columns
(planner/partitions_arrays.py) and on the same file read into objects (the object planner);
for each: the engine, replicas added against the lower bound, existing replicas moved, rack
violations, the topics' replica spreads and leader spreads after (counts of topics per
spread), the cluster spread, the spread of preferred leaders over the brokers, the five
brokers leading least and most, and the findings. Figures are printed, never asserted
(bench_ops.py's snapshots: ~/.cache/kreplica/bench-scale/ops-*.json).
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from pathlib import Path

from kreplica.planner import PlanOptions, TopicRequest, make_plan
from kreplica.sources.snapshot import load_snapshot, load_snapshot_columnar


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", type=Path)
    parser.add_argument("--partitions", type=int, default=750)
    parser.add_argument("--strategy", default="balanced")
    args = parser.parse_args()
    columns = load_snapshot_columnar(args.snapshot)
    objects = load_snapshot(args.snapshot)
    requests = [TopicRequest(topic=t.name, partitions=args.partitions) for t in objects.topics]
    for name, snap in (("columns", columns), ("objects", objects)):
        plan = make_plan(snap, requests, PlanOptions(strategy=args.strategy))
        r = plan.report
        eligible = r["eligible_brokers"]
        leaders: defaultdict[str, Counter[int]] = defaultdict(Counter)
        for t in objects.topics:
            leaders[t.name].update(p.replicas[0] for p in t.partitions)
        for c in plan.changes:
            leaders[c.topic][c.after[0]] += 1
        leader_spreads = Counter(
            max(n[b] for b in eligible) - min(n[b] for b in eligible) for n in leaders.values()
        )
        after = r["broker_leaders_after"]
        ranked = sorted(after.items(), key=lambda kv: (kv[1], kv[0]))
        print(
            f"{name}: engine {r['engine']['name']}, added {r['replicas_added']} "
            f"(lower bound {r['lower_bound_replicas_added']}), moved "
            f"{r['existing_replicas_moved']}, rack violations {r['rack_violations_before']} -> "
            f"{r['rack_violations_after']}"
        )
        print(
            f"  topic spreads {sorted(Counter(r['topic_spread_after'].values()).items())}, "
            f"topic leader spreads {sorted(leader_spreads.items())}, cluster spread "
            f"{r['cluster_spread_before']} -> {r['cluster_spread_after']}, preferred leaders "
            f"spread {max(after.values()) - min(after.values())}"
        )
        print(f"  leading least {ranked[:5]}, most {ranked[-5:]}")
        print(f"  findings {[f.message for f in plan.findings]}")


if __name__ == "__main__":
    main()
