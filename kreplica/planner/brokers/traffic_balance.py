"""traffic_rebalance_plan: even out network in and out per broker from measured rates (a
snapshot taken with `snapshot --traffic`): preferred-leader changes first (they move no data),
then replica moves with the fewest bytes, until every broker is within the band.

Loads (bytes per second, kreplica.planner.traffic): a replica of a partition written at r adds
r to its broker's network in; the partition's leader sends r x (followers + fan-out). The band
per load is max(1.05 x mean, mean + the largest single partition's load): a broker can be
brought under it by moving whole partitions, where 1.05 x mean alone may be out of reach.

Lower bound on the bytes moved: network in does not depend on leadership, so each broker over
the band in network in must lose replicas whose rates sum to its excess at least, and no
replica leaves two brokers. Per such broker, the least bytes that can carry its excess is at
least the fractional knapsack optimum (its replicas by bytes per B/s, cheapest first, the last
one taken in part); their sum bounds every plan. Network out over the band is left out of the
bound: leader changes can fix it without moving data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kreplica.errors import InputError
from kreplica.model import ClusterSnapshot, Finding, Partition, Plan
from kreplica.planner.brokers.run import Key, Run, start_balancing
from kreplica.planner.options import PlanOptions
from kreplica.planner.traffic import leader_out_load

BAND_FACTOR = 1.05


def _rate(p: Partition) -> float:
    return p.bytes_in_per_s or 0.0


def band(loads: Mapping[int, float], largest: float) -> float:
    """The most a broker may carry: max(1.05 x mean, mean + the largest single load)."""
    mean = sum(loads.values()) / len(loads) if loads else 0.0
    return max(BAND_FACTOR * mean, mean + largest)


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
    replicas as (rate, bytes): the count takes the fastest first; the bytes are the
    fractional knapsack optimum (cheapest bytes per B/s first, the last in part)."""
    listed = [(r, s) for r, s in replicas if r > 0]
    if excess <= 0:
        return 0, 0
    count, carried = 0, 0.0
    for r, _ in sorted(listed, reverse=True):
        if carried >= excess:
            break
        count, carried = count + 1, carried + r
    need, spent = excess, 0.0
    for r, s in sorted(listed, key=lambda x: x[1] / x[0]):
        take = min(1.0, need / r)
        spent += take * s
        need -= take * r
        if need <= 1e-9:
            break
    return count, math.ceil(spent - 1e-6)


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

    @classmethod
    def of(cls, run: Run, brokers: Iterable[int]) -> _Loads:
        ids = set(brokers)
        for reps in run.work.values():
            ids.update(reps)
        rate = {k: _rate(p) for k, p in run.parts.items()}
        out = {k: leader_out_load(p, run.work[k]) for k, p in run.parts.items()}
        zero = dict.fromkeys(ids, 0.0)
        loads = cls(run, {}, dict(zero), dict(zero), dict(zero), rate, out)
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

    def over(self, eligible: Sequence[int], top_in: float, top_out: float) -> list[int]:
        """Brokers over the band in network in or out, the furthest over first."""

        def excess(b: int) -> float:
            return max(
                self.nw_in[b] / top_in if top_in else 0, self.nw_out[b] / top_out if top_out else 0
            )

        hot = [
            b for b in eligible if self.nw_in[b] > top_in + 1e-6 or self.nw_out[b] > top_out + 1e-6
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
) -> Plan:
    """Preferred-leader changes, then the cheapest replica moves, until each eligible
    broker's network in and out are within the band (or nothing more helps within the
    rules: racks kept, disk headroom, no dead, excluded or in-flight partition touched,
    --max-moves / --max-bytes)."""
    require_traffic(snapshot)
    run, eligible, keys = start_balancing(snapshot, options, max_moves, max_bytes)
    loads = _Loads.of(run, eligible)
    before = _figures(loads, eligible)
    top_in = band(
        {b: loads.nw_in[b] for b in eligible}, max((_rate(run.parts[k]) for k in keys), default=0.0)
    )
    top_out = band(
        {b: loads.nw_out[b] for b in eligible},
        max((leader_out_load(run.parts[k], run.work[k]) for k in keys), default=0.0),
    )
    leader_changes = _leaders(loads, keys, eligible, top_out)
    held = loads.held(keys)  # leader changes move no replica: the same for both
    bound_moves, bound_bytes = _bound(loads, held, eligible, top_in)
    moved, copied = _moves(loads, held, eligible, top_in, top_out, max_moves, max_bytes)
    after = _figures(loads, eligible)
    run.bound.added = run.bound.removed = bound_moves
    run.bound.bytes = bound_bytes
    left = loads.over(eligible, top_in, top_out)
    report: dict[str, object] = {
        "band_nw_in": round(top_in, 1),
        "band_nw_out": round(top_out, 1),
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


def _figures(loads: _Loads, eligible: Sequence[int]) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, values in (
        ("nw_in", loads.nw_in),
        ("nw_out", loads.nw_out),
        ("leader_bytes_in", loads.lead_in),
    ):
        per = {b: values[b] for b in eligible}
        out[name] = {"per_broker": {b: round(v, 1) for b, v in per.items()}, **spread_figures(per)}
    return out


def _summary(report: Mapping[str, object]) -> str:
    parts = []
    before, after = report["before"], report["after"]
    assert isinstance(before, dict) and isinstance(after, dict)
    for name, label in (
        ("nw_in", "network in"),
        ("nw_out", "network out"),
        ("leader_bytes_in", "leader bytes in"),
    ):
        b, a = before[name], after[name]
        parts.append(
            f"{label} max/mean {b['max_over_mean']:.2f} -> {a['max_over_mean']:.2f}, "
            f"CV {b['cv']:.2f} -> {a['cv']:.2f}"
        )
    bound = report["bytes_lower_bound"]
    return (
        "; ".join(parts)
        + f"; {report['leader_changes']} preferred-leader change(s), {report['replica_moves']} "
        f"replica move(s), {report['bytes_moved']} bytes moved (lower bound {bound})"
    )


def _leaders(loads: _Loads, keys: Sequence[Key], eligible: Sequence[int], top_out: float) -> int:
    """Move leadership off brokers over the network-out band, to an in-sync replica where
    the pair's larger load drops (no data moves). Returns the changes made."""
    ok = set(eligible)
    led: dict[int, list[Key]] = {}
    for key in keys:
        leader = loads.leaders.get(key)
        if leader is not None:
            led.setdefault(leader, []).append(key)
    changes = 0
    changed: set[Key] = set()
    for _ in range(len(keys) + 1):
        hot = [b for b in eligible if loads.nw_out[b] > top_out + 1e-6]
        if not hot:
            break
        src = max(hot, key=lambda b: (loads.nw_out[b], -b))
        best: tuple[float, Key, int] | None = None
        for key in led.get(src, []):
            if key in changed:
                continue  # one change per partition: back and forth helps no one
            load = loads.out[key]
            synced = loads.run.parts[key].in_sync
            for dst in loads.run.work[key]:
                if dst == src or dst not in ok or dst not in synced:
                    continue
                worst = max(loads.nw_out[src] - load, loads.nw_out[dst] + load)
                if worst < loads.nw_out[src] - 1e-6 and (best is None or (worst, key, dst) < best):
                    best = (worst, key, dst)
        if best is None:
            break
        _, key, dst = best
        loads.lead(key, dst)
        led[src].remove(key)
        led.setdefault(dst, []).append(key)
        changed.add(key)
        changes += 1
    return changes


def _bound(
    loads: _Loads, held: Mapping[int, list[Key]], eligible: Sequence[int], top_in: float
) -> tuple[int, int | None]:
    """The module docstring's lower bound: (replicas, bytes) off the brokers over the band in
    network in; bytes None when a partition that would count has no size."""
    moves, total = 0, 0
    sized = True
    for b in eligible:
        excess = loads.nw_in[b] - top_in
        if excess <= 1e-6:
            continue
        parts = [loads.run.parts[k] for k in held.get(b, [])]
        sized = sized and all(p.size_bytes is not None for p in parts)
        count, spent = shed_bound(((_rate(p), p.size_bytes or 0) for p in parts), excess)
        moves, total = moves + count, total + spent
    return moves, total if sized else None


def _moves(
    loads: _Loads,
    held: dict[int, list[Key]],
    eligible: Sequence[int],
    top_in: float,
    top_out: float,
    max_moves: int | None,
    max_bytes: int | None,
) -> tuple[int, int]:
    """Replica moves off the broker furthest over the band, the cheapest bytes per B/s of
    relief first (one move that clears the excess alone: the smallest such), each to the
    least loaded eligible broker that stays within the band. Returns (moves, bytes)."""
    run = loads.run
    size_of = {k: run.parts[k].size_bytes or 0 for keys in held.values() for k in keys}
    moved, copied = 0, 0
    tried: set[tuple[Key, int]] = set()
    for _ in range(len(size_of) * 2 + 1):
        hot = loads.over(eligible, top_in, top_out)
        if not hot or (max_moves is not None and moved >= max_moves):
            break
        src = hot[0]
        excess = max(loads.nw_in[src] - top_in, loads.nw_out[src] - top_out)
        coolest = sorted(eligible, key=lambda b: (loads.nw_in[b] + loads.nw_out[b], b))
        best: tuple[tuple[float, float, str, int], Key, int] | None = None
        for key in held.get(src, []):
            rate, size = loads.rate[key], size_of[key]
            if rate <= 0 or (max_bytes is not None and copied + size > max_bytes):
                continue
            if tried and (key, src) in tried:
                continue
            leads = loads.leaders.get(key) == src
            relief = max(rate, loads.out[key]) if leads else rate
            clears = relief >= excess
            cost = float(size) if clears else size / relief
            score = (0.0 if clears else 1.0, cost, key[0], key[1])
            if best is not None and score >= best[0]:
                continue
            dst = _destination(loads, key, src, coolest, top_in, top_out, leads)
            if dst is not None:
                best = (score, key, dst)
        if best is None:
            break
        _, key, dst = best
        if not run.fits(key, dst):
            tried.add((key, src))
            continue
        loads.move(key, src, dst)
        held[src].remove(key)
        held.setdefault(dst, []).append(key)
        moved += 1
        copied += size_of[key]
    return moved, copied


def _destination(
    loads: _Loads,
    key: Key,
    src: int,
    coolest: Sequence[int],
    top_in: float,
    top_out: float,
    leads: bool,
) -> int | None:
    """The first of `coolest` (eligible brokers, least loaded first) that takes the replica
    without going over the band, losing a rack, or holding two replicas of the partition."""
    run = loads.run
    rate, out = loads.rate[key], loads.out[key] if leads else 0.0
    for dst in coolest:
        if dst in run.work[key]:
            continue
        if loads.nw_in[dst] + rate > top_in + 1e-6 or loads.nw_out[dst] + out > top_out + 1e-6:
            continue
        if run.rack_ok(key, src, dst):
            return dst
    return None
