"""Yelp kafka-utils against kreplica on broker operations, same generated clusters (prints a table).

    .venv/bin/python bench/compare_broker_ops.py [--kafka-utils-python PATH]

kafka-utils (PyPI `kafka-utils`, the `kafka-cluster-manager` tool) runs in its own virtualenv:
PATH is its python (default: $KAFKA_UTILS_PYTHON, else a venv made in /tmp/kreplica-bench-ku
with `pip install kafka-utils`). It is driven through its own planner classes, as
`kafka-cluster-manager decommission` and `rebalance --replication-groups --brokers --leaders`
run them after reading ZooKeeper: ClusterTopology over the same assignment and brokers,
PartitionCountBalancer (its default balancer), UniformPartitionMeasurer weights with the real
sizes as partition sizes, and either its default replication-group parser (every broker in one
group: no racks) or a parser returning each broker's rack (what a rack-aware deployment plugs
in with --group-parser). The command's final trimming to --max-partition-movements /
--max-leader-changes (defaults 1 and 5) is left out: the whole plan is compared.

Measured on each resulting assignment, the same way for both tools:
  moves       replicas added (= replicas removed: every operation keeps RF)
  bytes       bytes copied (size of each added replica)
  rack viol.  partitions spanning fewer racks than min(RF, racks)
  spread      replicas per broker max - min over the brokers that stay
  topic spr.  the worst topic's replicas-per-broker spread
  lead. spr.  preferred leaders per broker max - min
  bound       kreplica's lower bound for the moves (drain, add-brokers: exact; rebalance: the
              fewest moves that reach the spreads kreplica reaches)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from planner_clusters import generated_cluster

from kreplica.model import Broker, ClusterSnapshot, Plan
from kreplica.planner.brokers import add_brokers_plan, drain_plan, rebalance_plan
from kreplica.planner.evaluate import rack_violations, spread

Assignment = dict[tuple[str, int], tuple[int, ...]]

# Runs inside kafka-utils' virtualenv: reads a job on stdin, prints the final assignment.
YELP_DRIVER = r"""
import json, sys, logging, argparse
logging.disable(logging.CRITICAL)
from kafka_utils.kafka_cluster_manager.cluster_info.cluster_topology import ClusterTopology
from kafka_utils.kafka_cluster_manager.cluster_info.partition_count_balancer import (
    PartitionCountBalancer,
)
from kafka_utils.kafka_cluster_manager.cluster_info.partition_measurer import (
    UniformPartitionMeasurer,
)

job = json.load(sys.stdin)
assignment = {(t, p): list(r) for t, p, r in job["assignment"]}
sizes = {(t, p): s for t, p, s in job["sizes"]}
brokers = {int(b): {"host": f"h{b}", "rack": rack} for b, rack in job["brokers"].items()}

class Measurer(UniformPartitionMeasurer):
    def get_size(self, name):
        return float(sizes[tuple(name)])

group = (lambda broker: broker.metadata["rack"]) if job["racks"] else (lambda broker: None)
args = argparse.Namespace(
    replication_groups=True, brokers=True, leaders=True,
    max_partition_movements=None, max_movement_size=None, max_leader_changes=None,
    balancer_args=[], measurer_args=[],
)
pm = Measurer(None, list(brokers), assignment, args)
ct = ClusterTopology(assignment, brokers, pm, group)
balancer = PartitionCountBalancer(ct, args)
try:
    if job["op"] == "decommission":
        balancer.decommission_brokers(job["decommission"])
    else:
        balancer.rebalance()
    out = {"assignment": [[t, p, list(r)] for (t, p), r in sorted(ct.assignment.items())]}
except Exception as exc:
    out = {"error": f"{type(exc).__name__}: {exc}"}
json.dump(out, sys.stdout)
"""


def kafka_utils_python(given: str | None) -> str:
    """kafka-utils' interpreter: given, $KAFKA_UTILS_PYTHON, or a venv made once in /tmp."""
    path = given or os.environ.get("KAFKA_UTILS_PYTHON")
    if path:
        return path
    venv = Path("/tmp/kreplica-bench-ku")
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "kafka-utils"], check=True, timeout=600
        )
    return str(python)


def assignment_of(snapshot: ClusterSnapshot, plan: Plan | None = None) -> Assignment:
    out = {(t.name, p.partition): p.replicas for t in snapshot.topics for p in t.partitions}
    for c in plan.changes if plan else ():
        out[(c.topic, c.partition)] = c.after
    return out


def run_yelp(
    python: str, snapshot: ClusterSnapshot, op: str, racks: bool, drained: list[int]
) -> tuple[Assignment | None, str, float]:
    job = {
        "op": op,
        "racks": racks,
        "decommission": drained,
        "brokers": {str(b.id): b.rack for b in snapshot.brokers},
        "assignment": [[t, p, list(r)] for (t, p), r in sorted(assignment_of(snapshot).items())],
        "sizes": [
            [t.name, p.partition, p.size_bytes or 0] for t in snapshot.topics for p in t.partitions
        ],
    }
    started = time.perf_counter()
    proc = subprocess.run(
        [python, "-c", YELP_DRIVER],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # its set orders decide ties: fix them
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1], seconds
    out = json.loads(proc.stdout)
    if "error" in out:
        return None, out["error"], seconds
    return {(t, p): tuple(r) for t, p, r in out["assignment"]}, "", seconds


def measure(snapshot: ClusterSnapshot, after: Assignment, stay: list[int]) -> dict[str, Any]:
    before = assignment_of(snapshot)
    sizes = {
        (t.name, p.partition): p.size_bytes or 0 for t in snapshot.topics for p in t.partitions
    }
    moves = moved_bytes = 0
    for key, reps in after.items():
        added = [b for b in reps if b not in before[key]]
        moves += len(added)
        moved_bytes += len(added) * sizes[key]
    counts = dict.fromkeys(stay, 0)
    leaders = dict.fromkeys(stay, 0)
    topics: dict[str, dict[int, int]] = {}
    for (topic, _), reps in after.items():
        per = topics.setdefault(topic, dict.fromkeys(stay, 0))
        for b in reps:
            counts[b] = counts.get(b, 0) + 1
            per[b] = per.get(b, 0) + 1
        leaders[reps[0]] = leaders.get(reps[0], 0) + 1
    left = sum(1 for reps in after.values() for b in reps if b not in stay)
    return {
        "moves": moves,
        "bytes": moved_bytes,
        "rack_violations": len(rack_violations(after, snapshot.racks(), stay)),
        "spread": spread(counts),
        "topic_spread": max(spread(c) for c in topics.values()),
        "leader_spread": spread(leaders),
        "left_on_drained": left,
    }


def with_new_brokers(snapshot: ClusterSnapshot, new: list[int], racks: int) -> ClusterSnapshot:
    extra = tuple(Broker(b, rack=f"rack-{b % racks}") for b in new)
    return replace(snapshot, brokers=snapshot.brokers + extra)


Scenario = tuple[str, ClusterSnapshot, str, list[int], Callable[[ClusterSnapshot], Plan]]


def scenarios() -> list[Scenario]:
    kafka_layout = generated_cluster(brokers=12, racks=3, topics=40, partitions=600, rf=3, seed=21)
    mixed = generated_cluster(
        brokers=12, racks=3, topics=40, partitions=600, rf=3, seed=22, hand_made_share=0.5
    )
    grown = with_new_brokers(
        generated_cluster(brokers=9, racks=3, topics=30, partitions=450, rf=3, seed=23),
        [9, 10, 11],
        3,
    )
    rng = random.Random(24)
    rf2 = generated_cluster(brokers=10, racks=2, topics=30, partitions=500, rf=2, seed=24)
    skew = replace(
        rf2,
        topics=tuple(
            replace(
                t,
                partitions=tuple(
                    replace(p, replicas=tuple(rng.sample([0, 1, 2, 3, 4, 5], 2)))
                    if rng.random() < 0.4
                    else p
                    for p in t.partitions
                ),
            )
            for t in rf2.topics
        ),
    )
    return [
        (
            "A drain 1 of 12 (3 racks, RF 3, Kafka layouts)",
            kafka_layout,
            "decommission",
            [5],
            lambda s: drain_plan(s, [5]),
        ),
        (
            "B drain 2 of 12 (3 racks, RF 3, half hand-made)",
            mixed,
            "decommission",
            [4, 8],
            lambda s: drain_plan(s, [4, 8]),
        ),
        (
            "C 3 new brokers, add-brokers (9+3, RF 3)",
            grown,
            "rebalance",
            [],
            lambda s: add_brokers_plan(s, [9, 10, 11]),
        ),
        (
            "D 3 new brokers, rebalance (9+3, RF 3)",
            grown,
            "rebalance",
            [],
            lambda s: rebalance_plan(s),
        ),
        (
            "E skewed: 40% piled on 6 of 10 (2 racks, RF 2)",
            skew,
            "rebalance",
            [],
            lambda s: rebalance_plan(s),
        ),
    ]


def fmt_bytes(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kafka-utils-python", default=None)
    args = parser.parse_args()
    python = kafka_utils_python(args.kafka_utils_python)
    version = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('kafka-utils'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"kafka-utils {version} ({python}); kreplica from this checkout\n")
    header = (
        f"{'scenario':<48} {'tool':<26} {'moves':>6} {'bound':>6} {'bytes':>10} "
        f"{'rack viol.':>10} {'spread':>6} {'topic spr.':>10} {'lead. spr.':>10} {'s':>6}"
    )
    print(header)
    print("-" * len(header))
    for title, snap, op, drained, plan_fn in scenarios():
        stay = [b.id for b in snap.brokers if b.id not in drained]
        base = measure(snap, assignment_of(snap), stay)
        print(
            f"{title:<48} {'(before)':<26} {'':>6} {'':>6} {'':>10} "
            f"{base['rack_violations']:>10} {base['spread'] if not drained else '':>6} "
            f"{base['topic_spread'] if not drained else '':>10} "
            f"{base['leader_spread'] if not drained else '':>10}"
        )
        started = time.perf_counter()
        plan = plan_fn(snap)
        seconds = time.perf_counter() - started
        rows: list[tuple[str, dict[str, Any] | None, str, float, Any]] = [
            (
                f"kreplica {plan.strategy}",
                measure(snap, assignment_of(snap, plan), stay),
                "",
                seconds,
                plan.report["lower_bound_replicas_added"],
            )
        ]
        for racks in (False, True):
            after, error, secs = run_yelp(python, snap, op, racks, drained)
            name = f"kafka-utils {op} ({'racks' if racks else 'no groups'})"
            rows.append((name, measure(snap, after, stay) if after else None, error, secs, ""))
        for name, m, error, secs, bound in rows:
            if m is None:
                print(f"{'':<48} {name:<26} failed: {error[:80]}")
                continue
            note = f"  ({m['left_on_drained']} left on drained)" if m["left_on_drained"] else ""
            print(
                f"{'':<48} {name:<26} {m['moves']:>6} {bound!s:>6} {fmt_bytes(m['bytes']):>10} "
                f"{m['rack_violations']:>10} {m['spread']:>6} {m['topic_spread']:>10} "
                f"{m['leader_spread']:>10} {secs:>6.2f}{note}"
            )


if __name__ == "__main__":
    main()
