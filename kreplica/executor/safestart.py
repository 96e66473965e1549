"""Is the cluster settled enough to start moving partitions? (pure: fed with what was read)

Refused, with nothing written (ClusterUnsettled, exit 11):

    mid-migration from ZooKeeper to KRaft     KAFKA-16120/16121: reassignments in the hybrid
                                              phase can stall or leave stray replicas
    the active controller changed less than   a new controller is still loading state and
    `settle_s` seconds ago                    electing leaders; moves pile on top of that.
                                              The cluster's first controller (no failover
                                              since it started) whose partitions all have
                                              leaders is settled: a fresh cluster (a CI job)
                                              applies at once
    partitions outside the plan are under-    a replica on a live broker is catching up:
    replicated (--allow-under-replicated)     more copying slows that repair (replicas
                                              missing because their broker is down are
                                              only noted: nothing copies to them meanwhile)

What a client can know (`ControllerFacts`, gathered by the executor's cluster):
- migration: ZooKeeper's /controller names a KRaft controller (`kraftControllerEpoch` >= 0,
  the hybrid and dual-write phases), or a broker runs with
  `zookeeper.metadata.migration.enable=true` (its static config, read with DescribeConfigs).
  With only --bootstrap-server on KRaft brokers whose controllers still write to ZooKeeper,
  nothing a client reads shows it: pass --zookeeper to cover that phase.
- controller age: ZooKeeper mode, from the creation time of the ephemeral /controller znode
  (the moment the current controller won its election). KRaft: DescribeQuorum names the
  quorum leader and its epoch, not when it was elected, so the age is unknown; a quorum with
  no leader is refused.
- first controller: ZooKeeper's /controller_epoch is created as 0 and each election adds 1, so
  1 is the cluster's first controller; a KRaft quorum's first leader has leader epoch 1. A
  higher epoch is a controller that took over from another (or a cluster restarted whole):
  the age counts then.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from kreplica.errors import ClusterUnsettled
from kreplica.model import ClusterSnapshot

Key = tuple[str, int]
SHOWN = 5


@dataclass(frozen=True)
class ControllerFacts:
    migration: str | None = None  # why the cluster is mid-migration; None: not seen
    controller: str | None = None  # who controls it, for messages ("broker 2", "node 3007")
    controller_age_s: float | None = None  # seconds since it took over; None: unknown
    leaderless: bool = False  # no active controller right now (an election under way)
    first: bool | None = None  # the cluster's first controller (epoch 1); None: unknown
    unknown: tuple[str, ...] = ()  # what of the controller's age could not be told, and why


@dataclass
class SafeStart:
    under_replicated: list[Key] = field(default_factory=list)  # outside the plan (allowed)
    notes: list[str] = field(default_factory=list)  # not checked, or let through


def read_controller_znode(data: Mapping[str, Any]) -> tuple[str, str | None]:
    """ZooKeeper's /controller JSON -> (who controls, why this is mid-migration or None).
    Version 2 (3.4+) carries kraftControllerEpoch: -1 for a ZooKeeper controller, >= 0 once a
    KRaft controller has taken the cluster over (the hybrid and dual-write phases)."""
    who = data.get("brokerid")
    raw = data.get("kraftControllerEpoch", -1)
    epoch = raw if isinstance(raw, int) and not isinstance(raw, bool) else -1  # 0 is an epoch
    if epoch < 0:
        return f"broker {who}", None
    return (
        f"KRaft controller {who}",
        f"ZooKeeper's /controller is held by KRaft controller {who}, kraftControllerEpoch {epoch}",
    )


MIGRATION_FLAG = "zookeeper.metadata.migration.enable"


def flagged_for_migration(flags: Mapping[int, str | None]) -> str | None:
    """Each live broker's `zookeeper.metadata.migration.enable` (None: not set) -> why this is
    mid-migration, or None. A ZooKeeper-mode broker runs with it true from the migration's
    first rolling restart until the brokers run as KRaft brokers."""
    on = sorted(b for b, v in flags.items() if v is not None and v.strip().lower() == "true")
    if not on:
        return None
    return f"broker(s) {', '.join(map(str, on))} run with {MIGRATION_FLAG}=true"


def under_replicated_outside(
    snapshot: ClusterSnapshot, plan_keys: Collection[Key], in_flight: Collection[Key]
) -> tuple[list[Key], list[Key]]:
    """Partitions not in the plan and not being reassigned with a replica out of sync:
    (those with one on a live broker, catching up; those missing only replicas on down
    brokers, which no copying repairs until the broker is back)."""
    live = snapshot.live_broker_ids()
    catching_up: list[Key] = []
    down_only: list[Key] = []
    for topic in snapshot.topics:
        for part in topic.partitions:
            key = (topic.name, part.partition)
            if key in plan_keys or key in in_flight or part.isr is None:
                continue
            behind = [b for b in part.replicas if b not in part.isr or b not in live]
            if any(b in live for b in behind):
                catching_up.append(key)
            elif behind:
                down_only.append(key)
    return sorted(catching_up), sorted(down_only)


def _names(keys: list[Key]) -> str:
    shown = ", ".join(f"{t}-{p}" for t, p in keys[:SHOWN])
    return shown + (f" and {len(keys) - SHOWN} more" if len(keys) > SHOWN else "")


# The notes on what could not be checked (the controller's age): the same on every apply to a
# cluster, so the CLI shows them once per cluster.
UNCHECKED = "not checked before starting: "


def check_safe_start(
    facts: ControllerFacts,
    snapshot: ClusterSnapshot,
    plan_keys: Collection[Key],
    in_flight: Collection[Key],
    *,
    settle_s: float,
    allow_under_replicated: bool,
) -> SafeStart:
    """Raise ClusterUnsettled for the first reason not to start; else what was let through."""
    unled = leaderless_partitions(snapshot)
    check_controller(facts, settle_s=settle_s, unled=unled)
    settled = facts.first is True and not unled  # a first start: its age does not matter
    unknown = facts.unknown if settle_s > 0 and not settled else ()  # all about the age
    result = SafeStart(notes=[UNCHECKED + u for u in unknown])
    low, down_only = under_replicated_outside(snapshot, plan_keys, in_flight)
    if low and not allow_under_replicated:
        raise ClusterUnsettled(
            f"{len(low)} partition(s) outside the plan are under-replicated with a replica "
            f"catching up ({_names(low)}); more copying slows that repair: wait until they "
            "are in sync, or pass `allow_under_replicated`"
        )
    result.under_replicated = low
    if down_only:
        result.notes.append(
            f"{len(down_only)} partition(s) outside the plan are under-replicated only "
            f"because a broker is down ({_names(down_only)})"
        )
    return result


def leaderless_partitions(snapshot: ClusterSnapshot) -> list[Key]:
    """Partitions with no leader now (leader -1: offline, or not elected yet)."""
    return sorted(
        (topic.name, part.partition)
        for topic in snapshot.topics
        for part in topic.partitions
        if part.leader is not None and part.leader < 0
    )


def check_controller(
    facts: ControllerFacts, *, settle_s: float, unled: Collection[Key] = ()
) -> None:
    """Raise ClusterUnsettled mid-migration, with no active controller, or with one elected
    less than `settle_s` seconds ago: after a failover, or at the cluster's first start while
    partitions (`unled`) have no leader yet."""
    if facts.migration is not None:
        raise ClusterUnsettled(
            f"the cluster is mid-migration from ZooKeeper to KRaft ({facts.migration}); "
            "reassignments in that phase can stall or leave stray replicas (KAFKA-16120, "
            "KAFKA-16121): finish or roll back the migration first"
        )
    if facts.leaderless:
        raise ClusterUnsettled(
            "the cluster has no active controller right now (no KRaft quorum leader, or no "
            "/controller in ZooKeeper): an election is under way; wait a minute and apply again"
        )
    age = facts.controller_age_s
    if settle_s <= 0 or age is None or age >= settle_s or (facts.first and not unled):
        return
    who = facts.controller or "the active controller"
    since = f"{who} became the active controller {max(0.0, age):.0f}s ago"
    if facts.first:
        raise ClusterUnsettled(
            f"{since}, when the cluster started, and {len(unled)} partition(s) have no leader "
            f"yet ({_names(sorted(unled))}); wait until they have, or pass "
            "`controller_settle_s` 0"
        )
    raise ClusterUnsettled(
        f"{since} (less than `controller_settle_s` {settle_s:g}s); wait until it has settled, "
        "or pass `controller_settle_s` 0"
    )
