"""``java.util.Random`` and Kafka's test ``MockRandom``: same seed, same draws as the JVM."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from kreplica.kafka.javalang import to_int32

# A fixed seed keeps kreplica deterministic where Kafka would draw from an unseeded Random.
DEFAULT_SEED = 0


@runtime_checkable
class RandomSource(Protocol):
    def next_int(self, bound: int) -> int: ...


class JavaRandom:
    """``java.util.Random``: same seed, same sequence as the JVM."""

    _MULTIPLIER = 0x5DEECE66D
    _ADDEND = 0xB
    _MASK = (1 << 48) - 1

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ self._MULTIPLIER) & self._MASK

    def next_bits(self, bits: int) -> int:
        """``Random.next(bits)``: the protected generator step every draw goes through."""
        self._seed = (self._seed * self._MULTIPLIER + self._ADDEND) & self._MASK
        return to_int32(self._seed >> (48 - bits))

    def next_int(self, bound: int) -> int:
        """``Random.nextInt(bound)``, including its rejection loop."""
        if bound <= 0:
            raise ValueError("bound must be positive")
        r = self.next_bits(31)
        m = bound - 1
        if bound & m == 0:  # power of two: take the high bits
            return (bound * r) >> 31
        u = r
        r = u % bound
        # Java rejects when u - r + m overflows int32 (the last, partial block of values).
        while u - r + m > 0x7FFFFFFF:
            u = self.next_bits(31)
            r = u % bound
        return r


class MockRandom(JavaRandom):
    """Kafka's ``org.apache.kafka.server.util.MockRandom`` used by its placement tests."""

    def __init__(self, seed: int = 17) -> None:
        self._state = seed & 0xFFFFFFFFFFFFFFFF

    def next_bits(self, bits: int) -> int:
        self._state = (self._state * 2862933555777941757 + 3037000493) & 0xFFFFFFFFFFFFFFFF
        return to_int32(self._state >> (64 - bits))
