"""replace_plan: broker B takes exactly broker A's replicas, positions kept."""

from __future__ import annotations

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.model import ClusterSnapshot, Finding, Plan
from kreplica.planner.brokers.run import (
    Run,
    check_known,
    check_live,
    ids_text,
)
from kreplica.planner.options import PlanOptions


def replace_plan(
    snapshot: ClusterSnapshot,
    old: int,
    new: int,
    *,
    options: PlanOptions = PlanOptions(),
) -> Plan:
    """Broker `new` takes exactly broker `old`'s replicas, each in the same position."""
    check_known("`old`", [old], snapshot)
    check_known("`new`", [new], snapshot)
    if old == new:
        raise UsageError(f"`old` and `new` are both {old}; name two different brokers")
    check_live("`new`", [new], snapshot)
    live = snapshot.live_broker_ids()
    eligible = sorted(b for b in live if b != old)
    run = Run.start(snapshot, eligible, options, None)
    touched = [k for k in sorted(run.parts) if old in run.work[k]]
    touched = run.in_flight(touched, options)
    for key in touched:
        if new in run.work[key]:
            raise PlanInfeasible(
                f"broker {new} already holds a replica of {key[0]}-{key[1]} "
                f"{list(run.work[key])}, so it cannot take broker {old}'s; drain broker {old} "
                "instead"
            )
        dead = run.has_dead(key, besides=[old])
        if dead:
            raise PlanInfeasible(
                f"{key[0]}-{key[1]} also has a replica on dead broker(s) "
                f"{ids_text(dead)} and Kafka "
                "rejects a plan naming it; replace those first or bring them back"
            )
    worse = 0
    for key in touched:
        before = len(run.racks_of(run.work[key]))
        run.move(key, old, new)
        worse += len(run.racks_of(run.work[key])) < before
        run.bound.add_partition(1, 1, run.parts[key].size_bytes)
    if worse:
        run.findings.append(
            Finding(
                "warning",
                "rack-spread",
                f"broker {new} is on rack {snapshot.racks().get(new)!r} and broker {old} on "
                f"{snapshot.racks().get(old)!r}: {worse} partition(s) span fewer racks after; "
                f"`kreplica drain --brokers {old}` keeps the spread",
            )
        )
    return run.plan("replace", {"replaced_broker": old, "replacement_broker": new})
