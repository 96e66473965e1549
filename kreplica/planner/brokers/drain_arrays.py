"""The drain on columns: classes built from the replica matrix, destinations and preferred
leaders written back into it with numpy (drain.py's rules, no object per partition).

Brokers are dense indexes (0..nb-1) into per-broker arrays; the replica matrix holds them,
-1 for an empty slot. A drained partition's class is its topic, its units (replicas on the
drained brokers), its choices: the racks its staying replicas use (the rack rule gives a
layer per fresh rack), and, only when it has fewer fresh racks than units, the staying
brokers themselves; and whether a drained broker led it. So the count of classes is
bounded by topics x rack patterns x 2, not by partitions (np.unique over one key row per
partition).

    drain_classes    the classes of the drained rows, as spreadflow Groups
    place            the exact balance (spreadflow.solve_balanced) over the classes, written
                     back; a class a drained broker led is only counted per broker
    lead             preferred leaders of the drained rows: an in-sync staying replica or a
                     new one, as even as they can be (spreadflow.solve), written back; a
                     counted class's rows lead from their own in-sync replicas or from the
                     class's new brokers (a pool all its rows share, bounded by the counts),
                     and then take the new brokers to match

The object drain (drain.py) splits a drained leader's class by its rows' in-sync replicas
before placing; here they share the class and only the leader step tells them apart. The
replica counts are the same optimum; which row takes which broker, and so the preferred
leaders, may differ where costs tie (tests/unit/planner/test_drain_columns.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from kreplica.columns import ISR_OTHER, NO_LEADER, NO_SIZE, PartitionColumns
from kreplica.errors import PlanInfeasible
from kreplica.model import ClusterSnapshot, PlanReport
from kreplica.planner.options import PlanOptions
from kreplica.planner.spreadflow import (
    Group,
    Layers,
    kept_leaders,
    rule_layers,
    solve,
    solve_balanced,
    split,
)

if TYPE_CHECKING:
    from kreplica.planner.brokers.column_run import ColumnRun

I64 = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class DrainBrokers:
    """Per dense broker: rack index (a rackless broker its own), tie-break rank, whether it
    stays eligible, whether it is drained."""

    rack: I64
    rank: I64
    eligible: Bools
    drained: Bools

    def rack_brokers(self) -> dict[int, list[int]]:
        """Eligible brokers per rack, by rank; racks in the order of their first broker."""
        out: dict[int, list[int]] = {}
        elig = np.flatnonzero(self.eligible)
        for b in elig[np.argsort(self.rank[elig], kind="stable")].tolist():
            out.setdefault(int(self.rack[b]), []).append(b)
        return out


class TopicCounts(Mapping[str, Mapping[int, int]]):
    """topic name -> broker -> count, read from a (topics x brokers) matrix (solve's
    topic_base without a dict per topic)."""

    def __init__(self, names: Sequence[str], matrix: I64) -> None:
        self.index = {name: i for i, name in enumerate(names)}
        self.matrix = matrix
        self.rows: dict[str, _Row] = {}

    def __getitem__(self, name: str) -> Mapping[int, int]:
        row = self.rows.get(name)
        if row is None:
            row = self.rows[name] = _Row(self.matrix[self.index[name]])
        return row

    def __iter__(self) -> Iterator[str]:
        return iter(self.index)

    def __len__(self) -> int:
        return len(self.index)


class _Row(Mapping[int, int]):
    def __init__(self, row: I64) -> None:
        self.row: list[int] = row.tolist()

    def __getitem__(self, b: int) -> int:
        value: int = self.row[b]
        return value

    def get(self, b: int, default: int | None = None) -> int:  # type: ignore[override]
        value: int = self.row[b]  # every broker has a cell: Mapping.get's try is not needed
        return value

    def values(self) -> list[int]:  # type: ignore[override]
        return self.row

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.row)))

    def __len__(self) -> int:
        return len(self.row)


def topic_matrix(dense: I64, topic: I64, n_topics: int, nb: int, col: int | None = None) -> I64:
    """Replicas per (topic, broker) of the matrix (only slot `col` when given: leaders)."""
    cells = dense if col is None else dense[:, col : col + 1]
    keep = cells >= 0
    flat = np.broadcast_to(topic[:, None], cells.shape)[keep] * nb + cells[keep]
    out: I64 = np.bincount(flat, minlength=n_topics * nb).reshape(n_topics, nb)
    return out


def drain_classes(
    dense: I64, topic: I64, rows: I64, names: Sequence[str], brokers: DrainBrokers
) -> list[tuple[Group, bool]]:
    """The drained rows' classes (members: (topic name, row)), in key order, each with
    whether a drained broker led its rows (one replica leaving, the first: the leader step
    then chooses which row takes which new broker, see `lead`)."""
    sub = dense[rows]
    width = sub.shape[1]
    gone = (sub >= 0) & brokers.drained[np.maximum(sub, 0)]
    units = gone.sum(axis=1)
    rest = np.where(gone | (sub < 0), -1, sub)
    racks = np.where(rest >= 0, brokers.rack[np.maximum(rest, 0)], -1)
    racks.sort(axis=1)
    racks[:, 1:][racks[:, 1:] == racks[:, :-1]] = -1  # each rack once
    racks.sort(axis=1)
    rack_brokers = brokers.rack_brokers()
    elig_rack = np.zeros(int(brokers.rack.max(initial=0)) + 2, dtype=bool)
    elig_rack[list(rack_brokers)] = True
    used_elig = ((racks >= 0) & elig_rack[racks]).sum(axis=1)
    fresh = len(rack_brokers) - used_elig
    # fewer fresh racks than units: the layers name the brokers free of staying replicas
    by_broker = units > fresh
    led = (units == 1) & gone[:, 0]
    rest.sort(axis=1)
    key = np.concatenate(
        [
            topic[rows, None],
            units[:, None],
            racks,
            np.where(by_broker[:, None], rest, -1),
            led[:, None],
        ],
        axis=1,
    )
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
    out: list[tuple[Group, bool]] = []
    member_rows = rows[order].tolist()
    for c, row in enumerate(uniq.tolist()):
        t, k = row[0], row[1]
        used = {r for r in row[2 : 2 + width] if r >= 0}
        rest_row = [b for b in row[2 + width : 2 + 2 * width] if b >= 0]
        g = Group(names[t], k, rule_layers(rest_row, used, k, rack_brokers))
        g.members = [(names[t], r) for r in member_rows[bounds[c] : bounds[c + 1]]]
        out.append((g, bool(row[2 + 2 * width])))
    return out


Unplaced = list[tuple[Group, dict[int, int]]]


def place(
    dense: I64,
    classes: Sequence[tuple[Group, bool]],
    brokers: DrainBrokers,
    counts: I64,
    topic_base: Mapping[str, Mapping[int, int]],
    bytes_now: I64,
    size: I64,
) -> Unplaced:
    """Every drained replica of the classes' members replaced in its slot, at the exact
    balance (spreadflow.solve_balanced), the largest partitions first in the deal,
    the fewest bytes first into the first drained slot. `counts`: replicas per broker now
    (the drained ones still counted). A class a drained broker led is returned unplaced,
    with its units per broker (see `lead`)."""
    groups = [g for g, _ in classes]
    for g in groups:
        g.members.sort(key=lambda m: (-int(size[m[1]]), m[1]))
    elig = np.flatnonzero(brokers.eligible).tolist()
    base = {b: int(counts[b]) for b in elig}
    per_group = solve_balanced(groups, base, topic_base)
    unplaced: Unplaced = []
    layers = Layers()
    for (g, led), per in zip(classes, per_group, strict=True):
        if led:
            unplaced.append((g, per))
            continue
        for (_, row), dest in zip(g.members, split(g, per, layers), strict=True):
            _put(dense, row, dest, brokers, bytes_now)
    return unplaced


def _put(dense: I64, row: int, dest: Sequence[int], brokers: DrainBrokers, bytes_now: I64) -> None:
    todo = sorted(dest, key=lambda b: (int(bytes_now[b]), int(brokers.rank[b])))
    reps = dense[row]
    slots = np.flatnonzero((reps >= 0) & brokers.drained[np.maximum(reps, 0)])
    dense[row, slots] = todo


def lead(
    dense: I64,
    before: I64,
    rows: I64,
    in_sync: Bools,
    topic: I64,
    names: Sequence[str],
    brokers: DrainBrokers,
    unplaced: Unplaced,
    bytes_now: I64,
) -> None:
    """Preferred leaders of the drained `rows` (drain._drain_leaders on columns): each from
    its in-sync staying replicas and its new ones, spread as evenly as those choices allow
    (spreadflow, started from the current leaders, so a row changes only when that evens
    leaders out), written back as the first replica. `in_sync[row, slot]`: the replica in
    `before` at that slot is in sync; `dense`: the replicas after the moves.

    An unplaced class (from `place`: its units per broker decided, not which row gets which)
    leads from its in-sync staying replicas (each row has them all) or from its new brokers,
    each as many times as the class sends units there; its rows are then handed the brokers
    to match."""
    nb = len(brokers.rack)
    waiting = np.zeros(len(dense), dtype=bool)
    for g, _ in unplaced:
        waiting[[r for _, r in g.members]] = True
    rows = rows[~waiting[rows]]
    sub = dense[rows]
    old = before[rows]
    new = (sub[:, :, None] != old[:, None, :]).all(axis=2) & (sub >= 0)
    # a staying replica is in sync where its slot in `before` says so (moves keep slots)
    stay_sync = (sub == old) & in_sync[rows]
    cand = (new | stay_sync) & (sub >= 0) & brokers.eligible[np.maximum(sub, 0)]
    has = cand.any(axis=1)
    rows, sub, cand = rows[has], sub[has], cand[has]
    cands = np.where(cand, sub, -1)
    cands.sort(axis=1)
    key = np.concatenate([topic[rows, None], cands], axis=1)
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
    member_rows = rows[order].tolist()
    first = dense[:, 0]
    leaders = np.bincount(first[first >= 0], minlength=nb)
    # counted apart: the touched rows' leaders are the flow's choice
    leaders -= np.bincount(sub[:, 0][sub[:, 0] >= 0], minlength=nb)
    tl = topic_matrix(dense, topic, len(names), nb, col=0)
    np.subtract.at(tl, (topic[rows], sub[:, 0]), 1)
    base = {b: int(leaders[b]) for b in np.flatnonzero(brokers.eligible).tolist()}
    counts = leaders.copy()
    tcounts = tl.copy()
    rank = brokers.rank
    groups = []
    for c, row in enumerate(uniq.tolist()):
        t = row[0]
        choices = [b for b in row[1:] if b >= 0]
        g = Group(names[t], 1, [(0, 1, choices)])
        g.members = [(names[t], r) for r in member_rows[bounds[c] : bounds[c + 1]]]
        for _, r in g.members:  # the start: its own, else the least loaded candidate
            now = int(dense[r, 0])
            if now not in choices:
                now = min(choices, key=lambda b: (counts[b], tcounts[t, b], int(rank[b])))
            counts[now] += 1
            tcounts[t, now] += 1
            g.start[now] = g.start.get(now, 0) + 1
        groups.append(g)
    index = {name: i for i, name in enumerate(names)}
    # an unplaced class: its rows lead from their own in-sync staying replicas (one group per
    # set of them) or from the class's new brokers, each as often as the class sends units
    # there (one list, so its groups share a pool bounded so: spreadflow.solve's `shared`)
    shared: dict[int, dict[int, int]] = {}
    flexible: list[tuple[dict[int, int], list[Group]]] = []
    for g, per in unplaced:
        t = index[g.topic]
        fresh = sorted(per)
        shared[id(fresh)] = per
        taken: dict[int, int] = {}
        parts: dict[tuple[int, ...], Group] = {}
        for _, r in g.members:
            reps = before[r]
            keep = (reps >= 0) & ~brokers.drained[np.maximum(reps, 0)] & in_sync[r]
            sync = tuple(sorted(b for b in reps[keep].tolist() if brokers.eligible[b]))
            h = parts.get(sync)
            if h is None:
                layers = [(0, 1, list(sync))] if sync else []
                h = parts[sync] = Group(g.topic, 1, [*layers, (0, 1, fresh)])
            h.members.append((g.topic, r))
            # a greedy start: the least loaded choice with room, on a tie the new replica
            # (it takes the drained leader's place: the least change)
            lead_r = min(
                [*sync, *(b for b in fresh if taken.get(b, 0) < per[b])],
                key=lambda b: (counts[b], tcounts[t, b], b not in per, int(rank[b])),
            )
            if lead_r in per:
                taken[lead_r] = taken.get(lead_r, 0) + 1
            h.start[lead_r] = h.start.get(lead_r, 0) + 1
            counts[lead_r] += 1
            tcounts[t, lead_r] += 1
        flexible.append((per, list(parts.values())))
    extra = [h for _, hs in flexible for h in hs]
    solved = solve(groups + extra, base, TopicCounts(names, tl), shared)
    for g, lead_per in zip(groups, solved, strict=False):
        own = [int(dense[r, 0]) for _, r in g.members]
        for (_, r), lead_r in zip(g.members, kept_leaders(own, lead_per), strict=True):
            if dense[r, 0] != lead_r:
                _reorder(dense, r, lead_r)
    results = iter(solved[len(groups) :])
    for per, hs in flexible:
        chosen = [(h, next(results)) for h in hs]
        # rows led by a new broker b take b; the others the new brokers left over
        left = dict(per)
        for _, lead_per in chosen:
            for b, x in lead_per.items():
                if b in per:
                    left[b] -= x
        spare = iter([b for b in sorted(left) for _ in range(left[b])])
        for h, lead_per in chosen:
            leads = [b for b in sorted(lead_per) for _ in range(lead_per[b])]
            for (_, r), leader in zip(h.members, leads, strict=True):
                _put(dense, r, [leader if leader in per else next(spare)], brokers, bytes_now)
                if dense[r, 0] != leader:
                    _reorder(dense, r, leader)


def _reorder(dense: I64, row: int, leader: int) -> None:
    reps = dense[row]
    rest = reps[(reps != leader) & (reps >= 0)]
    dense[row, 0] = leader
    dense[row, 1 : 1 + len(rest)] = rest


def drain_on_columns(
    snapshot: ClusterSnapshot,
    drained_ids: frozenset[int],
    eligible_ids: Sequence[int],
    topics: Sequence[str] | None,
    options: PlanOptions,
) -> tuple[ColumnRun, PlanReport] | None:
    """drain.drain_plan's default (balanced) drain on the column run: the run, its working
    replicas drained, and the report's drain keys (drain.py adds its finding, the plan and
    the engine). None when the placement would leave a broker under its disk headroom: the
    object drain then steers around the full disks partition by partition, or refuses."""
    from kreplica.planner.brokers.column_run import ColumnRun

    run = ColumnRun.start(snapshot, eligible_ids, options, topics)
    drained = np.zeros(run.nb, dtype=bool)
    drained[run.lookup[np.array(sorted(drained_ids), dtype=np.int64)]] = True
    rows = run.scope_rows()
    on = (run.work >= 0) & drained[np.maximum(run.work, 0)]
    rows = run.in_flight(rows[on[rows].any(axis=1)])
    refuse_on_columns(run, drained, rows)
    brokers = DrainBrokers(run.rack_of, run.rank, run.eligible, drained)
    columns = run.columns
    names = [t.name for t in columns.topics]
    in_sync = _in_sync(run.dense, columns, rows, run.lookup)
    after = run.work.copy()
    classes = drain_classes(after, run.topic_row, rows, names, brokers)
    topic_base = TopicCounts(names, run.topic_replicas)
    unplaced = place(after, classes, brokers, run.replicas, topic_base, run.bytes, run.size)
    lead(after, run.dense, rows, in_sync, run.topic_row, names, brokers, unplaced, run.bytes)
    if run.disk is not None and not _fits(run, rows, after):
        return None
    # the moves and new leaders written at once: the plan reads the working replicas only
    run.work[rows] = after[rows]
    units = on[rows].sum(axis=1)
    raw = columns.size[rows]
    run.bound.added = run.bound.removed = int(units.sum())
    run.bound.bytes = None if bool((raw == NO_SIZE).any()) else int((units * raw).sum())
    now = np.where(columns.leader == NO_LEADER, columns.replicas[:, 0], columns.leader)[rows]
    now_dense = np.where(now >= 0, run.lookup[np.maximum(now, 0)], -1)
    led = int(((now_dense >= 0) & drained[np.maximum(now_dense, 0)]).sum())
    old_first, new_first = run.dense[rows, 0], run.work[rows, 0]
    moved = np.flatnonzero(old_first != new_first)
    ids = run.ids
    changed = {
        f"{names[t]}-{p}": [a, b]
        for t, p, a, b in zip(
            run.topic_row[rows[moved]].tolist(),
            columns.partition[rows[moved]].tolist(),
            ids[old_first[moved]].tolist(),
            ids[new_first[moved]].tolist(),
            strict=True,
        )
    }
    left = (run.work[run.scope_rows()] >= 0) & drained[np.maximum(run.work[run.scope_rows()], 0)]
    extra: PlanReport = {
        **_spreads_without(run, drained),
        "drained_brokers": sorted(drained_ids),
        "keep_rack_share": False,
        "replicas_left_on_drained": int(left.sum()),
        "partitions_led_by_drained": led,
        "preferred_leader_changes": changed,
    }
    return run, extra


def _in_sync(dense: I64, columns: PartitionColumns, rows: I64, lookup: I64) -> Bools:
    """Per (row, slot): the replica there is in sync (an ISR absent, equal or reordered:
    all are); filled for `rows` only."""
    out: Bools = (dense >= 0) & (columns.isr_kind != ISR_OTHER)[:, None]
    for row in rows[columns.isr_kind[rows] == ISR_OTHER].tolist():
        isr = [b for b in columns.isr_other[row] if 0 <= b < len(lookup) - 1]
        members = lookup[np.array(isr, dtype=np.int64)] if isr else np.zeros(0, np.int64)
        out[row] = (dense[row] >= 0) & np.isin(dense[row], members[members >= 0])
    return out


def _spreads_without(run: ColumnRun, drained: Bools) -> PlanReport:
    """drain._spreads_without on columns: replica spreads over the brokers that stay."""
    stay = run.eligible
    scope = run.scope
    topics = np.unique(run.topic_row[scope])
    nt, nb = len(run.columns.topics), run.nb

    def spreads(matrix: I64) -> tuple[dict[str, int], int]:
        block = matrix[scope]
        per = topic_matrix(block, run.topic_row[scope], nt, nb)[:, stay]
        names = [run.columns.topics[t].name for t in topics.tolist()]
        rows = per[topics]
        values = (rows.max(axis=1) - rows.min(axis=1)) if rows.shape[1] else np.zeros(len(names))
        cluster = np.bincount(matrix[matrix >= 0], minlength=nb)[stay]
        total = int(cluster.max() - cluster.min()) if cluster.size else 0
        return dict(zip(names, [int(v) for v in values.tolist()], strict=True)), total

    before, cluster_before = spreads(run.dense)
    after, cluster_after = spreads(run.work)
    return {
        "spread_scope": "brokers not drained",
        "topic_spread_before": before,
        "topic_spread_after": after,
        "cluster_spread_before": cluster_before,
        "cluster_spread_after": cluster_after,
    }


def refuse_on_columns(run: ColumnRun, drained: Bools, rows: I64) -> None:
    """drain._refuse_drain on columns: the same checks, in the same order, the same words."""
    from kreplica.planner.brokers.run import ids_text

    ids = run.ids
    names = [t.name for t in run.columns.topics]

    def key(row: int) -> str:
        return f"{names[int(run.topic_row[row])]}-{int(run.columns.partition[row])}"

    reps = run.work[rows]
    drained_ids = ids[drained].tolist()
    dead = (reps >= 0) & ~run.live[np.maximum(reps, 0)] & ~drained[np.maximum(reps, 0)]
    if bool(dead.any()):
        i = int(np.flatnonzero(dead.any(axis=1))[0])
        raise PlanInfeasible(
            f"{key(int(rows[i]))} also has a replica on dead broker(s) "
            f"{ids_text(ids[reps[i][dead[i]]].tolist())} and Kafka "
            "rejects a plan naming it; drain those too (add them to `brokers`) or bring them "
            "back first"
        )
    rf = (reps >= 0).sum(axis=1)
    n_eligible = int(run.eligible.sum())
    if rows.size and int(rf.max()) > n_eligible:
        worst = int(rows[int(np.argmax(rf))])
        raise PlanInfeasible(
            f"draining broker(s) {ids_text(drained_ids)} leaves {n_eligible} broker(s) to "
            f"place replicas on, but topic {names[int(run.topic_row[worst])]!r} has RF "
            f"{int(rf.max())}; drain fewer brokers, add brokers first, or lower that topic's RF"
        )
    left = np.zeros(len(run.rack_names) + 1, dtype=bool)
    left[np.unique(run.rack_of[run.eligible])] = True
    racks = run.racks(reps)
    now = _distinct(racks)
    kept = np.where(drained[np.maximum(reps, 0)], -1, racks)
    reachable = int(left.sum()) + _distinct(np.where(left[kept], -1, kept))
    short = np.flatnonzero(reachable < now)
    if short.size:
        i = int(short[0])
        real = run.snapshot.racks()
        emptied = sorted(
            {r for b in drained_ids if (r := real.get(b)) is not None}
            - {run.rack_names[r] for r in np.flatnonzero(left).tolist()}
        )
        which = f"empties rack(s) {', '.join(emptied)}" if emptied else "leaves too few racks"
        raise PlanInfeasible(
            f"draining broker(s) {ids_text(drained_ids)} {which}: {key(int(rows[i]))} (RF "
            f"{int(rf[i])}) spans {int(now[i])} racks and only {int(reachable[i])} would be "
            "left for it; keep a broker of that rack, add one there first, or drain fewer "
            "brokers"
        )


def _distinct(racks: I64) -> I64:
    """Distinct values >= 0 per row."""
    ordered = np.sort(racks, axis=1)
    first = ordered >= 0
    first[:, 1:] &= ordered[:, 1:] != ordered[:, :-1]
    out: I64 = first.sum(axis=1)
    return out


def _fits(run: ColumnRun, rows: I64, after: I64) -> bool:
    """Every broker's disk takes what the placement sends it (the bytes measure_disk counts:
    each new replica's copy) and keeps its headroom."""
    assert run.disk is not None
    columns = run.columns
    new = (after[rows] >= 0) & ~(after[rows][:, :, None] == run.dense[rows][:, None, :]).any(axis=2)
    copy = columns.size if columns.copy_size is None else columns.copy_size
    each = np.repeat(np.maximum(copy[rows], 0), new.sum(axis=1))
    incoming = np.bincount(after[rows][new], weights=each, minlength=run.nb)
    return bool((incoming <= run.disk.room).all())
