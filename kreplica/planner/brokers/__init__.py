"""Broker operations with the fewest moves: drain, add brokers, replace, rebalance.

Pure planner functions (standard library only, deterministic) returning the same `Plan` as
`make_plan`, so the diff, the report with its lower bounds, the plan files and apply / verify /
cancel work unchanged. A move replaces one replica by another broker *in the same position*,
so followers stay followers; a drain may then put another replica first for its leader.

    drain_plan       every replica on the drained brokers moves exactly once (the lower bound),
                     keeping each partition's rack spread: replicas per staying broker, then
                     per topic, as even as that allows (spreadflow's exact min-cost flow), a
                     drained leader's partition led so preferred leaders end as even as they
                     can; keep_rack_share: the drained broker's own rack first, greedily
    add_brokers_plan the new brokers' deficit (their share by count or bytes) and no more:
                     replicas come from the most loaded old broker, small partitions first,
                     never losing a rack
    replace_plan     broker B takes exactly broker A's replicas, positions kept
    rebalance_plan   per-topic replica spread <= 1, then cluster spread <= 1 (count) or the
                     most even bytes, within --max-moves / --max-bytes; then preferred-leader
                     spread <= 1 by reordering replicas (no data moves for that part)

A move never lowers the number of racks a partition spans. Partitions being reassigned are
refused (or left out with skip_in_flight); partitions with a replica on a dead broker other
than one being drained or replaced are refused (Kafka rejects a target naming a dead broker)
by drain and replace, and left alone by add-brokers and rebalance.
"""

from __future__ import annotations

from kreplica.planner.brokers.add import add_brokers_plan
from kreplica.planner.brokers.drain import drain_plan
from kreplica.planner.brokers.rebalance import rebalance_plan
from kreplica.planner.brokers.replace import replace_plan
from kreplica.planner.brokers.run import BY, known_brokers

__all__ = [
    "BY",
    "add_brokers_plan",
    "drain_plan",
    "known_brokers",
    "rebalance_plan",
    "replace_plan",
]
