"""The broker operations' planning run on columns: Run (run.py) with arrays instead of one
object per partition, for a ColumnarSnapshot (kreplica/columns.py).

An operation (add-brokers, rebalance, drain) uses it so:

    why = column_refusal(snapshot, options)     # None: the column run takes this snapshot
    run = ColumnRun.start(snapshot, eligible_ids, options, topics)
    rows = run.in_flight(run.scope_rows())       # refused unless skip_in_flight
    rows = rows[run.movable(rows)]               # no replica on a dead broker
    ...  choose moves with numpy, then, for distinct rows:
    run.move(rows, slots, new)                   # work, loads and disk follow
    run.bound = LowerBound(...)                  # the operation's lower bound
    plan = run.plan("add-brokers", extra)        # Run.plan's report keys and texts

Brokers are dense indexes: the position in snapshot.brokers (`ids[i]` is the id,
`dense_of(ids)` the way back). Per broker: `rack_of` (rack_key's racks: a rackless broker
is a rack of its own), `live`, `eligible`, `excluded` (options.exclude_brokers), `rank`
(PlanContext.rank: the tie-break order, shuffled by options.seed). Per row (partition,
the columns' order): `dense` the replicas before, `work` the working copy (-1 pads),
`size` (0 when unknown), `topic_row`. Loads, kept current by `move`: `replicas`,
`leaders` (preferred, the first replica) and `bytes` per broker, `topic_replicas` per
(topic, broker).

The disk guard (`disk`, None when no broker reports figures) is DiskGuard's, vectorised:
`fits` refuses a replica that would leave its broker under the headroom and remembers the
first refusal; `plan` refuses the whole plan when it moves nothing else, and warns
otherwise, in Run._disk_findings' words. The finished plan is measured by
planner/measure.py, as the array planner's is.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from kreplica.columns import PAD, ArrayChanges, PartitionColumns
from kreplica.errors import PlanInfeasible
from kreplica.model import ClusterSnapshot, Finding, Partition, Plan, PlanReport
from kreplica.planner.degraded import refuse_in_flight
from kreplica.planner.disk import DiskGuard
from kreplica.planner.evaluate import rack_key
from kreplica.planner.measure import DiskOverflow, measure_disk, measure_report
from kreplica.planner.options import PlanOptions
from kreplica.planner.report import LowerBound

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
_UNGUARDED = np.iinfo(np.int64).max // 4  # room of a broker the guard does not check
_MAX_ID = 10_000_000  # broker id -> index: an int64 array of the largest id's length


def column_refusal(snapshot: ClusterSnapshot, options: PlanOptions) -> str | None:
    """Why the column run does not take this snapshot (None: it does); the object run
    (run.py) then plans it."""
    columns: PartitionColumns | None = getattr(snapshot, "columns", None)
    if columns is None:
        return "the snapshot is not in columns"
    if options.log_dirs != "any":
        return "log dirs `balanced` names a dir per new replica (the object run does)"
    listed = np.array(snapshot.broker_ids() or [0], dtype=np.int64)
    if int(listed.max()) > _MAX_ID:
        return f"a broker id above {_MAX_ID:,} (the column run looks brokers up in one array)"
    named = np.unique(columns.replicas[columns.replicas != PAD])
    if not bool(np.isin(named, listed).all()):
        return "a replica names a broker the snapshot does not list"
    return None


class ColumnDisk:
    """DiskGuard (planner/disk.py, log dirs `any`) over dense broker indexes."""

    def __init__(self, guard: DiskGuard, ids: Sequence[int]) -> None:
        self.guard = guard
        self.ids = list(ids)
        room = [guard.room(b) for b in self.ids]
        self.room: I64 = np.array([_UNGUARDED if r is None else r for r in room], dtype=np.int64)
        self.first_blocked: tuple[int, int] | None = None  # (dense broker, row)
        self.blocked: set[int] = set()  # dense brokers a refused move went to

    def fits_one(self, broker: int, size: int, row: int) -> bool:
        """fits for one replica (a greedy's step, without the arrays' call overhead)."""
        if size <= self.room[broker]:
            return True
        if self.first_blocked is None:
            self.first_blocked = (broker, row)
        self.blocked.add(broker)
        return False

    def fits(self, brokers: I64, sizes: I64, rows: I64) -> Mask:
        """Each replica (of `sizes` bytes, for `rows`) still fits on its broker; refusals
        are remembered for the plan's finding."""
        ok: Mask = sizes <= self.room[brokers]
        if not bool(ok.all()):
            bad = np.flatnonzero(~ok)
            if self.first_blocked is None:
                self.first_blocked = (int(brokers[bad[0]]), int(rows[bad[0]]))
            self.blocked.update(np.unique(brokers[bad]).tolist())
        return ok

    def take(self, brokers: I64, sizes: I64) -> None:
        np.subtract.at(self.room, brokers, sizes)

    def refusal(self, broker: int, size: int) -> str:
        """DiskGuard.refusal's line, with what this run already sent there."""
        b = self.ids[broker]
        room = self.guard.room(b)
        if room is not None:
            self.guard.incoming[b] = room - int(self.room[broker])
        return self.guard.refusal(b, size)


def _rack_keys(snapshot: ClusterSnapshot) -> tuple[list[str], I64]:
    racks = snapshot.racks()
    keys = [rack_key(racks, b.id) for b in snapshot.brokers]
    names = sorted(set(keys))
    index = {r: i for i, r in enumerate(names)}
    return names, np.array([index[k] for k in keys], dtype=np.int64)


@dataclass
class ColumnRun:
    """One planning run of a broker operation on columns (see the module doc)."""

    snapshot: ClusterSnapshot
    columns: PartitionColumns
    options: PlanOptions
    ids: I64
    lookup: I64  # broker id -> dense index (-1: not listed)
    rack_names: list[str]
    rack_of: I64
    live: Mask
    eligible: Mask
    excluded: Mask
    rank: I64
    dense: I64  # replicas before (rows x width), dense indexes, -1 pads
    work: I64  # the working replicas
    size: I64  # bytes per row, 0 unknown
    topic_row: I64
    scope: Mask  # rows of the topics in scope
    topic_names: list[str]  # the topics in scope, sorted
    replicas: I64
    leaders: I64
    bytes: I64
    topic_replicas: I64  # (topics, brokers)
    disk: ColumnDisk | None
    findings: list[Finding] = field(default_factory=list)
    bound: LowerBound = field(default_factory=LowerBound)
    skipped: Mask | None = None  # rows left out as in flight
    _rack_list: list[int] | None = field(default=None, repr=False)

    @property
    def nb(self) -> int:
        return len(self.ids)

    @property
    def rack_list(self) -> list[int]:
        """rack_of as a list (a greedy's scalar reads)."""
        cached = self._rack_list
        if cached is None:
            cached = self._rack_list = self.rack_of.tolist()
        return cached

    @property
    def eligible_ids(self) -> list[int]:
        return sorted(self.ids[self.eligible].tolist())

    @classmethod
    def start(
        cls,
        snapshot: ClusterSnapshot,
        eligible: Sequence[int],
        options: PlanOptions,
        topics: Sequence[str] | None,
    ) -> ColumnRun:
        """The run over `eligible` (broker ids) and the topics in scope (None: all; a name
        the snapshot lacks raises as snapshot.topic does)."""
        columns: PartitionColumns | None = getattr(snapshot, "columns", None)
        if columns is None:
            raise ValueError("the column run needs a ColumnarSnapshot with columns")
        ids = np.array([b.id for b in snapshot.brokers], dtype=np.int64)
        nb = len(ids)
        lookup = np.full(int(max(ids.max(initial=0), columns.replicas.max(initial=0))) + 2, -1)
        lookup[ids] = np.arange(nb)
        dense = lookup[columns.replicas]  # PAD reads lookup[-1] == -1
        rack_names, rack_of = _rack_keys(snapshot)
        order = sorted(ids.tolist())
        if options.seed is not None:
            random.Random(options.seed).shuffle(order)
        rank = np.empty(nb, dtype=np.int64)
        rank[lookup[np.array(order, dtype=np.int64)]] = np.arange(nb)
        member = np.zeros(nb, dtype=bool)
        member[lookup[np.array(sorted(eligible), dtype=np.int64)]] = True
        excluded = np.isin(ids, sorted(options.exclude_brokers))
        size = np.maximum(columns.size, 0)
        topic_row = columns.topic_of_rows()
        index = {t.name: i for i, t in enumerate(columns.topics)}
        if topics is None:
            scope = np.ones(columns.rows, dtype=bool)
            names = sorted(index)
        else:
            names = sorted(dict.fromkeys(topics))
            for name in names:
                if name not in index:
                    snapshot.topic(name)  # raises, in its words
            scope = np.isin(topic_row, [index[n] for n in names])
        valid = dense >= 0
        held_bytes = np.zeros(nb, dtype=np.int64)  # exact: float sums lose bytes past 2**53
        np.add.at(held_bytes, dense[valid], np.broadcast_to(size[:, None], dense.shape)[valid])
        cell = (topic_row[:, None] * nb + dense)[valid]
        guard = DiskGuard.build(snapshot, options.disk_headroom)
        return cls(
            snapshot=snapshot,
            columns=columns,
            options=options,
            ids=ids,
            lookup=lookup,
            rack_names=rack_names,
            rack_of=rack_of,
            live=np.array([b.alive for b in snapshot.brokers], dtype=bool),
            eligible=member,
            excluded=excluded,
            rank=rank,
            dense=dense,
            work=dense.copy(),
            size=size,
            topic_row=topic_row,
            scope=scope,
            topic_names=names,
            replicas=np.bincount(dense[valid], minlength=nb),
            leaders=np.bincount(dense[:, 0][dense[:, 0] >= 0], minlength=nb),
            bytes=held_bytes,
            topic_replicas=np.bincount(cell, minlength=len(columns.topics) * nb).reshape(
                len(columns.topics), nb
            ),
            disk=None if guard is None else ColumnDisk(guard, ids.tolist()),
        )

    # --- reading ------------------------------------------------------------------------

    def to_dense(self, broker_ids: npt.NDArray[Any]) -> I64:
        """Broker ids as dense indexes; -1 for PAD (every named broker is listed)."""
        ids = np.asarray(broker_ids)
        out: I64 = np.where(ids >= 0, self.lookup[np.maximum(ids, 0)], -1)
        return out

    def racks(self, dense: I64) -> I64:
        """Rack index per dense index (-1 stays -1)."""
        out: I64 = np.where(dense >= 0, self.rack_of[np.maximum(dense, 0)], -1)
        return out

    def scope_rows(self) -> I64:
        return np.flatnonzero(self.scope)

    def holds(self, rows: I64, brokers: I64) -> Mask:
        """The row already has a replica on the broker (one broker per row)."""
        out: Mask = (self.work[rows] == brokers[:, None]).any(axis=1)
        return out

    def rack_ok(self, rows: I64, slots: I64, new: I64) -> Mask:
        """Run.rack_ok per row: replacing the replica in `slots` by `new` keeps at least as
        many racks as the row had (fewer only when the old replica was its rack's one and
        the new broker's rack is taken)."""
        reps = self.work[rows]
        racks = self.racks(reps)
        others = (reps >= 0) & (np.arange(reps.shape[1])[None, :] != slots[:, None])
        old_rack = racks[np.arange(len(rows)), slots]
        new_rack = self.rack_of[new]
        old_kept = ((racks == old_rack[:, None]) & others).any(axis=1)
        new_taken = ((racks == new_rack[:, None]) & others).any(axis=1)
        out: Mask = np.asarray(old_kept | ~new_taken, dtype=bool)
        return out

    def fits(self, rows: I64, new: I64) -> Mask:
        """The rows' replicas still fit on the new brokers' disks (the disk guard)."""
        if self.disk is None:
            return np.ones(len(rows), dtype=bool)
        return self.disk.fits(new, self.size[rows], rows)

    def rack_ok_one(self, reps: Sequence[int], slot: int, new: int) -> bool:
        """rack_ok for one row's replicas `reps` (dense, -1 pads)."""
        rack = self.rack_list
        others = [rack[b] for i, b in enumerate(reps) if i != slot and b >= 0]
        return rack[reps[slot]] in others or rack[new] not in others

    def fits_one(self, row: int, new: int) -> bool:
        return self.disk is None or self.disk.fits_one(new, int(self.size[row]), row)

    def movable(self, rows: I64) -> Mask:
        """Rows a balancing move may touch: no replica on a dead broker (Kafka rejects a
        target naming one)."""
        reps = self.work[rows]
        dead = (reps >= 0) & ~self.live[np.maximum(reps, 0)]
        out: Mask = np.asarray(~dead.any(axis=1), dtype=bool)
        return out

    def in_flight(self, rows: I64, moving: Mask | None = None) -> I64:
        """`rows` without those being reassigned (`moving`, per row of the columns; None:
        the columns hold none, their readers build objects for such a snapshot): refused
        unless skip_in_flight, as Run.in_flight."""
        if moving is None or not bool(moving[rows].any()):
            return rows
        hit = rows[moving[rows]]
        names = [t.name for t in self.columns.topics]
        parts = [
            Partition(names[t], p, ())
            for t, p in zip(
                self.topic_row[hit].tolist(), self.columns.partition[hit].tolist(), strict=True
            )
        ]
        if not self.options.skip_in_flight:
            raise refuse_in_flight(parts)
        self.skipped = moving.copy()
        shown = [f"{p.topic}-{p.partition}" for p in parts]
        self.findings.append(
            Finding(
                "warning",
                "skipped-in-flight",
                f"left out {len(parts)} partition(s) being reassigned "
                f"({', '.join(shown[:10])}{', ...' if len(shown) > 10 else ''}); plan "
                "them again once the move is done",
            )
        )
        return rows[~moving[rows]]

    # --- changing ---------------------------------------------------------------------------

    def move(self, rows: I64, slots: I64, new: I64) -> None:
        """The replica in (row, slot) goes to `new`, same position; loads and the disk
        guard follow. Rows must be distinct within one call."""
        old = self.work[rows, slots]
        sizes = self.size[rows]
        nb = self.nb
        self.work[rows, slots] = new
        self.replicas += np.bincount(new, minlength=nb) - np.bincount(old, minlength=nb)
        np.add.at(self.bytes, new, sizes)
        np.subtract.at(self.bytes, old, sizes)
        lead = slots == 0
        if bool(lead.any()):
            self.leaders += np.bincount(new[lead], minlength=nb) - np.bincount(
                old[lead], minlength=nb
            )
        topics = self.topic_row[rows]
        np.add.at(self.topic_replicas, (topics, new), 1)
        np.subtract.at(self.topic_replicas, (topics, old), 1)
        if self.disk is not None:
            self.disk.take(new, sizes)

    def move_one(self, row: int, slot: int, new: int) -> None:
        """move() for one replica (a greedy's step, without the arrays' call overhead)."""
        old = int(self.work[row, slot])
        size = int(self.size[row])
        self.work[row, slot] = new
        self.replicas[old] -= 1
        self.replicas[new] += 1
        self.bytes[old] -= size
        self.bytes[new] += size
        if slot == 0:
            self.leaders[old] -= 1
            self.leaders[new] += 1
        topic = int(self.topic_row[row])
        self.topic_replicas[topic, old] -= 1
        self.topic_replicas[topic, new] += 1
        if self.disk is not None:
            self.disk.room[new] -= size

    def reorder(self, rows: I64, leaders: I64) -> None:
        """Each row's `leaders` broker (one of its replicas) goes first, the others keep
        their order: only preferred leaders change."""
        reps = self.work[rows]
        old = reps[:, 0].copy()
        at = np.argmax(reps == leaders[:, None], axis=1)
        width = reps.shape[1]
        # the columns before the leader's shift right by one
        col = np.arange(width)[None, :]
        source = np.where(col == 0, at[:, None], np.where(col <= at[:, None], col - 1, col))
        self.work[rows] = np.take_along_axis(reps, source, axis=1)
        nb = self.nb
        self.leaders += np.bincount(leaders, minlength=nb) - np.bincount(old, minlength=nb)

    # --- the plan ---------------------------------------------------------------------------

    def changed_rows(self) -> I64:
        return np.flatnonzero((self.work != self.dense).any(axis=1))

    def plan(self, operation: str, extra: PlanReport | None = None) -> Plan:
        """Run.plan on columns: the changed rows as ArrayChanges, measured by
        planner/measure.py, the disk guard's findings, the preferred-leader spreads."""
        rows = self.changed_rows()
        after_ids = np.where(self.work[rows] >= 0, self.ids[np.maximum(self.work[rows], 0)], PAD)
        changes = ArrayChanges(
            self.columns, rows, after_ids.astype(np.int32), self.columns.rf[rows].copy()
        )
        placed = self.work[rows]
        before = self.dense[rows]
        added = (placed >= 0) & (placed[:, :, None] != before[:, None, :]).all(axis=2)
        self._disk_findings(bool(added.any()))
        dead = (placed >= 0) & ~self.live[np.maximum(placed, 0)]
        if bool(dead.any()):  # a guard: the operations never place a dead broker
            first = changes[int(np.flatnonzero(dead.any(axis=1))[0])]
            raise PlanInfeasible(
                f"internal check failed: the plan names dead brokers ({first.topic}-"
                f"{first.partition} -> {list(first.after)}); a bug: please report it"
            )
        eligible = self.eligible_ids
        report = measure_report(
            self.snapshot,
            self.options,
            eligible,
            self.topic_names,
            self,
            changes,
            bound=self.bound,
            strategy=operation,
        )
        report["operation"] = operation
        report.update(self.leader_spreads())
        report.update(extra or {})
        try:
            report["disk"] = measure_disk(self.snapshot, self.options, self, changes)
        except DiskOverflow as overflow:
            raise PlanInfeasible(str(overflow)) from None
        return Plan(
            cluster_id=self.snapshot.cluster_id,
            snapshot_fingerprint=self.snapshot.fingerprint(),
            strategy=operation,
            changes=changes,
            report=report,
            findings=tuple(self.findings),
        )

    def leader_spreads(self) -> PlanReport:
        """Preferred-leader spread over the eligible brokers, before and after."""
        out: PlanReport = {}
        for key, reps in (("leader_spread_before", self.dense), ("leader_spread_after", self.work)):
            first = reps[:, 0]
            counts = np.bincount(first[first >= 0], minlength=self.nb)[self.eligible]
            out[key] = int(counts.max() - counts.min()) if counts.size else 0  # type: ignore[literal-required]
        return out

    def _disk_findings(self, moved: bool) -> None:
        """Moves the disk guard refused: the whole plan is refused when it adds no replica
        elsewhere (`moved`; reordered replicas do not count), a warning otherwise
        (Run._disk_findings)."""
        disk = self.disk
        if disk is None or disk.first_blocked is None:
            return
        broker, row = disk.first_blocked
        refusal = disk.refusal(broker, int(self.size[row]))
        if not moved:
            raise PlanInfeasible(refusal)
        topic = self.columns.topics[int(self.topic_row[row])].name
        pid = int(self.columns.partition[row])
        self.findings.append(
            Finding(
                "warning",
                "disk-headroom",
                "some moves were left out so that broker(s) "
                f"{', '.join(map(str, sorted(self.ids[sorted(disk.blocked)].tolist())))} keep "
                f"their disk headroom; first: {topic}-{pid} to broker {self.ids[broker]}",
            )
        )
