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

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.model import ClusterSnapshot, Finding, Partition, PartitionChange, Plan, Topic
from kreplica.planner.context import PlanContext
from kreplica.planner.degraded import refuse_in_flight
from kreplica.planner.disk import DiskGuard, finish_plan
from kreplica.planner.evaluate import spread
from kreplica.planner.options import PlanOptions
from kreplica.planner.report import LowerBound, build_report
from kreplica.planner.spreadflow import Group, solve, split

Key = tuple[str, int]
BY = ("count", "bytes")


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(map(str, sorted(ids)))


def known_brokers(snapshot: ClusterSnapshot) -> set[int]:
    """Listed brokers plus any id a replica names (a dead broker whose registration is gone)."""
    ids = set(snapshot.broker_ids())
    for t in snapshot.topics:
        for p in t.partitions:
            ids.update(p.replicas)
    return ids


def _check_known(flag: str, ids: Iterable[int], snapshot: ClusterSnapshot) -> None:
    known = known_brokers(snapshot)
    unknown = sorted(set(ids) - known)
    if unknown:
        many = len(unknown) > 1
        raise UsageError(
            f"{flag}: broker{'s' if many else ''} {_ids(unknown)} {'are' if many else 'is'} not "
            f"in this cluster (brokers: {_ids(known)}); fix the list"
        )


def _check_live(flag: str, ids: Iterable[int], snapshot: ClusterSnapshot) -> None:
    listed = set(snapshot.broker_ids())
    live = snapshot.live_broker_ids()
    for b in sorted(ids):
        if b not in listed:
            raise UsageError(
                f"{flag}: broker {b} is not registered in this cluster (brokers: "
                f"{_ids(listed)}); start it first so it can receive replicas"
            )
        if b not in live:
            raise PlanInfeasible(
                f"{flag}: broker {b} is down, so it cannot receive replicas; bring it back first"
            )


def _scope(snapshot: ClusterSnapshot, topics: Sequence[str] | None) -> list[Topic]:
    if topics is None:
        return list(snapshot.topics)
    return [snapshot.topic(name) for name in sorted(dict.fromkeys(topics))]


@dataclass
class _Run:
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
    ) -> _Run:
        scope = _scope(snapshot, topics)
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
        reps = self.work[key]
        after = self.racks_of([b for b in reps if b != old] + [new])
        return len(after) >= len(self.racks_of(reps))

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
                f"some moves were left out so that broker(s) {_ids(brokers)} keep their disk "
                f"headroom; first: {key[0]}-{key[1]} to broker {broker}",
            )
        )

    def plan(self, operation: str, extra: dict[str, object] | None = None) -> Plan:
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
                f"{dead[0].partition} -> {list(dead[0].after)}); rerun with --debug and report it"
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
        report.update(_leader_spreads(self.snapshot, self.ctx.eligible, self.parts, self.work))
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


def _leader_spreads(
    snapshot: ClusterSnapshot,
    eligible: Sequence[int],
    parts: dict[Key, Partition],
    work: dict[Key, list[int]],
) -> dict[str, object]:
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


def _smallest_sizes(sizes: Iterable[int | None], n: int) -> int | None:
    """The bytes of the `n` smallest replicas: no plan moving `n` of them copies less."""
    listed = list(sizes)
    known = sorted(s for s in listed if s is not None)
    if len(known) < len(listed):
        return None
    return sum(known[:n])


# --- drain ------------------------------------------------------------------------------------


def drain_plan(
    snapshot: ClusterSnapshot,
    brokers: Iterable[int],
    *,
    topics: Sequence[str] | None = None,
    options: PlanOptions = PlanOptions(),
    keep_rack_share: bool = False,
) -> Plan:
    """Move every replica off `brokers` (of `topics`, default all), one move per replica.

    Destinations (the rack rule: a partition's new replicas take racks its staying replicas
    do not use, one each, as many as it can, so no partition spans fewer racks):
      default          the exact balance (spreadflow): replicas per staying broker as even
                       as the rule allows, then each topic, then bytes; from a greedy start
      keep_rack_share  per replica, the drained broker's own rack first, then least loaded
    Every partition the drain touches gets as preferred leader an in-sync staying replica or
    its new one, chosen so preferred leaders per broker end as even as they can (a partition
    changes only when that evens them out; a drained leader's always does).
    Refused: unknown broker (exit 2); fewer brokers left than a partition's RF, or a rack
    emptied that a partition needs for its spread (exit 4).
    """
    drained = frozenset(brokers)
    if not drained:
        raise UsageError("--brokers: no broker to drain; give ids like 4 or 4,5")
    _check_known("--brokers", drained, snapshot)
    live = snapshot.live_broker_ids()
    eligible = sorted(b for b in live if b not in drained and b not in options.exclude_brokers)
    run = _Run.start(snapshot, eligible, options, topics)
    touched = [k for k in sorted(run.parts) if any(b in drained for b in run.work[k])]
    touched = run.in_flight(touched, options)
    _refuse_drain(run, drained, touched)
    unplaced: list[tuple[Group, dict[int, int], tuple[int, ...]]] = []
    if keep_rack_share:
        for key in touched:
            for r in list(run.work[key]):
                if r in drained:
                    run.move(key, r, _drain_pick(run, key, r, own_rack_first=True))
    else:
        unplaced = _drain_balanced(run, drained, touched)
    led = 0
    for key in touched:
        part = run.parts[key]
        count = sum(1 for b in part.replicas if b in drained)
        led += part.current_leader in drained
        run.bound.add_partition(count, count, part.size_bytes)
    changed = _drain_leaders(run, drained, touched, unplaced)
    evened = sum(1 for old, _ in changed.values() if old not in drained)
    if led or evened:
        also = (
            f"; {evened} other partition(s) of the drain get another in-sync replica as "
            "preferred leader, so preferred leaders per broker end even"
            if evened
            else ""
        )
        run.findings.append(
            Finding(
                "info",
                "elect-after",
                f"{led} partition(s) are led by a drained broker; each gets a staying in-sync "
                f"or new replica as preferred leader{also}; a preferred leader election after "
                "the move (`kreplica elect PLAN.json`, run by `kreplica drain` after applying) "
                "makes them lead",
            )
        )
    remaining = sum(1 for k in run.work for b in run.work[k] if b in drained)
    return run.plan(
        "drain",
        {
            **_spreads_without(run, drained),
            "drained_brokers": sorted(drained),
            "keep_rack_share": keep_rack_share,
            "replicas_left_on_drained": remaining,
            "partitions_led_by_drained": led,
            "preferred_leader_changes": changed,
        },
    )


def _drain_pick(run: _Run, key: Key, r: int, *, own_rack_first: bool) -> int:
    """One drained replica's destination, greedily: most racks for the partition, then (with
    own_rack_first) r's rack, then least loaded (topic, cluster, bytes, tie-break)."""
    ctx = run.ctx
    rest = [b for b in run.work[key] if b != r]
    rest_racks = run.racks_of(rest)
    own = ctx.rack(r)
    candidates = [b for b in ctx.eligible if b not in run.work[key]]
    # non-empty: _refuse_drain checked there are enough brokers; the disk guard may leave none
    roomy = [b for b in candidates if run.fits(key, b)]
    if not roomy and ctx.disk is not None:
        raise PlanInfeasible(ctx.disk.refusal(candidates[0], run.parts[key].size_bytes))
    _, chosen = min(
        (
            (
                -len(rest_racks | {ctx.rack(b)}),
                own_rack_first and ctx.rack(b) != own,
                ctx.load_key(key[0], b),
            ),
            b,
        )
        for b in roomy
    )
    return chosen


def _drain_layers(
    run: _Run, rest: Sequence[int], k: int, rack_brokers: Mapping[str, list[int]]
) -> list[tuple[int, int, list[int]]]:
    """The rack rule as layers (lo, hi, brokers) per partition: k units on racks the staying
    replicas do not use, one each; with fewer such racks than units, each of them gets one
    and the rest go anywhere (each broker once)."""
    used = run.racks_of(rest)
    fresh = [r for r in rack_brokers if r not in used]
    if k <= len(fresh):
        return [(0, 1, rack_brokers[r]) for r in fresh]
    layers = []
    for r, bs in rack_brokers.items():
        free = [b for b in bs if b not in rest]
        if free:
            layers.append((int(r in fresh), min(k, len(free)), free))
    return sorted(layers, key=lambda layer: -layer[0])


def _drain_balanced(
    run: _Run, drained: frozenset[int], touched: Sequence[Key]
) -> list[tuple[Group, dict[int, int], tuple[int, ...]]]:
    """Destinations at the exact balance (spreadflow), the disk guard's refusals aside.

    A group of partitions a drained broker led (one replica leaving each) is returned
    unplaced, with its units per broker and its in-sync staying replicas: which partition
    takes which broker is then chosen with the leaders (_drain_leaders), so that a broker short
    of leaders gets the partitions it can lead. The others are placed here."""
    ctx = run.ctx
    rack_brokers: dict[str, list[int]] = {}
    for b in sorted(ctx.eligible, key=ctx.rank):
        rack_brokers.setdefault(ctx.rack(b), []).append(b)
    groups: dict[tuple[str, tuple[int, ...], int, tuple[int, ...] | None], Group] = {}
    for key in touched:
        part = run.parts[key]
        rest = tuple(sorted(b for b in run.work[key] if b not in drained))
        k = len(run.work[key]) - len(rest)
        led = None
        if k == 1 and part.replicas[0] in drained:
            isr = set(part.in_sync)
            led = tuple(b for b in rest if b in isr and b in ctx.eligible_set)
        gk = (key[0], rest, k, led)
        if gk not in groups:
            groups[gk] = Group(key[0], k, _drain_layers(run, rest, k, rack_brokers))
        groups[gk].members.append(key)
    flow_groups: list[tuple[Group, tuple[int, ...] | None]] = []
    by_hand: list[Key] = []
    for (_, _, _, led), g in groups.items():
        if ctx.disk is not None:  # only brokers with room for the group's largest partition
            big = max((run.parts[k].size_bytes or 0 for k in g.members), default=0)
            g.layers = [
                (lo, hi, kept)
                for lo, hi, bs in g.layers
                if (kept := [b for b in bs if ctx.disk.fits(b, big)])
            ]
            lows = sum(lo for lo, _, _ in g.layers)
            room = sum(min(hi, len(bs)) for _, hi, bs in g.layers)
            if room < g.units or lows < _drain_lows(g, run, rack_brokers):
                by_hand.extend(g.members)
                continue
        g.members.sort(key=lambda k: (-(run.parts[k].size_bytes or 0), k))
        flow_groups.append((g, led))
    glist = [g for g, _ in flow_groups]
    counts = {b: ctx.cluster_replicas[b] for b in ctx.eligible}
    topic_base = {t: dict(ctx.topic_replicas[t]) for t in {g.topic for g in glist}}
    starts = _greedy_start(run, glist, counts, topic_base)
    base = {b: ctx.cluster_replicas[b] for b in ctx.eligible}
    per_group = solve(glist, base, topic_base)
    later = []
    for (g, led), per, first in zip(flow_groups, per_group, starts, strict=True):
        if led is not None:
            later.append((g, per or dict(Counter(b for (b,) in first)), led))
            continue
        for key, dest in zip(g.members, split(g, per) if per else first, strict=True):
            _drain_place(run, key, drained, dest)
    for key in by_hand:
        for r in [b for b in run.work[key] if b in drained]:
            run.move(key, r, _drain_pick(run, key, r, own_rack_first=False))
    return later


def _drain_place(run: _Run, key: Key, drained: frozenset[int], dest: Sequence[int]) -> None:
    """The partition's drained replicas replaced by `dest` (fewest bytes first), in place;
    a broker the disk guard refuses by then is swapped for a greedy pick."""
    ctx = run.ctx
    todo = sorted(dest, key=lambda b: (ctx.cluster_bytes[b], ctx.rank(b)))
    for r in [b for b in run.work[key] if b in drained]:
        new = todo.pop(0)
        if not run.fits(key, new):
            new = _drain_pick(run, key, r, own_rack_first=False)
        run.move(key, r, new)


def _drain_lows(g: Group, run: _Run, rack_brokers: Mapping[str, list[int]]) -> int:
    """Units the rule puts on fresh racks per partition (before the guard filtered them)."""
    rest = [b for b in run.work[g.members[0]] if b in run.ctx.eligible_set]
    layers = _drain_layers(run, rest, g.units, rack_brokers)
    return sum(lo for lo, _, _ in layers)


def _greedy_start(
    run: _Run,
    groups: Sequence[Group],
    counts: dict[int, int],
    topic_counts: Mapping[str, Mapping[int, int]],
) -> list[list[list[int]]]:
    """A placement following the rack rule, least loaded first: the flow's feasible start
    (g.start), and per member the brokers chosen."""
    rank = run.ctx.rank
    topic_add: dict[tuple[str, int], int] = {}
    out: list[list[list[int]]] = [[] for _ in groups]
    # the groups with the fewest brokers to choose from first: the others fill around them
    order = sorted(
        range(len(groups)), key=lambda i: (sum(len(bs) for _, _, bs in groups[i].layers), i)
    )
    for gi in order:
        g = groups[gi]
        chosen_all = []
        for _ in g.members:
            chosen: list[int] = []
            taken = [0] * len(g.layers)
            while len(chosen) < g.units:
                must = [i for i, (lo, _, _) in enumerate(g.layers) if taken[i] < lo]
                pool = must or [i for i, (_, hi, _) in enumerate(g.layers) if taken[i] < hi]
                b, i = min(
                    (
                        (
                            counts[b],
                            topic_counts[g.topic].get(b, 0) + topic_add.get((g.topic, b), 0),
                            rank(b),
                        ),
                        b,
                        i,
                    )
                    for i in pool
                    for b in g.layers[i][2]
                    if b not in chosen
                )[1:]
                chosen.append(b)
                taken[i] += 1
                counts[b] += 1
                topic_add[(g.topic, b)] = topic_add.get((g.topic, b), 0) + 1
                g.start[b] = g.start.get(b, 0) + 1
            chosen_all.append(chosen)
        out[gi] = chosen_all
    return out


def _drain_leaders(
    run: _Run,
    drained: frozenset[int],
    touched: Sequence[Key],
    unplaced: Sequence[tuple[Group, dict[int, int], tuple[int, ...]]] = (),
) -> dict[str, list[int]]:
    """Preferred leaders of the partitions the drain touches: an in-sync staying replica or a
    new one each, spread as evenly as those choices allow (spreadflow, started from the
    current leaders, so a partition changes only when that evens leaders out); returns
    partition -> [old, new] preferred leader for each one that changes.

    An unplaced group (from _drain_balanced: its units per broker decided, not which
    partition gets which) leads from its in-sync staying replicas (each partition has them
    all) or from its new brokers, each as many times as the group sends units there; its
    partitions are then handed the brokers to match."""
    ctx = run.ctx
    elig = ctx.eligible_set
    waiting = {k for g, _, _ in unplaced for k in g.members}
    groups: dict[tuple[str, tuple[int, ...]], Group] = {}
    for key in touched:
        part = run.parts[key]
        if key in waiting or not part.replicas:
            continue
        isr = set(part.in_sync)
        cands = tuple(
            sorted(b for b in run.work[key] if b in elig and (b in isr or b not in part.replicas))
        )
        if not cands:
            continue
        gk = (key[0], cands)
        if gk not in groups:
            groups[gk] = Group(key[0], 1, [(0, 1, list(cands))])
        groups[gk].members.append(key)
    base = {b: ctx.cluster_leaders[b] for b in ctx.eligible}
    topics = {g.topic for g in groups.values()} | {g.topic for g, _, _ in unplaced}
    topic_base = {t: dict(ctx.topic_leaders[t]) for t in topics}
    for g in groups.values():
        for key in g.members:
            lead = run.work[key][0]
            if lead in base:  # counted apart: its choice is the flow's
                base[lead] -= 1
                topic_base[g.topic][lead] -= 1
    counts = dict(base)
    tcounts = {t: dict(c) for t, c in topic_base.items()}
    for g in groups.values():
        for key in g.members:
            lead = run.work[key][0]
            if lead not in g.layers[0][2]:
                lead = min(g.layers[0][2], key=lambda b: (counts[b], tcounts[g.topic].get(b, 0)))
            counts[lead] += 1
            tcounts[g.topic][lead] = tcounts[g.topic].get(lead, 0) + 1
            g.start[lead] = g.start.get(lead, 0) + 1
    flexible = []
    for g, per, isr_rest in unplaced:
        n = len(g.members)
        caps = {**dict.fromkeys(isr_rest, n), **per}
        start: dict[int, int] = {}
        tc = tcounts[g.topic]
        for _ in g.members:  # a greedy start: the least loaded candidate with room, on a
            # tie the new replica (it takes the drained leader's place: the least change)
            lead = min(
                (b for b in caps if start.get(b, 0) < caps[b]),
                key=lambda b: (counts[b], tc.get(b, 0), b not in per, ctx.rank(b)),
            )
            start[lead] = start.get(lead, 0) + 1
            counts[lead] += 1
            tc[lead] = tc.get(lead, 0) + 1
        flexible.append(Group(g.topic, 1, [(0, 1, sorted(caps))], list(g.members), start, caps))
    glist = list(groups.values()) + flexible
    solved = solve(glist, base, topic_base)
    for g, lead_per in zip(groups.values(), solved, strict=False):
        for key, (lead,) in zip(g.members, split(g, lead_per), strict=True):
            if run.work[key][0] != lead:
                run.reorder(key, lead)
    for (g, per, _), lead_per in zip(unplaced, solved[len(groups) :], strict=True):
        # partitions led by a new broker b take b; the others the brokers left over
        pairs = [(b, b) for b in sorted(per) for _ in range(lead_per.get(b, 0))]
        left = [b for b in sorted(per) for _ in range(per[b] - lead_per.get(b, 0))]
        leads = [r for r in sorted(lead_per) if r not in per for _ in range(lead_per[r])]
        pairs += list(zip(left, leads, strict=True))
        for key, (dest, lead) in zip(g.members, pairs, strict=True):
            _drain_place(run, key, drained, [dest])
            if lead in run.work[key] and run.work[key][0] != lead:
                run.reorder(key, lead)
    changed: dict[str, list[int]] = {}
    for key in touched:
        old, new = run.parts[key].replicas, run.work[key]
        if old and new and old[0] != new[0]:
            changed[f"{key[0]}-{key[1]}"] = [old[0], new[0]]
    return changed


def _spreads_without(run: _Run, drained: frozenset[int]) -> dict[str, object]:
    """Replica spreads over the brokers that stay (a drained broker's 0 says nothing)."""
    stay = run.ctx.eligible
    before: dict[str, dict[int, int]] = {t.name: dict.fromkeys(stay, 0) for t in run.topics}
    after: dict[str, dict[int, int]] = {t.name: dict.fromkeys(stay, 0) for t in run.topics}
    for key, part in run.parts.items():
        for counts, reps in ((before, part.replicas), (after, run.work[key])):
            for b in reps:
                if b in counts[key[0]]:
                    counts[key[0]][b] += 1
    cluster_before = {b: run.ctx.cluster_replicas[b] for b in stay}
    for key, part in run.parts.items():  # the context holds the counts after; undo the moves
        for b in part.replicas:
            if b in cluster_before:
                cluster_before[b] += 1
        for b in run.work[key]:
            if b in cluster_before:
                cluster_before[b] -= 1
    return {
        "spread_scope": "brokers not drained",
        "topic_spread_before": {t: spread(c) for t, c in sorted(before.items())},
        "topic_spread_after": {t: spread(c) for t, c in sorted(after.items())},
        "cluster_spread_before": spread(cluster_before),
        "cluster_spread_after": spread({b: run.ctx.cluster_replicas[b] for b in stay}),
    }


def _refuse_drain(run: _Run, drained: frozenset[int], touched: Sequence[Key]) -> None:
    ctx = run.ctx
    eligible = set(ctx.eligible)
    for key in touched:
        dead = run.has_dead(key, besides=drained)
        if dead:
            raise PlanInfeasible(
                f"{key[0]}-{key[1]} also has a replica on dead broker(s) {_ids(dead)} and Kafka "
                "rejects a plan naming it; drain those too (add them to --brokers) or bring them "
                "back first"
            )
    need = max((len(run.work[k]) for k in touched), default=0)
    if need > len(eligible):
        worst = next(k for k in touched if len(run.work[k]) == need)
        raise PlanInfeasible(
            f"draining broker(s) {_ids(drained)} leaves {len(eligible)} broker(s) to place "
            f"replicas on, but topic {worst[0]!r} has RF {need}; drain fewer brokers, add "
            "brokers first, or lower that topic's RF"
        )
    left_racks = run.racks_of(eligible)
    emptied = sorted({r for b in drained if (r := ctx.racks.get(b)) is not None} - set(left_racks))
    for key in touched:
        reps = run.work[key]
        kept = [b for b in reps if b not in drained]
        now = len(run.racks_of(reps))
        reachable = len(run.racks_of(kept) | left_racks)
        if reachable < now:
            which = f"empties rack(s) {', '.join(emptied)}" if emptied else "leaves too few racks"
            raise PlanInfeasible(
                f"draining broker(s) {_ids(drained)} {which}: {key[0]}-{key[1]} (RF "
                f"{len(reps)}) spans {now} racks and only {reachable} would be left for it; "
                "keep a broker of that rack, add one there first, or drain fewer brokers"
            )


# --- replace -----------------------------------------------------------------------------------


def replace_plan(
    snapshot: ClusterSnapshot,
    old: int,
    new: int,
    *,
    options: PlanOptions = PlanOptions(),
) -> Plan:
    """Broker `new` takes exactly broker `old`'s replicas, each in the same position."""
    _check_known("--broker", [old], snapshot)
    _check_known("--with", [new], snapshot)
    if old == new:
        raise UsageError(f"--broker and --with are both {old}; name two different brokers")
    _check_live("--with", [new], snapshot)
    live = snapshot.live_broker_ids()
    eligible = sorted(b for b in live if b != old)
    run = _Run.start(snapshot, eligible, options, None)
    touched = [k for k in sorted(run.parts) if old in run.work[k]]
    touched = run.in_flight(touched, options)
    for key in touched:
        if new in run.work[key]:
            raise PlanInfeasible(
                f"broker {new} already holds a replica of {key[0]}-{key[1]} "
                f"{list(run.work[key])}, so it cannot take broker {old}'s; use `kreplica drain "
                f"--brokers {old}` instead"
            )
        dead = run.has_dead(key, besides=[old])
        if dead:
            raise PlanInfeasible(
                f"{key[0]}-{key[1]} also has a replica on dead broker(s) {_ids(dead)} and Kafka "
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


# --- add brokers -----------------------------------------------------------------------------


def _movable(run: _Run, keys: Iterable[Key]) -> list[Key]:
    """Partitions a balancing move may touch: no dead replica (Kafka rejects the target)."""
    return [k for k in keys if not run.has_dead(k)]


def _counts(run: _Run, brokers: Iterable[int]) -> dict[int, int]:
    return {b: run.ctx.cluster_replicas[b] for b in brokers}


def _bytes(run: _Run, brokers: Iterable[int]) -> dict[int, int]:
    return {b: run.ctx.cluster_bytes[b] for b in brokers}


def _need_sizes(snapshot: ClusterSnapshot, by: str) -> None:
    if by not in BY:
        raise UsageError(f"--by {by!r}: use count or bytes")
    if by == "bytes" and any(p.size_bytes is None for t in snapshot.topics for p in t.partitions):
        raise UsageError(
            "--by bytes needs every partition's size and the source has none for some; "
            "read the cluster with --bootstrap-server (DescribeLogDirs) or use --by count"
        )


def add_brokers_plan(
    snapshot: ClusterSnapshot,
    brokers: Iterable[int],
    *,
    by: str = "count",
    options: PlanOptions = PlanOptions(),
) -> Plan:
    """The fewest moves that bring the new `brokers` up to their share.

    share (count): T // L replicas, T the replicas on the L eligible brokers; the lower bound
    is the new brokers' deficit. share (bytes): total bytes // L; a move never takes a new
    broker past its share, so every byte moved is one the new brokers need.
    each move: the new broker furthest below its share takes a replica from the most loaded
    old broker (count: most replicas, bytes: most bytes) of a partition it is not in, without
    losing a rack; prefer a topic the source holds more of than the new broker, then (count)
    the smallest partition or (bytes) the largest that still fits, then a follower
    """
    new = frozenset(brokers)
    if not new:
        raise UsageError("--brokers: no new broker given; give ids like 6 or 6,7")
    _check_known("--brokers", new, snapshot)
    _check_live("--brokers", new, snapshot)
    _need_sizes(snapshot, by)
    live = snapshot.live_broker_ids()
    eligible = sorted(b for b in live if b not in options.exclude_brokers or b in new)
    old = [b for b in eligible if b not in new]
    if not old:
        raise PlanInfeasible("every eligible broker is new: there is nothing to move from")
    run = _Run.start(snapshot, eligible, options, None)
    ctx = run.ctx
    keys = run.in_flight(sorted(run.parts), options)
    keys = _movable(run, keys)
    by_broker: dict[int, list[Key]] = {b: [] for b in eligible}
    for k in keys:
        for b in run.work[k]:
            if b in by_broker:
                by_broker[b].append(k)
    if by == "count":
        counts = _counts(run, eligible)
        share = sum(counts.values()) // len(eligible)
        deficit = {n: max(0, share - counts[n]) for n in new}
        load: Callable[[int], int] = lambda b: ctx.cluster_replicas[b]  # noqa: E731
    else:
        sizes = _bytes(run, eligible)
        share = sum(sizes.values()) // len(eligible)
        deficit = {n: max(0, share - sizes[n]) for n in new}
        load = lambda b: ctx.cluster_bytes[b]  # noqa: E731
    wanted = dict(deficit)
    moves: list[tuple[Key, int, int]] = []
    blocked: set[int] = set()
    while True:
        hungry = [n for n in sorted(new) if wanted[n] > 0 and n not in blocked]
        if not hungry:
            break
        n = max(hungry, key=lambda b: (wanted[b], -ctx.rank(b)))
        found = _add_one(run, n, old, by_broker, load, by, wanted[n], share)
        if found is None:
            blocked.add(n)
            continue
        key, src = found
        size = run.parts[key].size_bytes or 0
        run.move(key, src, n)
        by_broker[src].remove(key)
        by_broker[n].append(key)
        wanted[n] -= 1 if by == "count" else size
        moves.append((key, src, n))
    sizes_moved = [run.parts[k].size_bytes for k, _, _ in moves]
    if by == "count":
        lb_moves = sum(deficit.values())
        old_sizes = [run.parts[k].size_bytes for b in old for k in by_broker[b]]
        old_sizes += sizes_moved
        lb_bytes = _smallest_sizes(old_sizes, lb_moves)
    else:
        gained = sum(s or 0 for s in sizes_moved)
        biggest = max((run.parts[k].size_bytes or 0 for k in keys), default=0)
        lb_moves = -(-gained // biggest) if biggest else 0
        lb_bytes = gained
    run.bound = LowerBound(lb_moves, lb_moves, lb_bytes)
    short = {n: w for n, w in wanted.items() if w > 0 and (by == "count" or n in blocked)}
    if short:
        unit = "replica(s)" if by == "count" else "bytes"
        run.findings.append(
            Finding(
                "warning",
                "share-not-reached",
                "no move without losing a rack (or a replica twice on a broker) is left for "
                + ", ".join(f"broker {n} ({w} {unit} short)" for n, w in sorted(short.items()))
                + "; racks limit where replicas may go",
            )
        )
    return run.plan(
        "add-brokers",
        {
            "new_brokers": sorted(new),
            "by": by,
            "share": share,
            "new_broker_deficit": dict(sorted(deficit.items())),
            "lower_bound_moves": lb_moves,
        },
    )


def _add_one(
    run: _Run,
    n: int,
    old: Sequence[int],
    by_broker: dict[int, list[Key]],
    load: Callable[[int], int],
    by: str,
    room: int,
    share: int,
) -> tuple[Key, int] | None:
    """The next replica for new broker `n`: from the most loaded old broker that has one."""
    ctx = run.ctx
    for src in sorted(old, key=lambda b: (-load(b), ctx.rank(b))):
        if by == "bytes" and load(src) <= share:
            break  # never take a broker below its share
        best: tuple[tuple[bool, int, int, bool, Key], Key] | None = None
        for key in by_broker[src]:
            reps = run.work[key]
            if n in reps or not run.rack_ok(key, src, n) or not run.fits(key, n):
                continue
            size = run.parts[key].size_bytes or 0
            if by == "bytes" and not 0 < size <= room:
                continue
            topic = ctx.topic_replicas[key[0]]
            rank = (
                topic[src] <= topic[n],  # the topic's spread would not get better
                size if by == "count" else -size,
                topic[n] - topic[src],
                reps[0] == src,  # followers first: no leadership moves
                key,
            )
            if best is None or rank < best[0]:
                best = (rank, key)
        if best is not None:
            return best[1], src
    return None


# --- rebalance ---------------------------------------------------------------------------------


def _excess_bound(counts: dict[int, int], after: dict[int, int]) -> int:
    """Fewest single-replica moves from `counts` to any layout at least as even as `after`:
    to spread <= 1 (the exact minimum, q+1 for the fullest) when `after` reaches it, else
    to bring the fullest down to `after`'s max and the emptiest up to its min."""
    if not counts:
        return 0
    values = sorted(counts.values(), reverse=True)
    if spread(after) <= 1:
        q, r = divmod(sum(values), len(values))
        return sum(max(0, c - (q + 1 if i < r else q)) for i, c in enumerate(values))
    top, bottom = max(after.values()), min(after.values())
    return max(sum(max(0, c - top) for c in values), sum(max(0, bottom - c) for c in values))


def rebalance_plan(
    snapshot: ClusterSnapshot,
    *,
    by: str = "count",
    max_moves: int | None = None,
    max_bytes: int | None = None,
    options: PlanOptions = PlanOptions(),
) -> Plan:
    """The fewest moves to per-topic replica spread <= 1 and cluster spread <= 1 (or, --by
    bytes, the most even bytes per broker), within the budget; then preferred-leader spread
    <= 1 per topic and cluster by reordering replicas (no data moves).

    1. per topic, while its spread > 1: a replica of the topic moves from a broker with the
       most of it to one with the fewest (rack kept): fullest-in-the-cluster source and
       emptiest destination first, smallest partition first
    2. count: while the cluster spread > 1, the same from the fullest to the emptiest broker,
       only in a topic the source holds more of than the destination (its spread stays <= 1)
       bytes: from the broker with the most bytes, the replica that best halves the gap to
       a broker with fewer bytes (strictly closer, so it ends)
    3. leaders: along a chain a -> ... -> b of partitions led by a with the next broker in
       sync in them (or added by this plan: in sync once the move completes), each
       partition's leader position goes to the next one, from a broker with the most
       preferred leaders to one with >= 2 fewer (per topic first, then cluster)
    """
    _need_sizes(snapshot, by)
    for flag, value in (("--max-moves", max_moves), ("--max-bytes", max_bytes)):
        if value is not None and value < 0:
            raise UsageError(f"{flag} {value}: give 0 or more")
    live = snapshot.live_broker_ids()
    eligible = sorted(b for b in live if b not in options.exclude_brokers)
    if not eligible:
        raise PlanInfeasible("no eligible broker to rebalance over")
    run = _Run.start(snapshot, eligible, options, None)
    ctx = run.ctx
    keys = _movable(run, run.in_flight(sorted(run.parts), options))
    counts_before = _counts(run, eligible)
    bytes_before = _bytes(run, eligible)
    topic_before = {
        t.name: {b: ctx.topic_replicas[t.name][b] for b in eligible} for t in run.topics
    }
    budget = _Budget(max_moves, max_bytes)
    by_topic: dict[str, list[Key]] = {}
    for k in keys:
        by_topic.setdefault(k[0], []).append(k)
    for topic in sorted(by_topic):
        _even_topic(run, topic, by_topic[topic], eligible, budget)
    if by == "count":
        _even_cluster_count(run, keys, eligible, budget)
    else:
        _even_cluster_bytes(run, keys, eligible, budget)
    reordered = _even_leaders(run, keys, eligible)
    # lower bound of the data moves for the evenness reached
    topic_lb = sum(
        _excess_bound(topic_before[t], {b: ctx.topic_replicas[t][b] for b in eligible})
        for t in topic_before
    )
    moves_lb = topic_lb
    sizes = [run.parts[k].size_bytes for k in keys]
    if by == "count":
        moves_lb = max(moves_lb, _excess_bound(counts_before, _counts(run, eligible)))
        bytes_lb = _smallest_sizes(sizes, moves_lb)
    else:
        after = _bytes(run, eligible)
        top, bottom = max(after.values()), min(after.values())
        bytes_need = max(
            sum(max(0, v - top) for v in bytes_before.values()),
            sum(max(0, bottom - v) for v in bytes_before.values()),
        )
        biggest = max((s or 0 for s in sizes), default=0)
        moves_lb = max(moves_lb, -(-bytes_need // biggest) if biggest else 0)
        bytes_lb = max(bytes_need, _smallest_sizes(sizes, moves_lb) or 0)
    run.bound = LowerBound(moves_lb, moves_lb, bytes_lb)
    if budget.exhausted:
        run.findings.append(
            Finding(
                "info",
                "budget-reached",
                f"stopped at the budget ({budget.text()}); the spread reached is the best "
                "these moves give, plan again for the rest",
            )
        )
    if reordered:
        run.findings.append(
            Finding(
                "info",
                "elect-after",
                f"{reordered} partition(s) only change their preferred leader (no data moves); "
                "a preferred leader election after the move (`kreplica elect PLAN.json`, run "
                "by `kreplica rebalance` after applying) makes it lead",
            )
        )
    return run.plan(
        "rebalance",
        {
            "by": by,
            "max_moves": max_moves,
            "max_bytes": max_bytes,
            "leaders_reordered": reordered,
            "lower_bound_moves": moves_lb,
            "broker_bytes_before": dict(sorted(bytes_before.items())),
            "broker_bytes_after": dict(sorted(_bytes(run, eligible).items())),
        },
    )


@dataclass
class _Budget:
    moves: int | None
    bytes: int | None
    used_moves: int = 0
    used_bytes: int = 0
    exhausted: bool = False

    def fits(self, size: int) -> bool:
        ok = (self.moves is None or self.used_moves + 1 <= self.moves) and (
            self.bytes is None or self.used_bytes + size <= self.bytes
        )
        if not ok:
            self.exhausted = True
        return ok

    def spend(self, size: int) -> None:
        self.used_moves += 1
        self.used_bytes += size

    def text(self) -> str:
        parts = []
        if self.moves is not None:
            parts.append(f"--max-moves {self.moves}")
        if self.bytes is not None:
            parts.append(f"--max-bytes {self.bytes}")
        return ", ".join(parts)


def _find_move(
    run: _Run,
    keys: Iterable[Key],
    src: int,
    dst: int,
    budget: _Budget,
    allowed: Callable[[Key], bool],
    rank: Callable[[Key], tuple[int, ...]],
) -> Key | None:
    best: tuple[tuple[int, ...], Key] | None = None
    for key in keys:
        reps = run.work[key]
        if src not in reps or dst in reps or not allowed(key) or not run.fits(key, dst):
            continue
        if not run.rack_ok(key, src, dst):
            continue
        if not budget.fits(run.parts[key].size_bytes or 0):
            continue
        gain = len(run.racks_of([b for b in reps if b != src] + [dst])) - len(run.racks_of(reps))
        r = (-gain, *rank(key), reps[0] == src)  # a move that repairs racks first
        if best is None or (r, key) < (best[0], best[1]):
            best = (r, key)
    return best[1] if best else None


def _apply_move(run: _Run, key: Key, src: int, dst: int, budget: _Budget) -> None:
    budget.spend(run.parts[key].size_bytes or 0)
    run.move(key, src, dst)


def _even_counts(
    run: _Run,
    keys: Sequence[Key],
    eligible: Sequence[int],
    budget: _Budget,
    counts: Mapping[int, int],
    secondary: Callable[[int], int],
    allowed_for: Callable[[int, int], Callable[[Key], bool]],
) -> None:
    """Move replicas from the fullest to the emptiest eligible brokers (by `counts`, ties by
    `secondary` then rank) until the spread is at most 1 or no allowed move is left."""
    ctx = run.ctx
    size = lambda k: (run.parts[k].size_bytes or 0,)  # noqa: E731
    while spread({b: counts[b] for b in eligible}) > 1:
        sources = sorted(eligible, key=lambda b: (-counts[b], -secondary(b), ctx.rank(b)))
        dests = sorted(eligible, key=lambda b: (counts[b], secondary(b), ctx.rank(b)))
        moved = False
        for src in sources:
            for dst in dests:
                if counts[src] - counts[dst] < 2:
                    break
                key = _find_move(run, keys, src, dst, budget, allowed_for(src, dst), size)
                if key is not None:
                    _apply_move(run, key, src, dst, budget)
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


def _even_topic(
    run: _Run, topic: str, keys: Sequence[Key], eligible: Sequence[int], budget: _Budget
) -> None:
    ctx = run.ctx
    _even_counts(
        run,
        keys,
        eligible,
        budget,
        ctx.topic_replicas[topic],
        lambda b: ctx.cluster_replicas[b],
        lambda src, dst: lambda k: True,
    )


def _even_cluster_count(
    run: _Run, keys: Sequence[Key], eligible: Sequence[int], budget: _Budget
) -> None:
    ctx = run.ctx

    def allowed_for(src: int, dst: int) -> Callable[[Key], bool]:
        return lambda k: ctx.topic_replicas[k[0]][src] > ctx.topic_replicas[k[0]][dst]

    _even_counts(run, keys, eligible, budget, ctx.cluster_replicas, lambda b: 0, allowed_for)


def _even_cluster_bytes(
    run: _Run, keys: Sequence[Key], eligible: Sequence[int], budget: _Budget
) -> None:
    ctx = run.ctx
    cb = ctx.cluster_bytes
    for _ in range(10 * len(keys) + 10):
        src = max(eligible, key=lambda b: (cb[b], -ctx.rank(b)))
        best: tuple[int, Key, int] | None = None
        for dst in sorted(eligible, key=lambda b: (cb[b], ctx.rank(b))):
            gap = cb[src] - cb[dst]
            if gap <= 0:
                break

            def allowed(k: Key, src: int = src, dst: int = dst, gap: int = gap) -> bool:
                size = run.parts[k].size_bytes or 0
                topic = ctx.topic_replicas[k[0]]
                return 0 < size < gap and topic[src] > topic[dst]

            def rank(k: Key, gap: int = gap) -> tuple[int, ...]:
                return (abs(gap - 2 * (run.parts[k].size_bytes or 0)),)

            key = _find_move(run, keys, src, dst, budget, allowed, rank)
            if key is not None:
                score = abs(gap - 2 * (run.parts[key].size_bytes or 0)) - gap
                if best is None or score < best[0]:
                    best = (score, key, dst)
        if best is None:
            return
        _apply_move(run, best[1], src, best[2], budget)


def _even_leaders(run: _Run, keys: Sequence[Key], eligible: Sequence[int]) -> int:
    """Reorder replicas so preferred leaders spread <= 1 per topic, then per cluster.
    Returns how many partitions only had their preferred leader changed."""
    ctx = run.ctx
    elig = set(eligible)

    def in_sync(key: Key) -> set[int]:
        """Who may lead after the move: replicas in sync now, and replicas this plan adds
        (the move completes only once they are in sync, and the election runs after it)."""
        part = run.parts[key]
        isr = set(part.in_sync)
        return {b for b in run.work[key] if b in elig and (b in isr or b not in part.replicas)}

    reorders: set[Key] = set()
    for topic in sorted({k[0] for k in keys}):
        mine = [k for k in keys if k[0] == topic]
        _leader_pass(run, mine, eligible, in_sync, lambda t, a, b: True, topic, reorders)
    tl = ctx.topic_leaders
    _leader_pass(
        run, list(keys), eligible, in_sync, lambda t, a, b: tl[t][a] > tl[t][b], None, reorders
    )
    moved_data = {k for k in reorders if set(run.work[k]) != set(run.parts[k].replicas)}
    return sum(1 for k in reorders - moved_data if tuple(run.work[k]) != run.parts[k].replicas)


def _leader_pass(
    run: _Run,
    keys: Sequence[Key],
    eligible: Sequence[int],
    in_sync: Callable[[Key], set[int]],
    allowed: Callable[[str, int, int], bool],
    topic: str | None,
    reorders: set[Key],
) -> None:
    ctx = run.ctx

    def count(b: int) -> int:
        return ctx.topic_leaders[topic][b] if topic is not None else ctx.cluster_leaders[b]

    for _ in range(4 * len(keys) + 4):
        counts = {b: count(b) for b in eligible}
        if spread(counts) <= 1:
            return
        top = max(counts.values())
        path = None
        for start in sorted((b for b in eligible if counts[b] == top), key=ctx.rank):
            path = _leader_path(run, keys, start, top, counts, in_sync, allowed)
            if path:
                break
        if not path:
            return
        for key, new_leader in path:
            run.reorder(key, new_leader)
            reorders.add(key)


def _leader_path(
    run: _Run,
    keys: Sequence[Key],
    start: int,
    top: int,
    counts: dict[int, int],
    in_sync: Callable[[Key], set[int]],
    allowed: Callable[[str, int, int], bool],
) -> list[tuple[Key, int]] | None:
    """BFS over 'a leads a partition where b is in sync': a shortest chain from `start` to a
    broker with at most top - 2 preferred leaders."""
    led: dict[int, list[Key]] = {}
    for k in keys:
        reps = run.work[k]
        if reps:
            led.setdefault(reps[0], []).append(k)
    came: dict[int, tuple[int, Key] | None] = {start: None}
    queue = [start]
    while queue:
        a = queue.pop(0)
        for key in led.get(a, []):
            for b in sorted(in_sync(key) - {a}, key=run.ctx.rank):
                if b in came or b not in counts or not allowed(key[0], a, b):
                    continue
                came[b] = (a, key)
                if counts[b] <= top - 2:
                    path: list[tuple[Key, int]] = []
                    node = b
                    while came[node] is not None:
                        prev, k = came[node]  # type: ignore[misc]
                        path.append((k, node))
                        node = prev
                    return list(reversed(path))
                queue.append(b)
    return None
