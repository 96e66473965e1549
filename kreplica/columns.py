"""The columnar cluster model: one array per partition field instead of one object per partition.

A million-partition snapshot as `Partition` objects costs seconds to build and a gigabyte to
hold; as arrays it costs a few C-level passes over the parsed JSON. `PartitionColumns` holds
every partition of a snapshot, rows sorted by (topic name, partition id) like the object
model, and `ColumnarSnapshot` is a `ClusterSnapshot` whose topics are built from the arrays
only when something asks for them (the array planner never does; every other reader gets the
same objects the plain parser gives).

Pure and deterministic; numpy is imported here, and this module is imported only where a
snapshot is read, so `kreplica --help` never loads it.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, pairwise, repeat
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from kreplica.model import (
    Broker,
    ClusterSnapshot,
    Partition,
    PartitionChange,
    Topic,
    TrafficWindow,
)

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]

PAD = -1  # an empty slot of the replica matrix (broker ids are >= 0 here)
NO_LEADER = np.iinfo(np.int64).min  # `leader` None (unknown); -1 stays "offline"
NO_SIZE = -1  # `size_bytes` None
# isr None / equal to replicas / see isr_other: another set, or (ISR_REORDERED) every replica
# in another order (brokers report it sorted): in sync, as ISR_SAME, for the planner
ISR_NONE, ISR_SAME, ISR_OTHER, ISR_REORDERED = 0, 1, 2, 3

_MISSING = ()  # dict.get default for keys that must be absent or an empty list
_NONE = type(None)
_INT32_MAX = np.iinfo(np.int32).max


@dataclass(frozen=True, eq=False)
class PartitionColumns:
    """Every partition of a snapshot, one row each, sorted by (topic, partition id).

    topics: topic shells (name, configs, min.insync.replicas; no partitions), sorted by name;
    start[i]:start[i+1] are topic i's rows. replicas: broker ids, preferred leader first,
    padded with PAD; rf: replicas per row. leader: NO_LEADER when unknown. isr_kind per row
    (ISR_NONE, ISR_SAME, ISR_OTHER, ISR_REORDERED; the other lists in isr_other by row). size:
    NO_SIZE when
    unknown. copy_size: the bytes a new replica copies (the leader's own log) when a live read
    knows it per replica; None: `size`."""

    topics: tuple[Topic, ...]
    start: I64
    partition: I64
    replicas: I32
    rf: I64
    leader: I64
    isr_kind: npt.NDArray[np.int8]
    isr_other: dict[int, tuple[int, ...]]
    size: I64
    copy_size: I64 | None = None

    @property
    def rows(self) -> int:
        return int(self.partition.shape[0])

    def topic_of_rows(self) -> I64:
        """Each row's topic index."""
        counts = np.diff(self.start)
        return np.repeat(np.arange(len(self.topics), dtype=np.int64), counts)

    def materialise(self, i: int) -> Topic:
        """Topic i as the object model has it (the same values the plain parser gives)."""
        shell = self.topics[i]
        lo, hi = int(self.start[i]), int(self.start[i + 1])
        rows = self.replicas[lo:hi].tolist()
        rfs = self.rf[lo:hi].tolist()
        pids = self.partition[lo:hi].tolist()
        leaders = self.leader[lo:hi].tolist()
        kinds = self.isr_kind[lo:hi].tolist()
        sizes = self.size[lo:hi].tolist()
        shared: dict[tuple[int, ...], tuple[int, ...]] = {}
        parts = []
        for j in range(hi - lo):
            reps = tuple(rows[j][: rfs[j]])
            reps = shared.setdefault(reps, reps)
            kind = kinds[j]
            isr = reps if kind == ISR_SAME else None
            if kind in (ISR_OTHER, ISR_REORDERED):
                isr = self.isr_other[lo + j]
            leader = leaders[j]
            size = sizes[j]
            parts.append(
                Partition(
                    shell.name,
                    pids[j],
                    reps,
                    leader=None if leader == NO_LEADER else leader,
                    isr=isr,
                    size_bytes=None if size == NO_SIZE else size,
                )
            )
        return Topic(
            name=shell.name,
            partitions=tuple(parts),
            configs=shell.configs,
            effective_min_isr=shell.effective_min_isr,
            min_isr_source=shell.min_isr_source,
        )


def _types(values: Sequence[Any]) -> set[type]:
    return set(map(type, values))


def build_columns(topics: Sequence[tuple[Topic, Any]]) -> PartitionColumns | None:
    """The columns of `topics`, or None (see _build); an id too large for the arrays is
    unusual too."""
    try:
        return _build(topics)
    except (OverflowError, ValueError):
        return None


def _build(topics: Sequence[tuple[Topic, Any]]) -> PartitionColumns | None:
    """The columns of `topics` (each a shell and its raw partition list, as parsed JSON), or
    None when any partition is not of the plain, well-formed kind (wrong types, negative
    ids, a broker twice, no replicas, a partition id twice, in flight, per-replica dirs or
    sizes): the caller then reads the snapshot object by object, with its exact checks and
    messages. Every check here is a C-level pass over all partitions at once."""
    counts = [len(raw) if type(raw) is list else -1 for _, raw in topics]
    if any(c < 0 for c in counts):
        return None
    parts: list[Any] = list(chain.from_iterable(raw for _, raw in topics))
    n = len(parts)
    if n and _types(parts) != {dict}:
        return None

    def field(key: str, default: Any = None) -> list[Any]:
        return list(map(dict.get, parts, repeat(key), repeat(default)))

    pids = field("partition")
    reps = field("replicas")
    if n and (_types(pids) != {int} or _types(reps) != {list}):
        return None
    for key in ("adding_replicas", "removing_replicas"):
        values = field(key, _MISSING)
        if n and (not _types(values) <= {list, tuple} or any(values)):
            return None  # in flight, or not a list
    per_replica = [field(key) for key in ("replica_dirs", "replica_sizes")]
    if n and any(_types(values) != {_NONE} for values in per_replica):
        if not _per_replica_ok(reps, *per_replica):
            return None
    else:
        per_replica = []
    lens = np.fromiter(map(len, reps), dtype=np.int64, count=n)
    if n and int(lens.min()) == 0:
        return None
    flat = list(chain.from_iterable(reps))
    if flat and _types(flat) != {int}:
        return None
    flat_arr = np.array(flat, dtype=np.int64) if flat else np.zeros(0, dtype=np.int64)
    if flat_arr.size and (int(flat_arr.min()) < 0 or int(flat_arr.max()) > _INT32_MAX):
        return None
    width = int(lens.max()) if n else 1
    if n and int(lens.min()) == width:
        matrix = flat_arr.astype(np.int32).reshape(n, width)
    else:
        matrix = np.full((n, width), PAD, dtype=np.int32)
        row_of = np.repeat(np.arange(n), lens)
        offsets = np.repeat(np.cumsum(lens) - lens, lens)
        matrix[row_of, np.arange(flat_arr.size) - offsets] = flat_arr
    if width > 1 and n:
        ordered = np.sort(matrix, axis=1)
        if bool(((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] != PAD)).any()):
            return None  # a broker twice in one list
    if n and (min(pids) < 0 or max(pids) > _INT32_MAX):  # Kafka's partition ids are 32-bit
        return None
    pid_arr = np.array(pids, dtype=np.int64) if n else np.zeros(0, dtype=np.int64)

    leaders = field("leader")
    kinds = _types(leaders)
    if not kinds <= {int, _NONE}:
        return None
    if _NONE in kinds:
        leaders = [NO_LEADER if x is None else x for x in leaders]
    if n and (min(leaders) < NO_LEADER or max(leaders) > _INT32_MAX):
        return None
    leader_arr = np.array(leaders, dtype=np.int64) if n else np.zeros(0, dtype=np.int64)
    if n and bool(((leader_arr < -1) & (leader_arr != NO_LEADER)).any()):
        return None  # a leader is a broker id, or -1 (none)

    sizes = field("size_bytes")
    kinds = _types(sizes)
    if not kinds <= {int, _NONE}:
        return None
    if _NONE in kinds:
        if any(x < 0 for x in sizes if x is not None):
            return None
        sizes = [NO_SIZE if x is None else x for x in sizes]
    size_arr = np.array(sizes, dtype=np.int64) if n else np.zeros(0, dtype=np.int64)
    if _NONE not in kinds and n and int(size_arr.min()) < 0:
        return None
    copy_arr = None
    if per_replica:  # disk.copy_size: the current leader's own log when listed
        copy_arr = size_arr.copy()
        for i, (own, reps_i, lead) in enumerate(zip(per_replica[1], reps, leaders, strict=True)):
            if own is None:
                continue
            now = reps_i[0] if lead == NO_LEADER else lead
            if now >= 0 and now in reps_i and own[reps_i.index(now)] is not None:
                copy_arr[i] = own[reps_i.index(now)]

    isrs = field("isr")
    if not _types(isrs) <= {list, _NONE}:
        return None
    same = np.fromiter(map(operator.eq, isrs, reps), dtype=bool, count=n)
    isr_kind = np.where(same, ISR_SAME, ISR_NONE).astype(np.int8)
    other_raw: dict[int, tuple[int, ...]] = {}
    for i in np.flatnonzero(~same).tolist():
        value = isrs[i]
        if value is None:
            continue
        if value and (_types(value) != {int} or min(value) < 0 or max(value) > _INT32_MAX):
            return None
        other_raw[i] = tuple(value)
        reordered = len(value) == len(reps[i]) and sorted(value) == sorted(reps[i])
        isr_kind[i] = ISR_REORDERED if reordered else ISR_OTHER

    # rows sorted by (topic name, partition id), as the object model sorts them
    name_rank = {name: r for r, name in enumerate(sorted(s.name for s, _ in topics))}
    if len(name_rank) != len(topics):
        return None
    rank_of_file = np.array([name_rank[s.name] for s, _ in topics], dtype=np.int64)
    topic_row = np.repeat(rank_of_file, np.array(counts, dtype=np.int64))
    order = np.lexsort((pid_arr, topic_row))
    topic_sorted = topic_row[order]
    pid_sorted = pid_arr[order]
    if n > 1 and bool(
        ((topic_sorted[1:] == topic_sorted[:-1]) & (pid_sorted[1:] == pid_sorted[:-1])).any()
    ):
        return None  # a partition id twice in one topic
    shells = tuple(sorted((s for s, _ in topics), key=lambda s: s.name))
    by_rank = np.bincount(topic_row, minlength=len(shells)) if n else np.zeros(len(shells), int)
    start = np.concatenate([[0], np.cumsum(by_rank)]).astype(np.int64)
    isr_other: dict[int, tuple[int, ...]] = {}
    if other_raw:
        new_row = np.empty(n, dtype=np.int64)
        new_row[order] = np.arange(n)
        isr_other = {int(new_row[i]): v for i, v in other_raw.items()}
    return PartitionColumns(
        topics=shells,
        start=start,
        partition=pid_sorted,
        replicas=matrix[order],
        rf=lens[order],
        leader=leader_arr[order],
        isr_kind=isr_kind[order],
        isr_other=isr_other,
        size=size_arr[order],
        copy_size=None if copy_arr is None else copy_arr[order],
    )


def concat_columns(parts: Sequence[PartitionColumns]) -> PartitionColumns | None:
    """The columns of several disjoint sets of topics (a snapshot read a chunk of topics at
    a time) as one, rows in (topic name, partition id) order; None when a topic name comes
    twice or a part has per-replica sizes (those stay with their JSON: the caller reads the
    file whole)."""
    if any(p.copy_size is not None for p in parts):
        return None
    shells = [t for p in parts for t in p.topics]
    names = [t.name for t in shells]
    if len(set(names)) != len(names):
        return None
    offsets = np.cumsum([0] + [p.rows for p in parts])
    # each topic's first row and row count in the parts laid end to end
    first = np.concatenate(
        [p.start[:-1] + off for p, off in zip(parts, offsets[:-1].tolist(), strict=True)]
        or [np.zeros(0, dtype=np.int64)]
    )
    count = np.concatenate([np.diff(p.start) for p in parts] or [np.zeros(0, dtype=np.int64)])
    order = sorted(range(len(shells)), key=names.__getitem__)
    lengths = count[order]
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    rows = np.repeat(first[order] - starts[:-1], lengths) + np.arange(int(starts[-1]))
    width = max((p.replicas.shape[1] for p in parts), default=1)
    replicas = np.full((int(offsets[-1]), width), PAD, dtype=np.int32)
    for p, off in zip(parts, offsets[:-1].tolist(), strict=True):
        replicas[off : off + p.rows, : p.replicas.shape[1]] = p.replicas
    new_row = np.empty(len(rows), dtype=np.int64)
    new_row[rows] = np.arange(len(rows))
    isr_other = {
        int(new_row[off + r]): v
        for p, off in zip(parts, offsets[:-1].tolist(), strict=True)
        for r, v in p.isr_other.items()
    }

    def joined(field: str) -> npt.NDArray[Any]:
        out: npt.NDArray[Any] = np.concatenate([getattr(p, field) for p in parts])[rows]
        return out

    return PartitionColumns(
        topics=tuple(shells[i] for i in order),
        start=starts,
        partition=joined("partition"),
        replicas=replicas[rows],
        rf=joined("rf"),
        leader=joined("leader"),
        isr_kind=joined("isr_kind"),
        isr_other=isr_other,
        size=joined("size"),
    )


def _per_replica_ok(reps: list[Any], dirs: list[Any], sizes: list[Any]) -> bool:
    """Every replica_dirs / replica_sizes entry as the object parser accepts it: null, or
    one entry per replica, a non-empty path / a size >= 0 or null (anything else: the
    object parser reads the file and names the problem)."""
    for i, replicas in enumerate(reps):
        d, z = dirs[i], sizes[i]
        if d is not None:
            if type(d) is not list or len(d) != len(replicas):
                return False
            if any(v is not None and (type(v) is not str or not v) for v in d):
                return False
        if z is not None:
            if type(z) is not list or len(z) != len(replicas):
                return False
            if any(v is not None and (type(v) is not int or v < 0) for v in z):
                return False
    return True


def live_columns(
    shells: Sequence[Topic],
    counts: Sequence[int],
    pids: Sequence[int],
    replicas: Sequence[Sequence[int]],
    leaders: Sequence[int],
    isrs: Sequence[Sequence[int]],
    sizes: I64 | None = None,
    copy_sizes: I64 | None = None,
) -> PartitionColumns | None:
    """The columns of what a live source read: rows already in (topic name, partition id)
    order, `counts[i]` of them for `shells[i]` (sorted by name), a leader (-1: offline) and
    an ISR each. A row is in sync (ISR_SAME, or ISR_REORDERED) when its ISR holds every
    replica (brokers report it sorted). `sizes` per row (NO_SIZE unknown), `copy_sizes` the bytes a
    new replica copies. None when a row is unusual (no replicas, a broker twice, an id out of
    range, a partition id twice): the caller builds objects."""
    n = len(pids)
    if sum(counts) != n or any(a.name >= b.name for a, b in pairwise(shells)):
        return None
    try:
        lens = np.fromiter(map(len, replicas), dtype=np.int64, count=n)
        if n and int(lens.min()) == 0:
            return None
        flat = np.fromiter(chain.from_iterable(replicas), dtype=np.int64, count=int(lens.sum()))
        pid_arr = np.fromiter(pids, dtype=np.int64, count=n)
        leader_arr = np.fromiter(leaders, dtype=np.int64, count=n)
    except (OverflowError, TypeError, ValueError):
        return None
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) > _INT32_MAX):
        return None
    if n and int(pid_arr.min()) < 0:
        return None
    width = int(lens.max()) if n else 1
    matrix = _ragged(flat, lens, width).astype(np.int32)
    ordered = np.sort(matrix, axis=1)
    if (
        width > 1
        and n
        and bool(((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] != PAD)).any())
    ):
        return None  # a broker twice in one list
    start = np.concatenate([[0], np.cumsum(np.asarray(counts, dtype=np.int64))]).astype(np.int64)
    topic_row = np.repeat(np.arange(len(shells)), np.asarray(counts, dtype=np.int64))
    if n > 1:
        same_topic = topic_row[1:] == topic_row[:-1]
        if bool((same_topic & (pid_arr[1:] <= pid_arr[:-1])).any()):
            return None  # not in order, or a partition id twice
    # in sync: as many ISR members as replicas, the same brokers (sorted rows compared)
    try:
        isr_lens = np.fromiter(map(len, isrs), dtype=np.int64, count=n)
        isr_flat = np.fromiter(chain.from_iterable(isrs), dtype=np.int64, count=int(isr_lens.sum()))
    except (OverflowError, TypeError, ValueError):
        return None
    wide = max(width, int(isr_lens.max()) if n else 0)
    isr_matrix = _ragged(isr_flat, isr_lens, wide)
    exact = (isr_lens == lens) & (isr_matrix[:, :width] == matrix).all(axis=1)
    # PAD sorts first: the extra columns of a wider ISR matrix are PAD where lengths match
    isr_sorted = np.sort(isr_matrix, axis=1)[:, wide - width :]
    same = (isr_lens == lens) & (isr_sorted == ordered).all(axis=1)
    isr_kind = np.where(exact, ISR_SAME, np.where(same, ISR_REORDERED, ISR_OTHER)).astype(np.int8)
    isr_other = {i: tuple(isrs[i]) for i in np.flatnonzero(~exact).tolist()}
    size = np.full(n, NO_SIZE, dtype=np.int64) if sizes is None else sizes
    return PartitionColumns(
        topics=tuple(shells),
        start=start,
        partition=pid_arr,
        replicas=matrix,
        rf=lens,
        leader=leader_arr,
        isr_kind=isr_kind,
        isr_other=isr_other,
        size=size,
        copy_size=copy_sizes,
    )


def _ragged(flat: I64, lens: I64, width: int) -> I64:
    """Rows of lengths `lens` laid end to end in `flat`, as a (rows, width) matrix padded
    with PAD."""
    n = len(lens)
    if n and int(lens.min()) == width:
        out: I64 = flat.reshape(n, width)
        return out
    matrix = np.full((n, width), PAD, dtype=np.int64)
    row_of = np.repeat(np.arange(n), lens)
    offsets = np.repeat(np.cumsum(lens) - lens, lens)
    matrix[row_of, np.arange(flat.size) - offsets] = flat
    return matrix


def columns_fingerprint(brokers: Sequence[Broker], columns: PartitionColumns) -> str:
    """ClusterSnapshot.fingerprint, byte for byte, hashed from the arrays: the same JSON text
    (`{"brokers":[[id,rack],...],"topics":[[name,[[partition,[replicas]],...]],...]}`) fed
    to sha256 a topic at a time, each topic's rows written by orjson from one int matrix."""
    import orjson

    h = hashlib.sha256()
    dumps = json.dumps
    h.update(b'{"brokers":')
    h.update(dumps([[b.id, b.rack] for b in brokers], separators=(",", ":")).encode())
    h.update(b',"topics":[')
    # rows as [partition,-7,replica,...]: the marker, never a broker id, opens the inner list
    n = columns.rows
    table = np.empty((n, columns.replicas.shape[1] + 2), dtype=np.int64)
    table[:, 0] = columns.partition
    table[:, 1] = -7
    table[:, 2:] = columns.replicas
    start = columns.start.tolist()
    for i, shell in enumerate(columns.topics):
        if i:
            h.update(b",")
        h.update(b"[" + dumps(shell.name).encode() + b",")
        lo, hi = start[i], start[i + 1]
        if lo == hi:
            h.update(b"[]]")
            continue
        text = orjson.dumps(table[lo:hi], option=orjson.OPT_SERIALIZE_NUMPY)
        text = text.replace(b",-1", b"")  # padding (ids are >= 0)
        text = text.replace(b",-7,", b",[").replace(b"],[", b"]],[")
        h.update(text[:-2] + b"]]]]")
    h.update(b"]}")
    return h.hexdigest()[:16]


_TOPICS = ClusterSnapshot.__dict__["topics"]  # the dataclass slot under the property below


class ColumnarSnapshot(ClusterSnapshot):
    """A ClusterSnapshot read into columns: `topics` is built from them on first access (the
    same objects the plain parser builds), `columns` serves the array planner. Constructed
    with `topics` (dataclasses.replace does that), it is an ordinary snapshot. `maker`
    builds topic i instead of the columns (a live source: the objects its plain read gives,
    with what the columns do not hold, such as each replica's log dir)."""

    __slots__ = ("columns", "maker")
    columns: PartitionColumns | None
    maker: Callable[[int], Topic] | None

    def __init__(
        self,
        brokers: tuple[Broker, ...],
        topics: tuple[Topic, ...] | None = None,
        cluster_id: str | None = None,
        source: str | None = None,
        captured_at: str | None = None,
        *,
        columns: PartitionColumns | None = None,
        maker: Callable[[int], Topic] | None = None,
        traffic: TrafficWindow | None = None,
    ) -> None:
        object.__setattr__(self, "brokers", brokers)
        object.__setattr__(self, "traffic", traffic)
        object.__setattr__(self, "cluster_id", cluster_id)
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "captured_at", captured_at)
        object.__setattr__(self, "columns", columns if topics is None else None)
        object.__setattr__(self, "maker", maker if topics is None else None)
        if topics is not None:
            _TOPICS.__set__(self, topics)
        elif columns is None:
            raise ValueError("a ColumnarSnapshot needs topics or columns")

    @property
    def topics(self) -> tuple[Topic, ...]:
        try:
            value: tuple[Topic, ...] = _TOPICS.__get__(self)
        except AttributeError:
            columns = self.columns
            assert columns is not None
            make = self.maker or columns.materialise
            value = tuple(make(i) for i in range(len(columns.topics)))
            _TOPICS.__set__(self, value)
        return value

    @property
    def materialised(self) -> bool:
        """Whether `topics` was built (a test checks the array path never builds it)."""
        try:
            _TOPICS.__get__(self)
        except AttributeError:
            return False
        return True

    def topic_names(self) -> list[str]:
        if self.columns is not None:
            return [t.name for t in self.columns.topics]
        return [t.name for t in self.topics]

    def replication_factors(self) -> dict[str, int]:
        """Each topic's Topic.replication_factor (partition 0's replicas; 0 without
        partitions), from the columns when no topic was built."""
        columns = self.columns
        if columns is None or self.materialised:
            return {t.name: t.replication_factor for t in self.topics}
        start = columns.start.tolist()
        rf = columns.rf.tolist()
        return {
            shell.name: rf[start[i]] if start[i] < start[i + 1] else 0
            for i, shell in enumerate(columns.topics)
        }

    def partition_counts(self) -> dict[str, int]:
        """Partitions per topic name, from the columns when no topic was built."""
        columns = self.columns
        if columns is None or self.materialised:
            return super().partition_counts()
        counts = np.diff(columns.start).tolist()
        return {shell.name: n for shell, n in zip(columns.topics, counts, strict=True)}

    def topic(self, name: str) -> Topic:
        columns = self.columns
        if columns is not None and not self.materialised:
            for i, shell in enumerate(columns.topics):
                if shell.name == name:
                    return (self.maker or columns.materialise)(i)
        return super().topic(name)

    def fingerprint(self) -> str:
        if self.columns is not None:
            return columns_fingerprint(self.brokers, self.columns)
        return super().fingerprint()


class ArrayChanges(Sequence[PartitionChange]):
    """Plan.changes backed by arrays: the changed rows of a snapshot's columns and their
    replicas after, PartitionChange objects made only for the items read. The plan writers
    (planner/serialize.py) read the arrays instead (`columnar`)."""

    columnar = True

    def __init__(self, columns: PartitionColumns, rows: I64, after: I32, rf: I64) -> None:
        self.columns = columns
        self.rows = rows  # into the columns, ascending: sorted by (topic, partition)
        self.after = after  # broker ids, PAD-padded
        self.rf = rf  # replicas after, per row
        self.topic_index: I64 = np.searchsorted(columns.start, rows, side="right") - 1

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, i: int) -> PartitionChange: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[PartitionChange]: ...

    def __getitem__(self, i: int | slice) -> PartitionChange | Sequence[PartitionChange]:
        if isinstance(i, slice):
            return [self._change(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._change(i)

    def __iter__(self) -> Iterator[PartitionChange]:
        for lo in range(0, len(self), 4096):  # array reads a block at a time
            yield from self._block(lo, min(len(self), lo + 4096))

    def _change(self, i: int) -> PartitionChange:
        return self._block(i, i + 1)[0]

    def _block(self, lo: int, hi: int) -> list[PartitionChange]:
        c = self.columns
        rows = self.rows[lo:hi]
        names = [c.topics[t].name for t in self.topic_index[lo:hi].tolist()]
        pids = c.partition[rows].tolist()
        before = c.replicas[rows].tolist()
        rf0 = c.rf[rows].tolist()
        after = self.after[lo:hi].tolist()
        rf1 = self.rf[lo:hi].tolist()
        sizes = c.size[rows].tolist()
        leaders = c.leader[rows].tolist()
        out = []
        for j in range(len(names)):
            size = sizes[j]
            leader = leaders[j]  # leader_now: the recorded leader when it leads (>= 0)
            out.append(
                PartitionChange(
                    names[j],
                    pids[j],
                    tuple(before[j][: rf0[j]]),
                    tuple(after[j][: rf1[j]]),
                    None if size == NO_SIZE else size,
                    leader if leader != NO_LEADER and leader >= 0 else None,
                )
            )
        return out

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]
