"""Which topics of a snapshot ZooKeeper-mode Kafka placed exactly, for every topic at once.

`layout_verdict` answers for one topic with a search (broker orders, shifts, add-partitions
calls, KRaft's striped placement): milliseconds a topic, most of a fleet audit's time. Yet the
question most topics pose is simpler: is every partition what `assignReplicasToBrokers` gives
over the cluster's own broker list? For that the answer depends on the cluster alone, not the
topic: partition p's replicas are a function of (first index, shift in effect), so one table of
n x (n - 1) replica lists per cluster answers every topic with array lookups. The topics it
confirms get `layout_verdict`'s answer (Kafka's default, ZooKeeper placement); the others still
go through the search, which stays the reference.

Pure and deterministic; numpy, imported only where snapshots are read in columns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kreplica.columns import PAD, PartitionColumns
from kreplica.kafka.zk import rack_alternated_brokers, zk_replicas
from kreplica.model import Broker

Mask = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]

# Rack-aware tables are built one replica list at a time (the rack skipping is sequential):
# above this many brokers (n x (n - 1) lists) the topics go to the search instead.
MAX_RACK_AWARE_BROKERS = 256


def zookeeper_default_topics(columns: PartitionColumns, brokers: Sequence[Broker]) -> Mask:
    """Per topic (in `columns.topics` order): True when its partitions are 0..P-1, all of one
    replication factor, and each holds exactly the replicas ZooKeeper-mode Kafka's creation
    placement gives over the cluster's whole broker list (ids in order; or, when every broker
    has a rack, the rack-alternated list) for one start index and replica shift. Such a topic
    is Kafka's default with the ZooKeeper placement (`layout_verdict`'s (True, "zookeeper"));
    False says only "ask the search"."""
    topics = len(columns.topics)
    ok = np.zeros(topics, dtype=np.bool_)
    ids = sorted(b.id for b in brokers)
    if not topics or not ids or not columns.rows:
        return ok
    topic_of = columns.topic_of_rows()  # each row's topic, for every pass below
    plain = _plain_topics(columns, topic_of, np.asarray(ids, dtype=np.int64))
    if not plain.any():
        return ok
    orders: list[tuple[list[int], dict[int, str] | None]] = [(ids, None)]
    racks = {b.id: b.rack for b in brokers}
    if len(ids) <= MAX_RACK_AWARE_BROKERS and all(r is not None for r in racks.values()):
        named = {b: r for b, r in racks.items() if r is not None}
        orders.append((rack_alternated_brokers(named), named))
    for order, rack_of in orders:
        ok |= _placed_over(columns, topic_of, plain, order, rack_of)
    return ok


def _plain_topics(columns: PartitionColumns, topic: I64, ids: I64) -> Mask:
    """Topics the table can answer: partition ids 0..P-1, one replication factor from 1 to
    the broker count, every replica on a listed broker."""
    starts = columns.start[:-1]
    counts = np.diff(columns.start)
    nonempty = counts > 0
    rows = columns.rows
    n = ids.shape[0]
    index_in_topic = np.arange(rows, dtype=np.int64) - columns.start[topic]
    bad = columns.partition != index_in_topic
    rf = columns.rf
    first_rf = np.where(nonempty, rf[np.minimum(starts, rows - 1)], 0)
    bad |= rf != first_rf[topic]
    bad |= (rf < 1) | (rf > n)
    width = columns.replicas.shape[1]
    used = np.arange(width)[None, :] < rf[:, None]
    reps = columns.replicas.astype(np.int64)
    at = np.clip(np.searchsorted(ids, reps), 0, n - 1)
    bad |= (used & ((ids[at] != reps) | (reps == PAD))).any(axis=1)
    bad_topics = np.zeros(len(columns.topics), dtype=np.int64)
    np.add.at(bad_topics, topic, bad.astype(np.int64))
    plain: Mask = nonempty & (bad_topics == 0)
    return plain


def _table(order: Sequence[int], rack_of: dict[int, str] | None, rf: int) -> I64:
    """Kafka's replicas (broker ids, `rf` of them) for every first index and shift (modulo
    n - 1, all that matters of it): shape (n, max(n - 1, 1), rf)."""
    n = len(order)
    shifts = max(n - 1, 1)
    if rack_of is None:
        # rack-unaware: follower j sits at first + 1 + (shift + j) mod (n - 1)
        first = np.arange(n)[:, None, None]
        shift = np.arange(shifts)[None, :, None]
        j = np.arange(rf - 1)[None, None, :]
        follower = (first + 1 + (shift + j) % shifts) % n
        at = np.concatenate([np.broadcast_to(first, (n, shifts, 1)), follower], axis=2)
        unaware: I64 = np.asarray(order, dtype=np.int64)[at]
        return unaware
    racks = len(set(rack_of.values()))
    return np.asarray(
        [[zk_replicas(order, rack_of, racks, rf, f, s) for s in range(shifts)] for f in range(n)],
        dtype=np.int64,
    ).reshape(n, shifts, rf)


def _placed_over(
    columns: PartitionColumns,
    topic_of: I64,
    plain: Mask,
    order: Sequence[int],
    rack_of: dict[int, str] | None,
) -> Mask:
    """Plain topics whose every partition is Kafka's creation placement over `order` for
    partition 0's start index and one shift (every shift that fits partition 0 is tried)."""
    n = len(order)
    shifts = max(n - 1, 1)
    rows = plain[topic_of]
    widest = int(columns.rf[rows].max())
    table = _table(order, rack_of, widest)
    position = {b: i for i, b in enumerate(order)}
    starts = columns.start[:-1]
    plain_topics = np.flatnonzero(plain)
    leader = columns.replicas[starts[plain_topics], 0].tolist()
    start_of = np.zeros(len(columns.topics), dtype=np.int64)
    start_of[plain_topics] = [position[b] for b in leader]
    # which shifts reproduce partition 0 (its first index is the start itself)
    rf_of = columns.rf[starts[plain_topics]]
    first_rows = columns.replicas[starts[plain_topics]].astype(np.int64)
    slots = np.arange(columns.replicas.shape[1])
    candidates = np.ones((len(plain_topics), shifts), dtype=np.bool_)
    for j in range(widest):
        live = (slots[j] < rf_of)[:, None]
        same = table[start_of[plain_topics], :, j] == first_rows[:, j, None]
        candidates &= ~live | same
    ok = np.zeros(len(columns.topics), dtype=np.bool_)
    sel = np.flatnonzero(rows)
    part = columns.partition[sel]
    first = (part + start_of[topic_of[sel]]) % n
    laps = part // n
    reps = columns.replicas[sel].astype(np.int64)
    used = slots[None, :] < columns.rf[sel][:, None]
    # tried one shift rank at a time: each topic's k-th candidate shift, all topics at once
    order_of = np.argsort(~candidates, axis=1, kind="stable")
    tried = candidates.sum(axis=1)
    # rf 1: the shift never matters, one try is enough
    tried = np.where(rf_of == 1, np.minimum(tried, 1), tried)
    for k in range(int(tried.max(initial=0))):
        trying = np.zeros(len(columns.topics), dtype=np.bool_)
        trying[plain_topics] = tried > k
        shift_of = np.zeros(len(columns.topics), dtype=np.int64)
        shift_of[plain_topics] = order_of[:, min(k, shifts - 1)]
        expected = table[first, (shift_of[topic_of[sel]] + laps) % shifts]
        width = reps.shape[1]
        if expected.shape[1] < width:
            pad = np.full((expected.shape[0], width - expected.shape[1]), PAD, dtype=np.int64)
            expected = np.concatenate([expected, pad], axis=1)
        wrong = (used & (expected[:, :width] != reps)).any(axis=1)
        misses = np.zeros(len(columns.topics), dtype=np.int64)
        np.add.at(misses, topic_of[sel], wrong.astype(np.int64))
        ok |= trying & (misses == 0)
    return ok
