"""make_plan: validate a request, run the strategy per topic, and package the result.

Per topic, in topic-name order: change the RF of existing partitions, add partitions (at the
target RF), then rack repair (when asked) over all partitions. Replicas added by this plan
are moved first by rack repair, since they hold no data yet.
"""

from __future__ import annotations

from collections.abc import Sequence

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.model import ClusterSnapshot, Finding, PartitionChange, Plan, Topic
from kreplica.planner.context import PlanContext
from kreplica.planner.kafka_strategy import KafkaStrategy
from kreplica.planner.options import STRATEGIES, PlanOptions, TopicRequest
from kreplica.planner.report import LowerBound, build_report
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


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(map(str, ids))


def eligible_brokers(
    snapshot: ClusterSnapshot, options: PlanOptions
) -> tuple[list[int], dict[int, str]]:
    """The brokers new replicas may go to, and why each other known broker is not eligible."""
    known = set(snapshot.broker_ids())
    for flag, ids in (
        ("--brokers", options.brokers),
        ("--exclude-brokers", options.exclude_brokers),
    ):
        unknown = sorted(set(ids or ()) - known)
        if unknown:
            raise UsageError(
                f"{flag}: broker{'s' if len(unknown) > 1 else ''} {_ids(unknown)} "
                f"{'are' if len(unknown) > 1 else 'is'} not in this cluster "
                f"(brokers: {_ids(sorted(known))}); fix the list"
            )
    why_not: dict[int, str] = {}
    eligible: list[int] = []
    for broker in snapshot.brokers:
        if options.brokers is not None and broker.id not in options.brokers:
            why_not[broker.id] = "not in --brokers"
        elif broker.id in options.exclude_brokers:
            why_not[broker.id] = "excluded"
        elif not broker.alive:
            why_not[broker.id] = "not alive"
        else:
            eligible.append(broker.id)
    return sorted(eligible), why_not


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
                f"topic {req.topic!r} has no partitions to take the RF from; give --rf too"
            )
        if (grows or adds) and target_rf > len(eligible):
            raise PlanInfeasible(_too_few_brokers(req.topic, target_rf, eligible, why_not))
        findings.extend(_min_isr_findings(topic, req, options))
    return findings


def _min_isr_findings(topic: Topic, req: TopicRequest, options: PlanOptions) -> list[Finding]:
    min_isr = topic.min_insync_replicas
    if req.rf is None or min_isr is None or req.rf > min_isr:
        return []
    lowering = any(len(p.replicas) > req.rf for p in topic.partitions)
    text = (
        f"topic {topic.name!r}: RF {req.rf} <= min.insync.replicas={min_isr}, so producers "
        "with acks=all fail as soon as a replica is unavailable"
    )
    if lowering and not options.force:
        raise PlanInfeasible(
            f"{text}; lower min.insync.replicas first, ask for RF {min_isr + 1} or more, "
            "or pass --force"
        )
    return [Finding("warning", "rf-below-min-isr", text, topic=topic.name)]


def _state_findings(topic: Topic) -> list[Finding]:
    findings: list[Finding] = []
    lagging = [p.partition for p in topic.partitions if p.out_of_sync]
    if lagging:
        shown = _ids(lagging[:10]) + (", ..." if len(lagging) > 10 else "")
        findings.append(
            Finding(
                "warning",
                "under-replicated",
                f"topic {topic.name!r}: {len(lagging)} partition(s) have out-of-sync replicas "
                f"({shown}); lowering RF removes those first, other moves wait for them",
                topic=topic.name,
            )
        )
    moving = [p.partition for p in topic.partitions if p.reassigning]
    if moving:
        findings.append(
            Finding(
                "warning",
                "reassignment-in-progress",
                f"topic {topic.name!r}: partitions {_ids(moving[:10])} are being reassigned; "
                "wait for it to finish (kafka-reassign-partitions --verify) before applying",
                topic=topic.name,
            )
        )
    return findings


def _lower_bound(
    ctx: PlanContext, topic: Topic, req: TopicRequest, target_rf: int, bound: LowerBound
) -> None:
    """Fewest adds/removes for this topic's request: RF deltas per partition, new partitions
    at the target RF, and the rack moves no RF change can avoid (each added replica or
    move gains at most one rack; removals never gain one)."""
    for p in topic.partitions:
        have = len(p.replicas)
        rf = req.rf if req.rf is not None else have  # no RF asked: each partition keeps its own
        adds = max(0, rf - have)
        removes = max(0, have - rf)
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


def make_plan(
    snapshot: ClusterSnapshot,
    requests: Sequence[TopicRequest],
    options: PlanOptions = PlanOptions(),
) -> Plan:
    """The smallest change giving each requested topic its target shape (see module doc)."""
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
    strategy = strategy_named(options.strategy)
    bound = LowerBound()
    changes: list[PartitionChange] = []

    topics_by_name = {t.name: t for t in snapshot.topics}
    for req in sorted(requests, key=lambda r: r.topic):
        topic = topics_by_name[req.topic]
        findings.extend(_state_findings(topic))
        target_rf = req.rf if req.rf is not None else topic.replication_factor
        _lower_bound(ctx, topic, req, target_rf, bound)
        work: Work = {p.partition: list(p.replicas) for p in topic.partitions}
        if req.rf is not None and any(len(r) != req.rf for r in work.values()):
            strategy.change_rf(ctx, topic, work, req.rf)
        if req.partitions is not None and req.partitions > len(topic.partitions):
            strategy.add_partitions(ctx, topic, work, req.partitions, target_rf)
        if req.fix_racks:
            partitions = {p.partition: p for p in topic.partitions}
            for pid in sorted(work):
                part = partitions.get(pid)
                original = part.replicas if part else ()
                added = [b for b in work[pid] if b not in original]
                repair_racks(ctx, topic.name, part, work[pid], added=added)
        changes.extend(_changes(topic, work))

    changes.sort(key=lambda c: (c.topic, c.partition))
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
    findings.extend(_imbalance_findings(report))
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
            out.append(PartitionChange(topic.name, pid, part.replicas, after, part.size_bytes))
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


def _imbalance_findings(report: dict[str, object]) -> list[Finding]:
    spreads = report["topic_spread_after"]
    assert isinstance(spreads, dict)
    uneven = sorted((value, topic) for topic, value in spreads.items() if value > 1)
    if not uneven:
        return []
    worst_value = max(value for value, _ in uneven)
    worst_topic = min(topic for value, topic in uneven if value == worst_value)
    return [
        Finding(
            "info",
            "imbalance",
            f"{len(uneven)} topic(s) still have replica counts per broker differing by more than "
            f"1 (worst: {worst_topic!r}, by {worst_value}); this plan moves no existing replica "
            "to even them out",
            topic=worst_topic if len(uneven) == 1 else None,
        )
    ]
