"""The plan report of each strategy side by side on a few generated clusters (prints only).

.venv/bin/python bench/compare_strategies.py
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from planner_clusters import generated_cluster

from kreplica.model import ClusterSnapshot, Plan
from kreplica.planner import STRATEGIES, PlanOptions, TopicRequest, make_plan

Scenario = tuple[str, ClusterSnapshot, Callable[[ClusterSnapshot], list[TopicRequest]]]


def scenarios() -> list[Scenario]:
    # D and E plan different changes on the same cluster
    hand_made = generated_cluster(
        brokers=24,
        racks=4,
        topics=100,
        partitions=2400,
        rf=3,
        seed=14,
        hand_made_share=1.0,
    )
    return [
        (
            "A: 12 brokers/3 racks, 50 topics, 1,200 partitions, Kafka layouts, RF 2->3",
            generated_cluster(brokers=12, racks=3, topics=50, partitions=1200, rf=2, seed=11),
            lambda s: [TopicRequest(t.name, rf=3) for t in s.topics],
        ),
        (
            "B: 30 brokers/5 racks, 200 topics, 6,000 partitions, 30% hand-made, RF 3->4",
            generated_cluster(
                brokers=30,
                racks=5,
                topics=200,
                partitions=6000,
                rf=3,
                seed=12,
                hand_made_share=0.3,
            ),
            lambda s: [TopicRequest(t.name, rf=4) for t in s.topics],
        ),
        (
            "C: 9 brokers/no racks, 40 topics, 800 partitions, RF 1->3 and +50% partitions",
            generated_cluster(brokers=9, racks=0, topics=40, partitions=800, rf=1, seed=13),
            lambda s: [
                TopicRequest(t.name, rf=3, partitions=len(t.partitions) * 3 // 2 + 1)
                for t in s.topics
            ],
        ),
        (
            "D: 24 brokers/4 racks, 100 topics, 2,400 partitions, all hand-made, RF 3->2",
            hand_made,
            lambda s: [TopicRequest(t.name, rf=2) for t in s.topics],
        ),
        (
            "E: as D, rack repair only (RF 3 kept)",
            hand_made,
            lambda s: [TopicRequest(t.name, fix_racks=True) for t in s.topics],
        ),
    ]


def _gib(value: object) -> str:
    return "-" if value is None else f"{int(str(value)) / 2**30:,.0f}"


def _max(report: dict[str, Any], key: str) -> int:
    return max(report[key].values())


def _spread(report: dict[str, Any], key: str) -> int:
    return max(report[key].values()) - min(report[key].values())


def topic_leader_spread(snapshot: ClusterSnapshot, plan: Plan, eligible: list[int]) -> int:
    """The worst topic's preferred-leader spread after the plan, over the eligible brokers
    and every live broker leading one of its partitions."""
    after = {(t.name, p.partition): p.replicas for t in snapshot.topics for p in t.partitions}
    for c in plan.changes:
        after[(c.topic, c.partition)] = c.after
    topics = {str(t) for t in plan.report["topics"]}
    live = snapshot.live_broker_ids()
    counts: dict[str, dict[int, int]] = {t: dict.fromkeys(eligible, 0) for t in topics}
    for (topic, _), reps in after.items():
        if topic in counts and reps and reps[0] in live:
            counts[topic][reps[0]] = counts[topic].get(reps[0], 0) + 1
    return max((max(c.values()) - min(c.values()) for c in counts.values() if c), default=0)


def rows(r: dict[str, Any]) -> list[tuple[str, str]]:
    peaks = "/".join(
        str(_max(r, k))
        for k in ("broker_replicas_before", "broker_replicas_peak", "broker_replicas_after")
    )
    return [
        (
            "replicas added (lower bound)",
            f"{r['replicas_added']} ({r['lower_bound_replicas_added']})",
        ),
        (
            "replicas removed (lower bound)",
            f"{r['replicas_removed']} ({r['lower_bound_replicas_removed']})",
        ),
        ("existing replicas moved", str(r["existing_replicas_moved"])),
        (
            "GiB to copy (lower bound)",
            f"{_gib(r['bytes_to_move'])} ({_gib(r['bytes_lower_bound'])})",
        ),
        ("GiB copied across racks", _gib(r["cross_rack_bytes"])),
        ("leaders changed", str(r["leaders_changed"])),
        (
            "rack violations before -> after",
            f"{r['rack_violations_before']} -> {r['rack_violations_after']}",
        ),
        (
            "worst topic spread before -> after",
            f"{_max(r, 'topic_spread_before')} -> {_max(r, 'topic_spread_after')}",
        ),
        (
            "topics with spread > 1 after",
            f"{sum(1 for v in r['topic_spread_after'].values() if v > 1)}"
            f"/{len(r['topic_spread_after'])}",
        ),
        ("worst topic leader spread after", str(r["_topic_leader_spread"])),
        (
            "cluster spread before -> after",
            f"{r['cluster_spread_before']} -> {r['cluster_spread_after']}",
        ),
        ("max replicas/broker before/peak/after", peaks),
        ("leader spread after", str(_spread(r, "broker_leaders_after"))),
        ("fallbacks to balanced", str(len(r["fallbacks"]))),
    ]


def main() -> None:
    for title, snapshot, requests_for in scenarios():
        requests = requests_for(snapshot)
        reports: dict[str, dict[str, Any]] = {}
        timings: dict[str, float] = {}
        for strategy in STRATEGIES:
            start = time.perf_counter()
            plan = make_plan(snapshot, requests, PlanOptions(strategy=strategy))
            timings[strategy] = time.perf_counter() - start
            reports[strategy] = dict(plan.report)
            reports[strategy]["_topic_leader_spread"] = topic_leader_spread(
                snapshot, plan, list(plan.report["eligible_brokers"])
            )
        print(title)
        table = {s: rows(reports[s]) for s in STRATEGIES}
        labels = [label for label, _ in table[STRATEGIES[0]]]
        width = max(len(label) for label in labels) + 2
        print(" " * width + "".join(f"{s:>18}" for s in STRATEGIES))
        for i, label in enumerate(labels):
            print(f"{label:<{width}}" + "".join(f"{table[s][i][1]:>18}" for s in STRATEGIES))
        print(f"{'plan time (s)':<{width}}" + "".join(f"{timings[s]:>18.2f}" for s in STRATEGIES))
        print()


if __name__ == "__main__":
    main()
