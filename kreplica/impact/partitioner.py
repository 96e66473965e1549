"""The Java producer's partition for a keyed record, and how many keys move when a topic grows.

Kafka's ``BuiltInPartitioner.partitionForKey`` (the default since 3.3, and
``DefaultPartitioner`` before it) is ``Utils.toPositive(Utils.murmur2(keyBytes)) %
numPartitions``, over the serialized key bytes and the topic's partition count (all
partitions, available or not). librdkafka's ``murmur2`` / ``murmur2_random`` partitioners are
the same function for non-null keys.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

_MASK32 = 0xFFFFFFFF
_M = 0x5BD1E995
_SEED = 0x9747B28C
HASH_SPACE = 1 << 31  # toPositive(murmur2(...)) takes every value in [0, 2^31)


def _int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def murmur2(data: bytes) -> int:
    """``org.apache.kafka.common.utils.Utils.murmur2``: a signed 32-bit int, bit for bit."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    for i in range(0, length - length % 4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = (h * _M) & _MASK32
        h ^= k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return _int32(h)


def to_positive(number: int) -> int:
    """``Utils.toPositive``: clears the sign bit (not abs: Integer.MIN_VALUE maps to 0)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition the Java producer's default partitioner picks for a non-null key."""
    if num_partitions < 1:
        raise ValueError(f"a topic has at least one partition, not {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


@dataclass(frozen=True)
class RemapShare:
    """Share of keys whose partition changes when a topic goes from `old` to `new` partitions.

    `moving` is exact for a uniform hash (hash values spread evenly over a whole number of
    lcm(old, new) periods): a hash h keeps its partition iff h mod old == h mod new, which
    holds for min(old, new) residues out of every lcm(old, new), so the share that stays is
    gcd(old, new) / max(old, new). `moving_hash_space` counts the same over the 2^31 values
    toPositive(murmur2) can take (it differs from `moving` by less than 1e-8)."""

    old: int
    new: int
    moving: Fraction
    moving_hash_space: Fraction

    @property
    def staying(self) -> Fraction:
        return 1 - self.moving

    def as_dict(self) -> dict[str, object]:
        return {
            "old_partitions": self.old,
            "new_partitions": self.new,
            "moving_share": float(self.moving),
            "moving_fraction": f"{self.moving.numerator}/{self.moving.denominator}",
            "moving_share_hash_space": float(self.moving_hash_space),
        }


def remap_share(old: int, new: int) -> RemapShare:
    if old < 1 or new < 1:
        raise ValueError(f"partition counts are positive, not {old} -> {new}")
    lcm = old * new // math.gcd(old, new)
    same = min(old, new)  # residues per lcm period where h mod old == h mod new
    moving = 1 - Fraction(same, lcm)
    periods, rest = divmod(HASH_SPACE, lcm)
    staying_count = periods * same + min(rest, same)
    return RemapShare(old, new, moving, 1 - Fraction(staying_count, HASH_SPACE))


@dataclass(frozen=True)
class MeasuredRemap:
    """Real keys, before and after: how many distinct keys change partition."""

    keys: int
    moving: int
    examples: tuple[tuple[str, int, int], ...]  # (key as text, old partition, new partition)

    @property
    def share(self) -> float:
        return self.moving / self.keys if self.keys else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "keys": self.keys,
            "moving": self.moving,
            "moving_share": self.share,
            "examples": [{"key": k, "from": a, "to": b} for k, a, b in self.examples],
        }


def measure_remap(keys: Iterable[bytes], old: int, new: int, *, examples: int = 5) -> MeasuredRemap:
    """Distinct keys only: a key seen twice is one key that moves or stays."""
    seen: set[bytes] = set()
    moving = 0
    shown: list[tuple[str, int, int]] = []
    for key in keys:
        if key in seen:
            continue
        seen.add(key)
        before = partition_for_key(key, old)
        after = partition_for_key(key, new)
        if before != after:
            moving += 1
            if len(shown) < examples:
                shown.append((key_text(key), before, after))
    return MeasuredRemap(len(seen), moving, tuple(shown))


def key_text(key: bytes) -> str:
    """A key as UTF-8 text when it is, else as hex (`0x...`)."""
    try:
        text = key.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + key.hex()
    return text if text.isprintable() else "0x" + key.hex()
