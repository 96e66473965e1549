"""Drain and add-brokers by traffic: when the snapshot carries rates (`snapshot --traffic`),
the count plan's moved replicas are paired again with its destination slots so that the
largest network in and out per broker drop as far as single exchanges allow, and every
count stays the count plan's.

The count plan (drain.py, add.py) decides how many replicas each broker gains and loses:
the optimum by count, kept here. What this step changes, exchange by exchange:
  swap     two moved replicas of the same kind (both preferred leaders, or both followers)
           trade destinations
  replace  (add-brokers) a moved replica stays home and another replica of the same kind
           on its source broker goes in its place
Either keeps every broker's replicas and preferred leaders; each is taken only where the
rules allow it: no broker twice in a partition, no fewer racks than the count plan gives
the partition, the disk guard's headroom; dead, excluded and in-flight partitions are never
items. Each step takes the broker highest in network in (then out) and the exchange that
lowers it most, the broker that gains staying under it and the other load under its largest,
until none does; then, within a budget of steps, the next brokers down the same way (so a new
broker comes nearer the mean). No step raises a largest load: neither ends above the count
plan's.

Loads are traffic.py's: a replica of a partition written at r B/s adds r to its broker's
network in; its preferred leader (the first replica, elected after the move) sends
traffic.leader_out_load. A partition with more than one moved replica keeps the count
plan's destinations (its rack rule binds them together).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from kreplica.model import Finding, PlanReport
from kreplica.planner.brokers.run import Key, Run, movable_keys
from kreplica.planner.brokers.traffic_balance import spread_figures, spread_text
from kreplica.planner.traffic import leader_out_load

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
EPSILON = 1e-6  # B/s: what float sums may be off by
_TRIES = 64  # best exchanges checked against the rules per step
_SIDE = 32  # replicas (or sources) of a broker weighed per step: the heaviest, or lightest


@dataclass
class Items:
    """The replicas the step may place, one row each. Dense broker indexes: `src` the broker
    it is on now, `dst` where the plan sends it (-1: it stays). `part`: its partition's
    index (one moved item per partition at a time)."""

    part: I64
    src: I64
    dst: I64
    lead: Mask
    rate: F64
    out: F64  # what it sends as preferred leader (0 for a follower)
    size: F64


def place(
    nw_in: F64,
    nw_out: F64,
    items: Items,
    eligible: Mask,
    room: F64,
    allowed: Callable[[int, int], bool],
    *,
    max_steps: int | None = None,
) -> int:
    """Exchanges (module doc) on `items` in place, `nw_in`/`nw_out` (per dense broker, the
    count plan's loads) and `room` (disk bytes per broker, inf: unguarded) kept in step;
    `allowed(i, b)`: item i may go to broker b by the partition rules. Returns the steps."""
    moved = items.dst >= 0
    busy = np.bincount(items.part[moved], minlength=int(items.part.max(initial=-1)) + 1)
    by_src = np.argsort(items.src, kind="stable")
    bounds = np.searchsorted(items.src[by_src], np.arange(len(eligible) + 1))
    loads = (nw_in, nw_out)
    weights = (items.rate, items.out)
    index = (by_src, bounds)
    steps = 0
    limit = max_steps if max_steps is not None else 8 * int(moved.sum()) + 8
    while steps < limit:  # the largest load first, as long as it drops
        if not any(
            _step(loads, weights, m, None, items, eligible, room, busy, allowed, index)
            for m in (0, 1)
        ):
            break
        steps += 1
    # then the next brokers down (a new broker nearer the mean), within a budget of steps
    stuck: tuple[set[int], set[int]] = (set(), set())  # until their own load changes
    ranked = int(eligible.sum())
    budget = steps + 2 * ranked
    while steps < min(limit, budget):
        touched = None
        for m in (0, 1):
            order = np.argsort(-np.where(eligible, loads[m], -np.inf), kind="stable")[:ranked]
            for h in order.tolist():
                if h in stuck[m]:
                    continue
                touched = _step(loads, weights, m, h, items, eligible, room, busy, allowed, index)
                if touched is not None:
                    break
                stuck[m].add(h)
            if touched is not None:
                break
        if touched is None:
            break
        steps += 1
        for held in stuck:
            held.difference_update(touched)
    return steps


def _step(
    loads: tuple[F64, F64],
    weights: tuple[F64, F64],
    m: int,
    at: int | None,
    items: Items,
    eligible: Mask,
    room: F64,
    busy: I64,
    allowed: Callable[[int, int], bool],
    index: tuple[I64, I64],
) -> tuple[int, int] | None:
    """The exchange that lowers broker `at` (None: the highest) in load `m` (0 in, 1 out)
    most, the broker that gains ending under its load now and the other load under its
    largest; returns the two brokers whose loads changed, None when there is none."""
    load, w = loads[m], weights[m]
    other, wo = loads[1 - m], weights[1 - m]
    h = int(np.argmax(np.where(eligible, load, -np.inf))) if at is None else at
    top, top_other = float(load[h]), float(np.max(np.where(eligible, other, -np.inf)))
    cands: list[tuple[float, int, int, int, int]] = []  # (score, kind, i, j, broker)
    dst, src = items.dst, items.src
    by_src, bounds = index

    def home(b: int) -> I64:
        """The items on broker b that stay, of partitions with no moved item."""
        on = by_src[bounds[b] : bounds[b + 1]]
        out: I64 = on[(dst[on] < 0) & (busy[items.part[on]] == 0)]
        return out

    def heaviest(rows: I64, sign: float = 1.0) -> I64:
        """The _SIDE rows heaviest (sign -1: lightest) in w: where the best exchanges are."""
        if rows.size <= _SIDE:
            return rows
        out: I64 = rows[np.argsort(-sign * w[rows], kind="stable")[:_SIDE]]
        return out

    on_h = heaviest(np.flatnonzero(dst == h))
    if on_h.size:
        # swap: i (to h) and j (to y) trade destinations
        js = np.flatnonzero((dst >= 0) & (dst != h))
        _gather(cands, 0, on_h, js, dst[js], h, top, top_other, load, w, other, wo, items)
        # replace (h a destination): i stays on its source, j from that source takes h; the
        # least loaded sources (they gain) first
        sources = np.unique(src[on_h])
        sources = sources[np.argsort(load[sources], kind="stable")[:_SIDE]]
        for s in sources.tolist():
            ii, jj = on_h[src[on_h] == s], home(s)
            _gather(
                cands, 1, ii, jj, np.full(jj.size, s), h, top, top_other, load, w, other, wo, items
            )
    from_h = heaviest(np.flatnonzero((src == h) & (dst >= 0)), -1.0)
    if from_h.size:
        # replace (h a source): j, a heavier replica on h, goes where i went; i stays
        # (leaving h: a replica that stays on h now; arriving: i, kept home)
        pool = home(h)
        for i in from_h.tolist():
            one = np.array([i])
            _gather(cands, 2, pool, one, dst[one], h, top, top_other, load, w, other, wo, items)
    cands.sort()
    for _, kind, i, j, y in cands[:_TRIES]:
        if _try(kind, i, j, y, h, items, room, allowed):
            _apply(kind, i, j, y, h, loads, weights, items, room, busy)
            return h, y
    return None


def _gather(
    cands: list[tuple[float, int, int, int, int]],
    kind: int,
    ii: I64,
    jj: I64,
    ys: I64,
    h: int,
    top: float,
    top_other: float,
    load: F64,
    w: F64,
    other: F64,
    wo: F64,
    items: Items,
) -> None:
    """Exchanges where a replica of `ii` leaves h for y and one of `jj` takes its place on h
    (y per j): h sheds w[i] - w[j], y gains it; kept when both end under h's load now and
    the other load under its largest. Listed as (score, kind, moved item, other, y): for
    `kind` 2 the item of `jj` is the moved one."""
    if not ii.size or not jj.size:
        return
    same = items.lead[ii][:, None] == items.lead[jj][None, :]
    d = w[ii][:, None] - w[jj][None, :]
    new_y = load[ys][None, :] + d
    do = wo[ii][:, None] - wo[jj][None, :]
    ok = (
        same
        & (d > EPSILON)
        & (new_y < top - EPSILON)
        & (other[h] - do <= top_other + EPSILON)
        & (other[ys][None, :] + do <= top_other + EPSILON)
        & (ys[None, :] != h)
    )
    a, b = np.nonzero(ok)
    if not a.size:
        return
    score = np.maximum(top - d[a, b], new_y[a, b])
    order = np.argsort(score, kind="stable")[:_TRIES]
    for k in order.tolist():
        i, j = int(ii[a[k]]), int(jj[b[k]])
        cands.append((float(score[k]), kind, *((j, i) if kind == 2 else (i, j)), int(ys[b[k]])))


def _try(
    kind: int,
    i: int,
    j: int,
    y: int,
    h: int,
    items: Items,
    room: F64,
    allowed: Callable[[int, int], bool],
) -> bool:
    size = items.size
    if kind == 0:  # swap: i to y, j to h
        return (
            room[y] + size[j] - size[i] >= 0
            and room[h] + size[i] - size[j] >= 0
            and allowed(i, y)
            and allowed(j, h)
        )
    if kind == 1:  # i stays on its source, j (from there) to h
        return room[h] + size[i] - size[j] >= 0 and allowed(j, h)
    return room[y] + size[i] - size[j] >= 0 and allowed(j, y)  # j from h to y, i stays


def _apply(
    kind: int,
    i: int,
    j: int,
    y: int,
    h: int,
    loads: tuple[F64, F64],
    weights: tuple[F64, F64],
    items: Items,
    room: F64,
    busy: I64,
) -> None:
    """Make the exchange (kinds as in _try): one replica leaves h, another takes its place
    there, y sees the opposite; the disk room changes where the plan sends them."""
    dst, size = items.dst, items.size
    leave, arrive = (j, i) if kind == 2 else (i, j)
    if kind == 0:
        dst[i], dst[j] = y, h
    else:  # i stays home, j goes where i went
        dst[i], dst[j] = -1, dst[i]
        busy[items.part[i]] -= 1
        busy[items.part[j]] += 1
    for load, w in zip(loads, weights, strict=True):
        d = float(w[arrive] - w[leave])
        load[h] += d
        load[y] -= d
    shift = size[leave] - size[arrive]
    if kind != 2:  # h receives replicas of the plan (else it is where j comes from)
        room[h] += shift
    if kind != 1:  # so does y (else it is i's source, taking i back)
        room[y] -= shift


# -- on a Run, after its count plan ------------------------------------------------------------


def by_traffic(run: Run, operation: str, *, replace: bool) -> PlanReport:
    """The step on `run` (its count plan made): the moved replicas paired again by load,
    and with `replace` (add-brokers) which replicas leave each source chosen by load too.
    Adds an info finding; returns the plan report's `traffic` entry."""
    ctx = run.ctx
    disk = ctx.disk
    ids = sorted(
        {b for k in run.parts for b in (*run.work[k], *run.parts[k].replicas)} | set(ctx.eligible)
    )
    dense = {b: i for i, b in enumerate(ids)}
    eligible = np.zeros(len(ids), dtype=bool)
    eligible[[dense[b] for b in ctx.eligible]] = True
    before = _loads(run, dense, after=False)
    counted = _loads(run, dense, after=True)
    cols: dict[str, list[float]] = {
        n: [] for n in ("part", "src", "dst", "lead", "rate", "out", "size")
    }
    keys: list[Key] = []
    others: list[
        tuple[set[int], int]
    ] = []  # per item: the partition's other replicas, racks to keep
    rack = ctx.rack

    def item(key: Key, src: int, dst: int, lead: bool, rest: Iterable[int], racks: int) -> None:
        p = run.parts[key]
        rate = p.bytes_in_per_s or 0.0
        for name, value in (
            ("part", len(keys) if not keys or keys[-1] != key else cols["part"][-1]),
            ("src", dense[src]),
            ("dst", -1 if dst < 0 else dense[dst]),
            ("lead", lead),
            ("rate", rate),
            ("out", leader_out_load(p, run.work[key]) if lead else 0.0),
            ("size", p.size_bytes or 0),
        ):
            cols[name].append(float(value))
        keys.append(key)
        others.append((set(rest), racks))

    sources: set[int] = set()
    for key in sorted(run.parts):
        work, old = run.work[key], run.parts[key].replicas
        added = [b for b in work if b not in old]
        if len(added) == 1:
            (gone,) = (b for b in old if b not in work)
            rest = [b for b in work if b != added[0]]
            item(key, gone, added[0], work[0] == added[0], rest, len(run.racks_of(work)))
            sources.add(gone)
    if replace:
        stays = set(movable_keys(run, (k for k in run.parts if k not in run.skipped)))
        for key in sorted(stays):
            work = run.work[key]
            if list(work) != list(run.parts[key].replicas):
                continue
            racks = len(run.racks_of(work))
            for slot, b in enumerate(work):
                if b in sources:
                    item(key, b, -1, slot == 0, [x for x in work if x != b], racks)
    figures = {
        "before": _figures(before, eligible, ids),
        "count_plan": _figures(counted, eligible, ids),
    }
    if not keys or (disk is not None and disk.per_dir):  # a dir per replica: not re-paired
        return _report(run, operation, figures, figures["count_plan"], 0)
    items = Items(
        part=np.array(cols["part"], dtype=np.int64),
        src=np.array(cols["src"], dtype=np.int64),
        dst=np.array(cols["dst"], dtype=np.int64),
        lead=np.array(cols["lead"], dtype=bool),
        rate=np.array(cols["rate"]),
        out=np.array(cols["out"]),
        size=np.array(cols["size"]),
    )
    start = items.dst.copy()
    room = np.full(len(ids), np.inf)
    if disk is not None:
        for b in ids:
            r = disk.room(b)
            if r is not None:
                room[dense[b]] = float(r)

    def allowed(i: int, b: int) -> bool:
        rest, racks = others[i]
        broker = ids[b]
        if broker in rest:
            return False
        return len({rack(x) for x in rest} | {rack(broker)}) >= racks

    nw_in, nw_out = counted
    place(nw_in, nw_out, items, eligible, room, allowed)
    changed = np.flatnonzero(items.dst != start)
    for i in changed.tolist():
        key, size = keys[i], run.parts[keys[i]].size_bytes or 0
        src = ids[int(items.src[i])]
        was = src if start[i] < 0 else ids[int(start[i])]
        now = src if items.dst[i] < 0 else ids[int(items.dst[i])]
        run.move(key, was, now)
        if disk is not None:  # move() charged `now`; the bytes leave `was` (or never came home)
            if was != src:
                disk.take(was, -size)
            if now == src:
                disk.take(now, -size)
    return _report(
        run, operation, figures, _figures((nw_in, nw_out), eligible, ids), int(changed.size)
    )


def _loads(run: Run, dense: Mapping[int, int], *, after: bool) -> tuple[F64, F64]:
    """Network in and out per dense broker, before the plan or after it (the preferred
    leader, first, leads: the election follows the move)."""
    nw_in = np.zeros(len(dense))
    nw_out = np.zeros(len(dense))
    for key, p in run.parts.items():
        reps = run.work[key] if after else p.replicas
        if not reps or not p.bytes_in_per_s:
            continue
        for b in reps:
            nw_in[dense[b]] += p.bytes_in_per_s
        nw_out[dense[reps[0]]] += leader_out_load(p, reps)
    return nw_in, nw_out


def _figures(loads: tuple[F64, F64], eligible: Mask, ids: Sequence[int]) -> dict[str, object]:
    """traffic_balance's figures (max / mean, CV) of network in and out over `eligible`."""
    at = np.flatnonzero(eligible).tolist()
    return {
        name: {
            "max": round(float(values[at].max(initial=0.0)), 1),
            **spread_figures({ids[b]: float(values[b]) for b in at}),
        }
        for name, values in zip(("nw_in", "nw_out"), loads, strict=True)
    }


def _report(
    run: Run,
    operation: str,
    figures: dict[str, dict[str, object]],
    after: dict[str, object],
    changed: int,
) -> PlanReport:
    report: dict[str, object] = {**figures, "after": after, "replicas_placed_anew": changed}
    run.findings.append(
        Finding(
            "info",
            "traffic-placement",
            f"{operation} by traffic (the snapshot's rates), the same replicas per broker as by "
            f"count: {spread_text(figures['count_plan'], after, ('nw_in', 'nw_out'))}; "
            f"{changed} replica(s) placed otherwise than by count alone",
        )
    )
    return {"traffic": report}
