"""Java and Scala semantics the placers depend on: ``String.compareTo`` / ``hashCode`` and the
iteration orders of ``java.util.HashMap`` and Scala's ``LongMap`` (also used by kreplica.impact)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from kreplica.errors import NotImplementedYet

INT_MASK = 0xFFFFFFFF

_HashKey = TypeVar("_HashKey", int, str | None)


def to_int32(value: int) -> int:
    value &= INT_MASK
    return value - (1 << 32) if value & 0x80000000 else value


def _utf16_units(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def java_compare_strings(a: str, b: str) -> int:
    """``String.compareTo``: UTF-16 code units, case-sensitive (negative, zero or positive)."""
    ua, ub = _utf16_units(a), _utf16_units(b)
    return (ua > ub) - (ua < ub)


def java_sort_key(text: str) -> bytes:
    # Big-endian UTF-16 bytes compare exactly like Java's code-unit comparison.
    return _utf16_units(text)


def java_string_hash(text: str) -> int:
    """``String.hashCode`` (signed 32-bit)."""
    units = _utf16_units(text)
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & INT_MASK
    return to_int32(h)


def java_key_hash(key: int | str | None) -> int:
    if key is None:  # Optional.empty()
        return 0
    if isinstance(key, str):  # Optional.of(s).hashCode() == s.hashCode()
        return java_string_hash(key)
    return to_int32(key)  # Integer.hashCode


def java_hashmap_order(keys: Iterable[_HashKey]) -> list[_HashKey]:
    """Iteration order of a ``java.util.HashMap`` (default capacity) filled with ``keys``.

    Keys are ``Integer`` (ints) or ``Optional<String>`` (str, ``None`` = empty). Models
    resizes and the small-table resize that replaces treeification. A bin that would become a
    red-black tree (9 colliding keys in a table of 64+) raises NotImplementedYet.
    """
    capacity = 16
    entries: list[tuple[_HashKey, int]] = []  # insertion order; a bin keeps insertion order
    seen: set[_HashKey] = set()
    bin_sizes: dict[int, int] = {}  # bucket -> keys, for the current capacity
    for key in keys:
        if key in seen:
            continue
        h = java_key_hash(key) & INT_MASK
        spread = h ^ (h >> 16)
        bucket = spread & (capacity - 1)
        bin_size = bin_sizes.get(bucket, 0)
        entries.append((key, spread))
        seen.add(key)
        bin_sizes[bucket] = bin_size + 1
        old_capacity = capacity
        if bin_size >= 8:  # TREEIFY_THRESHOLD reached
            if capacity >= 64:
                # A red-black tree bin iterates in another order; refuse rather than guess.
                raise NotImplementedYet(
                    "java.util.HashMap order with 9 or more keys in one bucket (a tree bin) is "
                    "not modelled; use keys that spread over the table"
                )
            capacity *= 2  # treeifyBin on a small table resizes instead
        if len(entries) > capacity * 3 // 4:
            capacity *= 2
        if capacity != old_capacity:
            bin_sizes = {}
            for _, hashed in entries:
                bin_sizes[hashed & (capacity - 1)] = bin_sizes.get(hashed & (capacity - 1), 0) + 1
    order = sorted(range(len(entries)), key=lambda i: (entries[i][1] & (capacity - 1), i))
    return [entries[i][0] for i in order]


def scala_longmap_order(keys: Iterable[int], initial_buffer_size: int = 16) -> list[int]:
    """Iteration order of ``scala.collection.mutable.LongMap`` after ``update`` of each key.

    ZK-mode CreateTopics hands ``AdminUtils`` the alive brokers in this order
    (``ZkMetadataCache`` keeps them in ``new LongMap(previousAliveCount)``).
    """

    def mask_for(size: int) -> int:
        if size < 0:
            return 7
        # Java: (1 << (32 - numberOfLeadingZeros(n - 1))) - 1, where the shift is taken mod 32
        shift = ((size - 1) & INT_MASK).bit_length() % 32
        return (((1 << shift) - 1) & 0x3FFFFFFF) | 0x7

    mask = mask_for(initial_buffer_size)
    slots: list[int | None] = [None] * (mask + 1)
    size = 0
    has_zero = False
    has_min = False

    def to_index(key: int, table_mask: int) -> int:
        k = key & 0xFFFFFFFFFFFFFFFF
        h = to_int32((k ^ (k >> 32)) & INT_MASK)
        hu = h & INT_MASK
        x = ((hu ^ (hu >> 16)) * 0x85EBCA6B) & INT_MASK
        return (x ^ (x >> 13)) & table_mask

    def seek_empty(table: list[int | None], key: int, table_mask: int) -> int:
        e = to_index(key, table_mask)
        x = 0
        while table[e] is not None:
            x += 1
            e = (e + 2 * (x + 1) * x - 3) & table_mask
        return e

    for key in keys:
        if key == 0:
            has_zero = True
            continue
        if key == -(1 << 63):
            has_min = True
            continue
        if key in slots:
            continue
        slots[seek_empty(slots, key, mask)] = key
        size += 1
        if size > 0.5 * mask:  # imbalanced: repack into a table twice the size
            new_mask = ((mask << 1) + 1) & 0x3FFFFFFF
            while new_mask > 8 and size < (new_mask >> 3):
                new_mask >>= 1
            new_slots: list[int | None] = [None] * (new_mask + 1)
            for old in slots:
                if old is not None:
                    new_slots[seek_empty(new_slots, old, new_mask)] = old
            mask, slots = new_mask, new_slots
    ordered = [0] if has_zero else []
    if has_min:
        ordered.append(-(1 << 63))
    ordered.extend(k for k in slots if k is not None)
    return ordered
