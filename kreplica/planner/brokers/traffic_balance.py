"""traffic_rebalance_plan: even out network in and out per broker from measured rates (a
snapshot taken with `snapshot --traffic`): preferred-leader changes first (they move no data),
then replica moves with the fewest bytes, until every broker is within the band.

Loads (bytes per second, kreplica.planner.traffic): a replica of a partition written at r adds
r to its broker's network in; the partition's leader sends r x (followers + fan-out). The band
per load is max(1.05 x mean, mean + the largest single partition's load): a broker can be
brought under it by moving whole partitions, where 1.05 x mean alone may be out of reach.
With per-broker capacities (mixed hardware) the same rule holds on utilisation, load /
capacity: with U all the load over all the capacity, broker b's band is
max(1.05 x U x capacity_b, U x capacity_b + the largest load) (traffic.scaled_band); every
step below then works on each broker's own band (Scale).

Moves: per broker over the band, the set of its replicas whose rates cover its excess with the
fewest bytes (a covering knapsack, kreplica.planner.cover), jointly with its excess in network
out (what a replica it leads sends leaves with it), each to the least loaded broker that takes
it within the bands and the rules.

Lower bound on the bytes moved: network in does not depend on leadership, so each broker over
the band in network in must lose replicas whose rates add up to its excess at least (more if
it also gains some), and no replica leaves two brokers. Per such broker, the least bytes of
whole replicas whose rates cover its excess is at least cover.cover_bound (the covering
knapsack relaxed: never above the true least); their sum bounds every plan. Network out over
the band is left out of the bound: leader changes can fix it without moving data.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kreplica.errors import InputError
from kreplica.model import ClusterSnapshot, Finding, Partition, Plan
from kreplica.planner.brokers.run import Key, Run, start_balancing
from kreplica.planner.cover import cheapest_cover, cover_bound
from kreplica.planner.options import PlanOptions
from kreplica.planner.traffic import band, capacity_of, leader_out_load, scaled_band

EPSILON = 1e-6  # B/s: what float sums may be off by


def _rate(p: Partition) -> float:
    return p.bytes_in_per_s or 0.0


def spread_figures(loads: Mapping[int, float]) -> dict[str, float]:
    """max / mean and the coefficient of variation (population standard deviation / mean)."""
    values = list(loads.values())
    mean = sum(values) / len(values) if values else 0.0
    if mean <= 0:
        return {"max_over_mean": 0.0, "cv": 0.0}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return {"max_over_mean": round(max(values) / mean, 4), "cv": round(sd / mean, 4)}


def shed_bound(replicas: Iterable[tuple[float, int]], excess: float) -> tuple[int, int]:
    """(fewest replicas, least bytes) that carry `excess` B/s off one broker, given its
    replicas as (rate, bytes): the count takes the fastest first; the bytes are a lower bound
    on the cheapest cover (cover.cover_bound: whole replicas, never below the fractional
    optimum)."""
    listed = [(r, s) for r, s in replicas if r > 0]
    if excess <= 0 or sum(r for r, _ in listed) < excess:
        return 0, 0  # nothing to shed, or no plan brings it under: none has to move
    count, carried = 0, 0.0
    for r, _ in sorted(listed, reverse=True):
        if carried >= excess:
            break
        count, carried = count + 1, carried + r
    return count, math.ceil(cover_bound([(r, float(s)) for r, s in listed], excess) - 1e-6)


@dataclass(frozen=True)
class Scale:
    """Each broker's network in and out capacity (B/s): loads are compared as utilisation,
    load / capacity. Without capacities every broker's is 1.0: loads compared as they are."""

    nw_in: Mapping[int, float]
    nw_out: Mapping[int, float]
    given: bool

    @classmethod
    def of(
        cls, capacities: Mapping[int, Mapping[str, float]] | None, among: Sequence[int]
    ) -> Scale:
        if capacities is None:
            ones = dict.fromkeys(among, 1.0)
            return cls(ones, ones, False)
        nw_in, nw_out = capacity_of(capacities, among, "the capacity file")
        return cls(nw_in, nw_out, True)

    def tops(self, loads: Mapping[int, float], largest: float, inbound: bool) -> dict[int, float]:
        """The band per broker: band's rule, on utilisation when capacities are given."""
        if not self.given:
            return dict.fromkeys(loads, band(loads, largest))
        return scaled_band(loads, largest, self.nw_in if inbound else self.nw_out)


@dataclass
class _Loads:
    """Network in, out and leader bytes in per broker, kept in step with the run's moves."""

    run: Run
    leaders: dict[Key, int]
    nw_in: dict[int, float]
    nw_out: dict[int, float]
    lead_in: dict[int, float]
    # per partition: its rate, and what its leader sends (fixed: a plan keeps each RF)
    rate: dict[Key, float]
    out: dict[Key, float]
    size: dict[Key, int]  # bytes a move of one of its replicas copies (0: unknown)
    led_anew: set[Key] = field(default_factory=set)  # partitions given another leader

    @classmethod
    def of(cls, run: Run, brokers: Iterable[int]) -> _Loads:
        ids = set(brokers)
        for reps in run.work.values():
            ids.update(reps)
        rate = {k: _rate(p) for k, p in run.parts.items()}
        out = {k: leader_out_load(p, run.work[k]) for k, p in run.parts.items()}
        zero = dict.fromkeys(ids, 0.0)
        size = {k: p.size_bytes or 0 for k, p in run.parts.items()}
        loads = cls(run, {}, dict(zero), dict(zero), dict(zero), rate, out, size)
        for key, p in run.parts.items():
            for b in run.work[key]:
                loads.nw_in[b] += rate[key]
            leader = p.current_leader
            if leader is not None and leader in ids:
                loads.leaders[key] = leader
                loads.nw_out[leader] += out[key]
                loads.lead_in[leader] += rate[key]
        return loads

    def _hand_over(self, key: Key, old: int | None, new: int) -> None:
        if old is not None:
            self.nw_out[old] -= self.out[key]
            self.lead_in[old] -= self.rate[key]
        self.leaders[key] = new
        self.nw_out[new] += self.out[key]
        self.lead_in[new] += self.rate[key]

    def lead(self, key: Key, new: int) -> None:
        """`new` leads the partition: first in its replicas (elected after the apply)."""
        self._hand_over(key, self.leaders.get(key), new)
        self.run.reorder(key, new)
        self.led_anew.add(key)

    def successor(
        self, key: Key, eligible: Iterable[int], top_out: Mapping[int, float], scale: Scale
    ) -> int | None:
        """The in-sync eligible follower of the partition least loaded in network out that
        can take its leadership within the band (None: none can)."""
        load = self.out[key]
        synced = self.run.parts[key].in_sync
        ok = set(eligible)
        fits = [
            b
            for b in self.run.work[key]
            if b != self.leaders.get(key)
            and b in ok
            and b in synced
            and self.nw_out[b] + load <= top_out[b] + EPSILON
        ]
        return min(fits, key=lambda b: (self.nw_out[b] / scale.nw_out[b], b), default=None)

    def move(self, key: Key, old: int, new: int) -> None:
        self.nw_in[old] -= self.rate[key]
        self.nw_in[new] += self.rate[key]
        if self.leaders.get(key) == old:
            self._hand_over(key, old, new)
        self.run.move(key, old, new)

    def held(self, keys: Iterable[Key]) -> dict[int, list[Key]]:
        """Broker -> the partitions of `keys` it holds a replica of."""
        out: dict[int, list[Key]] = {}
        for key in keys:
            for b in self.run.work[key]:
                out.setdefault(b, []).append(key)
        return out

    def over(
        self, eligible: Sequence[int], top_in: Mapping[int, float], top_out: Mapping[int, float]
    ) -> list[int]:
        """Brokers over their band in network in or out, the furthest over first."""

        def excess(b: int) -> float:
            return max(
                self.nw_in[b] / top_in[b] if top_in[b] else 0,
                self.nw_out[b] / top_out[b] if top_out[b] else 0,
            )

        hot = [
            b
            for b in eligible
            if self.nw_in[b] > top_in[b] + EPSILON or self.nw_out[b] > top_out[b] + EPSILON
        ]
        return sorted(hot, key=lambda b: (-excess(b), b))


def require_traffic(snapshot: ClusterSnapshot) -> None:
    if snapshot.traffic is None:
        raise InputError(
            "`by` traffic plans from measured rates and this snapshot has none; take one "
            "with kreplica snapshot `traffic_s` SECONDS and plan from that file"
        )


def traffic_rebalance_plan(
    snapshot: ClusterSnapshot,
    *,
    max_moves: int | None = None,
    max_bytes: int | None = None,
    options: PlanOptions = PlanOptions(),
    capacities: Mapping[int, Mapping[str, float]] | None = None,
) -> Plan:
    """Preferred-leader changes, then the cheapest replica moves, until each eligible
    broker's network in and out are within the band (or nothing more helps within the
    rules: racks kept, disk headroom, no dead, excluded or in-flight partition touched,
    --max-moves / --max-bytes). With `capacities` (traffic.check_capacities, every eligible
    broker in it) the band is on utilisation: a broker of twice the capacity carries twice
    the load."""
    require_traffic(snapshot)
    run, eligible, keys = start_balancing(snapshot, options, max_moves, max_bytes)
    scale = Scale.of(capacities, eligible)
    loads = _Loads.of(run, eligible)
    before = _figures(loads, eligible, scale)
    top_in = scale.tops(
        {b: loads.nw_in[b] for b in eligible},
        max((_rate(run.parts[k]) for k in keys), default=0.0),
        inbound=True,
    )
    top_out = scale.tops(
        {b: loads.nw_out[b] for b in eligible},
        max((leader_out_load(run.parts[k], run.work[k]) for k in keys), default=0.0),
        inbound=False,
    )
    tops = (top_in, top_out)
    budget = _Budget(max_moves, max_bytes)
    _leaders(loads, keys, eligible, top_out, scale)
    held = loads.held(keys)  # leader changes move no replica: the same for both
    bound_moves, bound_bytes = _bound(loads, held, eligible, top_in)
    _shed(loads, held, eligible, tops, budget, scale)
    _leaders(loads, keys, eligible, top_out, scale)
    _shed(loads, held, eligible, tops, budget, scale)
    moved, copied = budget.moves, budget.bytes
    leader_changes = sum(1 for k in loads.led_anew if loads.leaders.get(k) != _leader_of(run, k))
    after = _figures(loads, eligible, scale)
    run.bound.added = run.bound.removed = bound_moves
    run.bound.bytes = bound_bytes
    left = loads.over(eligible, top_in, top_out)
    report: dict[str, object] = {
        **_band_figures(top_in, top_out, scale),
        "before": before,
        "after": after,
        "leader_changes": leader_changes,
        "replica_moves": moved,
        "bytes_moved": copied,
        "bytes_lower_bound": bound_bytes,
        "brokers_over_band": left,
        "window_s": snapshot.traffic.window_s if snapshot.traffic else None,
    }
    run.findings.append(Finding("info", "traffic-balance", _summary(report)))
    if left:
        run.findings.append(
            Finding(
                "warning",
                "traffic-over-band",
                f"broker(s) {', '.join(map(str, left))} stay over the band: no move within the "
                "rules (racks, disk headroom, budget) brings them under",
            )
        )
    return run.plan("rebalance", {"by": "traffic", "traffic": report})


def _band_figures(
    top_in: Mapping[int, float], top_out: Mapping[int, float], scale: Scale
) -> dict[str, object]:
    """The bands as the report gives them: one figure each without capacities; per broker
    (B/s) with them, beside the mean utilisation they are scaled from."""
    if not scale.given:
        return {
            "band_nw_in": round(next(iter(top_in.values()), 0.0), 1),
            "band_nw_out": round(next(iter(top_out.values()), 0.0), 1),
        }
    return {
        "band_nw_in": {b: round(v, 1) for b, v in top_in.items()},
        "band_nw_out": {b: round(v, 1) for b, v in top_out.items()},
    }


def _figures(loads: _Loads, eligible: Sequence[int], scale: Scale) -> dict[str, object]:
    out: dict[str, object] = {}
    named = [("nw_in", loads.nw_in), ("nw_out", loads.nw_out), ("leader_bytes_in", loads.lead_in)]
    if scale.given:  # utilisation: each broker's load over its capacity
        named += [
            ("nw_in_util", {b: loads.nw_in[b] / scale.nw_in[b] for b in eligible}),
            ("nw_out_util", {b: loads.nw_out[b] / scale.nw_out[b] for b in eligible}),
        ]
    for name, values in named:
        per = {b: values[b] for b in eligible}
        digits = 4 if name.endswith("_util") else 1
        out[name] = {
            "per_broker": {b: round(v, digits) for b, v in per.items()},
            **spread_figures(per),
        }
    return out


LOAD_LABELS = {
    "nw_in": "network in",
    "nw_out": "network out",
    "leader_bytes_in": "leader bytes in",
    "nw_in_util": "utilisation in",
    "nw_out_util": "utilisation out",
}


def spread_text(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    names: Sequence[str] = tuple(LOAD_LABELS),
) -> str:
    """`network in max/mean 1.40 -> 1.04, CV 0.21 -> 0.02; ...` from two _figures."""
    parts = []
    for name in names:
        if name not in before:
            continue  # utilisation: only with capacities
        b, a = before[name], after[name]
        parts.append(
            f"{LOAD_LABELS[name]} max/mean {b['max_over_mean']:.2f} -> "
            f"{a['max_over_mean']:.2f}, CV {b['cv']:.2f} -> {a['cv']:.2f}"
        )
    return "; ".join(parts)


def _summary(report: Mapping[str, object]) -> str:
    before, after = report["before"], report["after"]
    assert isinstance(before, dict) and isinstance(after, dict)
    bound = report["bytes_lower_bound"]
    top_in, top_out = report["band_nw_in"], report["band_nw_out"]
    if isinstance(top_in, dict) and isinstance(top_out, dict):  # per broker: by capacity
        band_text = (
            f"band per broker (scaled by capacity): network in up to {_range(top_in)} B/s, "
            f"out up to {_range(top_out)} B/s"
        )
    else:
        band_text = f"band: network in up to {top_in:,.0f} B/s, out up to {top_out:,.0f} B/s"
    return (
        spread_text(before, after) + f"; {band_text}; {report['leader_changes']} preferred-leader "
        f"change(s), {report['replica_moves']} replica move(s), {report['bytes_moved']:,} bytes "
        f"moved (lower bound {'unknown' if bound is None else f'{bound:,}'})"
    )


def _range(per_broker: Mapping[int, float]) -> str:
    low, high = min(per_broker.values(), default=0.0), max(per_broker.values(), default=0.0)
    return f"{low:,.0f}" if round(low) == round(high) else f"{low:,.0f}-{high:,.0f}"


def _leader_of(run: Run, key: Key) -> int | None:
    return run.parts[key].current_leader


def _leaders(
    loads: _Loads,
    keys: Sequence[Key],
    eligible: Sequence[int],
    top_out: Mapping[int, float],
    scale: Scale,
) -> None:
    """Move leadership off brokers over the network-out band, to an in-sync replica where
    the pair's larger load (utilisation, with capacities) drops (no data moves), once per
    partition."""
    cap = scale.nw_out
    if not any(loads.nw_out[b] > top_out[b] + EPSILON for b in eligible):
        return  # nothing over the band: no need to list who leads what
    ok = set(eligible)
    nw_out, out, led_anew = loads.nw_out, loads.out, loads.led_anew  # the loop's hot lookups
    parts, work = loads.run.parts, loads.run.work
    led: dict[int, list[Key]] = {}
    for key in keys:
        leader = loads.leaders.get(key)
        if leader is not None:
            led.setdefault(leader, []).append(key)
    for _ in range(len(keys) + 1):
        hot = [b for b in eligible if nw_out[b] > top_out[b] + EPSILON]
        if not hot:
            break
        src = max(hot, key=lambda b: (nw_out[b] / cap[b], -b))
        best: tuple[float, Key, int] | None = None
        src_out, src_cap = nw_out[src], cap[src]
        below = (src_out - EPSILON) / src_cap  # what the pair's larger load must drop under
        for key in led.get(src, []):
            if key in led_anew:
                continue  # one change per partition: back and forth helps no one
            load = out[key]
            synced = parts[key].in_sync
            for dst in work[key]:
                if dst == src or dst not in ok or dst not in synced:
                    continue
                worst = max((src_out - load) / src_cap, (nw_out[dst] + load) / cap[dst])
                if worst < below and (best is None or (worst, key, dst) < best):
                    best = (worst, key, dst)
        if best is None:
            break
        _, key, dst = best
        loads.lead(key, dst)
        led[src].remove(key)
        led.setdefault(dst, []).append(key)


def _bound(
    loads: _Loads,
    held: Mapping[int, list[Key]],
    eligible: Sequence[int],
    top_in: Mapping[int, float],
) -> tuple[int, int | None]:
    """The module docstring's lower bound: (replicas, bytes) off the brokers over the band in
    network in; bytes None when a partition that would count has no size."""
    moves, total = 0, 0
    sized = True
    for b in eligible:
        excess = loads.nw_in[b] - top_in[b]
        if excess <= EPSILON:
            continue
        parts = [loads.run.parts[k] for k in held.get(b, [])]
        sized = sized and all(p.size_bytes is not None for p in parts)
        count, spent = shed_bound(((_rate(p), p.size_bytes or 0) for p in parts), excess)
        moves, total = moves + count, total + spent
    return moves, total if sized else None


@dataclass
class _Budget:
    """--max-moves / --max-bytes, and what the moves so far used of them."""

    max_moves: int | None
    max_bytes: int | None
    moves: int = 0
    bytes: int = 0

    def spent(self) -> bool:
        return self.max_moves is not None and self.moves >= self.max_moves

    def allows(self, size: int) -> bool:
        return self.max_bytes is None or self.bytes + size <= self.max_bytes


def _shed(
    loads: _Loads,
    held: dict[int, list[Key]],
    eligible: Sequence[int],
    tops: tuple[Mapping[int, float], Mapping[int, float]],
    budget: _Budget,
    scale: Scale,
) -> None:
    """Replica moves off each broker over the band (network in or out), the furthest over
    first: per broker, the replicas that cover its excess with the fewest bytes (_pick), each
    to the least loaded eligible broker that takes it within the bands and the rules; a
    replica no broker takes is left out and the cover chosen again from the rest."""
    size = loads.size

    def excess(b: int) -> tuple[float, float]:
        return loads.nw_in[b] - tops[0][b], loads.nw_out[b] - tops[1][b]

    for src in loads.over(eligible, *tops):
        stuck: set[Key] = set()
        while max(excess(src)) > EPSILON and not budget.spent():
            cands = [k for k in held.get(src, []) if k not in stuck and budget.allows(size[k])]
            pick = _pick(loads, src, cands, size, *excess(src))
            if not pick:
                break  # nothing left covers the excess: it stays over (a warning)
            for key in sorted(pick, key=lambda k: (-loads.rate[k], k)):
                if budget.spent() or not budget.allows(size[key]):
                    break
                dst = _destination(loads, key, src, eligible, tops)
                if dst is None and loads.leaders.get(key) == src:
                    # no broker takes what it sends: a follower leads it, then it moves
                    heir = loads.successor(key, eligible, tops[1], scale)
                    if heir is not None:
                        loads.lead(key, heir)
                        dst = _destination(loads, key, src, eligible, tops)
                if dst is None:
                    stuck.add(key)
                    break  # choose again without it
                loads.move(key, src, dst)
                held[src].remove(key)
                held.setdefault(dst, []).append(key)
                budget.moves += 1
                budget.bytes += size[key]


def _pick(
    loads: _Loads,
    src: int,
    cands: Sequence[Key],
    size: Mapping[Key, int],
    need_in: float,
    need_out: float,
) -> list[Key] | None:
    """The replicas of `cands` to move off `src` so that it sheds `need_in` of network in and
    `need_out` of network out (what a replica it leads sends goes with it), with the fewest
    bytes: the cheapest cover of one need, then of what is left of the other, whichever
    order costs less. None when no order covers both."""

    def sent(k: Key) -> float:
        return loads.out[k] if loads.leaders.get(k) == src else 0.0

    def rate(k: Key) -> float:
        return loads.rate[k]

    def cover(keys: Sequence[Key], weight: Callable[[Key], float], need: float) -> list[Key] | None:
        if need <= EPSILON:
            return []
        keys = [k for k in keys if weight(k) > 0]
        got = cheapest_cover([(weight(k), float(size[k])) for k in keys], need)
        return None if got is None else [keys[i] for i in got]

    orders = [(rate, sent, (need_in, need_out)), (sent, rate, (need_out, need_in))]
    if min(need_in, need_out) <= EPSILON:
        orders = orders[:1] if need_in > EPSILON else orders[1:]  # one need: one order
    options = []
    for first, second, needs in orders:
        one = cover(cands, first, needs[0])
        if one is None:
            continue
        taken = set(one)
        rest = [k for k in cands if k not in taken]
        two = cover(rest, second, needs[1] - sum(second(k) for k in one))
        if two is not None:
            options.append((sum(size[k] for k in one + two), one + two))
    return min(options)[1] if options else None


def _destination(
    loads: _Loads,
    key: Key,
    src: int,
    eligible: Sequence[int],
    tops: tuple[Mapping[int, float], Mapping[int, float]],
) -> int | None:
    """The least full eligible broker (its loads over their bands, in the loads the replica
    adds to) that takes the replica within both bands, without losing a rack, holding two
    replicas of the partition or going over its disk headroom."""
    run = loads.run
    rate = loads.rate[key]
    sent = loads.out[key] if loads.leaders.get(key) == src else 0.0
    nw_in, nw_out, top_in, top_out = loads.nw_in, loads.nw_out, tops[0], tops[1]
    if sent:
        order = [(nw_in[b] / top_in[b] + nw_out[b] / top_out[b], b) for b in eligible]
    else:
        order = [(nw_in[b] / top_in[b], b) for b in eligible]
    heapq.heapify(order)  # least full first; the first few mostly take it: no full sort
    while order:
        dst = heapq.heappop(order)[1]
        if dst in run.work[key]:
            continue
        if loads.nw_in[dst] + rate > tops[0][dst] + EPSILON:
            continue
        if loads.nw_out[dst] + sent > tops[1][dst] + EPSILON:
            continue
        if run.rack_ok(key, src, dst) and run.fits(key, dst):
            return dst
    return None
