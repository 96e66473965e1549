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
from kreplica.kafka import KafkaLayout
from kreplica.kafka.javalang import java_sort_key
from kreplica.kafka.zk import rack_alternated_brokers, zk_add_start_index, zk_replicas
from kreplica.model import Broker

Mask = npt.NDArray[np.bool_]
I64 = npt.NDArray[np.int64]

# A rack-aware table holds n x (n - 1) replica lists (built at once, `aware_replicas`):
# above this many brokers the topics go to the search instead.
MAX_RACK_AWARE_BROKERS = 1024


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
    names = sorted(set(rack_of.values()))
    if len(names) > 62:  # more racks than bits in a mask: one list at a time
        return np.asarray(
            [
                [zk_replicas(order, rack_of, len(names), rf, f, s) for s in range(shifts)]
                for f in range(n)
            ],
            dtype=np.int64,
        ).reshape(n, shifts, rf)
    rank = {name: i for i, name in enumerate(names)}
    order_arr = np.asarray(order, dtype=np.int64)
    rack = np.asarray([rank[rack_of[b]] for b in order], dtype=np.int64)
    first = np.repeat(np.arange(n, dtype=np.int64), shifts)
    shift = np.tile(np.arange(shifts, dtype=np.int64), n)
    at = aware_replicas(order_arr, rack, len(names), rf, first, shift)
    aware: I64 = order_arr[at].reshape(n, shifts, rf)
    return aware


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


def aware_replicas(order: I64, rack: I64, racks: int, rf: int, first: I64, shift: I64) -> I64:
    """`zk_replicas` over a rack-alternated list for many (first index, shift) pairs at once:
    positions in `order` (shape (pairs, rf)). `rack`: each position's rack index, `racks`
    their count. The scan for each follower goes on from where the last one stopped, skipping
    a rack or broker the partition has (unless all are used), as Kafka's loop does."""
    n = len(order)
    m = len(first)
    out = np.zeros((m, rf), dtype=np.int64)
    out[:, 0] = first
    if rf == 1 or n == 1:
        return out
    used = np.left_shift(np.int64(1), rack[first])  # racks used, as bits
    count = np.ones(m, dtype=np.int64)  # distinct racks used
    k = np.zeros(m, dtype=np.int64)
    base = shift * racks
    for j in range(1, rf):
        pending = np.ones(m, dtype=np.bool_)
        while pending.any():
            at = np.flatnonzero(pending)
            idx = (first[at] + 1 + (base[at] + k[at]) % (n - 1)) % n
            k[at] += 1
            bit = np.left_shift(np.int64(1), rack[idx])
            fresh_rack = ((used[at] & bit) == 0) | (count[at] == racks)
            fresh_broker = ~(out[at, :j] == idx[:, None]).any(axis=1) | (j == n)
            accept = fresh_rack & fresh_broker
            chosen = at[accept]
            out[chosen, j] = idx[accept]
            count[chosen] += (used[chosen] & bit[accept]) == 0
            used[chosen] |= bit[accept]
            pending[chosen] = False
    return out


def aware_creation_layouts(
    columns: PartitionColumns, brokers: Sequence[Broker], asked: Mask | None = None
) -> dict[int, KafkaLayout]:
    """The layouts `infer_layout` finds for the topics (by index in `columns.topics`) that
    ZooKeeper-mode Kafka's rack-aware creation placement reproduces in full over the brokers
    they use, found for all topics at once; the other topics are left to `infer_layout`.

    Such a topic's layout is its rack-alternated list, partition 0's leader's position as
    start and the lowest shift reproducing every partition (what `infer_layout`'s prefix
    search stops at; nothing beats a full match over the topic's own brokers but one over
    the whole cluster's list, so a topic some partition of which that list cannot explain,
    neither by creation nor by an add-partitions call, is answered here, the others not).
    `asked`: the topics to look at (default: all)."""
    found: dict[int, KafkaLayout] = {}
    ids_list = sorted(b.id for b in brokers)
    racks = {b.id: b.rack for b in brokers}
    if not columns.rows or not ids_list:
        return found
    ids = np.asarray(ids_list, dtype=np.int64)
    topic_of = columns.topic_of_rows()
    plain = _plain_topics(columns, topic_of, ids)
    if asked is not None:
        plain &= asked
    if not plain.any():
        return found
    nb = len(ids)
    dense = np.searchsorted(ids, columns.replicas.astype(np.int64))  # plain rows: all listed
    uses = np.zeros((len(columns.topics), nb), dtype=np.bool_)
    rows = plain[topic_of]
    width = columns.replicas.shape[1]
    cell = (np.repeat(topic_of[rows], width), dense[rows].ravel())
    valid = columns.replicas[rows].ravel() != PAD
    uses[cell[0][valid], cell[1][valid]] = True
    uses[~plain] = False
    groups, group_of = np.unique(uses[plain], axis=0, return_inverse=True)
    plain_topics = np.flatnonzero(plain)
    widened = _whole_list(ids_list, racks)
    for g in range(len(groups)):
        members = ids[groups[g]].tolist()
        if any(racks[b] is None for b in members):
            continue
        topics = plain_topics[group_of.ravel() == g]
        if widened is not None and widened[0] != members:
            topics = topics[_explained_by_whole_list(columns, topics, widened)]
        found.update(_creation_over(columns, topics, members, racks))
    return found


def _whole_list(
    ids: list[int], racks: dict[int, str | None]
) -> tuple[list[int], list[int], dict[int, int]] | None:
    """The cluster's broker ids, its rack-alternated list and each id's position there, when
    every broker has a rack (else `infer_layout` tries no rack-aware layout over it)."""
    if any(r is None for r in racks.values()):
        return None
    order = rack_alternated_brokers({b: r for b, r in racks.items() if r is not None})
    return ids, order, {b: i for i, b in enumerate(order)}


def _explained_by_whole_list(
    columns: PartitionColumns,
    topics: I64,
    whole: tuple[list[int], list[int], dict[int, int]],
) -> npt.NDArray[np.bool_]:
    """Per topic: True when some partition's leader is neither the one the whole cluster's
    rack-aware creation placement nor an add-partitions call over it gives (from partition
    0's leader): no layout over that list explains every partition."""
    ids, order, position = whole
    n = len(order)
    order_arr = np.asarray(order, dtype=np.int64)
    out = np.zeros(len(topics), dtype=np.bool_)
    for j, t in enumerate(topics.tolist()):
        lo, hi = int(columns.start[t]), int(columns.start[t + 1])
        leaders = columns.replicas[lo:hi, 0].astype(np.int64)
        lead0 = int(leaders[0])
        start = position[lead0]
        add_start = zk_add_start_index(sorted(ids), lead0)
        p = columns.partition[lo:hi]
        by_creation = order_arr[(p + start) % n] == leaders
        by_call = order_arr[(p + add_start) % n] == leaders
        out[j] = bool((~(by_creation | by_call)).any())
    return out


def _creation_over(
    columns: PartitionColumns, topics: I64, members: list[int], racks: dict[int, str | None]
) -> dict[int, KafkaLayout]:
    """The topics (plain, all on `members`) the rack-aware creation placement over `members`
    reproduces in full, with the lowest shift that does."""
    rack_of = {b: str(racks[b]) for b in members}
    order = rack_alternated_brokers(rack_of)
    n = len(order)
    shifts = max(n - 1, 1)
    names = sorted(set(rack_of.values()), key=java_sort_key)
    rank = {name: i for i, name in enumerate(names)}
    rack = np.asarray([rank[rack_of[b]] for b in order], dtype=np.int64)
    order_arr = np.asarray(order, dtype=np.int64)
    ids = np.asarray(sorted(members), dtype=np.int64)
    place = np.argsort(order_arr)  # sorted id k sits at order position place[k]

    def lookup(brokers: npt.NDArray[np.int32]) -> I64:
        """Positions in `order` of broker ids (all members here)."""
        out: I64 = place[np.searchsorted(ids, brokers)]
        return out

    out: dict[int, KafkaLayout] = {}
    by_rf: dict[int, list[int]] = {}
    for t in topics.tolist():
        by_rf.setdefault(int(columns.rf[columns.start[t]]), []).append(t)
    broker_racks = tuple(sorted(rack_of.items()))
    for rf, group in by_rf.items():
        if rf > n or len(names) > 62:
            continue
        chosen = np.asarray(group, dtype=np.int64)
        first_rows = columns.start[chosen]
        start = lookup(columns.replicas[first_rows, 0])
        # partition 0 (its first index is the start) against every shift
        pairs = aware_replicas(
            order_arr,
            rack,
            len(names),
            rf,
            np.repeat(start, shifts),
            np.tile(np.arange(shifts), len(chosen)),
        ).reshape(len(chosen), shifts, rf)
        zero = lookup(columns.replicas[first_rows, :rf])
        candidates = (pairs == zero[:, None, :]).all(axis=2)
        # every topic's k-th candidate shift (ascending), all topics at once; the first that
        # reproduces every partition is the one the search stops at
        ranked = np.argsort(~candidates, axis=1, kind="stable")
        tried = candidates.sum(axis=1)
        found = np.full(len(chosen), -1, dtype=np.int64)
        counts = np.diff(columns.start)[chosen]
        for k in range(int(tried.max(initial=0))):
            active = np.flatnonzero((tried > k) & (found < 0))
            if not active.size:
                break
            lengths = counts[active]
            owner = np.repeat(np.arange(len(active)), lengths)
            offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            rows = columns.start[chosen[active]][owner] + np.arange(int(lengths.sum()))
            rows -= np.repeat(offsets, lengths)
            p = columns.partition[rows]
            shift = ranked[active, k]
            expected = aware_replicas(
                order_arr,
                rack,
                len(names),
                rf,
                (p + start[active][owner]) % n,
                (shift[owner] + p // n) % shifts,
            )
            wrong = (expected != lookup(columns.replicas[rows, :rf])).any(axis=1)
            misses = np.bincount(owner[wrong], minlength=len(active))
            found[active[misses == 0]] = shift[misses == 0]
        for j in np.flatnonzero(found >= 0).tolist():
            t = int(chosen[j])
            out[t] = KafkaLayout(
                tuple(order),
                int(start[j]),
                int(found[j]),
                True,
                tuple(range(int(counts[j]))),
                (),
                (),
                broker_racks,
            )
    return out
