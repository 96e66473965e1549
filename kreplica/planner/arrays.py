"""The array planner: `balanced` RF changes on a ColumnarSnapshot, with no object per partition.

make_plan sends a request here when `refusal()` finds nothing outside what this planner does
(brokers with racks; RF raised with every new replica on a rack its partition lacks, RF
lowered to 1 or by one replica (shrink_arrays.py); with --replace-dead, a raised partition's
one replica on a dead broker replaced in its slot by a broker on its rack, as
degraded.replace_dead does, the partition's ISR being its live replicas; the default
strategy without --seed, log dirs left to the brokers); anything else goes to the object
planner (plan.py), which keeps every rule for degraded clusters exactly. The disk guard
checks the finished plan (the bytes each broker receives, as disk.finish_plan counts them);
a plan that would leave a broker under its headroom goes to the object planner too, which
steers around the full disks or refuses.

Per topic, in name order, as the object planner goes:

1. Target counts. The topic's replicas per broker before (`base`) and the new replicas
   (`units`) give the lowest spread s and the window [L, L + s] each broker's count must
   meet (balance.py's search: s from the water-filling floor up, L from the highest level
   down), first window the rack rule admits wins.
2. The rack rule over classes, not partitions. Partitions sharing their set of fresh racks
   (racks of eligible brokers their replicas do not use) and their number of units form a
   class (a few dozen at most). Each unit goes to a fresh rack of its own, so a class c of
   n_c partitions sends at most n_c units to each of its fresh racks; the rack totals a
   placement can reach are the bases of the polymatroid f(S) = sum_c min(units_c,
   n_c |fresh_c & S|) over sets S of racks, and a window's rack bounds [A, B] (sums of its
   brokers' bounds) admit one exactly when A(S) <= f(S) and f(all) - f(all - S) <= B(S) for
   every S (a base polyhedron meets a box; Fujishige, Submodular Functions, Thm 3.8). With
   six racks that is 64 sets, checked in one numpy pass.
3. The fill. Rack totals by the polymatroid greedy from A (racks of the least loaded brokers
   first), classes to racks by a small transport (greedy, then augmenting paths), each class's
   units dealt to its partitions round-robin (no partition gets a rack twice), and each rack's
   units to its brokers within their windows, least loaded (cluster replicas) first. A
   broker on a fresh rack never holds the partition already, so no per-partition check is
   left.

A dead replica's replacement is one more unit, of a class whose only fresh rack is the dead
one's, placed with the raise's units (so the topic's spread is the lowest over both; the
object planner places replacements first, one by one, then evens out the raise's); where
another replica of the partition uses that rack, the replacement is picked first, one by
one, as the object planner does.

The result's topic spreads are the lowest any placement under the rack rule reaches (what
balance.py proves for the object planner); the cluster stays even through step 3's order.
The report, fingerprint and plan files are computed from the same arrays (planner/measure.py,
columns.py, serialize.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kreplica.columns import ISR_OTHER, NO_LEADER, PAD, ArrayChanges, PartitionColumns
from kreplica.errors import KreplicaError
from kreplica.model import ClusterSnapshot, Finding, Plan, PlanReport
from kreplica.planner.array_setup import popcount
from kreplica.planner.degraded import dead_broker_finding, lagging_finding
from kreplica.planner.evaluate import spread, spread_floor
from kreplica.planner.measure import DiskOverflow, measure_disk, measure_report
from kreplica.planner.options import PlanOptions, TopicRequest
from kreplica.planner.racks_arrays import Unrepaired, repair
from kreplica.planner.report import imbalance_note
from kreplica.planner.requests import _min_isr_findings, eligible_brokers
from kreplica.planner.shrink_arrays import drop_one

I64 = npt.NDArray[np.int64]
MAX_RACKS = 12  # 4,096 rack sets per feasibility check; more racks go to the object planner


class _Setup:
    """What every topic's step reads: dense broker indexes, racks, eligibility, loads."""

    def __init__(self, snapshot: ClusterSnapshot, columns: PartitionColumns, eligible: list[int]):
        self.columns = columns
        ids = np.array([b.id for b in snapshot.brokers], dtype=np.int64)
        self.ids = ids
        nb = len(ids)
        self.nb = nb
        # ids found by search in a sorted copy: a table indexed by id would be as long as
        # the largest id (gigabytes for an id near 2**31)
        self.id_order = np.argsort(ids, kind="stable")
        self.sorted_ids = ids[self.id_order]
        self.dense = self.to_dense(columns.replicas)
        self.unknown = bool(((columns.replicas != PAD) & (self.dense < 0)).any())
        rack_names = sorted({str(b.rack) for b in snapshot.brokers})
        rank = {r: i for i, r in enumerate(rack_names)}
        self.rack_names = rack_names
        self.rack_of = np.array([rank[str(b.rack)] for b in snapshot.brokers], dtype=np.int64)
        self.rack_ext = np.append(self.rack_of, -1)  # index -1 (no broker): rack -1
        self.eligible = np.zeros(nb, dtype=bool)
        where = {int(b): i for i, b in enumerate(ids.tolist())}
        for b in eligible:
            self.eligible[where[b]] = True
        elig_racks = np.unique(self.rack_of[self.eligible])
        self.elig_rack_mask = int(np.bitwise_or.reduce(1 << elig_racks)) if elig_racks.size else 0
        used = self.dense[self.dense >= 0]
        self.cluster = np.bincount(used, minlength=nb).astype(np.int64)
        self.fresh: I64 | None = None  # per row, set by _prepare when replicas are added
        self.live = np.array([b.alive for b in snapshot.brokers], dtype=bool)
        # the replicas that stay: dense without dead brokers (the replaced ones)
        self.kept = np.where(self.live[np.maximum(self.dense, 0)], self.dense, -1)
        self.dead_slot = np.full(columns.rows, -1, dtype=np.int64)  # slot replaced, per row
        # replaced on a rack another replica of the row uses: picked one by one, first
        self.shared_swap = np.zeros(columns.rows, dtype=bool)
        self.eligible_ids = eligible

    def to_dense(self, broker_ids: npt.NDArray[Any]) -> I64:
        """Broker ids as indexes into the broker table; -1 for PAD and unlisted brokers."""
        ids = np.asarray(broker_ids).astype(np.int64, copy=False)
        if not self.nb:
            return np.full(ids.shape, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.sorted_ids, ids), self.nb - 1)
        found = self.sorted_ids[at] == ids  # PAD (-1) is never an id
        out: I64 = np.where(found, self.id_order[at], -1)
        return out

    def racks(self, dense: I64) -> I64:
        """Rack index per dense broker index (-1 stays -1)."""
        out: I64 = self.rack_ext[dense]
        return out


def refusal(
    snapshot: ClusterSnapshot, requests: Sequence[TopicRequest], options: PlanOptions
) -> str | None:
    """Why the array planner does not take this request (None: it does). The object planner
    then plans it, with every rule; this list is the whole dispatch."""
    return _prepare(snapshot, requests, options)[0]


TAKEN = "an RF change or rack repair the array planner takes (planner/arrays.py)"


def plan_if_taken(
    snapshot: ClusterSnapshot, requests: Sequence[TopicRequest], options: PlanOptions
) -> tuple[Plan | None, str]:
    """The array plan when `refusal` finds nothing, else None, and why (make_plan's
    dispatch). None too when the plan would leave a broker under its disk headroom: the
    object planner then steers around the full disks, or refuses in its own words."""
    why, setup = _prepare(snapshot, requests, options)
    if why is not None or setup is None:
        return None, why or "no request"
    try:
        return plan_arrays(snapshot, requests, options, setup), TAKEN
    except DiskOverflow:
        return None, "the array plan leaves a broker under its disk headroom"
    except Unrepaired:
        return None, "a partition rack repair cannot bring to its target"


def shared_refusal(
    snapshot: ClusterSnapshot,
    columns: PartitionColumns,
    requests: Sequence[TopicRequest],
    options: PlanOptions,
) -> str | None:
    """What every array engine leaves to the object planner (None: nothing here): a seed,
    log dirs, more racks than the rack-set checks take, a topic asked twice or unknown."""
    if options.seed is not None:
        return "a --seed"
    if options.log_dirs != "any":
        return "log dirs named"
    if len({b.rack for b in snapshot.brokers}) > MAX_RACKS:
        return f"more than {MAX_RACKS} racks"
    names = [r.topic for r in requests]
    if len(set(names)) != len(names):
        return "a topic asked twice"
    known = {t.name for t in columns.topics}
    if any(n not in known for n in names):
        return "an unknown topic"
    return None


def setup_of(
    snapshot: ClusterSnapshot, columns: PartitionColumns, options: PlanOptions
) -> tuple[str | None, _Setup | None]:
    """The setup over the eligible brokers, or why there is none for the array engines."""
    try:
        eligible, _why = eligible_brokers(snapshot, options)
    except KreplicaError:
        return "a broker list to refuse", None
    setup = _Setup(snapshot, columns, eligible)
    if setup.unknown:
        return "replicas on brokers the snapshot does not list", None
    return None, setup


def _prepare(
    snapshot: ClusterSnapshot, requests: Sequence[TopicRequest], options: PlanOptions
) -> tuple[str | None, _Setup | None]:
    columns: PartitionColumns | None = getattr(snapshot, "columns", None)
    if columns is None:
        return "the snapshot is not in columns", None
    if options.strategy != "balanced":
        return f"strategy {options.strategy}", None
    if not requests:
        return "no request", None
    if any(not b.alive for b in snapshot.brokers) and not options.replace_dead:
        return "a broker is down", None
    if any(b.rack is None for b in snapshot.brokers):
        return "a broker without a rack", None
    why = shared_refusal(snapshot, columns, requests, options)
    if why is not None:
        return why, None
    index = {t.name: i for i, t in enumerate(columns.topics)}
    for req in requests:
        repair_only = req.fix_racks and req.rf is None and req.partitions is None
        if not repair_only and (req.rf is None or req.partitions is not None or req.fix_racks):
            return "not an RF change alone, nor rack repair alone", None
        if req.rf is not None and req.rf < 1:
            return "an invalid RF", None
    why, setup = setup_of(snapshot, columns, options)
    if setup is None:
        return why, None
    eligible = setup.eligible_ids
    target = np.full(columns.rows, -1, dtype=np.int64)  # the RF asked per row (-1: none)
    for req in requests:
        i = index[req.topic]
        lo, hi = int(columns.start[i]), int(columns.start[i + 1])
        target[lo:hi] = columns.rf[lo:hi] if req.rf is None else req.rf  # repair: RF kept
    asked = target >= 0
    rf = columns.rf
    lowered = asked & (rf > target)
    if bool(lowered.any()):
        to_one = lowered & (target == 1)
        by_one = lowered & (target > 1)
        if bool((rf[by_one] - target[by_one] != 1).any()):
            return "RF lowered by more than one replica, to more than 1", None
        for req in requests if not options.force else ():
            i = index[req.topic]
            at_min = (req.rf or 0) <= columns.topics[i].min_insync_replicas
            if at_min and bool(lowered[int(columns.start[i]) : int(columns.start[i + 1])].any()):
                return "RF lowered to min.insync.replicas or below without --force", None
        leader = columns.leader[to_one]
        if bool(((leader != NO_LEADER) & (leader != columns.replicas[to_one, 0])).any()):
            return "RF lowered where the leader is not the first replica", None
        leader = columns.leader[by_one]
        leads = (columns.replicas[by_one] == leader[:, None]).any(axis=1)
        if bool(((leader != NO_LEADER) & ~leads).any()):
            return "RF lowered where the leader is offline or not a replica", None
    dead = (setup.dense >= 0) & (setup.kept < 0)
    if any(r.fix_racks for r in requests) and bool(dead.any()):
        return "rack repair with a broker down", None
    if bool((asked & (rf > target) & dead.any(axis=1)).any()):
        return "RF lowered with a replica on a dead broker", None
    other = np.flatnonzero(asked & (columns.isr_kind == ISR_OTHER))
    if other.size:
        live_ids = setup.ids[setup.live].tolist()
        if not _isr_is_live_replicas(columns, other, set(live_ids)):
            return "replicas out of sync", None
    grows = asked & (rf < target)
    topic_row = columns.topic_of_rows()
    if bool(np.intersect1d(topic_row[grows], topic_row[lowered & (target > 1)]).size):
        return "RF lowered and raised in one topic", None
    if bool(grows.any()):
        if int(target[grows].max()) > len(eligible):
            return "too few eligible brokers", None
        setup.fresh = _fresh_masks(setup, setup.kept)
        why = _replacements(setup, grows & dead.any(axis=1), dead)
        if why is not None:
            return why, None
        if bool((popcount(setup.fresh[grows]) < (target - rf)[grows]).any()):
            return "more new replicas than fresh racks", None
    setup.eligible_ids = eligible
    return None, setup


def _isr_is_live_replicas(columns: PartitionColumns, rows: I64, live: set[int]) -> bool:
    """Whether each row's ISR is its replicas on live brokers (out of sync only where a
    broker is down, which the object planner reports as under-replicated and replaces)."""
    for row, rf in zip(rows.tolist(), columns.rf[rows].tolist(), strict=True):
        isr = columns.isr_other.get(row, ())
        reps = columns.replicas[row, :rf].tolist()
        if set(isr) != {b for b in reps if b in live}:
            return False
    return True


def _replacements(
    setup: _Setup, rows: npt.NDArray[np.bool_], dead: npt.NDArray[np.bool_]
) -> str | None:
    """Set setup.dead_slot for rows raised with a replica on a dead broker (replace_dead
    puts a live broker on the dead one's rack in its place), and take the dead rack from
    their fresh racks; or why the object planner keeps them."""
    if not bool(rows.any()):
        return None
    assert setup.fresh is not None
    where = np.flatnonzero(rows)
    if bool((dead[where].sum(axis=1) > 1).any()):
        return "two dead replicas in a partition"
    slot = np.argmax(dead[where], axis=1)
    rack = setup.rack_of[setup.dense[where, slot]]
    bit = np.left_shift(np.int64(1), rack)
    if bool(((np.int64(setup.elig_rack_mask) & bit) == 0).any()):
        return "a dead replica on a rack with no eligible broker"
    kept = setup.kept[where]
    on_rack = (kept >= 0) & (setup.rack_of[np.maximum(kept, 0)] == rack[:, None])
    taken = (on_rack & setup.eligible[np.maximum(kept, 0)]).sum(axis=1)
    per_rack = np.bincount(setup.rack_of[setup.eligible], minlength=len(setup.rack_names))
    if bool((per_rack[rack] <= taken).any()):
        return "a dead replica on a rack with no eligible broker left for it"
    setup.dead_slot[where] = slot
    shared = (setup.fresh[where] & bit) == 0  # another replica uses the dead one's rack
    setup.shared_swap[where] = shared
    setup.fresh[where] &= ~bit
    return None


def _fresh_masks(setup: _Setup, dense: I64) -> I64:
    """Per row: the eligible racks its replicas do not use, as a bit mask."""
    racks = np.where(dense >= 0, setup.rack_of[np.maximum(dense, 0)], -1)
    bits = np.where(racks >= 0, np.left_shift(1, np.maximum(racks, 0)), 0)
    used = np.bitwise_or.reduce(bits, axis=1) if bits.shape[1] else np.zeros(len(bits), np.int64)
    return np.int64(setup.elig_rack_mask) & ~used


def _water_level(counts: I64, added: int) -> int:
    """evaluate.water_level on a sorted array."""
    n = len(counts)
    levels = (added + np.cumsum(counts)) // np.arange(1, n + 1)
    nxt = np.append(counts[1:], np.iinfo(np.int64).max)
    k = int(np.argmax((levels < nxt) | (np.arange(n) == n - 1)))
    return int(levels[k])


def _floor(base_e: I64, fixed: I64, added: int) -> int:
    counts = np.sort(base_e)
    low = _water_level(counts, added)
    extra = added - int(np.maximum(0, low - counts).sum())
    rest: list[int] = fixed.tolist()
    top = max(int(counts[-1]), low + (1 if extra else 0), *rest)
    bottom = min(low, *rest) if rest else low
    return top - bottom


class _Topic:
    """One topic's step (module doc, 1-3): `base` its replicas per broker that stay where
    they are, and the units to place as items (row, first slot, fresh racks as bits, count);
    a unit of an item goes to one of its fresh racks, no two of an item to one rack."""

    def __init__(
        self,
        setup: _Setup,
        base: I64,
        item_row: I64,
        item_slot: I64,
        item_fresh: I64,
        item_units: I64,
    ) -> None:
        self.s = setup
        self.base = base
        self.item_row = item_row
        self.item_slot = item_slot
        self.item_fresh = item_fresh
        self.item_units = item_units
        self.added = int(item_units.sum())

    @classmethod
    def raising(cls, setup: _Setup, lo: int, hi: int, target: int) -> _Topic:
        """The RF raise of rows lo:hi to `target`: the units after each row's replicas; a
        dead replica's, in its slot on its rack."""
        dense = setup.kept[lo:hi]
        fresh = setup.fresh[lo:hi] if setup.fresh is not None else _fresh_masks(setup, dense)
        rf = setup.columns.rf[lo:hi]
        units = (target - rf).astype(np.int64)
        used = dense[dense >= 0]
        base = np.bincount(used, minlength=setup.nb).astype(np.int64)
        grows = np.flatnonzero(units > 0)
        dead_slot = setup.dead_slot[lo:hi]
        swaps = np.flatnonzero((dead_slot >= 0) & ~setup.shared_swap[lo:hi])
        dead_rack = setup.rack_of[np.maximum(setup.dense[lo:hi][swaps, dead_slot[swaps]], 0)]
        return cls(
            setup,
            base,
            np.concatenate([grows, swaps]),
            np.concatenate([rf[grows], dead_slot[swaps]]),
            np.concatenate([fresh[grows], np.left_shift(np.int64(1), dead_rack)]),
            np.concatenate([units[grows], np.ones(len(swaps), dtype=np.int64)]),
        )

    def plan(self) -> tuple[I64, I64, I64, I64]:
        """(row, slot, broker index, broker count delta) of every new replica."""
        s = self.s
        added = self.added
        elig = s.eligible
        scope = elig | (self.base > 0)
        base_e = self.base[elig]
        fixed = self.base[scope & ~elig]
        key = self.item_fresh * 64 + self.item_units
        classes, inverse, n_c = np.unique(key, return_inverse=True, return_counts=True)
        c_fresh = classes // 64
        c_units = classes % 64
        supply = n_c * c_units
        nr = len(s.rack_names)
        sets = np.arange(1 << nr, dtype=np.int64)
        member = ((sets[:, None] >> np.arange(nr)) & 1).astype(np.int64)  # (sets, racks)
        hits = popcount(sets[:, None] & c_fresh[None, :])
        f = np.minimum(supply[None, :], n_c[None, :] * hits).sum(axis=1)
        full = (1 << nr) - 1
        forced = f[full] - f[full ^ sets]  # units any placement puts into S
        rack_e = s.rack_of[elig]
        top_all = int(self.base[scope].max()) if scope.any() else 0
        n_e = len(base_e)
        floor = _floor(base_e, fixed, added)
        water = _water_level(np.sort(base_e), added)
        total = int(base_e.sum()) + added
        for spread_s in range(floor, top_all + added + 2):
            low_l = max(top_all - spread_s, -(-total // n_e) - spread_s, 0)
            high_l = min([*fixed.tolist(), water])
            for level in range(high_l, low_l - 1, -1):
                if fixed.size and int(fixed.max()) > level + spread_s:
                    continue
                lo_b = np.maximum(base_e, level) - base_e
                hi_b = level + spread_s - base_e
                if not int(lo_b.sum()) <= added <= int(hi_b.sum()):
                    continue
                a = np.bincount(rack_e, weights=lo_b, minlength=nr).astype(np.int64)
                b = np.bincount(rack_e, weights=hi_b, minlength=nr).astype(np.int64)
                if bool((member @ a > f).any()) or bool((forced > member @ b).any()):
                    continue
                return self._fill(lo_b, hi_b, a, b, f, member, inverse, n_c, c_fresh, c_units)
        raise AssertionError("no window admits the units")  # s = max + added always does

    def _fill(
        self,
        lo_b: I64,
        hi_b: I64,
        a: I64,
        b: I64,
        f: I64,
        member: I64,
        inverse: I64,
        n_c: I64,
        c_fresh: I64,
        c_units: I64,
    ) -> tuple[I64, I64, I64, I64]:
        s = self.s
        nr = len(s.rack_names)
        elig_idx = np.flatnonzero(s.eligible)
        rack_e = s.rack_of[elig_idx]
        load = s.cluster[elig_idx]
        count, x = self._extras(lo_b, hi_b, f, member, elig_idx, rack_e, load)
        if count is None:
            x = self._rack_totals(a, b, f, member, rack_e, load)
        y = _transport(n_c * c_units, n_c, c_fresh, x)
        # each class's units, rack by rack, dealt to its partitions in turn
        order = np.argsort(inverse, kind="stable")
        starts = np.concatenate([[0], np.cumsum(n_c)])
        rows_l: list[I64] = []
        slots_l: list[I64] = []
        racks_l: list[I64] = []
        for c in range(len(n_c)):
            members = order[starts[c] : starts[c + 1]]  # items
            seq = np.repeat(np.arange(nr), y[c])
            i = np.arange(len(seq))
            item = members[i % len(members)]
            rows_l.append(self.item_row[item])
            slots_l.append(self.item_slot[item] + i // len(members))
            racks_l.append(seq)
        rows = np.concatenate(rows_l)
        slots = np.concatenate(slots_l)
        racks = np.concatenate(racks_l)
        if count is None:  # brokers per rack within their windows: floors, then least loaded
            count = lo_b.copy()
            pref = np.lexsort((elig_idx, load + lo_b, rack_e))  # by rack, then load
            room = (hi_b - lo_b)[pref]
            rack_sorted = rack_e[pref]
            extra = (x - a)[rack_sorted]
            before = np.concatenate([[0], np.cumsum(room)[:-1]])
            rack_first = np.searchsorted(rack_sorted, rack_sorted)
            used_before = before - before[rack_first]
            count[pref] += np.clip(extra - used_before, 0, room)
        pref = np.lexsort((elig_idx, rack_e))
        brokers = np.repeat(elig_idx[pref], count[pref])
        unit_order = np.lexsort((rows, racks))
        broker_of = np.empty(len(rows), dtype=np.int64)
        broker_of[unit_order] = brokers
        delta = np.zeros(s.nb, dtype=np.int64)
        delta[elig_idx] = count
        return rows, slots, broker_of, delta

    def _extras(
        self, lo_b: I64, hi_b: I64, f: I64, member: I64, elig_idx: I64, rack_e: I64, load: I64
    ) -> tuple[I64 | None, I64]:
        """Units per eligible broker when the units above the floors go where the greedy picks
        would put them one by one (fewest topic replicas, then fewest in the cluster, then
        broker order), if the rack rule admits those rack totals; else (None, -)."""
        nr = len(self.s.rack_names)
        room = hi_b - lo_b
        extra = self.added - int(lo_b.sum())
        owners = np.repeat(np.arange(len(elig_idx)), room)
        step = np.arange(len(owners)) - np.repeat(np.cumsum(room) - room, room)
        topic_key = (self.base[elig_idx] + lo_b)[owners] + step
        cluster_key = (load + lo_b)[owners] + step
        pick = np.lexsort((elig_idx[owners], cluster_key, topic_key))[:extra]
        count = lo_b + np.bincount(owners[pick], minlength=len(elig_idx))
        x = np.bincount(rack_e, weights=count, minlength=nr).astype(np.int64)
        if bool((member @ x > f).any()):
            return None, x
        return count, x

    def _rack_totals(self, a: I64, b: I64, f: I64, member: I64, rack_e: I64, load: I64) -> I64:
        """Rack totals by the polymatroid greedy from the lower bounds, least loaded racks
        first (when the greedy picks' totals break the rack rule)."""
        nr = len(self.s.rack_names)
        x = a.copy()
        left = self.added - int(x.sum())
        mean = np.bincount(rack_e, weights=load, minlength=nr) / np.maximum(
            np.bincount(rack_e, minlength=nr), 1
        )
        for r in np.lexsort((np.arange(nr), mean)).tolist():
            if not left:
                break
            has = member[:, r] == 1
            slack = int((f[has] - member[has] @ x).min())
            add = min(left, int(b[r] - x[r]), slack)
            if add > 0:
                x[r] += add
                left -= add
        assert left == 0, "rack totals short of the units"
        return x


def _transport(supply: I64, cap: I64, fresh: I64, demand: I64) -> I64:
    """y[c, r] <= cap[c] on fresh racks, rows summing to supply, columns to demand (one
    exists: the rack totals are a base of the class polymatroid). Greedy, most constrained
    classes first and fullest racks first, then augmenting paths for what is left."""
    nc, nr = len(supply), len(demand)
    y = [[0] * nr for _ in range(nc)]
    need = supply.tolist()
    room = demand.tolist()
    caps = cap.tolist()
    allowed = [[bool((int(m) >> r) & 1) for r in range(nr)] for m in fresh.tolist()]
    for c in sorted(range(nc), key=lambda c: (sum(allowed[c]), c)):
        for r in sorted(range(nr), key=lambda r: (-room[r], r)):
            if need[c] and allowed[c][r]:
                take = min(caps[c] - y[c][r], room[r], need[c])
                if take > 0:
                    y[c][r] += take
                    room[r] -= take
                    need[c] -= take
    while any(need):
        c0 = next(c for c in range(nc) if need[c])
        path = _augment(y, caps, allowed, room, c0)
        if path is None:
            raise AssertionError("no transport for feasible rack totals")
        amount = min(need[c0], room[path[-1][1]])
        for c, r, sign in path:
            amount = min(amount, caps[c] - y[c][r] if sign > 0 else y[c][r])
        for c, r, sign in path:
            y[c][r] += sign * amount
        need[c0] -= amount
        room[path[-1][1]] -= amount
    return np.array(y, dtype=np.int64).reshape(nc, nr)


def _augment(
    y: list[list[int]], caps: list[int], allowed: list[list[bool]], room: list[int], c0: int
) -> list[tuple[int, int, int]] | None:
    """One unit from class c0 to a rack with room: class -> rack where y < cap (allowed),
    rack -> class where y > 0 (that class moves a unit elsewhere)."""
    nc, nr = len(y), len(room)
    parent: dict[tuple[str, int], tuple[str, int] | None] = {("c", c0): None}
    queue = [("c", c0)]
    while queue:
        kind, i = queue.pop(0)
        if kind == "c":
            for r in range(nr):
                if allowed[i][r] and y[i][r] < caps[i] and ("r", r) not in parent:
                    parent[("r", r)] = (kind, i)
                    if room[r] > 0:
                        return _unwind(parent, r)
                    queue.append(("r", r))
        else:
            for c in range(nc):
                if y[c][i] > 0 and ("c", c) not in parent:
                    parent[("c", c)] = (kind, i)
                    queue.append(("c", c))
    return None


def _unwind(
    parent: dict[tuple[str, int], tuple[str, int] | None], rack: int
) -> list[tuple[int, int, int]]:
    steps: list[tuple[int, int, int]] = []
    node: tuple[str, int] | None = ("r", rack)
    while node is not None:
        prev = parent[node]
        if prev is None:
            break
        if node[0] == "r":
            steps.append((prev[1], node[1], +1))
        else:
            steps.append((node[1], prev[1], -1))
        node = prev
    steps.reverse()
    return steps


def plan_arrays(
    snapshot: ClusterSnapshot,
    requests: Sequence[TopicRequest],
    options: PlanOptions,
    setup: _Setup | None = None,
) -> Plan:
    """The plan of a request `refusal` accepted (see the module doc)."""
    if setup is None:
        why, setup = _prepare(snapshot, requests, options)
        if why is not None or setup is None:
            raise ValueError(f"not an array plan: {why}")
    columns = setup.columns
    eligible = setup.eligible_ids
    index = {t.name: i for i, t in enumerate(columns.topics)}
    findings: list[Finding] = []
    n = columns.rows
    width = max(int(columns.replicas.shape[1]), max(int(r.rf or 0) for r in requests))
    after = np.full((n, width), -1, dtype=np.int64)
    after[:, : columns.replicas.shape[1]] = setup.dense
    changed = np.zeros(n, dtype=bool)
    requested = np.zeros(n, dtype=bool)
    rf_after = columns.rf.copy()
    ordered = sorted(requests, key=lambda r: r.topic)
    cluster_bytes: I64 | None = None
    for req in ordered:
        i = index[req.topic]
        lo, hi = int(columns.start[i]), int(columns.start[i + 1])
        lowering = req.rf is not None and bool((columns.rf[lo:hi] > req.rf).any())
        findings.extend(_min_isr_findings(columns.topics[i], req, options, lowering))
    findings.extend(_dead_findings(setup, ordered, index))
    for req in ordered:
        i = index[req.topic]
        lo, hi = int(columns.start[i]), int(columns.start[i + 1])
        requested[lo:hi] = True
        if req.rf is None:  # rack repair alone (racks_arrays.py)
            if cluster_bytes is None:
                cluster_bytes = _cluster_bytes(setup)
            changed[lo + repair(setup, lo, hi, after, cluster_bytes)] = True
            continue
        shrunk = np.flatnonzero(columns.rf[lo:hi] > req.rf)
        if req.rf > 1 and shrunk.size:  # one replica fewer: shrink_arrays picks which
            slot = drop_one(setup, lo, hi, shrunk)
            keep = np.arange(width)[None, :] != slot[:, None]
            kept = after[lo + shrunk][keep].reshape(len(shrunk), width - 1)
            after[lo + shrunk, : width - 1] = kept
            after[lo + shrunk, width - 1] = -1
            gone = setup.dense[lo + shrunk, slot]
            setup.cluster -= np.bincount(gone, minlength=setup.nb)
            changed[lo + shrunk] = True
            rf_after[lo + shrunk] = req.rf
            continue  # _prepare refuses a topic lowered and raised at once
        if req.rf == 1:  # RF -> 1: each partition keeps its leader, its first replica
            lowered = columns.rf[lo:hi] > 1
            after[lo:hi, 1:][lowered] = -1
            changed[lo:hi] |= lowered
            rf_after[lo:hi] = np.minimum(rf_after[lo:hi], 1)
            setup.cluster -= np.bincount(
                setup.dense[lo:hi, 1:][lowered][setup.dense[lo:hi, 1:][lowered] >= 0],
                minlength=setup.nb,
            )
            continue
        _swap_on_shared_racks(setup, lo, hi, after)
        topic = _Topic.raising(setup, lo, hi, req.rf)
        if not topic.added:
            continue
        rows, slots, brokers, delta = topic.plan()
        after[lo + rows, slots] = brokers
        changed[lo + topic.item_row] = True
        rf_after[lo:hi] = np.maximum(rf_after[lo:hi], req.rf)
        setup.cluster += delta
    _leader_first(setup, after)
    after_ids = np.where(after >= 0, setup.ids[np.maximum(after, 0)], PAD).astype(np.int32)
    rows = np.flatnonzero(changed)
    changes = ArrayChanges(columns, rows, after_ids[rows], rf_after[rows])
    report = measure_report(
        snapshot, options, eligible, [r.topic for r in requests], setup, changes
    )
    report["disk"] = measure_disk(snapshot, options, setup, changes)
    findings.extend(_imbalance(report, setup, columns, index, changes))
    return Plan(
        cluster_id=snapshot.cluster_id,
        snapshot_fingerprint=snapshot.fingerprint(),
        strategy=options.strategy,
        changes=changes,
        report=report,
        findings=tuple(findings),
    )


def _swap_on_shared_racks(setup: _Setup, lo: int, hi: int, after: I64) -> None:
    """degraded.replace_dead for rows whose dead replica's rack another replica uses (the
    rack rule then has nothing to add): in partition order, the eligible broker on that rack
    outside the row with the fewest replicas of the topic, then of the cluster, then the
    lowest id. Placed before the topic's other units, which then count them."""
    rows = (lo + np.flatnonzero(setup.shared_swap[lo:hi])).tolist()
    if not rows:
        return
    block = setup.kept[lo:hi]
    topic = np.bincount(block[block >= 0], minlength=setup.nb).astype(np.int64)
    for row in rows:
        slot = int(setup.dead_slot[row])
        rack = setup.rack_of[setup.dense[row, slot]]
        pool = setup.eligible & (setup.rack_of == rack)
        pool[setup.kept[row][setup.kept[row] >= 0]] = False
        options = np.flatnonzero(pool)
        best = options[np.lexsort((setup.ids[options], setup.cluster[options], topic[options]))[0]]
        after[row, slot] = best
        setup.kept[row, slot] = best
        topic[best] += 1
        setup.cluster[best] += 1


def _cluster_bytes(setup: _Setup) -> I64:
    """PlanContext.cluster_bytes as its load key reads it: bytes per broker, zeros when no
    partition has a size."""
    sizes = np.maximum(setup.columns.size, 0)
    if not bool(sizes.any()):
        return np.zeros(setup.nb, dtype=np.int64)
    valid = setup.dense >= 0
    each = np.broadcast_to(sizes[:, None], setup.dense.shape)[valid]
    out: I64 = np.bincount(setup.dense[valid], weights=each, minlength=setup.nb).astype(np.int64)
    return out


def _leader_first(setup: _Setup, after: I64) -> None:
    """A dead preferred leader's place goes to the leader now (degraded.replace_dead): its
    replacement, not in sync yet, must not become the preferred leader."""
    rows = np.flatnonzero(setup.dead_slot == 0)
    if not rows.size:
        return
    leader = setup.columns.leader[rows]
    lead = setup.to_dense(np.where(leader >= 0, leader, -1))
    for row, b in zip(rows.tolist(), lead.tolist(), strict=True):
        reps = after[row]
        if b < 0 or not setup.live[b] or b not in reps.tolist():
            continue
        rest = reps[reps != b]
        after[row, 0] = b
        after[row, 1 : 1 + len(rest)] = rest


def _dead_findings(
    setup: _Setup, requests: Sequence[TopicRequest], index: dict[str, int]
) -> list[Finding]:
    """plan._degraded's and _state_findings' words for the requested topics on dead brokers:
    one per dead broker, then one per topic with partitions on them."""
    if bool(setup.live.all()):
        return []
    columns = setup.columns
    spans = [
        (int(columns.start[index[r.topic]]), int(columns.start[index[r.topic] + 1]))
        for r in requests
    ]
    on_dead = (setup.dense >= 0) & (setup.kept < 0)
    held = np.zeros(setup.nb, dtype=np.int64)
    for lo, hi in spans:
        held += np.bincount(setup.dense[lo:hi][on_dead[lo:hi]], minlength=setup.nb)
    ids = setup.ids.tolist()
    out = [
        dead_broker_finding(ids[b], setup.rack_names[int(setup.rack_of[b])], int(held[b]))
        for b in sorted(np.flatnonzero(held).tolist(), key=lambda b: ids[b])
    ]
    for req, (lo, hi) in zip(requests, spans, strict=True):
        lagging = np.flatnonzero(on_dead[lo:hi].any(axis=1))
        if lagging.size:
            pids = columns.partition[lo + lagging].tolist()
            lowers = bool((columns.rf[lo:hi] > (req.rf or 0)).any())
            out.append(lagging_finding(req.topic, pids, lowers))
    return out


def _imbalance(
    report: PlanReport,
    setup: _Setup,
    columns: PartitionColumns,
    index: dict[str, int],
    changes: ArrayChanges,
) -> list[Finding]:
    """plan._imbalance_findings for an array plan: a topic that only gets replicas has its
    spread proven lowest under the rack rule (step 1 of the module doc); one lowered to
    RF 1 kept the only replicas it could (its leaders)."""
    spreads = report["topic_spread_after"]
    uneven = sorted((value, topic) for topic, value in spreads.items() if value > 1)
    if not uneven:
        return []
    ids = setup.ids.tolist()
    all_forced = True
    # lowered, or a replica moved by rack repair: what stays is a choice, not forced
    lowered = (changes.rf < columns.rf[changes.rows]) | (changes.rf == columns.rf[changes.rows])
    lowered_topics = {columns.topics[t].name for t in changes.topic_index[lowered].tolist()}
    replaced = setup.dead_slot[changes.rows] >= 0
    replaced_topics = {columns.topics[t].name for t in changes.topic_index[replaced].tolist()}
    for _, name in uneven:
        if name in lowered_topics or name in replaced_topics:  # replicas removed: not forced
            all_forced = False
            continue
        i = index[name]
        lo, hi = int(columns.start[i]), int(columns.start[i + 1])
        block = setup.dense[lo:hi]
        tb = np.bincount(block[block >= 0], minlength=setup.nb)
        mine = np.isin(changes.rows, np.arange(lo, hi))
        new = changes.after[mine]
        rf0 = columns.rf[changes.rows[mine]]
        cols = np.arange(new.shape[1])[None, :]
        added_ids = new[(cols >= rf0[:, None]) & (new >= 0)].tolist()
        elig = {b for b, e in zip(ids, setup.eligible.tolist(), strict=True) if e}
        counts = {b: n for b, n in zip(ids, tb.tolist(), strict=True) if n or b in elig}
        eligible_counts = {b: n for b, n in counts.items() if b in elig}
        fixed = {b: n for b, n in counts.items() if b not in elig}
        after = dict(counts)
        for b in added_ids:
            after[b] = after.get(b, 0) + 1
        if spread(after) > spread_floor(fixed, eligible_counts, len(added_ids)):
            all_forced = False
    if any(name in lowered_topics for _, name in uneven):
        why = (
            "this is the most even of the balanced, kafka and append placements for these "
            "moves; no existing replica moves to even them out"
        )
    elif all_forced:
        why = (
            "with every existing replica where it is, no placement of the new ones does "
            "better; only moving existing replicas would, and this plan moves none"
        )
    else:
        why = (
            "with every existing replica where it is, one replica of a partition per broker "
            "and new replicas on racks their partition lacks, no placement of the new ones "
            "does better; only moving existing replicas would, and this plan moves none"
        )
    return [imbalance_note(uneven, why)]
