"""`kreplica explain` over a snapshot in columns: every topic's explanation from the arrays.

`explain_topic` builds a topic's objects and searches its layout; at a million partitions
that is minutes and gigabytes. Here the measures (replicas and leaders per broker, racks per
partition, replication factors) are bincounts over each topic's rows, and the two layout
searches are skipped where their answer is known without them: ZooKeeper mode's rack-aware
creation placement reproducing a topic in full (layout_arrays.aware_creation_layouts), and
KRaft's striped placement for topics whose partitions all fall in its first cycle
(striped.first_cycle_rows). Any other topic is built and searched as `explain_topic` does.
The documents are the same, key for key.

Pure and deterministic; numpy, imported only where snapshots are read in columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kreplica.columns import PAD, PartitionColumns
from kreplica.kafka import KafkaLayout, infer_layout
from kreplica.model import ClusterSnapshot
from kreplica.planner.explain import added_partitions, explain_topic, layout_fields, topic_doc
from kreplica.planner.layout_arrays import aware_creation_layouts
from kreplica.planner.striped import (
    StripedMatch,
    first_cycle_rows,
    match_striped,
    rack_sort_key,
)

I64 = npt.NDArray[np.int64]


def explain_topics(snapshot: ClusterSnapshot, names: Sequence[str]) -> list[dict[str, Any]]:
    """`explain_topic` for each of `names`, in that order; a snapshot in columns is explained
    from its arrays (the same documents, no object per partition)."""
    columns = getattr(snapshot, "columns", None)
    if columns is not None and not getattr(snapshot, "materialised", True):
        found = explain_columns(snapshot, columns, names)
        if found is not None:
            return found
    return [explain_topic(snapshot, name) for name in names]


def explain_columns(
    snapshot: ClusterSnapshot, columns: PartitionColumns, names: Sequence[str]
) -> list[dict[str, Any]] | None:
    """The explanations of `names` (topics of `columns`, in that order), or None when a
    replica sits on a broker the snapshot does not list, or it lists none (the object path
    handles those)."""
    index = {t.name: i for i, t in enumerate(columns.topics)}
    if any(name not in index for name in names):
        return None
    brokers = snapshot.brokers
    if not brokers:
        return None
    ids = np.asarray(sorted(b.id for b in brokers), dtype=np.int64)
    reps = columns.replicas.astype(np.int64)
    slot = np.clip(np.searchsorted(ids, reps), 0, len(ids) - 1)
    valid = reps != PAD
    if bool((valid & (ids[slot] != reps)).any()):
        return None
    dense = np.where(valid, slot, -1)
    del reps, slot
    measures = _Measures(snapshot, columns, ids, dense)
    asked = np.zeros(len(columns.topics), dtype=np.bool_)
    asked[[index[name] for name in names]] = True
    zk = aware_creation_layouts(columns, brokers, asked)
    striped = _striped_first_cycle(snapshot, columns, ids, dense, asked)
    out = []
    for name in names:
        i = index[name]
        lo, hi = int(columns.start[i]), int(columns.start[i + 1])
        pids = columns.partition[lo:hi].tolist()
        if i in zk and i in striped:
            layout = layout_fields(pids, zk[i], striped[i], [])
        else:
            layout = _searched(snapshot, columns, i, zk.get(i), striped)
        out.append(
            topic_doc(name, hi - lo, int(columns.rf[lo]) if hi > lo else 0, layout, *measures.of(i))
        )
    return out


def _searched(
    snapshot: ClusterSnapshot,
    columns: PartitionColumns,
    i: int,
    zk: KafkaLayout | None,
    striped: dict[int, StripedMatch | None],
) -> dict[str, Any]:
    """A topic's layout as `explain_topic` finds it: the searches the arrays did not answer."""
    t = columns.materialise(i)
    assignment = t.assignment()
    ids, racks = snapshot.broker_ids(), snapshot.racks()
    if zk is None and assignment:
        zk = infer_layout(assignment, ids, racks)
    match = (
        striped[i]
        if i in striped
        else (match_striped(assignment, ids, racks) if assignment else None)
    )
    added = added_partitions(zk, assignment) if zk is not None else []
    return layout_fields(sorted(assignment), zk, match, added)


def _striped_first_cycle(
    snapshot: ClusterSnapshot,
    columns: PartitionColumns,
    ids: I64,
    dense: I64,
    asked: npt.NDArray[np.bool_],
) -> dict[int, StripedMatch | None]:
    """`match_striped`'s answer for the `asked` topics whose partitions all fall in the first
    cycle for both cycle lengths it tries (all brokers, and those the topic uses), every such
    topic at once (striped.first_cycle_rows)."""
    racks = snapshot.racks()
    rack_names = sorted({racks[b] for b in ids.tolist()}, key=rack_sort_key)
    rank = {r: k for k, r in enumerate(rack_names)}
    rack_of = np.asarray([rank[racks[b]] for b in ids.tolist()], dtype=np.int64)
    sizes = np.bincount(rack_of, minlength=len(rack_names)).astype(np.int64)
    # each broker's position among its rack's brokers, by id (ids are sorted)
    within = np.zeros(len(ids), dtype=np.int64)
    for k in range(len(rack_names)):
        members = np.flatnonzero(rack_of == k)
        within[members] = np.arange(len(members))
    nt = len(columns.topics)
    topic_of = columns.topic_of_rows()
    cells = dense >= 0
    pairs = np.unique(
        np.broadcast_to(topic_of[:, None], dense.shape)[cells] * len(ids) + dense[cells]
    )
    users = np.bincount(pairs // len(ids), minlength=nt)  # brokers each topic uses
    del pairs
    counts = np.diff(columns.start)
    top = np.full(nt, -1, dtype=np.int64)
    nonempty = counts > 0
    top[nonempty] = columns.partition[columns.start[1:][nonempty] - 1]  # rows sorted by id
    first_ids = np.zeros(nt, dtype=np.int64)
    first_ids[nonempty] = columns.partition[columns.start[:-1][nonempty]]
    n = len(ids)
    one_cycle = (n <= 1) | (top < n)
    one_cycle &= (users <= 1) | (top < users)
    one_cycle &= nonempty & (first_ids >= 0) & asked
    chosen = np.flatnonzero(one_cycle)
    if not chosen.size:
        return {}
    rows = np.concatenate(
        [np.arange(columns.start[t], columns.start[t + 1]) for t in chosen.tolist()]
    )
    sub = dense[rows]
    rack = np.where(sub >= 0, rack_of[np.maximum(sub, 0)], -1)
    pos = np.where(sub >= 0, within[np.maximum(sub, 0)], 0)
    start = np.concatenate([[0], np.cumsum(counts[chosen])]).astype(np.int64)
    fits = first_cycle_rows(rack, pos, columns.partition[rows], start, sizes)
    names = tuple(rack_names)
    out: dict[int, StripedMatch | None] = {}
    for j, t in enumerate(chosen.tolist()):
        pids = columns.partition[rows[start[j] : start[j + 1]]]
        mask = fits[start[j] : start[j + 1]]
        fitting = tuple(pids[mask].tolist())
        out[t] = StripedMatch(fitting, tuple(pids[~mask].tolist()), n, names) if fitting else None
    return out


class _Measures:
    """Replicas and leaders per broker, rack violations and racks per partition, and
    replication factors of each topic, by bincount over its rows (nothing per topic and
    broker is kept: a cluster of many topics on many brokers stays small)."""

    def __init__(
        self, snapshot: ClusterSnapshot, columns: PartitionColumns, ids: I64, dense: I64
    ) -> None:
        nb = len(ids)
        self.columns = columns
        self.ids = ids.tolist()
        racks = snapshot.racks()
        self.racked = np.asarray([racks[b] is not None for b in self.ids], dtype=np.bool_)
        self.alive = np.asarray(
            [b.alive for b in sorted(snapshot.brokers, key=lambda b: b.id)], dtype=np.bool_
        )
        self.dense = dense
        self.nb = nb
        # a rackless broker is a rack of its own (evaluate.rack_key)
        names = sorted({r for r in racks.values() if r is not None})
        code = {r: k for k, r in enumerate(names)}
        rack_code = np.asarray(
            [
                code[rack] if rack is not None else len(names) + k
                for k, rack in enumerate(racks[b] for b in self.ids)
            ],
            dtype=np.int64,
        )
        codes = np.sort(np.where(dense >= 0, rack_code[np.maximum(dense, 0)], -1), axis=1)
        distinct = codes >= 0
        distinct[:, 1:] &= codes[:, 1:] != codes[:, :-1]
        self.distinct = distinct.sum(axis=1)
        available = len(set(rack_code[self.alive].tolist()))
        self.violating = self.distinct < np.minimum(columns.rf, available)

    def of(
        self, i: int
    ) -> tuple[dict[int, int], dict[int, int], dict[int, int], list[int], int, bool]:
        """Topic i's (replication factors, replicas per broker, leaders per broker, rack
        violations, fewest racks of a partition, whether a broker in scope has a rack), as
        `explain_topic` measures them over the live brokers and those the topic uses."""
        columns = self.columns
        lo, hi = int(columns.start[i]), int(columns.start[i + 1])
        block = self.dense[lo:hi]
        counts = np.bincount(block[block >= 0], minlength=self.nb)
        first = block[:, 0]
        led = np.bincount(first[first >= 0], minlength=self.nb)
        scope = np.flatnonzero(self.alive | (counts > 0)).tolist()
        ids = self.ids
        per_broker = dict(zip([ids[b] for b in scope], counts[scope].tolist(), strict=True))
        leaders = dict(zip([ids[b] for b in scope], led[scope].tolist(), strict=True))
        rf_values, rf_counts = np.unique(columns.rf[lo:hi], return_counts=True)
        rfs = dict(
            sorted(
                zip(rf_values.tolist(), rf_counts.tolist(), strict=True),
                key=lambda kv: (-kv[1], -kv[0]),
            )
        )
        violations = columns.partition[lo:hi][self.violating[lo:hi]].tolist()
        racks_min = int(self.distinct[lo:hi].min()) if hi > lo else 0
        has_racks = bool(self.racked[scope].any())
        return rfs, per_broker, leaders, violations, racks_min, has_racks
