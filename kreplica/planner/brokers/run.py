"""What the broker operations share: one planning run (the working assignment, its loads,
the disk guard, the plan it ends in) and the checks of the broker ids they are given."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.model import (
    ClusterSnapshot,
    Finding,
    Partition,
    PartitionChange,
    Plan,
    PlanReport,
    Topic,
)
from kreplica.planner.context import PlanContext
from kreplica.planner.degraded import refuse_in_flight
from kreplica.planner.disk import DiskGuard, finish_plan
from kreplica.planner.evaluate import spread
from kreplica.planner.options import PlanOptions
from kreplica.planner.report import LowerBound, build_report

Key = tuple[str, int]
BY = ("count", "bytes")


def ids_text(ids: Iterable[int]) -> str:
    return ", ".join(map(str, sorted(ids)))


def _unbuilt_columns(snapshot: ClusterSnapshot) -> Any:
    """The snapshot's columns when its topics were not built from them (None otherwise): a
    question about every partition is then asked of the arrays."""
    columns = getattr(snapshot, "columns", None)
    return None if getattr(snapshot, "materialised", True) else columns


def known_brokers(snapshot: ClusterSnapshot) -> set[int]:
    """Listed brokers plus any id a replica names (a dead broker whose registration is gone)."""
    ids = set(snapshot.broker_ids())
    columns = _unbuilt_columns(snapshot)
    if columns is not None:
        import numpy as np

        from kreplica.columns import PAD

        named = columns.replicas[columns.replicas != PAD]
        return ids | set(np.unique(named).tolist())
    for t in snapshot.topics:
        for p in t.partitions:
            ids.update(p.replicas)
    return ids


def check_known(flag: str, ids: Iterable[int], snapshot: ClusterSnapshot) -> None:
    """`flag`: the option that named `ids`, in backticks (kreplica.errors.FLAGS' words)."""
    known = known_brokers(snapshot)
    unknown = sorted(set(ids) - known)
    if unknown:
        many = len(unknown) > 1
        raise UsageError(
            f"{flag}: broker{'s' if many else ''} {ids_text(unknown)} "
            f"{'are' if many else 'is'} not "
            f"in this cluster (brokers: {ids_text(known)}); fix the list"
        )


def check_live(flag: str, ids: Iterable[int], snapshot: ClusterSnapshot) -> None:
    listed = set(snapshot.broker_ids())
    live = snapshot.live_broker_ids()
    for b in sorted(ids):
        if b not in listed:
            raise UsageError(
                f"{flag}: broker {b} is not registered in this cluster (brokers: "
                f"{ids_text(listed)}); start it first so it can receive replicas"
            )
        if b not in live:
            raise PlanInfeasible(
                f"{flag}: broker {b} is down, so it cannot receive replicas; bring it back first"
            )


def topics_in_scope(snapshot: ClusterSnapshot, topics: Sequence[str] | None) -> list[Topic]:
    if topics is None:
        return list(snapshot.topics)
    return [snapshot.topic(name) for name in sorted(dict.fromkeys(topics))]


@dataclass
class Run:
    """One planning run: the context (loads), the working assignment and what it found."""

    snapshot: ClusterSnapshot
    ctx: PlanContext
    topics: list[Topic]
    parts: dict[Key, Partition]
    work: dict[Key, list[int]]
    findings: list[Finding] = field(default_factory=list)
    bound: LowerBound = field(default_factory=LowerBound)
    skipped: set[Key] = field(default_factory=set)
    options: PlanOptions = field(default_factory=PlanOptions)
    disk_blocked: list[tuple[int, Key]] = field(default_factory=list)  # moves the guard refused

    @classmethod
    def start(
        cls,
        snapshot: ClusterSnapshot,
        eligible: Sequence[int],
        options: PlanOptions,
        topics: Sequence[str] | None,
    ) -> Run:
        scope = topics_in_scope(snapshot, topics)
        ctx = PlanContext.build(snapshot, eligible, options.seed)
        ctx.disk = DiskGuard.build(
            snapshot, options.disk_headroom, per_dir=options.log_dirs == "balanced"
        )
        parts = {(t.name, p.partition): p for t in scope for p in t.partitions}
        work = {k: list(p.replicas) for k, p in parts.items()}
        return cls(snapshot, ctx, scope, parts, work, options=options)

    def fits(self, key: Key, broker: int) -> bool:
        """A replica of this partition still fits on the broker's disk (the disk guard)."""
        disk = self.ctx.disk
        if disk is None or disk.fits(broker, self.parts[key].size_bytes):
            return True
        self.disk_blocked.append((broker, key))
        return False

    def leader_candidates(self, eligible: Iterable[int]) -> Callable[[Key], list[int]]:
        """key -> who may lead the partition after the move, in rank order: its eligible
        replicas in sync now, and those this plan adds (the move completes only once they
        are in sync, and the election runs after it). Asked once per key: reorders keep a
        partition's replicas."""
        elig = set(eligible)
        ranked: dict[Key, list[int]] = {}
        rank = self.ctx.rank

        def in_sync(key: Key) -> list[int]:
            found = ranked.get(key)
            if found is None:
                part = self.parts[key]
                isr = set(part.in_sync)
                found = ranked[key] = sorted(
                    (
                        b
                        for b in self.work[key]
                        if b in elig and (b in isr or b not in part.replicas)
                    ),
                    key=rank,
                )
            return found

        return in_sync

    def size_bytes(self, key: Key) -> int | None:
        return self.parts[key].size_bytes

    def racks_of(self, replicas: Iterable[int]) -> set[str]:
        return {self.ctx.rack(b) for b in replicas}

    def move(self, key: Key, old: int, new: int) -> None:
        """Replace `old` by `new` in the partition, same position; loads follow."""
        reps = self.work[key]
        after = [new if b == old else b for b in reps]
        self.ctx.replace(key[0], reps, after, self.parts[key].size_bytes)
        self.work[key] = after
        if self.ctx.disk is not None:
            self.ctx.disk.take(new, self.parts[key].size_bytes)

    def reorder(self, key: Key, leader: int) -> None:
        reps = self.work[key]
        after = [leader, *(b for b in reps if b != leader)]
        self.ctx.replace(key[0], reps, after, self.parts[key].size_bytes)
        self.work[key] = after

    def rack_ok(self, key: Key, old: int, new: int) -> bool:
        """Replacing `old` by `new` keeps at least as many racks as the partition had."""
        rack = self.ctx.rack
        others = {rack(b) for b in self.work[key] if b != old}
        # fewer racks only when `old` was its rack's one replica and `new`'s rack is taken
        return rack(old) in others or rack(new) not in others

    def in_flight(self, keys: Iterable[Key], options: PlanOptions) -> list[Key]:
        """`keys` without the partitions being reassigned (refused unless skip_in_flight)."""
        keys = list(keys)
        moving = [self.parts[k] for k in keys if self.parts[k].reassigning]
        if moving and not options.skip_in_flight:
            raise refuse_in_flight(moving)
        if moving:
            self.skipped.update((p.topic, p.partition) for p in moving)
            names = [f"{p.topic}-{p.partition}" for p in moving]
            self.findings.append(
                Finding(
                    "warning",
                    "skipped-in-flight",
                    f"left out {len(moving)} partition(s) being reassigned "
                    f"({', '.join(names[:10])}{', ...' if len(names) > 10 else ''}); plan "
                    "them again once the move is done",
                )
            )
        return [k for k in keys if k not in self.skipped]

    def has_dead(self, key: Key, besides: Iterable[int] = ()) -> list[int]:
        spare = set(besides)
        return [b for b in self.work[key] if self.ctx.is_dead(b) and b not in spare]

    def _disk_findings(self, changes: Sequence[PartitionChange]) -> None:
        """Moves the disk guard refused: the whole plan is refused when it moves nothing
        else, a warning otherwise."""
        if not self.disk_blocked or self.ctx.disk is None:
            return
        broker, key = self.disk_blocked[0]
        refusal = self.ctx.disk.refusal(broker, self.parts[key].size_bytes)
        if not any(c.added for c in changes):
            raise PlanInfeasible(refusal)
        brokers = sorted({b for b, _ in self.disk_blocked})
        self.findings.append(
            Finding(
                "warning",
                "disk-headroom",
                f"some moves were left out so that broker(s) {ids_text(brokers)} keep their disk "
                f"headroom; first: {key[0]}-{key[1]} to broker {broker}",
            )
        )

    def plan(self, operation: str, extra: PlanReport | None = None) -> Plan:
        changes: list[PartitionChange] = []
        for key in sorted(self.work):
            part = self.parts[key]
            after = tuple(self.work[key])
            if after != part.replicas:
                leader = part.current_leader if part.leader is not None else None
                changes.append(
                    PartitionChange(key[0], key[1], part.replicas, after, part.size_bytes, leader)
                )
        self._disk_findings(changes)
        dead = [c for c in changes if any(self.ctx.is_dead(b) for b in c.after)]
        if dead:  # a guard: the operations never place a dead broker
            raise PlanInfeasible(
                f"internal check failed: the plan names dead brokers ({dead[0].topic}-"
                f"{dead[0].partition} -> {list(dead[0].after)}); a bug: please report it"
            )
        report = build_report(
            snapshot=self.snapshot,
            strategy=operation,
            eligible=self.ctx.eligible,
            topics=[t.name for t in self.topics],
            changes=changes,
            lower_bound=self.bound,
            fallbacks=[],
        )
        report["operation"] = operation
        report.update(leader_spreads(self.snapshot, self.ctx.eligible, self.parts, self.work))
        report.update(extra or {})
        plan = Plan(
            cluster_id=self.snapshot.cluster_id,
            snapshot_fingerprint=self.snapshot.fingerprint(),
            strategy=operation,
            changes=tuple(changes),
            report=report,
            findings=tuple(self.findings),
        )
        return finish_plan(plan, self.snapshot, self.options.disk_headroom, self.options.log_dirs)


def leader_spreads(
    snapshot: ClusterSnapshot,
    eligible: Sequence[int],
    parts: dict[Key, Partition],
    work: dict[Key, list[int]],
) -> PlanReport:
    """Preferred-leader spread over the eligible brokers, before and after."""
    before = dict.fromkeys(eligible, 0)
    after = dict.fromkeys(eligible, 0)
    for t in snapshot.topics:
        for p in t.partitions:
            key = (t.name, p.partition)
            reps = work.get(key, list(p.replicas))
            if p.replicas and p.replicas[0] in before:
                before[p.replicas[0]] += 1
            if reps and reps[0] in after:
                after[reps[0]] += 1
    return {"leader_spread_before": spread(before), "leader_spread_after": spread(after)}


def smallest_sizes(sizes: Iterable[int | None], n: int) -> int | None:
    """The bytes of the `n` smallest replicas: no plan moving `n` of them copies less."""
    listed = list(sizes)
    known = [s for s in listed if s is not None]
    if len(known) < len(listed):
        return None
    return sum(heapq.nsmallest(n, known))


def movable_keys(run: Run, keys: Iterable[Key]) -> list[Key]:
    """Partitions a balancing move may touch: no dead replica (Kafka rejects the target)."""
    ctx = run.ctx
    if not any(n and ctx.is_dead(b) for b, n in ctx.cluster_replicas.items()):
        return list(keys)  # no replica on a dead broker at all: no partition to ask
    return [k for k in keys if not run.has_dead(k)]


def balancing_brokers(
    snapshot: ClusterSnapshot,
    options: PlanOptions,
    max_moves: int | None,
    max_bytes: int | None,
) -> list[int]:
    """A rebalance's brokers (the live ones not excluded), its budget checked."""
    for flag, value in (("`max_moves`", max_moves), ("`max_bytes`", max_bytes)):
        if value is not None and value < 0:
            raise UsageError(f"{flag} {value}: give 0 or more")
    live = snapshot.live_broker_ids()
    eligible = sorted(b for b in live if b not in options.exclude_brokers)
    if not eligible:
        raise PlanInfeasible("no eligible broker to rebalance over")
    return eligible


def start_balancing(
    snapshot: ClusterSnapshot,
    options: PlanOptions,
    max_moves: int | None,
    max_bytes: int | None,
) -> tuple[Run, list[int], list[Key]]:
    """A rebalance's run over the live brokers not excluded, its budget checked, and the
    partitions it may move (none in flight, none with a dead replica)."""
    eligible = balancing_brokers(snapshot, options, max_moves, max_bytes)
    run = Run.start(snapshot, eligible, options, None)
    return run, eligible, movable_keys(run, run.in_flight(sorted(run.parts), options))


def counts_on(run: Run, brokers: Iterable[int]) -> dict[int, int]:
    return {b: run.ctx.cluster_replicas[b] for b in brokers}


def bytes_on(run: Run, brokers: Iterable[int]) -> dict[int, int]:
    return {b: run.ctx.cluster_bytes[b] for b in brokers}


def need_sizes(snapshot: ClusterSnapshot, by: str) -> None:
    if by not in BY:
        raise UsageError(f"`by` {by!r}: use count or bytes")
    columns = _unbuilt_columns(snapshot)
    if columns is not None:
        from kreplica.columns import NO_SIZE

        unknown = bool((columns.size == NO_SIZE).any())
    else:
        unknown = any(p.size_bytes is None for t in snapshot.topics for p in t.partitions)
    if by == "bytes" and unknown:
        raise UsageError(
            "`by` bytes needs every partition's size and the source has none for some; "
            "read the cluster from the brokers (`bootstrap_server`: DescribeLogDirs) or use "
            "`by` count"
        )
