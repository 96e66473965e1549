"""make_plan: validate a request, run the strategy per topic, and package the result.

Per topic, in topic-name order: change the RF of existing partitions, add partitions (at the
target RF), then rack repair (when asked) over all partitions. Replicas added by this plan
are moved first by rack repair, since they hold no data yet.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

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
from kreplica.planner.balance import TopicUnits, balance_units, lowest_bound
from kreplica.planner.context import PlanContext
from kreplica.planner.degraded import (
    dead_broker_findings,
    dead_in_targets,
    in_flight,
    lagging_finding,
    needs_change,
    refuse_dead,
    refuse_in_flight,
    replace_dead,
    surviving_dead,
)
from kreplica.planner.disk import DiskGuard, finish_plan
from kreplica.planner.evaluate import removal_window, spread, spread_floor
from kreplica.planner.kafka_strategy import KafkaStrategy
from kreplica.planner.options import STRATEGIES, PlanOptions, TopicRequest
from kreplica.planner.report import LowerBound, build_report, imbalance_note
from kreplica.planner.requests import _ids, _min_isr_findings, eligible_brokers
from kreplica.planner.strategies import (
    AppendStrategy,
    BalancedStrategy,
    Strategy,
    Work,
    rack_target,
    repair_racks,
)


def strategy_named(name: str) -> Strategy:
    strategies: dict[str, Strategy] = {
        "balanced": BalancedStrategy(),
        "append": AppendStrategy(),
        "kafka": KafkaStrategy(),
    }
    return strategies[name]


def _too_few_brokers(topic: str, rf: int, eligible: Sequence[int], why_not: dict[int, str]) -> str:
    items = sorted(why_not.items())
    reasons = ", ".join(f"broker {b} is {why}" for b, why in items[:6])
    if len(items) > 6:
        reasons += f", {len(items) - 6} more"
    detail = f" ({reasons})" if reasons else ""
    return (
        f"topic {topic!r}: RF {rf} needs {rf} eligible brokers, {len(eligible)} "
        f"{'is' if len(eligible) == 1 else 'are'} eligible{detail}; "
        "make more brokers eligible or ask for a lower RF"
    )


def _validate(
    snapshot: ClusterSnapshot,
    requests: Sequence[TopicRequest],
    options: PlanOptions,
    eligible: Sequence[int],
    why_not: dict[int, str],
) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[str] = set()
    topics_by_name = {t.name: t for t in snapshot.topics}
    for req in requests:
        if req.topic in seen:
            raise UsageError(f"topic {req.topic!r} is requested twice; give each topic once")
        seen.add(req.topic)
        topic = topics_by_name.get(req.topic) or snapshot.topic(req.topic)  # names the fix
        if req.rf is not None and req.rf < 1:
            raise UsageError(
                f"topic {req.topic!r}: RF {req.rf} is invalid; the replication factor must be "
                "at least 1"
            )
        if req.partitions is not None and req.partitions < 1:
            raise UsageError(
                f"topic {req.topic!r}: {req.partitions} partitions is invalid; ask for at least 1"
            )
        for p in topic.partitions:
            if not p.replicas or len(set(p.replicas)) != len(p.replicas):
                twice = sorted({b for b in p.replicas if p.replicas.count(b) > 1})
                problem = (
                    "has no replicas"
                    if not p.replicas
                    else f"lists broker(s) {_ids(twice)} twice ({list(p.replicas)})"
                )
                raise PlanInfeasible(
                    f"topic {req.topic!r} partition {p.partition} {problem}; repair that "
                    "partition first (kafka-reassign-partitions) or leave the topic out"
                )
        current = len(topic.partitions)
        if req.partitions is not None and req.partitions < current:
            raise PlanInfeasible(
                f"topic {req.topic!r} has {current} partitions and Kafka cannot remove "
                f"partitions; ask for {current} or more"
            )
        if req.partitions is not None and req.partitions > current:
            ids = [p.partition for p in topic.partitions]
            if ids != list(range(current)):
                raise PlanInfeasible(
                    f"topic {req.topic!r}: partition ids are not 0..{current - 1}; "
                    "repair the topic before adding partitions"
                )
        target_rf = req.rf if req.rf is not None else topic.replication_factor
        grows = req.rf is not None and any(len(p.replicas) < req.rf for p in topic.partitions)
        adds = req.partitions is not None and req.partitions > current
        if adds and target_rf < 1:
            raise UsageError(
                f"topic {req.topic!r} has no partitions to take the RF from; give `rf` too"
            )
        if (grows or adds) and target_rf > len(eligible):
            raise PlanInfeasible(_too_few_brokers(req.topic, target_rf, eligible, why_not))
        findings.extend(_min_isr_findings(topic, req, options))
    return findings


def _state_findings(topic: Topic, ctx: PlanContext, req: TopicRequest) -> list[Finding]:
    live = ctx.live

    def lags(p: Partition) -> bool:  # a replica out of sync, or an in-sync one on a dead broker
        if p.isr is None or p.isr == p.replicas:  # all in sync (the usual case): no tuples built
            return not live.issuperset(p.replicas)
        return bool(p.out_of_sync) or not live.issuperset(p.in_sync)

    lagging = [p.partition for p in topic.partitions if lags(p)]
    if not lagging:
        return []
    lowers = req.rf is not None and any(len(p.replicas) > req.rf for p in topic.partitions)
    return [lagging_finding(topic.name, lagging, lowers)]


def _in_flight_elsewhere(snapshot: ClusterSnapshot, requested: set[str]) -> list[Finding]:
    moving = [
        f"{t.name}-{p.partition}"
        for t in snapshot.topics
        if t.name not in requested
        for p in t.partitions
        if p.reassigning
    ]
    if not moving:
        return []
    return [
        Finding(
            "info",
            "reassignment-in-progress",
            f"{len(moving)} partition(s) of other topics are being reassigned "
            f"({', '.join(moving[:5])}{', ...' if len(moving) > 5 else ''}); "
            "kafka-reassign-partitions --execute then needs --additional",
        )
    ]


def _lower_bound(
    ctx: PlanContext,
    topic: Topic,
    req: TopicRequest,
    target_rf: int,
    bound: LowerBound,
    state: _Degraded,
) -> None:
    """Fewest adds/removes for this topic's request: RF deltas per partition, new partitions
    at the target RF, dead replicas that must be replaced, and the rack moves no RF change can
    avoid (each added replica or move gains at most one rack; removals never gain one)."""
    for p in topic.partitions:
        if (topic.name, p.partition) in state.skipped:
            continue
        have = len(p.replicas)
        rf = req.rf if req.rf is not None else have  # no RF asked: each partition keeps its own
        replaced = state.replace.get((topic.name, p.partition), 0)
        adds = max(0, rf - have) + replaced
        removes = max(0, have - rf) + replaced
        if req.fix_racks:
            racks_now = len({ctx.rack(b) for b in p.replicas})
            target = rack_target(ctx, p.replicas, rf)
            reachable = min(racks_now + adds, target) if adds else min(racks_now, rf)
            moves = max(0, target - reachable)
            adds += moves
            removes += moves
        bound.add_partition(adds, removes, p.size_bytes)
    if req.partitions is not None and req.partitions > len(topic.partitions):
        bound.add_partition((req.partitions - len(topic.partitions)) * target_rf, 0, 0)


@dataclass
class _Degraded:
    """What the cluster's state removes from or adds to the request (see planner.degraded)."""

    skipped: set[tuple[str, int]] = field(default_factory=set)  # in flight, left out
    replace: dict[tuple[str, int], int] = field(default_factory=dict)  # dead replicas to swap


def _degraded(
    ctx: PlanContext,
    topics: dict[str, Topic],
    requests: Sequence[TopicRequest],
    options: PlanOptions,
) -> tuple[_Degraded, list[Finding]]:
    state = _Degraded()
    findings: list[Finding] = []
    moving = []
    for req in requests:
        topic = topics[req.topic]
        adds = req.partitions is not None and req.partitions > len(topic.partitions)
        # While a move runs Kafka lists target + removing replicas, so the list's length is not
        # the RF the partition will have: any RF request touches an in-flight partition.
        touched = adds or req.rf is not None
        moving += [p for p in in_flight(topic) if touched or needs_change(ctx, p, req)]
    if moving and not options.skip_in_flight:
        raise refuse_in_flight(moving)
    if moving:
        state.skipped = {(p.topic, p.partition) for p in moving}
        findings.append(
            Finding(
                "warning",
                "skipped-in-flight",
                f"left out {len(moving)} partition(s) being reassigned "
                f"({', '.join(f'{p.topic}-{p.partition}' for p in moving[:10])}"
                f"{', ...' if len(moving) > 10 else ''}); plan them again once the move is done",
            )
        )
    for req in requests:
        for p in topics[req.topic].partitions:
            key = (p.topic, p.partition)
            if key in state.skipped or not needs_change(ctx, p, req):
                continue
            count = surviving_dead(ctx, p, req.rf if req.rf is not None else len(p.replicas))
            if count:
                state.replace[key] = count
    if state.replace and not options.replace_dead:
        raise refuse_dead(ctx, state.replace)
    findings += dead_broker_findings(ctx, [topics[r.topic] for r in requests])
    return state, findings


def _apply_request(
    ctx: PlanContext,
    strategy: Strategy,
    topic: Topic,
    req: TopicRequest,
    target_rf: int,
    state: _Degraded,
) -> Work:
    """One topic's working assignment after the request, every change already accounted in
    ctx (undo_request reverses it)."""
    work: Work = {p.partition: list(p.replicas) for p in topic.partitions}
    partitions = {p.partition: p for p in topic.partitions}
    if state.replace:  # a healthy cluster skips these per-partition lookups
        for pid in sorted(work):
            count = state.replace.get((topic.name, pid))
            if count:
                replace_dead(ctx, topic.name, partitions[pid], work[pid], count)
    skipped = state.skipped
    active = (
        {pid: reps for pid, reps in work.items() if (topic.name, pid) not in skipped}
        if skipped
        else work
    )
    if req.rf is not None and any(len(r) != req.rf for r in active.values()):
        strategy.change_rf(ctx, topic, active, req.rf)
    if req.partitions is not None and req.partitions > len(topic.partitions):
        strategy.add_partitions(ctx, topic, work, req.partitions, target_rf)
    if req.fix_racks:
        for pid in sorted(work):
            if (topic.name, pid) in state.skipped:
                continue
            part = partitions.get(pid)
            original = part.replicas if part else ()
            added = [b for b in work[pid] if b not in original]
            repair_racks(ctx, topic.name, part, work[pid], added=added)
    return work


def _undo_request(ctx: PlanContext, topic: Topic, work: Work, fallbacks: int) -> None:
    existing = {p.partition: p for p in topic.partitions}
    for pid, reps in work.items():
        part = existing.get(pid)
        old = part.replicas if part else ()
        size = part.size_bytes if part else 0
        if tuple(reps) != tuple(old):
            ctx.replace(topic.name, reps, old, size)
    del ctx.fallbacks[fallbacks:]


def _spread_and_floor(ctx: PlanContext, topic: Topic, work: Work) -> tuple[int, int]:
    """The topic's replica spread as the report measures it (eligible brokers plus every
    live broker holding one of its replicas before or after), and a floor no placement of the
    same request goes below: the water-filling bound when only replicas are added, else the
    remainder rule (a total that does not divide evenly leaves a spread of at least 1)."""
    before: dict[int, int] = dict.fromkeys(ctx.eligible, 0)
    for p in topic.partitions:
        for b in p.replicas:
            before[b] = before.get(b, 0) + 1
    after: dict[int, int] = dict.fromkeys(before, 0)
    for reps in work.values():
        for b in reps:
            after[b] = after.get(b, 0) + 1
    after = {b: n for b, n in after.items() if b in ctx.live}
    added, removed = _moves(topic, work)
    if removed:
        floor = 1 if after and sum(after.values()) % len(after) else 0
    else:
        eligible = set(ctx.eligible)
        base = {b: n for b, n in before.items() if b in ctx.live}
        floor = spread_floor(
            {b: n for b, n in base.items() if b not in eligible},
            {b: n for b, n in base.items() if b in eligible},
            added,
        )
    return spread(after), floor


def removal_floor(ctx: PlanContext, topic: Topic, work: Work) -> int:
    """When the work only removes replicas of live brokers: a spread no placement that
    removes as many goes below (evaluate.removal_window over the report's scope); else 0."""
    before: dict[int, int] = dict.fromkeys(ctx.eligible, 0)
    for p in topic.partitions:
        for b in p.replicas:
            before[b] = before.get(b, 0) + 1
    if not before or not ctx.live.issuperset(before):
        return 0  # a dead replica dropped or kept changes the total: no one floor
    added, removed = _moves(topic, work)
    if added or not removed:
        return 0
    low, high = removal_window(list(before.values()), sum(before.values()) - removed)
    return max(0, high - low)


def _moves(topic: Topic, work: Work) -> tuple[int, int]:
    existing = {p.partition: p.replicas for p in topic.partitions}
    added = removed = 0
    for pid, reps in work.items():
        old = existing.get(pid, ())
        added += sum(1 for b in reps if b not in old)
        removed += sum(1 for b in old if b not in reps)
    return added, removed


def _grown_only(
    topic: Topic, req: TopicRequest, state: _Degraded, work: Work
) -> dict[int, int] | None:
    """When the request only adds replicas to this topic (RF raise, new partitions; no
    lowering, no rack repair): partition id -> how many leading replicas are fixed (the
    existing ones, dead ones replaced in place; a new partition's leader). Else None."""
    if req.fix_racks:
        return None
    fixed: dict[int, int] = {}
    skipped = state.skipped
    for p in topic.partitions:
        reps = work[p.partition]
        if skipped and (topic.name, p.partition) in skipped:
            fixed[p.partition] = len(reps)
        elif len(reps) < len(p.replicas):
            return None
        else:
            fixed[p.partition] = len(p.replicas)
    for pid in work:
        fixed.setdefault(pid, 1)
    return fixed


def _balance_exact(ctx: PlanContext, topic: Topic, work: Work, fixed: dict[int, int]) -> bool:
    """Even out the replicas `balanced` just added to the topic (balance.balance_units) and
    account the moves in ctx. True when the topic's spread is the lowest any placement of
    the same new replicas reaches."""
    scope = set(ctx.eligible)
    for p in topic.partitions:
        scope.update(p.replicas)
    for reps in work.values():
        scope.update(reps)
    cluster_bytes = ctx.cluster_bytes if ctx.use_bytes else None
    cluster_load = ctx.cluster_replicas

    def order(b: int) -> tuple[int, int, int]:
        return (
            cluster_load[b],
            cluster_bytes[b] if cluster_bytes is not None else 0,
            ctx.rank(b),
        )

    sizes = {p.partition: p.size_bytes for p in topic.partitions}
    disk: DiskGuard | None = ctx.disk

    def admits(broker: int, pid: int) -> bool:  # new partitions hold no data yet
        return disk is None or disk.fits(broker, sizes.get(pid))

    before = {pid: list(reps) for pid, reps in work.items() if fixed.get(pid, 0) < len(reps)}
    units = TopicUnits(
        replicas=work,
        fixed=fixed,
        eligible=ctx.eligible,
        rack=ctx.rack,
        scope=sorted(scope & ctx.live),
        order=order,
        admits=admits if disk is not None else None,
    )
    result = balance_units(units)
    optimal = result.optimal
    if optimal and len(work) > len(topic.partitions) and result.spread_after:
        # the new partitions' leaders were fixed first: proven only if the spread is as low
        # as placing them too could make it (ignoring per-partition rules)
        loose = dict(fixed)
        for pid in range(len(topic.partitions), len(work)):
            loose[pid] = 0
        optimal = result.spread_after <= lowest_bound(dataclasses.replace(units, fixed=loose))
    if result.moved:
        for pid, old in before.items():
            new = work[pid]
            if old == new:
                continue
            ctx.replace(topic.name, old, new, sizes.get(pid, 0))
            if disk is not None:
                size = sizes.get(pid) or 0
                for b in old:
                    if b not in new:
                        disk.take(b, -size)
                for b in new:
                    if b not in old:
                        disk.take(b, size)
    return optimal


def _placements(topic: Topic, work: Work) -> list[tuple[int, int | None]]:
    """(broker, bytes) of every replica the work adds, in partition order."""
    existing = {p.partition: p for p in topic.partitions}
    out: list[tuple[int, int | None]] = []
    for pid in sorted(work):
        part = existing.get(pid)
        old = part.replicas if part else ()
        size = part.size_bytes if part else 0
        out += [(b, size) for b in work[pid] if b not in old]
    return out


def _plan_topic(
    ctx: PlanContext,
    strategy: Strategy,
    topic: Topic,
    req: TopicRequest,
    target_rf: int,
    state: _Degraded,
) -> tuple[Work, str, bool]:
    """Run the strategy. For `balanced`, when the request only adds replicas, even out the
    new ones exactly (balance.py); otherwise (lowering, rack repair), unless it reached the
    floor, keep the kafka or append placement instead when it gives this topic a lower
    spread with the same number of added and removed replicas. Returns the work, the
    strategy whose placement was kept, and whether the topic's spread is proven lowest."""
    mark = len(ctx.fallbacks)
    disk: DiskGuard | None = ctx.disk
    disk_mark = disk.mark() if disk is not None else None
    work = _apply_request(ctx, strategy, topic, req, target_rf, state)
    if strategy.name != "balanced":
        return work, strategy.name, False
    fixed = _grown_only(topic, req, state, work)
    if fixed is not None:
        return work, strategy.name, _balance_exact(ctx, topic, work, fixed)
    own_spread, floor = _spread_and_floor(ctx, topic, work)
    if own_spread <= max(floor, 1):
        return work, strategy.name, own_spread <= floor
    if own_spread <= removal_floor(ctx, topic, work):
        return work, strategy.name, False  # kafka and append can only tie: balanced is kept
    own_moves = _moves(topic, work)
    best = (own_spread, 0, strategy.name)
    _undo_request(ctx, topic, work, mark)
    if disk is not None:
        disk.restore(disk_mark)
    for rank, name in enumerate(("kafka", "append"), start=1):
        other = _apply_request(ctx, strategy_named(name), topic, req, target_rf, state)
        other_spread = _spread_and_floor(ctx, topic, other)[0]
        fits = True
        if disk is not None:  # a placement the disk guard refuses is not a candidate
            disk.restore(disk_mark)
            fits = disk.admits(_placements(topic, other))
        if _moves(topic, other) == own_moves and fits:
            best = min(best, (other_spread, rank, name))
        _undo_request(ctx, topic, other, mark)
        if disk is not None:
            disk.restore(disk_mark)
    chosen = strategy_named(best[2])
    work = _apply_request(ctx, chosen, topic, req, target_rf, state)
    del ctx.fallbacks[mark:]  # another strategy's fallbacks to balanced are balanced's own picks
    return work, best[2], False


def make_plan(
    snapshot: ClusterSnapshot,
    requests: Sequence[TopicRequest],
    options: PlanOptions = PlanOptions(),
) -> Plan:
    """The smallest change giving each requested topic its target shape (see module doc).

    With `balanced`, a topic whose request only adds replicas gets the lowest replica spread
    any placement of the new replicas reaches (balance.py); a topic whose request lowers RF or
    repairs racks is never worse than `kafka` or `append` on its spread.
    The disk guard checks the result (planner/disk.py).

    A ColumnarSnapshot (kreplica/columns.py) goes to the array planner (planner/arrays.py;
    new partitions alone: planner/partitions_arrays.py) when its `refusal` finds nothing it
    does not handle; it returns the same kind of plan."""
    why = "the snapshot is not in columns"
    if getattr(snapshot, "columns", None) is not None:
        from kreplica.planner import arrays, partitions_arrays

        engine = (
            partitions_arrays
            if partitions_arrays.adds_partitions_only(requests)
            else arrays  # None: the engine's refusal
        )
        taken, why = engine.plan_if_taken(snapshot, requests, options)
        if taken is not None:
            return with_engine(taken, "arrays", why)
    plan = _best_plan(snapshot, requests, options)
    plan = finish_plan(plan, snapshot, options.disk_headroom, options.log_dirs)
    return with_engine(plan, "objects", f"the array planner refuses it: {why}")


def with_engine(plan: Plan, name: str, why: str) -> Plan:
    """The plan with its report naming the planner that made it, and why (`engine`)."""
    report = plan.report.copy()
    report["engine"] = {"name": name, "why": why}
    return dataclasses.replace(plan, report=report)


def _best_plan(
    snapshot: ClusterSnapshot, requests: Sequence[TopicRequest], options: PlanOptions
) -> Plan:
    if options.strategy not in STRATEGIES:
        raise UsageError(
            f"unknown strategy {options.strategy!r}; use one of {', '.join(STRATEGIES)}"
        )
    eligible, why_not = eligible_brokers(snapshot, options)
    findings = _validate(snapshot, requests, options, eligible, why_not)
    asked_dead = sorted(b for b in options.brokers or () if why_not.get(b) == "not alive")
    if asked_dead:
        findings.append(
            Finding(
                "warning",
                "offline-broker",
                f"--brokers: broker(s) {_ids(asked_dead)} are not alive, so no new replica "
                "goes there; bring them back or leave them out",
            )
        )
    ctx = PlanContext.build(snapshot, eligible, options.seed)
    ctx.disk = DiskGuard.build(
        snapshot, options.disk_headroom, per_dir=options.log_dirs == "balanced"
    )
    topics_by_name = {t.name: t for t in snapshot.topics}
    state, degraded_findings = _degraded(ctx, topics_by_name, requests, options)
    findings.extend(degraded_findings)
    findings.extend(_in_flight_elsewhere(snapshot, {r.topic for r in requests}))
    strategy = strategy_named(options.strategy)
    bound = LowerBound()
    changes: list[PartitionChange] = []
    placement_from: dict[str, str] = {}
    proven: set[str] = set()  # topics whose spread no placement of the same moves lowers

    for req in sorted(requests, key=lambda r: r.topic):
        topic = topics_by_name[req.topic]
        findings.extend(_state_findings(topic, ctx, req))
        target_rf = req.rf if req.rf is not None else topic.replication_factor
        _lower_bound(ctx, topic, req, target_rf, bound, state)
        work, used, optimal = _plan_topic(ctx, strategy, topic, req, target_rf, state)
        if used != strategy.name:
            placement_from[topic.name] = used
        if optimal:
            proven.add(topic.name)
        changes.extend(_changes(topic, work))

    changes.sort(key=lambda c: (c.topic, c.partition))
    named_dead = dead_in_targets(ctx, changes)
    if named_dead:  # a guard: the steps above never place a dead broker
        raise PlanInfeasible(
            f"internal check failed: the plan names dead brokers ({'; '.join(named_dead[:3])}); "
            "a bug: please report it"
        )
    topics = [r.topic for r in requests]
    findings.extend(_fallback_findings(ctx))
    report = build_report(
        snapshot=snapshot,
        strategy=options.strategy,
        eligible=eligible,
        topics=topics,
        changes=changes,
        lower_bound=bound,
        fallbacks=ctx.fallbacks,
    )
    if placement_from:
        report["placement_from"] = placement_from
    findings.extend(_imbalance_findings(report, snapshot, ctx, changes, proven))
    return Plan(
        cluster_id=snapshot.cluster_id,
        snapshot_fingerprint=snapshot.fingerprint(),
        strategy=options.strategy,
        changes=tuple(changes),
        report=report,
        findings=tuple(findings),
    )


def _changes(topic: Topic, work: Work) -> list[PartitionChange]:
    existing = {p.partition: p for p in topic.partitions}
    out: list[PartitionChange] = []
    for pid in sorted(work):
        after = tuple(work[pid])
        part = existing.get(pid)
        if part is None:
            out.append(PartitionChange(topic.name, pid, None, after, 0))
        elif part.replicas != after:
            leader = part.current_leader if part.leader is not None else None
            out.append(
                PartitionChange(topic.name, pid, part.replicas, after, part.size_bytes, leader)
            )
    return out


def _fallback_findings(ctx: PlanContext) -> list[Finding]:
    by_topic: dict[str, list[int]] = {}
    for f in ctx.fallbacks:
        by_topic.setdefault(f.topic, []).append(f.partition)
    return [
        Finding(
            "warning",
            "strategy-fallback",
            f"topic {topic!r}: {len(pids)} partition(s) could not follow the Kafka layout and were "
            f"placed by 'balanced' ({_ids(sorted(set(pids))[:10])}"
            f"{', ...' if len(set(pids)) > 10 else ''}); see report.fallbacks",
            topic=topic,
        )
        for topic, pids in sorted(by_topic.items())
    ]


def _forced_by_layout(topic_now: Topic, ctx: PlanContext, mine: Sequence[PartitionChange]) -> bool:
    """Whether the topic's spread after the plan is the lowest any placement of the same new
    replicas reaches with every existing replica kept where it is (so only moving existing
    replicas, which this plan does not do, could even it out)."""
    if any(c.removed for c in mine):
        return False  # what lowering keeps is a choice: the old layout is not the whole story
    counts: dict[int, int] = dict.fromkeys(ctx.eligible, 0)
    for p in topic_now.partitions:
        for b in p.replicas:
            counts[b] = counts.get(b, 0) + 1
    counts = {b: n for b, n in counts.items() if b in ctx.live}
    eligible_set = set(ctx.eligible)
    eligible = {b: n for b, n in counts.items() if b in eligible_set}
    fixed = {b: n for b, n in counts.items() if b not in eligible}
    added = sum(len(c.added) for c in mine)
    after = dict(counts)
    for c in mine:
        for b in c.added:
            after[b] = after.get(b, 0) + 1
    return spread(after) <= spread_floor(fixed, eligible, added)


def _imbalance_findings(
    report: PlanReport,
    snapshot: ClusterSnapshot,
    ctx: PlanContext,
    changes: Sequence[PartitionChange],
    proven: set[str],
) -> list[Finding]:
    """At most one note on topics left with a spread above 1, saying why: the old layout
    alone (no placement of the new replicas does better even without per-partition rules),
    the per-partition rules (balance.py proved no placement does better), or else which
    strategies were compared."""
    spreads = report["topic_spread_after"]
    assert isinstance(spreads, dict)
    uneven = sorted((value, topic) for topic, value in spreads.items() if value > 1)
    if not uneven:
        return []
    by_topic: dict[str, list[PartitionChange]] = {topic: [] for _, topic in uneven}
    for c in changes:
        if c.topic in by_topic:
            by_topic[c.topic].append(c)
    topics_now = {t.name: t for t in snapshot.topics if t.name in by_topic}
    forced = {
        topic for _, topic in uneven if _forced_by_layout(topics_now[topic], ctx, by_topic[topic])
    }
    if len(forced) == len(uneven):
        why = (
            "with every existing replica where it is, no placement of the new ones does "
            "better; only moving existing replicas would, and this plan moves none"
        )
    elif all(topic in forced or topic in proven for _, topic in uneven):
        why = (
            "with every existing replica where it is, one replica of a partition per broker "
            "and new replicas on racks their partition lacks, no placement of the new ones "
            "does better; only moving existing replicas would, and this plan moves none"
        )
    elif report["strategy"] == "balanced" and any(
        c.removed for _, topic in uneven for c in by_topic[topic]
    ):
        why = (
            "this is the most even of the balanced, kafka and append placements for these "
            "moves; no existing replica moves to even them out"
        )
    elif report["strategy"] == "balanced":
        why = (
            "balanced gives new partitions' leaders the lowest spread first, which leaves "
            "their replicas less even here; no existing replica moves to even them out"
        )
    else:
        why = "--strategy balanced may place the new replicas more evenly"
    return [imbalance_note(uneven, why)]
