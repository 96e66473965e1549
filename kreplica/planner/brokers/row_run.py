"""Run's interface (run.py) over a ColumnRun, for the balancing searches of rebalance.py:
they read `work`, `parts`, `ctx` and call `move`, `reorder`, `rack_ok`, `fits`, `racks_of`
and `plan` as on the object run, and make the same moves, without one object per
partition being parsed, counted or measured.

Keys are (topic index, row): they sort as (topic name, partition) do and `key[0]` names the
topic, as on the object run. Brokers are the column run's dense indexes; the report's
per-broker maps the operation adds are turned back into broker ids by `plan`. The loads
are Python lists (the searches read them one at a time, where numpy's scalar reads cost
more); `move` and `reorder` keep them and the column run's arrays current.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from kreplica.columns import ISR_OTHER, NO_SIZE
from kreplica.model import ClusterSnapshot, Finding, Plan, PlanReport
from kreplica.planner.brokers.column_run import ColumnRun
from kreplica.planner.brokers.run import balancing_brokers
from kreplica.planner.options import PlanOptions
from kreplica.planner.report import LowerBound

RowKey = tuple[int, int]  # (topic index, row)


class _Work(Mapping[RowKey, list[int]]):
    """key -> the row's replicas now (dense indexes): lists made from the column run's
    matrix once (the searches read rows millions of times), kept current by RowRun."""

    def __init__(self, run: ColumnRun) -> None:
        self.run = run
        self.rows: list[list[int]] = run.work.tolist()
        ragged = run.columns.rf < run.work.shape[1]
        for row in np.flatnonzero(ragged).tolist():
            del self.rows[row][int(run.columns.rf[row]) :]

    def __getitem__(self, key: RowKey) -> list[int]:
        return self.rows[key[1]]

    def __iter__(self) -> Iterator[RowKey]:
        raise TypeError("the rows are not listed here")  # pragma: no cover - never asked

    def __len__(self) -> int:
        return self.run.columns.rows


class _Part(NamedTuple):
    size_bytes: int | None
    replicas: tuple[int, ...]
    in_sync: tuple[int, ...]


class _Parts(Mapping[RowKey, _Part]):
    """key -> what the searches read of a partition: size, replicas before, in sync."""

    def __init__(self, run: ColumnRun) -> None:
        self.run = run
        self.sizes = run.columns.size.tolist()
        self.rf = run.columns.rf.tolist()
        self.other = set(np.flatnonzero(run.columns.isr_kind == ISR_OTHER).tolist())

    def __getitem__(self, key: RowKey) -> _Part:
        row = key[1]
        run = self.run
        size = self.sizes[row]
        before = tuple(run.dense[row, : self.rf[row]].tolist())
        in_sync = before
        if row in self.other:
            named = np.array(run.columns.isr_other[row], dtype=np.int64)
            isr = set(run.to_dense(named).tolist())
            in_sync = tuple(b for b in before if b in isr)
        return _Part(None if size == NO_SIZE else size, before, in_sync)

    def __iter__(self) -> Iterator[RowKey]:
        raise TypeError("the rows are not listed here")  # pragma: no cover - never asked

    def __len__(self) -> int:
        return self.run.columns.rows


@dataclass
class _Loads:
    """PlanContext's counts the searches read, as lists by dense index (topic index first
    for the per-topic ones), and its rank and rack."""

    topic_replicas: list[list[int]]
    topic_leaders: list[list[int]]
    cluster_replicas: list[int]
    cluster_leaders: list[int]
    cluster_bytes: list[int]
    ranks: list[int]
    racks: list[int]

    def rank(self, broker: int) -> int:
        return self.ranks[broker]

    def rack(self, broker: int) -> int:
        return self.racks[broker]


@dataclass
class _Topic:
    name: int  # the topic's index: what key[0] holds


@dataclass
class RowRun:
    """Run's interface over `columns` (a ColumnRun); see the module doc."""

    columns: ColumnRun
    work: _Work
    parts: _Parts
    ctx: _Loads
    topics: list[_Topic]
    findings: list[Finding] = field(default_factory=list)
    bound: LowerBound = field(default_factory=LowerBound)

    @classmethod
    def over(cls, run: ColumnRun) -> RowRun:
        topics = np.unique(run.topic_row[run.scope]).tolist()
        first = run.dense[:, 0]
        nt, nb = len(run.columns.topics), run.nb
        leaders = np.bincount(run.topic_row * nb + first, minlength=nt * nb).reshape(nt, nb)
        ctx = _Loads(
            topic_replicas=run.topic_replicas.tolist(),
            topic_leaders=leaders.tolist(),
            cluster_replicas=run.replicas.tolist(),
            cluster_leaders=run.leaders.tolist(),
            cluster_bytes=run.bytes.tolist(),
            ranks=run.rank.tolist(),
            racks=run.rack_list,
        )
        topic_list = [_Topic(t) for t in topics]
        return cls(run, _Work(run), _Parts(run), ctx, topic_list, findings=run.findings)

    def keys_of(self, rows: npt.NDArray[np.int64]) -> list[RowKey]:
        """The rows' keys (rows ascending: in key order)."""
        return list(zip(self.columns.topic_row[rows].tolist(), rows.tolist(), strict=True))

    def leader_candidates(self, eligible: Iterable[int]) -> Callable[[RowKey], list[int]]:
        """Run.leader_candidates, every row's list computed at once from the arrays: the
        replicas now that are eligible and either in sync or new, by rank."""
        crun = self.columns
        work = crun.work
        member = np.zeros(crun.nb, dtype=bool)
        member[list(eligible)] = True
        ok = (work >= 0) & member[np.maximum(work, 0)]
        for row in self.parts.other:  # an ISR without some replicas: those may not lead
            part = self.parts[(0, row)]
            lagging = set(part.replicas) - set(part.in_sync)
            ok[row] &= ~np.isin(work[row], sorted(lagging))
        ranks = np.where(ok, crun.rank[np.maximum(work, 0)], np.iinfo(np.int64).max)
        order = np.argsort(ranks, axis=1, kind="stable")
        ranked = np.take_along_axis(np.where(ok, work, -1), order, axis=1)
        lists: list[list[int]] = ranked.tolist()
        for row in np.flatnonzero(~ok.all(axis=1)).tolist():
            lists[row] = [b for b in lists[row] if b >= 0]
        return lambda key: lists[key[1]]

    def size_bytes(self, key: RowKey) -> int | None:
        size: int = self.parts.sizes[key[1]]
        return None if size == NO_SIZE else size

    def fits(self, key: RowKey, broker: int) -> bool:
        return self.columns.fits_one(key[1], broker)

    def racks_of(self, replicas: Iterable[int]) -> set[int]:
        racks = self.ctx.racks
        return {racks[b] for b in replicas}

    def rack_ok(self, key: RowKey, old: int, new: int) -> bool:
        reps = self.work[key]
        return self.columns.rack_ok_one(reps, reps.index(old), new)

    def move(self, key: RowKey, old: int, new: int) -> None:
        t, row = key
        reps = self.work[key]
        slot = reps.index(old)
        size = int(self.columns.size[row])
        self.columns.move_one(row, slot, new)
        reps[slot] = new
        ctx = self.ctx
        for b, step in ((old, -1), (new, 1)):
            ctx.topic_replicas[t][b] += step
            ctx.cluster_replicas[b] += step
            ctx.cluster_bytes[b] += step * size
            if slot == 0:
                ctx.topic_leaders[t][b] += step
                ctx.cluster_leaders[b] += step

    def reorder(self, key: RowKey, leader: int) -> None:
        t, row = key
        reps = self.work[key]
        old = reps[0]
        self.columns.reorder(np.array([row]), np.array([leader]))
        reps.remove(leader)
        reps.insert(0, leader)
        ctx = self.ctx
        for b, step in ((old, -1), (leader, 1)):
            ctx.topic_leaders[t][b] += step
            ctx.cluster_leaders[b] += step

    def plan(self, operation: str, extra: PlanReport | None = None) -> Plan:
        """The column run's plan, the per-broker maps of `extra` by broker id."""
        ids = self.columns.ids.tolist()
        named: dict[str, Any] = {}
        for name, value in (extra or {}).items():
            if name.startswith("broker_") and isinstance(value, Mapping):
                value = dict(sorted((ids[b], v) for b, v in value.items()))
            named[name] = value
        self.columns.bound = self.bound  # the findings are one list already
        return self.columns.plan(operation, named)  # type: ignore[arg-type]


def start_balancing_rows(
    snapshot: ClusterSnapshot,
    options: PlanOptions,
    max_moves: int | None,
    max_bytes: int | None,
) -> tuple[RowRun, list[int], list[RowKey]]:
    """run.start_balancing on columns: the run, the eligible brokers (dense, by id) and
    the keys a move may touch (none in flight, none with a dead replica)."""
    eligible = balancing_brokers(snapshot, options, max_moves, max_bytes)
    crun = ColumnRun.start(snapshot, eligible, options, None)
    run = RowRun.over(crun)
    rows = crun.in_flight(crun.scope_rows())
    keys = run.keys_of(rows[crun.movable(rows)])
    return run, crun.to_dense(np.array(eligible)).tolist(), keys
