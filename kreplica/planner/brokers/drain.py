"""drain_plan: every replica on the drained brokers moves exactly once (see the package doc)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.model import ClusterSnapshot, Finding, Plan, PlanReport
from kreplica.planner.brokers.dispatch import by_traffic_when_rated, pick_engine
from kreplica.planner.brokers.run import (
    Key,
    Run,
    check_known,
    eligible_live,
    ids_text,
)
from kreplica.planner.evaluate import spread
from kreplica.planner.options import PlanOptions
from kreplica.planner.plan import with_engine
from kreplica.planner.spreadflow import (
    Group,
    flexible_leaders,
    kept_leaders,
    paired_leaders,
    rule_layers,
    solve,
    solve_balanced,
    split,
)

LayerKey = tuple[tuple[int, int, tuple[int, ...]], ...]


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
        raise UsageError("`brokers`: no broker to drain; give ids like 4 or 4,5")
    check_known("`brokers`", drained, snapshot)
    eligible = eligible_live(snapshot, options, leave_out=drained)
    engine, why = pick_engine(snapshot, options, "drain")
    if engine == "columns" and keep_rack_share:
        engine, why = "objects", "keep_rack_share picks replica by replica (the object run)"
    if engine == "columns":
        from kreplica.planner.brokers.drain_arrays import drain_on_columns

        done = drain_on_columns(snapshot, drained, eligible, topics, options)
        if done is not None:
            column_run, extra = done
            _elect_after(column_run.findings, extra, drained)
            return with_engine(column_run.plan("drain", extra), engine, why)
        engine, why = "objects", "the balanced placement leaves a broker under its disk headroom"
    plan = _drain_on_objects(snapshot, drained, eligible, topics, options, keep_rack_share)
    return with_engine(plan, engine, why)


def _drain_on_objects(
    snapshot: ClusterSnapshot,
    drained: frozenset[int],
    eligible: list[int],
    topics: Sequence[str] | None,
    options: PlanOptions,
    keep_rack_share: bool,
) -> Plan:
    run = Run.start(snapshot, eligible, options, topics)
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
    remaining = sum(1 for k in run.work for b in run.work[k] if b in drained)
    extra: PlanReport = {
        **_spreads_without(run, drained),
        "drained_brokers": sorted(drained),
        "keep_rack_share": keep_rack_share,
        "replicas_left_on_drained": remaining,
        "partitions_led_by_drained": led,
        "preferred_leader_changes": changed,
    }
    if not keep_rack_share:  # it places by rack first, on purpose
        extra.update(by_traffic_when_rated(run, "drain", replace=False))
    _elect_after(run.findings, extra, drained)
    return run.plan("drain", extra)


def _elect_after(findings: list[Finding], extra: PlanReport, drained: frozenset[int]) -> None:
    """The finding that says which preferred leaders the drain changes (either engine)."""
    led = extra.get("partitions_led_by_drained", 0)
    changed = extra.get("preferred_leader_changes", {})
    evened = sum(1 for old, _ in changed.values() if old not in drained)
    if led or evened:
        also = (
            f"; {evened} other partition(s) of the drain get another in-sync replica as "
            "preferred leader, so preferred leaders per broker end even"
            if evened
            else ""
        )
        findings.append(
            Finding(
                "info",
                "elect-after",
                f"{led} partition(s) are led by a drained broker; each gets a staying in-sync "
                f"or new replica as preferred leader{also}; a preferred leader election after "
                "the move (`kreplica elect PLAN.json`, run by `kreplica drain` after applying) "
                "makes them lead",
            )
        )


def _drain_pick(run: Run, key: Key, r: int, *, own_rack_first: bool) -> int:
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
    run: Run, rest: Sequence[int], k: int, rack_brokers: Mapping[str, list[int]]
) -> list[tuple[int, int, list[int]]]:
    """spreadflow.rule_layers for a partition whose staying replicas are `rest`."""
    return rule_layers(rest, run.racks_of(rest), k, rack_brokers)


def _drain_balanced(
    run: Run, drained: frozenset[int], touched: Sequence[Key]
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
    # the same topic, units, layers and (for a partition a drained broker led) in-sync
    # staying replicas: the same choices, so one class however many partitions it holds
    groups: dict[tuple[str, int, tuple[int, ...] | None, LayerKey], Group] = {}
    for key in touched:
        part = run.parts[key]
        rest = tuple(sorted(b for b in run.work[key] if b not in drained))
        k = len(run.work[key]) - len(rest)
        led = None
        if k == 1 and part.replicas[0] in drained:
            isr = set(part.in_sync)
            led = tuple(b for b in rest if b in isr and b in ctx.eligible_set)
        layers = _drain_layers(run, rest, k, rack_brokers)
        gk = (key[0], k, led, tuple((lo, hi, tuple(bs)) for lo, hi, bs in layers))
        if gk not in groups:
            groups[gk] = Group(key[0], k, layers)
        groups[gk].members.append(key)
    flow_groups: list[tuple[Group, tuple[int, ...] | None]] = []
    by_hand: list[Key] = []
    for (_, _, led, _), g in groups.items():
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
    topic_base = {t: dict(ctx.topic_replicas[t]) for t in {g.topic for g in glist}}
    base = {b: ctx.cluster_replicas[b] for b in ctx.eligible}
    per_group = solve_balanced(glist, base, topic_base)
    later = []
    for (g, led), per in zip(flow_groups, per_group, strict=True):
        if led is not None:
            later.append((g, per, led))
            continue
        for key, dest in zip(g.members, split(g, per), strict=True):
            _drain_place(run, key, drained, dest)
    for key in by_hand:
        for r in [b for b in run.work[key] if b in drained]:
            run.move(key, r, _drain_pick(run, key, r, own_rack_first=False))
    return later


def _drain_place(run: Run, key: Key, drained: frozenset[int], dest: Sequence[int]) -> None:
    """The partition's drained replicas replaced by `dest` (fewest bytes first), in place;
    a broker the disk guard refuses by then is swapped for a greedy pick."""
    ctx = run.ctx
    todo = sorted(dest, key=lambda b: (ctx.cluster_bytes[b], ctx.rank(b)))
    for r in [b for b in run.work[key] if b in drained]:
        new = todo.pop(0)
        if not run.fits(key, new):
            new = _drain_pick(run, key, r, own_rack_first=False)
        run.move(key, r, new)


def _drain_lows(g: Group, run: Run, rack_brokers: Mapping[str, list[int]]) -> int:
    """Units the rule puts on fresh racks per partition (before the guard filtered them)."""
    rest = [b for b in run.work[g.members[0]] if b in run.ctx.eligible_set]
    layers = _drain_layers(run, rest, g.units, rack_brokers)
    return sum(lo for lo, _, _ in layers)


def _drain_leaders(
    run: Run,
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
        tc = tcounts[g.topic]
        for key in g.members:  # the start: its own, else the least loaded candidate
            lead = run.work[key][0]
            if lead not in g.layers[0][2]:
                lead = min(g.layers[0][2], key=lambda b: (counts[b], tc.get(b, 0), ctx.rank(b)))
            counts[lead] += 1
            tc[lead] = tc.get(lead, 0) + 1
            g.start[lead] = g.start.get(lead, 0) + 1

    def load(t: str) -> Callable[[int], tuple[int, int, int]]:
        return lambda b: (counts[b], tcounts[t].get(b, 0), ctx.rank(b))

    def take(t: str) -> Callable[[int], None]:
        def count(b: int) -> None:
            counts[b] += 1
            tcounts[t][b] = tcounts[t].get(b, 0) + 1

        return count

    flexible = [
        flexible_leaders(g, per, isr_rest, load(g.topic), take(g.topic))
        for g, per, isr_rest in unplaced
    ]
    glist = list(groups.values()) + flexible
    solved = solve(glist, base, topic_base)
    for g, lead_per in zip(groups.values(), solved, strict=False):
        now = [run.work[key][0] for key in g.members]
        for key, lead in zip(g.members, kept_leaders(now, lead_per), strict=True):
            if run.work[key][0] != lead:
                run.reorder(key, lead)
    for (g, per, _), lead_per in zip(unplaced, solved[len(groups) :], strict=True):
        for key, (dest, lead) in zip(g.members, paired_leaders(per, lead_per), strict=True):
            _drain_place(run, key, drained, [dest])
            if lead in run.work[key] and run.work[key][0] != lead:
                run.reorder(key, lead)
    changed: dict[str, list[int]] = {}
    for key in touched:
        old, new = run.parts[key].replicas, run.work[key]
        if old and new and old[0] != new[0]:
            changed[f"{key[0]}-{key[1]}"] = [old[0], new[0]]
    return changed


def _spreads_without(run: Run, drained: frozenset[int]) -> PlanReport:
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


def _refuse_drain(run: Run, drained: frozenset[int], touched: Sequence[Key]) -> None:
    ctx = run.ctx
    eligible = set(ctx.eligible)
    for key in touched:
        dead = run.has_dead(key, besides=drained)
        if dead:
            raise PlanInfeasible(
                f"{key[0]}-{key[1]} also has a replica on dead broker(s) "
                f"{ids_text(dead)} and Kafka "
                "rejects a plan naming it; drain those too (add them to `brokers`) or bring them "
                "back first"
            )
    need = max((len(run.work[k]) for k in touched), default=0)
    if need > len(eligible):
        worst = next(k for k in touched if len(run.work[k]) == need)
        raise PlanInfeasible(
            f"draining broker(s) {ids_text(drained)} leaves {len(eligible)} broker(s) to place "
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
                f"draining broker(s) {ids_text(drained)} {which}: {key[0]}-{key[1]} (RF "
                f"{len(reps)}) spans {now} racks and only {reachable} would be left for it; "
                "keep a broker of that rack, add one there first, or drain fewer brokers"
            )
