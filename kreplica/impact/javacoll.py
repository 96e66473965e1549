"""Iteration order of ``java.util.HashMap`` / ``HashSet`` (Java 8+), where an assignor's result
depends on it.

A HashMap iterates bucket by bucket (bucket = spread hash & (capacity - 1)); inside a bucket in
the order the keys went in (resizes split buckets keeping that order, removals unlink). So the
order is fully given by the capacity and each present key's insertion sequence, which is what
this models, with Java's capacity rules (lazy table, ``new HashMap<>(n)``, load factor 0.75,
a small table doubling instead of treeifying). A bucket that would become a red-black tree
(9 colliding keys in a table of 64 or more) iterates differently: refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from kreplica.errors import NotImplementedYet
from kreplica.kafka.javalang import java_string_hash

TopicPartition = tuple[str, int]
K = TypeVar("K", str, TopicPartition)
V = TypeVar("V")

_INT = 0xFFFFFFFF
_MAX_CAPACITY = 1 << 30


def string_hash(text: str) -> int:
    """``String.hashCode`` as an unsigned 32-bit value (the bits HashMap spreads)."""
    return java_string_hash(text) & _INT


def key_hash(key: str | TopicPartition) -> int:
    if isinstance(key, str):
        return string_hash(key)
    topic, partition = key  # TopicPartition.hashCode
    return (31 * ((31 + partition) & _INT) + string_hash(topic)) & _INT


def table_size_for(capacity: int) -> int:
    if capacity <= 1:
        return 1
    return min(1 << (capacity - 1).bit_length(), _MAX_CAPACITY)


class JavaHashMap(Generic[K, V]):
    def __init__(self, initial_capacity: int | None = None) -> None:
        self._entries: dict[K, tuple[V, int, int]] = {}  # key -> (value, spread hash, seq)
        self._seq = 0
        self._capacity = 0
        self._threshold = 0 if initial_capacity is None else table_size_for(initial_capacity)

    def _resize(self) -> None:
        old_cap, old_thr = self._capacity, self._threshold
        new_thr = 0
        if old_cap > 0:
            new_cap = old_cap * 2
            if old_cap >= 16:
                new_thr = old_thr * 2
        elif old_thr > 0:
            new_cap = old_thr
        else:
            new_cap, new_thr = 16, 12
        if new_thr == 0:
            new_thr = int(new_cap * 0.75)
        self._capacity, self._threshold = new_cap, new_thr

    def put(self, key: K, value: V) -> None:
        if key in self._entries:
            _old, spread, seq = self._entries[key]
            self._entries[key] = (value, spread, seq)
            return
        if self._capacity == 0:
            self._resize()
        h = key_hash(key)
        spread = h ^ (h >> 16)
        mask = self._capacity - 1
        in_bin = sum(1 for _v, s, _q in self._entries.values() if s & mask == spread & mask)
        self._entries[key] = (value, spread, self._seq)
        self._seq += 1
        if in_bin >= 8:  # TREEIFY_THRESHOLD: treeifyBin
            if self._capacity < 64:
                self._resize()
            else:
                raise NotImplementedYet(
                    "java.util.HashMap order with 9 or more keys in one bucket (a tree bin) "
                    "is not modelled"
                )
        if len(self._entries) > self._threshold:
            self._resize()

    def compute_if_absent(self, key: K, make: Callable[[], V]) -> V:
        """``computeIfAbsent``: unlike put, it resizes before (not after) inserting and puts a
        new key at the head of its bucket, not the tail."""
        if len(self._entries) > self._threshold or self._capacity == 0:
            self._resize()
        if key in self._entries:
            return self._entries[key][0]
        h = key_hash(key)
        spread = h ^ (h >> 16)
        mask = self._capacity - 1
        in_bin = sum(1 for _v, s, _q in self._entries.values() if s & mask == spread & mask)
        value = make()
        self._seq += 1
        self._entries[key] = (value, spread, -self._seq)  # before every key now in its bucket
        if in_bin >= 7:  # TREEIFY_THRESHOLD - 1 counted over the bucket's keys
            if self._capacity < 64:
                self._resize()
            else:
                raise NotImplementedYet(
                    "java.util.HashMap order with 8 or more keys in one bucket (a tree bin) "
                    "is not modelled"
                )
        return value

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def __getitem__(self, key: K) -> V:
        return self._entries[key][0]

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def remove(self, key: K) -> V | None:
        entry = self._entries.pop(key, None)
        return None if entry is None else entry[0]

    def clear(self) -> None:
        self._entries.clear()

    def _order(self, key: K) -> tuple[int, int]:
        _value, spread, seq = self._entries[key]
        return spread & (self._capacity - 1), seq

    def keys(self) -> list[K]:
        return sorted(self._entries, key=self._order)

    def items(self) -> list[tuple[K, V]]:
        return [(k, self._entries[k][0]) for k in self.keys()]

    def __iter__(self) -> Iterator[K]:
        return iter(self.keys())

    def first(self) -> K:
        return min(self._entries, key=self._order)


class JavaHashSet(Generic[K]):
    """``HashSet``: a HashMap of its elements."""

    def __init__(self, initial_capacity: int | None = None) -> None:
        self._map: JavaHashMap[K, None] = JavaHashMap(initial_capacity)

    @classmethod
    def of(cls, items: Iterable[K], size: int) -> JavaHashSet[K]:
        """``new HashSet<>(collection)``."""
        result: JavaHashSet[K] = cls(max(int(size / 0.75) + 1, 16))
        for item in items:
            result.add(item)
        return result

    def add(self, item: K) -> None:
        self._map.put(item, None)

    def remove(self, item: K) -> None:
        self._map.remove(item)

    def __contains__(self, item: object) -> bool:
        return item in self._map

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self) -> Iterator[K]:
        return iter(self._map.keys())

    def first(self) -> K:
        return self._map.first()
