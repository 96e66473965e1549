"""How fast kreplica.kafka places and infers layouts (prints figures; no assertions).

.venv/bin/python bench/kafka_infer_layout.py
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kreplica.kafka import JavaRandom, add_partitions, assign_replicas, infer_layout, striped_place


def _best_of(runs: int, action: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def _report(label: str, seconds: float) -> None:
    print(f"{label:64} {seconds * 1000:9.2f} ms")


def _zk_case(rng: JavaRandom, n_brokers: int, partitions: int, rf: int, racked: bool) -> None:
    brokers = [rng.next_int(1000) * 1000 + i for i in range(n_brokers)]
    racks = {b: f"rack-{i % 3}" for i, b in enumerate(brokers)} if racked else None
    assignment = assign_replicas(brokers, partitions, rf, racks=racks, rng=rng)
    # A topic Kafka did not place (every partition reordered by hand) costs the most.
    manual = {p: r[::-1] for p, r in assignment.items()}
    shape = f"{n_brokers} brokers, {partitions} partitions, RF {rf}{', 3 racks' if racked else ''}"
    _report(
        f"assign_replicas       {shape}",
        _best_of(5, lambda: assign_replicas(brokers, partitions, rf, racks=racks, rng=rng)),
    )
    _report(
        f"infer_layout          {shape}",
        _best_of(5, lambda: infer_layout(assignment, brokers=brokers, racks=racks)),
    )
    _report(
        f"infer_layout (manual) {shape}",
        _best_of(5, lambda: infer_layout(manual, brokers=brokers, racks=racks)),
    )


def main() -> None:
    rng = JavaRandom(2026)
    for n_brokers, partitions, rf, racked in [
        (6, 12, 3, False),
        (60, 60, 3, False),
        (60, 600, 3, False),
        (60, 6000, 3, False),
        (60, 600, 3, True),
        (60, 6000, 3, True),
        (200, 2000, 3, False),
    ]:
        _zk_case(rng, n_brokers, partitions, rf, racked)
    brokers = list(range(60))
    grown = assign_replicas(brokers, 300, 3, rng=rng)
    grown.update(add_partitions(brokers, grown, 600))
    _report(
        "infer_layout          60 brokers, 300 + 300 added partitions",
        _best_of(5, lambda: infer_layout(grown, brokers=brokers)),
    )
    usable = [(b, f"r{b % 4}", b % 7 == 0) for b in range(60)]
    _report(
        "striped_place         60 brokers, 6000 partitions, RF 3",
        _best_of(5, lambda: striped_place(usable, 6000, 3, rng=rng)),
    )


if __name__ == "__main__":
    main()
