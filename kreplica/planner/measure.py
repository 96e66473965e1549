"""The measure step of every columnar plan: its report, lower bound and disk check, counted
once from the before and after columns (bincounts over the arrays, no object per partition).

    report = measure_report(snapshot, options, eligible, topics, brokers, changes, bound)
    report["disk"] = measure_disk(snapshot, options, brokers, changes)  # or DiskOverflow

`brokers` is what both columnar engines hold of the broker table (`MeasuredBrokers`: the
array planner's setup, planner/arrays.py, and the broker operations' column run,
planner/brokers/column_run.py); `changes` the changed rows and their replicas after
(columns.ArrayChanges); `bound` the operation's lower bound (None: the plan only adds or
drops replicas, so what it adds and drops is the bound, as for an RF change); `created` the
partitions the plan creates (planner/partitions_arrays.py). The keys and values are
report.build_report's, the object planner's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from kreplica.columns import NO_LEADER, NO_SIZE, ArrayChanges, PartitionColumns
from kreplica.model import ClusterSnapshot, PlanReport
from kreplica.planner.disk import REMOTE_STORAGE, DiskGuard, disk_report, unchecked_reason
from kreplica.planner.options import PlanOptions
from kreplica.planner.report import LowerBound

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


class MeasuredBrokers(Protocol):
    """The broker table of a columnar run, by dense index (the position in snapshot.brokers)."""

    @property
    def columns(self) -> PartitionColumns: ...
    @property
    def nb(self) -> int: ...
    @property
    def ids(self) -> I64:  # broker id per dense index
        ...
    @property
    def dense(self) -> I64:  # the replicas before, as dense indexes (-1: none)
        ...
    @property
    def eligible(self) -> Mask: ...
    @property
    def live(self) -> Mask: ...
    @property
    def rack_of(self) -> I64:  # rack index per dense index
        ...

    def to_dense(self, broker_ids: npt.NDArray[Any]) -> I64: ...

    def racks(self, dense: I64) -> I64: ...


@dataclass(frozen=True)
class Created:
    """Partitions a plan creates: each one's topic index and replicas (dense indexes, -1
    padded). They hold no data: their replicas count as added, with no bytes to copy."""

    topic_index: I64
    dense: I64


class DiskOverflow(Exception):
    """The plan leaves a broker under its disk headroom; the message is the refusal line."""


def measure_disk(
    snapshot: ClusterSnapshot,
    options: PlanOptions,
    brokers: MeasuredBrokers,
    changes: ArrayChanges,
) -> dict[str, object]:
    """disk.finish_plan's check and report (log dirs `any`): every new replica's copy (the
    leader's own log when known, else the partition's largest replica) summed per broker
    and checked against the guard. DiskOverflow when a broker would end under its
    headroom."""
    columns = brokers.columns
    moved = np.unique(changes.topic_index).tolist()
    remote = sorted(
        columns.topics[i].name
        for i in moved
        if str(columns.topics[i].configs.get(REMOTE_STORAGE, "")).lower() == "true"
    )
    guard = DiskGuard.build(snapshot, options.disk_headroom)
    if guard is not None:
        rows = changes.rows
        after = brokers.to_dense(changes.after)
        before = brokers.dense[rows]
        new = (after >= 0) & ~(after[:, :, None] == before[:, None, :]).any(axis=2)
        copy = columns.size if columns.copy_size is None else columns.copy_size
        each = np.repeat(np.maximum(copy[rows], 0), new.sum(axis=1))  # NO_SIZE copies 0
        incoming = np.zeros(brokers.nb, dtype=np.int64)
        np.add.at(incoming, after[new], each)
        received = np.bincount(after[new], minlength=brokers.nb) > 0
        ids = brokers.ids.tolist()
        for b in np.flatnonzero(received).tolist():
            guard.take(ids[b], int(incoming[b]))
        overflow = guard.first_overflow(per_dir=False)
        if overflow is not None:
            raise DiskOverflow(overflow)
    return disk_report(
        snapshot,
        guard,
        unchecked_reason(snapshot),
        options.disk_headroom,
        options.log_dirs,
        None,
        remote=remote,
    )


def _per_broker(ids: Sequence[int], counts: Sequence[int]) -> dict[int, int]:
    return dict(zip(ids, counts, strict=True))


def measure_report(
    snapshot: ClusterSnapshot,
    options: PlanOptions,
    eligible: Sequence[int],
    topics: Sequence[str],
    brokers: MeasuredBrokers,
    changes: ArrayChanges,
    bound: LowerBound | None = None,
    strategy: str | None = None,
    created: Created | None = None,
) -> PlanReport:
    """build_report's dict (report.py), counted with bincount over the arrays. `bound`:
    the operation's lower bound; None: the replicas added and dropped are the bound (a
    change that only adds replicas after the existing ones, or drops some). `strategy`:
    the report's, options.strategy when None. `created`: the partitions the plan adds."""
    columns = brokers.columns
    nb = brokers.nb
    ids = brokers.ids.tolist()
    dense = brokers.dense
    index = {t.name: i for i, t in enumerate(columns.topics)}
    topic_row = columns.topic_of_rows()
    valid = dense >= 0
    before = np.bincount(dense[valid], minlength=nb)
    first = dense[:, 0]
    preferred = np.bincount(first[first >= 0], minlength=nb)
    # leaders now: the recorded one, the preferred one when unknown; offline (<0) leads none
    leader = columns.leader
    now = np.where(leader == NO_LEADER, columns.replicas[:, 0].astype(np.int64), leader)
    now = now[now >= 0]
    now_idx = brokers.to_dense(now)
    actual = np.bincount(now_idx[now_idx >= 0], minlength=nb)
    leaders_before = _per_broker(ids, actual.tolist())
    for b, count in zip(*np.unique(now[now_idx < 0], return_counts=True), strict=True):
        leaders_before[int(b)] = int(count)
    leaders_before = dict(sorted(leaders_before.items()))
    del now, now_idx

    rows = changes.rows
    rf0 = columns.rf[rows]
    after_dense = brokers.to_dense(changes.after)
    before_rows = dense[rows]
    kept = (after_dense[:, :, None] == before_rows[:, None, :]).any(axis=2)
    new_mask = (after_dense >= 0) & ~kept
    stays = (before_rows[:, :, None] == after_dense[:, None, :]).any(axis=2)
    gone_mask = (before_rows >= 0) & ~stays
    del kept, stays
    new_idx = after_dense[new_mask]
    added_per = np.bincount(new_idx, minlength=nb)
    if created is None:
        created = Created(np.zeros(0, dtype=np.int64), np.zeros((0, 1), dtype=np.int64))
    created_valid = created.dense >= 0
    created_idx = created.dense[created_valid]
    created_per = np.bincount(created_idx, minlength=nb)
    added_per = added_per + created_per
    removed_per = np.bincount(before_rows[gone_mask], minlength=nb)
    after_counts = before + added_per - removed_per
    per_row_added = new_mask.sum(axis=1)
    per_row_removed = gone_mask.sum(axis=1)
    new_first = created.dense[:, 0]
    preferred_after = (
        preferred
        - np.bincount(before_rows[:, 0][before_rows[:, 0] >= 0], minlength=nb)
        + np.bincount(after_dense[:, 0][after_dense[:, 0] >= 0], minlength=nb)
        + np.bincount(new_first[new_first >= 0], minlength=nb)
    )
    sizes = columns.size[rows]
    sizes_known = not bool(((sizes == NO_SIZE) & (per_row_added > 0)).any())
    size_each = np.repeat(np.where(sizes == NO_SIZE, 0, sizes), per_row_added)
    bytes_in = np.bincount(new_idx, weights=size_each, minlength=nb)
    lead = columns.leader[rows]
    source = np.where(lead >= 0, lead, columns.replicas[rows, 0].astype(np.int64))
    source_each = np.repeat(source, per_row_added)
    src_idx = brokers.to_dense(source_each)
    src_known = src_idx >= 0
    bytes_out_arr = np.bincount(src_idx[src_known], weights=size_each[src_known], minlength=nb)
    bytes_out = _per_broker(ids, [int(v) for v in bytes_out_arr.tolist()])
    for b, v in zip(source_each[~src_known].tolist(), size_each[~src_known].tolist(), strict=True):
        bytes_out[b] = bytes_out.get(b, 0) + int(v)
    known = src_known.nonzero()[0]
    cross = int(
        size_each[known[brokers.rack_of[src_idx[known]] != brokers.rack_of[new_idx[known]]]].sum()
    )
    cross += int(size_each[~src_known].sum())  # a source the snapshot does not list: another rack
    has_racks = any(b.rack is not None for b in snapshot.brokers)
    leaders_changed = int((source != changes.after[:, 0]).sum())
    del sizes, lead, source, source_each, src_idx, src_known, known  # a million rows each

    # rack violations and spreads over the requested topics
    live_racks = len(set(brokers.rack_of[brokers.live].tolist()))
    req_idx = sorted(index[t] for t in set(topics))
    req_rows = np.isin(topic_row, req_idx)
    viol_before = _violations(brokers.racks(dense[req_rows]), columns.rf[req_rows], live_racks)
    viol_changed_before = _violations(brokers.racks(dense[rows]), rf0, live_racks)
    viol_changed_after = _violations(brokers.racks(after_dense), changes.rf, live_racks)
    del after_dense
    viol_after = viol_before - viol_changed_before + viol_changed_after
    viol_after += _violations(
        brokers.racks(created.dense), created_valid.sum(axis=1), live_racks
    )  # created partitions are of the requested topics

    elig = brokers.eligible
    spread_before: dict[str, int] = {}
    spread_after: dict[str, int] = {}
    nt = len(columns.topics)
    # replicas per (topic, broker), before and added, in two bincounts
    cell = np.repeat(topic_row * nb, dense.shape[1])
    cell += dense.ravel()
    tb_all = np.bincount(cell[dense.ravel() >= 0], minlength=nt * nb).reshape(nt, nb)
    del cell
    change_topic = np.repeat(topic_row[rows], per_row_added)
    gone_topic = np.repeat(topic_row[rows], per_row_removed)
    created_topic = np.repeat(created.topic_index, created_valid.sum(axis=1))
    ta_all = (
        tb_all
        + np.bincount(change_topic * nb + new_idx, minlength=nt * nb).reshape(nt, nb)
        - np.bincount(gone_topic * nb + before_rows[gone_mask], minlength=nt * nb).reshape(nt, nb)
        + np.bincount(created_topic * nb + created_idx, minlength=nt * nb).reshape(nt, nb)
    )
    for name in sorted(set(topics)):
        i = index[name]
        tb, ta = tb_all[i], ta_all[i]
        scope = (elig | (tb > 0) | (ta > 0)) & brokers.live
        spread_before[name] = _spread(tb, scope)
        spread_after[name] = _spread(ta, scope)
    cluster_scope = (elig | (before > 0) | (after_counts > 0)) & brokers.live
    peak = before + added_per
    added_total = int(per_row_added.sum()) + len(created_idx)
    removed_total = int(per_row_removed.sum())
    moved_bytes = int(size_each.sum()) if sizes_known else None
    if bound is None:
        bound = LowerBound(added_total, removed_total, moved_bytes)
    return {
        "strategy": options.strategy if strategy is None else strategy,
        "topics": sorted(set(topics)),
        "eligible_brokers": list(eligible),
        "partitions_changed": len(rows),
        "partitions_created": len(created.topic_index),
        "replicas_added": added_total,
        "replicas_removed": removed_total,
        "existing_replicas_moved": int(np.minimum(per_row_added, per_row_removed).sum()),
        "lower_bound_replicas_added": bound.added,
        "lower_bound_replicas_removed": bound.removed,
        "bytes_to_move": moved_bytes,
        "bytes_lower_bound": bound.bytes,
        "cross_rack_bytes": int(cross) if sizes_known and has_racks else None,
        "leaders_changed": leaders_changed,
        "rack_violations_before": viol_before,
        "rack_violations_after": viol_after,
        "broker_replicas_before": _per_broker(ids, before.tolist()),
        "broker_replicas_peak": _per_broker(ids, peak.tolist()),
        "broker_replicas_after": _per_broker(ids, after_counts.tolist()),
        "broker_leaders_before": leaders_before,
        "broker_preferred_leaders_before": _per_broker(ids, preferred.tolist()),
        "broker_leaders_after": _per_broker(ids, preferred_after.tolist()),
        "broker_bytes_in": _per_broker(ids, [int(v) for v in bytes_in.tolist()]),
        "broker_bytes_out": dict(sorted(bytes_out.items())),
        "topic_spread_before": spread_before,
        "topic_spread_after": spread_after,
        "cluster_spread_before": _spread(before, cluster_scope),
        "cluster_spread_after": _spread(after_counts, cluster_scope),
        "fallbacks": [],
    }


def _violations(racks: I64, rf: I64, available: int) -> int:
    """Rows spanning fewer racks than min(RF, racks available) (none with one rack)."""
    if available <= 1 or not len(racks):
        return 0
    small = np.int8 if int(racks.max(initial=-1)) < 127 else np.int32  # fewer bytes a row
    ordered = np.sort(racks.astype(small), axis=1)
    distinct = ordered >= 0
    distinct[:, 1:] &= ordered[:, 1:] != ordered[:, :-1]
    return int((distinct.sum(axis=1) < np.minimum(rf, available)).sum())


def _spread(counts: I64, scope: Mask) -> int:
    values = counts[scope]
    return int(values.max() - values.min()) if values.size else 0
