"""Load-ordered views of the eligible brokers, kept current as a planning run places replicas.

The pickers choose by a key of live counts (topic load, cluster load, bytes, a tie-break). A
scan of every eligible broker per pick is what made a million partitions slow (500 brokers:
~100 us a pick); these views keep the brokers sorted by that key instead, so a pick reads the
front of a list and every count change moves one entry (a bisect and a short memmove).

    ReplicaOrder(ctx, topic): brokers by (topic replicas, cluster replicas, cluster bytes, ring
        position); equal loads sit in ring order, so "next after the last replica" is a bisect
    LeaderOrder(ctx, topic): per rack, brokers by (topic leaders, topic replicas, cluster
        leaders, cluster replicas, cluster bytes, rank), and the racks by their best broker's
        key with the topic's leaders on the rack second, as pick_leader orders them

PlanContext builds one of each for the topic being planned and updates it in `account`, the
one place counts change.

The broker operations (add-brokers, rebalance) search for one move at a time:

    BrokerOrder: brokers by a load key (fullest or emptiest first), re-sorted per move
    KeysByBroker: each broker's partitions in the order a move from it prefers them

Pure (standard library only).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

ReplicaEntry = tuple[int, int, int, int, int]  # topic, cluster, bytes, position, broker
LeaderEntry = tuple[int, int, int, int, int, int, int]  # ... rank, broker
# the rack's best broker by pick_leader's key: its topic leaders, the topic leaders on the
# rack, its entry (which ends with the broker id, so the rack name never decides), the rack
RackHead = tuple[int, int, LeaderEntry, str]


class LoadCounts(Protocol):
    """What the views read of a planning run (PlanContext has it), so this module does not
    import context.py, which imports it. Counts are defaultdicts: a missing key reads 0."""

    @property
    def eligible(self) -> Sequence[int]: ...
    @property
    def use_bytes(self) -> bool: ...
    @property
    def tiebreak(self) -> Mapping[int, int]: ...
    @property
    def topic_replicas(self) -> Mapping[str, Mapping[int, int]]: ...
    @property
    def topic_leaders(self) -> Mapping[str, Mapping[int, int]]: ...
    @property
    def topic_rack_leaders(self) -> Mapping[str, Mapping[str, int]]: ...
    @property
    def cluster_replicas(self) -> Mapping[int, int]: ...
    @property
    def cluster_leaders(self) -> Mapping[int, int]: ...
    @property
    def cluster_bytes(self) -> Mapping[int, int]: ...
    def rack(self, broker: int) -> str: ...
    def rank(self, broker: int) -> int: ...


class ReplicaOrder:
    """The eligible brokers of one topic in pick_new_replica's load order."""

    __slots__ = ("entries", "entry_of", "racks", "ring", "topic")

    def __init__(self, ctx: LoadCounts, topic: str) -> None:
        self.topic = topic
        self.ring = len(ctx.tiebreak)
        self.entry_of: dict[int, ReplicaEntry] = {b: self.entry(ctx, b) for b in ctx.eligible}
        self.entries: list[ReplicaEntry] = sorted(self.entry_of.values())
        # every rack (key) an eligible broker is on: when a partition uses all of them, no
        # fresh rack is left and the first broker in load order wins
        self.racks = frozenset(ctx.rack(b) for b in ctx.eligible)

    def entry(self, ctx: LoadCounts, b: int) -> ReplicaEntry:
        return (
            ctx.topic_replicas[self.topic][b],
            ctx.cluster_replicas[b],
            ctx.cluster_bytes[b] if ctx.use_bytes else 0,
            ctx.tiebreak[b],
            b,
        )

    def update(self, ctx: LoadCounts, b: int) -> None:
        old = self.entry_of.get(b)
        if old is None:  # not eligible: never picked
            return
        new = self.entry(ctx, b)
        if new != old:
            entries = self.entries
            del entries[bisect_left(entries, old)]
            insort(entries, new)
            self.entry_of[b] = new


class LeaderOrder:
    """The eligible brokers of one topic in pick_leader's order: the best leads heads[0].

    Within a rack the rack's leader count is the same for all, so each rack list is sorted
    without it; the heads (one per rack) put it back in second place."""

    __slots__ = ("by_rack", "entry_of", "head_of", "heads", "rack_of", "topic")

    def __init__(self, ctx: LoadCounts, topic: str) -> None:
        self.topic = topic
        self.rack_of = {b: ctx.rack(b) for b in ctx.eligible}
        self.entry_of: dict[int, LeaderEntry] = {b: self.entry(ctx, b) for b in ctx.eligible}
        self.by_rack: dict[str, list[LeaderEntry]] = {}
        for b, e in self.entry_of.items():
            self.by_rack.setdefault(self.rack_of[b], []).append(e)
        self.head_of: dict[str, RackHead] = {}
        for rack, entries in self.by_rack.items():
            entries.sort()
            self.head_of[rack] = self._head(ctx, rack)
        self.heads: list[RackHead] = sorted(self.head_of.values())

    def entry(self, ctx: LoadCounts, b: int) -> LeaderEntry:
        return (
            ctx.topic_leaders[self.topic][b],
            ctx.topic_replicas[self.topic][b],
            ctx.cluster_leaders[b],
            ctx.cluster_replicas[b],
            ctx.cluster_bytes[b] if ctx.use_bytes else 0,
            ctx.rank(b),
            b,
        )

    def _head(self, ctx: LoadCounts, rack: str) -> RackHead:
        first = self.by_rack[rack][0]
        return (first[0], ctx.topic_rack_leaders[self.topic][rack], first, rack)

    def best(self) -> int | None:
        return self.heads[0][2][-1] if self.heads else None

    def update(self, ctx: LoadCounts, b: int) -> None:
        old = self.entry_of.get(b)
        if old is None:
            return
        new = self.entry(ctx, b)
        if new != old:
            rack = self.rack_of[b]
            entries = self.by_rack[rack]
            del entries[bisect_left(entries, old)]
            insort(entries, new)
            self.entry_of[b] = new
            if entries[0] is new or self.head_of[rack][2] is old:
                self.update_rack(ctx, rack)

    def update_rack(self, ctx: LoadCounts, rack: str) -> None:
        old = self.head_of.get(rack)
        if old is None:  # no eligible broker on it
            return
        new = self._head(ctx, rack)
        if new != old:
            heads = self.heads
            del heads[bisect_left(heads, old)]
            insort(heads, new)
            self.head_of[rack] = new


class BrokerOrder:
    """Brokers sorted by `rank_of` (unique: it ends in the broker's tie-break rank), one broker
    re-sorted at a time as a move changes its counts: a broker operation's "fullest first" or
    "emptiest first" without a sort per move."""

    __slots__ = ("entries", "entry", "rank_of")

    def __init__(self, brokers: Iterable[int], rank_of: Callable[[int], tuple[int, ...]]):
        self.rank_of = rank_of
        self.entry = {b: (*rank_of(b), b) for b in brokers}
        self.entries = sorted(self.entry.values())

    def brokers(self) -> Iterator[int]:
        return (e[-1] for e in self.entries)

    def first(self) -> tuple[int, ...]:
        """The front's rank (without the broker id); the order must not be empty."""
        return self.entries[0][:-1]

    def update(self, broker: int) -> None:
        old = self.entry[broker]
        new = (*self.rank_of(broker), broker)
        if new != old:
            del self.entries[bisect_left(self.entries, old)]
            insort(self.entries, new)
            self.entry[broker] = new


Key = tuple[str, int]


class KeysByBroker:
    """Each broker's partitions (of `keys`) by (weight, key), kept current by `move`: a search
    for a move from one broker reads that broker's partitions in the order it prefers them
    (by size), not every partition of the cluster per move. Beside each broker's keys, their
    weights in the same order: a search by weight bisects those ints (`first_at`), with no
    key function called per probe."""

    __slots__ = ("of", "weight", "weights")

    def __init__(
        self,
        work: Mapping[Key, Sequence[int]],
        keys: Iterable[Key],
        weight: Callable[[Key], int],
    ) -> None:
        self.weight = weight
        of: dict[int, list[Key]] = {}
        self.of = of
        weights: dict[int, list[int]] = {}
        self.weights = weights
        for k in keys:
            for b in work[k]:
                held = of.get(b)
                if held is None:
                    held = of[b] = []
                held.append(k)
        for b, held in of.items():
            pairs = sorted((weight(k), k) for k in held)
            held[:] = [k for _, k in pairs]
            weights[b] = [w for w, _ in pairs]

    def keys(self, broker: int) -> list[Key]:
        """The broker's partitions, in order; read only."""
        return self.of.get(broker, [])

    def first_at(self, broker: int, weight: int, lo: int = 0, hi: int | None = None) -> int:
        """The index in keys(broker) of the first partition of `weight` or more (in lo..hi)."""
        ws = self.weights.get(broker, [])
        return bisect_left(ws, weight, lo, len(ws) if hi is None else hi)

    def _place(self, broker: int, key: Key) -> int:
        """Where the key is, or goes, in the broker's order."""
        ws = self.weights.setdefault(broker, [])
        w = self.weight(key)
        lo = bisect_left(ws, w)
        return bisect_left(self.of.setdefault(broker, []), key, lo, bisect_right(ws, w, lo))

    def move(self, key: Key, src: int, dst: int) -> None:
        """The partition's replica on `src` moves to `dst`."""
        self.drop(key, (src,))
        i = self._place(dst, key)
        self.of[dst].insert(i, key)
        self.weights[dst].insert(i, self.weight(key))

    def drop(self, key: Key, brokers: Iterable[int]) -> None:
        """Forget the partition (on `brokers`, where it is)."""
        for b in brokers:
            i = self._place(b, key)
            del self.of[b][i]
            del self.weights[b][i]


class RowsByBroker:
    """KeysByBroker on columns (column_run.py): the replicas of `rows` on the indexed
    brokers, each broker's by (weight, row), as one sorted array sliced per broker (the
    numpy arrays are built once; no list per broker). A replica that leaves its broker is
    dropped (`drop`); none arrives, so add-brokers' sources, which only lose replicas, are
    what it serves."""

    __slots__ = ("bounds", "first", "gone", "rows", "weights")

    def __init__(self, work: Any, rows: Any, weight: Any, indexed: Any) -> None:
        """`work`: replicas per row (dense broker indexes, -1 pads); `weight` per row of
        the columns; `indexed`: a mask of the brokers to index."""
        import numpy as np

        reps = work[rows]
        held = (reps >= 0) & indexed[np.maximum(reps, 0)]
        # each row's place in (weight, row) order (rows ascend: a stable sort by weight),
        # then the replicas by (broker, that place), one int64 key each
        n = max(len(rows), 1)
        order = np.argsort(weight[rows], kind="stable")
        place = np.empty(len(rows), dtype=np.int64)
        place[order] = np.arange(len(rows))
        key = reps[held] * n + np.broadcast_to(place[:, None], reps.shape)[held]
        key.sort()
        self.rows = rows[order][key % n]
        self.weights = weight[self.rows]
        nb = len(indexed)
        self.bounds = np.searchsorted(key // n, np.arange(nb + 1)).tolist()
        self.first = self.bounds[:-1]  # per broker: where its rows not dropped start
        self.gone: dict[int, set[int]] = {}

    def span(self, broker: int) -> tuple[int, int]:
        """The broker's slice of `rows` / `weights`, from its first row not dropped (later
        dropped ones are still in it: see `gone`)."""
        return self.first[broker], self.bounds[broker + 1]

    def drop(self, broker: int, row: int) -> None:
        gone = self.gone.setdefault(broker, set())
        gone.add(row)
        i, end, rows = self.first[broker], self.bounds[broker + 1], self.rows
        while i < end and int(rows[i]) in gone:  # a greedy drops from the front mostly
            i += 1
        self.first[broker] = i
