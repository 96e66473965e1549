"""KRaft-mode placement: ``StripedReplicaPlacer`` (its ``RackList`` and ``place``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from kreplica.errors import UsageError
from kreplica.kafka.errors import InvalidReplicationFactorException
from kreplica.kafka.javalang import java_hashmap_order, java_sort_key
from kreplica.kafka.randoms import RandomSource

_Item = TypeVar("_Item")


def _shuffle(items: list[_Item], rng: RandomSource) -> None:
    # Collections.shuffle: for i = size..2, swap(i-1, nextInt(i))
    for i in range(len(items), 1, -1):
        j = rng.next_int(i)
        items[i - 1], items[j] = items[j], items[i - 1]


class _BrokerList:
    __slots__ = ("brokers", "epoch", "index", "offset")

    def __init__(self) -> None:
        self.brokers: list[int] = []
        self.epoch = 0
        self.index = 0
        self.offset = 0

    def initialize(self, rng: RandomSource) -> None:
        if self.brokers:
            self.brokers.sort()
            self.offset = rng.next_int(len(self.brokers))

    def next(self, epoch: int) -> int:
        if not self.brokers:
            return -1
        if self.epoch != epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % len(self.brokers)
        if self.index >= len(self.brokers):
            return -1
        broker = self.brokers[(self.index + self.offset) % len(self.brokers)]
        self.index += 1
        return broker


class _Rack:
    __slots__ = ("fenced", "unfenced")

    def __init__(self) -> None:
        self.fenced = _BrokerList()
        self.unfenced = _BrokerList()

    def next(self, epoch: int) -> int:
        result = self.unfenced.next(epoch)
        return result if result >= 0 else self.fenced.next(epoch)


def _usable_broker(broker: object) -> tuple[int, str | None, bool]:
    if isinstance(broker, tuple):
        broker_id, rack, fenced = broker
        return int(broker_id), rack, bool(fenced)
    return (
        int(getattr(broker, "id")),  # noqa: B009 - duck-typed broker objects
        getattr(broker, "rack"),  # noqa: B009
        bool(getattr(broker, "fenced", False)),
    )


def _check_positive(replication_factor: int) -> None:
    if replication_factor <= 0:
        raise InvalidReplicationFactorException(
            f"Invalid replication factor {replication_factor}: the replication factor must be "
            "positive."
        )


def _kafka_line(kafka_version: str) -> tuple[int, int]:
    try:
        major, minor = (int(part) for part in kafka_version.split(".")[:2])
    except ValueError:
        raise UsageError(
            f"bad Kafka version {kafka_version!r}: give it as major.minor, e.g. 3.9 or 4.3.1"
        ) from None
    return major, minor


# Kafka 4.3 (KIP-1066, cordoned log directories) reworded two placer errors; 4.2 still had
# the 3.x texts (checked against the kafka-metadata 4.2.0 and 4.3.1 jars).
_CORDON_WORDING_SINCE = (4, 3)


def _check_enough(replication_factor: int, total: int, kafka_version: str) -> None:
    if replication_factor > total:
        cordoned = _kafka_line(kafka_version) >= _CORDON_WORDING_SINCE
        raise InvalidReplicationFactorException(
            f"The target replication factor of {replication_factor} cannot be reached because "
            f"only {total} broker(s) are registered"
            + (" or some brokers have all their log directories cordoned." if cordoned else ".")
        )


def _check_unfenced(unfenced: int, kafka_version: str) -> None:
    if unfenced == 0:
        cordoned = _kafka_line(kafka_version) >= _CORDON_WORDING_SINCE
        raise InvalidReplicationFactorException(
            "All brokers are currently fenced, or have all their log directories cordoned."
            if cordoned
            else "All brokers are currently fenced."
        )


class StripedRackList:
    """``StripedReplicaPlacer.RackList``: one per ``place()`` call; draws on construction."""

    def __init__(
        self, rng: RandomSource, usable_brokers: Iterable[object], *, kafka_version: str = "3.9"
    ) -> None:
        _kafka_line(kafka_version)  # fail early on a malformed version
        self._kafka_version = kafka_version
        self._rng = rng
        self._racks: dict[str | None, _Rack] = {}
        self._rack_names: list[str | None] = []
        self.total_brokers = 0
        self.unfenced_brokers = 0
        for item in usable_brokers:
            broker_id, rack_name, fenced = _usable_broker(item)
            rack = self._racks.get(rack_name)
            if rack is None:
                rack = self._racks[rack_name] = _Rack()
                self._rack_names.append(rack_name)
            if fenced:
                rack.fenced.brokers.append(broker_id)
            else:
                rack.unfenced.brokers.append(broker_id)
                self.unfenced_brokers += 1
            self.total_brokers += 1
        # The racks live in a java.util.HashMap: its order decides who draws first.
        self._hash_order = java_hashmap_order(self._rack_names)
        for name in self._hash_order:
            self._racks[name].fenced.initialize(rng)
            self._racks[name].unfenced.initialize(rng)
        # Optional.empty() sorts first, then String.compareTo.
        self._rack_names.sort(key=lambda n: (n is not None, java_sort_key(n or "")))
        self._offset = rng.next_int(len(self._rack_names)) if self._rack_names else 0
        self._epoch = 0

    def _shuffle(self) -> None:
        _shuffle(self._rack_names, self._rng)
        for name in self._hash_order:
            _shuffle(self._racks[name].fenced.brokers, self._rng)
            _shuffle(self._racks[name].unfenced.brokers, self._rng)

    def place(self, replication_factor: int) -> list[int]:
        """``RackList.place``: the replicas of one partition."""
        _check_positive(replication_factor)
        _check_enough(replication_factor, self.total_brokers, self._kafka_version)
        _check_unfenced(self.unfenced_brokers, self._kafka_version)
        # After as many placements as unfenced brokers, shuffle to avoid repeating the cycle
        # (not for a single unfenced broker, which would loop forever).
        if self._epoch == self.unfenced_brokers and self.unfenced_brokers > 1:
            self._shuffle()
            self._epoch = 0
        names = self._rack_names
        if self._offset == len(names):
            self._offset = 0
        first_rack = self._offset
        while True:
            leader = self._racks[names[first_rack]].unfenced.next(self._epoch)
            if leader >= 0:
                break
            first_rack = (first_rack + 1) % len(names)
        replicas = [leader]
        rack_index = self._offset
        for _ in range(replication_factor - 1):
            result = -1
            while result < 0:
                if rack_index == first_rack:
                    first_rack = -1  # skip the leader's rack once
                else:
                    result = self._racks[names[rack_index]].next(self._epoch)
                rack_index = (rack_index + 1) % len(names)
            replicas.append(result)
        self._epoch += 1
        self._offset += 1
        return replicas


def striped_place(
    brokers: Iterable[object],
    n_partitions: int,
    replication_factor: int,
    *,
    rng: RandomSource,
    kafka_version: str = "3.9",
) -> dict[int, list[int]]:
    """KRaft ``StripedReplicaPlacer.place`` for ``n_partitions`` partitions (keys from 0).

    ``brokers``: ``(id, rack_or_None, fenced)`` tuples or objects with ``.id``, ``.rack`` and
    ``.fenced``, in the controller's iteration order. Reuse one ``rng`` across calls to
    reproduce a controller's sequence of placements. The placement is the same from 3.0 to
    4.3; ``kafka_version`` only picks the wording of the errors (reworded in 4.3).
    """
    rack_list = StripedRackList(rng, brokers, kafka_version=kafka_version)
    _check_positive(replication_factor)
    _check_unfenced(rack_list.unfenced_brokers, kafka_version)
    _check_enough(replication_factor, rack_list.total_brokers, kafka_version)
    return {p: rack_list.place(replication_factor) for p in range(n_partitions)}
