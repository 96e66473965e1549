"""drain and add-brokers by traffic on synthetic skewed clusters (issue 34): network in / out
per broker after the operation (max, max/mean) by count alone (the snapshot's rates dropped)
and by traffic, and the time of each plan (and of the traffic step in it), alternating.
Prints figures, asserts nothing.

    .venv/bin/python bench/bench_traffic_placement.py [--size 100000x200] [--drain 2] [--add 4]

The cluster is bench_traffic_balance.skewed's (6 racks, RF 3, skewed rates, `--tail`). drain:
brokers 0..N-1 leave (the hot ones: ids divisible by 3 hold twice the replicas). add-brokers:
N brokers more (one per rack in turn) join empty.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Sequence

from bench_traffic_balance import applied, skewed

from kreplica.model import Broker, ClusterSnapshot, Plan
from kreplica.planner.brokers import add_brokers_plan, drain_plan, traffic_placement
from kreplica.planner.traffic import broker_traffic

STEP: list[float] = []  # seconds in the traffic step (dispatch imports it at each call)
_by_traffic = traffic_placement.by_traffic


def _timed(*args: object, **kwargs: object) -> object:
    start = time.perf_counter()
    try:
        return _by_traffic(*args, **kwargs)  # type: ignore[arg-type]
    finally:
        STEP.append(time.perf_counter() - start)


traffic_placement.by_traffic = _timed  # type: ignore[assignment]


def figures(snap: ClusterSnapshot, plan: Plan, stay: set[int], new: Sequence[int]) -> str:
    loads = [b for b in broker_traffic(applied(snap, plan.changes)) if b.id in stay]
    out = []
    for name in ("nw_in", "nw_out"):
        values = [getattr(b, name) for b in loads]
        mean = sum(values) / len(values)
        out.append(f"{name} max {max(values) / 1e6:7.2f} MB/s max/mean {max(values) / mean:5.2f}")
        if new:  # where the new brokers end, against the mean
            mine = [getattr(b, name) / mean for b in loads if b.id in new]
            out[-1] += f" new/mean {min(mine):4.2f}-{max(mine):4.2f}"
    return "  ".join(out)


def run(
    label: str,
    snap: ClusterSnapshot,
    make: Callable[[ClusterSnapshot], Plan],
    stay: set[int],
    new: Sequence[int] = (),
) -> None:
    counted = dataclasses.replace(snap, traffic=None)
    for name, source in (
        ("by count  ", counted),
        ("by traffic", snap),
        ("by count  ", counted),
        ("by traffic", snap),
    ):
        STEP.clear()
        start = time.perf_counter()
        plan = make(source)
        took = time.perf_counter() - start
        moves = plan.report["replicas_added"]
        step = f"(step {sum(STEP):5.2f} s)" if STEP else " " * 14
        shown = figures(snap, plan, stay, new)
        print(f"{label} {name} {took:6.2f} s {step} moves {moves:6d}  {shown}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="100000x200")
    parser.add_argument("--drain", type=int, default=2)
    parser.add_argument("--add", type=int, default=4)
    parser.add_argument("--tail", default="pareto", choices=["lognormal", "pareto"])
    args = parser.parse_args()
    partitions, brokers = (int(x) for x in args.size.split("x"))
    snap = skewed(partitions, brokers, args.tail)
    gone = list(range(args.drain))
    run("drain", snap, lambda s: drain_plan(s, gone), {b.id for b in snap.brokers} - set(gone))
    new = tuple(Broker(brokers + i, f"r{i % 6}") for i in range(args.add))
    bigger = dataclasses.replace(snap, brokers=snap.brokers + new)
    ids = [b.id for b in new]
    run("add  ", bigger, lambda s: add_brokers_plan(s, ids), {b.id for b in bigger.brokers}, ids)


if __name__ == "__main__":
    main()
