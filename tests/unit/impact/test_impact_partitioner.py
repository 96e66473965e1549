"""murmur2 and the producer's partition for a key: Kafka's own test values, the remapping
share, measured remapping on keys."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from kreplica.impact.partitioner import (
    HASH_SPACE,
    measure_remap,
    murmur2,
    partition_for_key,
    remap_share,
    to_positive,
)

# clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2
KAFKA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("key", "expected"), KAFKA_MURMUR2.items())
def test_murmur2_matches_kafka_utils_test(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def test_to_positive_is_a_mask_not_abs() -> None:
    assert to_positive(-(2**31)) == 0
    assert to_positive(-1) == 2**31 - 1
    assert to_positive(5) == 5


def test_partition_for_key() -> None:
    assert partition_for_key(b"21", 10) == to_positive(-973932308) % 10
    assert partition_for_key(b"", 7) == to_positive(murmur2(b"")) % 7
    with pytest.raises(ValueError):
        partition_for_key(b"x", 0)


def _brute_moving(old: int, new: int) -> Fraction:
    lcm = old * new // math.gcd(old, new)
    staying = sum(1 for x in range(lcm) if x % old == x % new)
    return 1 - Fraction(staying, lcm)


@pytest.mark.parametrize(("old", "new"), [(1, 2), (3, 4), (3, 6), (4, 6), (10, 12), (6, 4), (7, 7)])
def test_remap_share_is_exact_for_a_uniform_hash(old: int, new: int) -> None:
    share = remap_share(old, new)
    assert share.moving == _brute_moving(old, new)
    assert share.staying == Fraction(math.gcd(old, new), max(old, new))
    # over the 2^31 hash values: within a period of the lcm of the uniform figure
    assert abs(share.moving_hash_space - share.moving) <= Fraction(old * new, HASH_SPACE)


def test_remap_share_multiple() -> None:
    assert remap_share(4, 8).moving == Fraction(1, 2)  # 1 - old/new when new is a multiple
    assert remap_share(3, 4).moving == Fraction(3, 4)
    assert remap_share(4, 8).as_dict()["moving_fraction"] == "1/2"


def test_measured_share_on_random_keys_is_close_to_the_math() -> None:
    rnd = random.Random(11)
    keys = [f"user-{rnd.getrandbits(48)}".encode() for _ in range(20000)]
    measured = measure_remap(keys, 6, 8)
    assert measured.keys == 20000
    assert abs(measured.share - float(remap_share(6, 8).moving)) < 0.02
    for key_text, before, after in measured.examples:
        assert partition_for_key(key_text.encode(), 6) == before
        assert partition_for_key(key_text.encode(), 8) == after


def test_measured_counts_distinct_keys() -> None:
    measured = measure_remap([b"a", b"a", b"\xff\x00"], 1, 2)
    assert measured.keys == 2
    assert all(k in ("a", "0xff00") for k, _, _ in measured.examples)
