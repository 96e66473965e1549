"""Kafka's own replica placement, reproduced bit for bit (standard library only).

* ZooKeeper mode: ``AdminUtils.assignReplicasToBrokers`` (rack-unaware and rack-aware) and the
  ZK add-partitions placement of ``AdminZkClient.createNewPartitionsAssignment``.
* KRaft mode: ``StripedReplicaPlacer.place``.
* ``java.util.Random`` (and Kafka's test ``MockRandom``), Java ``String.compareTo`` /
  ``hashCode`` and the collection iteration orders Kafka's callers feed into the placers.
* :func:`infer_layout`: recover the broker order, start index and replica shift a topic was
  created with, so a plan can extend it exactly as Kafka would have placed it.

Errors are Kafka's exception names with Kafka's exact messages, all subclasses of
:class:`KafkaAssignmentError` (itself a :class:`~kreplica.errors.PlanInfeasible`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

from kreplica.errors import ExitCode, NotImplementedYet, PlanInfeasible, UsageError

__all__ = [
    "DEFAULT_SEED",
    "AdminOperationException",
    "InvalidPartitionsException",
    "InvalidReplicationFactorException",
    "JavaRandom",
    "KafkaAssignmentError",
    "KafkaLayout",
    "MockRandom",
    "RandomSource",
    "StripedRackList",
    "UnknownTopicOrPartitionException",
    "add_partitions",
    "assign_replicas",
    "infer_layout",
    "java_compare_strings",
    "java_hashmap_order",
    "java_string_hash",
    "rack_alternated_brokers",
    "scala_longmap_order",
    "striped_place",
]

# A fixed seed keeps kreplica deterministic where Kafka would draw from an unseeded Random.
DEFAULT_SEED = 0

_INT_MASK = 0xFFFFFFFF

_HashKey = TypeVar("_HashKey", int, str | None)


def _to_int32(value: int) -> int:
    value &= _INT_MASK
    return value - (1 << 32) if value & 0x80000000 else value


# --------------------------------------------------------------------------------------------
# Errors


class KafkaAssignmentError(PlanInfeasible):
    """A placement Kafka itself would refuse; ``str(exc)`` is Kafka's message, verbatim."""

    code = "kafka-refused"

    @property
    def kafka_exception(self) -> str:
        """The simple name of the Java exception class Kafka throws."""
        return type(self).__name__


class InvalidPartitionsException(KafkaAssignmentError):
    pass


class InvalidReplicationFactorException(KafkaAssignmentError):
    pass


class AdminOperationException(KafkaAssignmentError):
    pass


class UnknownTopicOrPartitionException(KafkaAssignmentError):
    exit_code = ExitCode.SOURCE  # nothing to plan against, as for kreplica's UnknownTopicError


# --------------------------------------------------------------------------------------------
# Random sources


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
        return _to_int32(self._seed >> (48 - bits))

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
        return _to_int32(self._state >> (64 - bits))


# --------------------------------------------------------------------------------------------
# Java / Scala semantics the placers depend on


def _utf16_units(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def java_compare_strings(a: str, b: str) -> int:
    """``String.compareTo``: UTF-16 code units, case-sensitive (negative, zero or positive)."""
    ua, ub = _utf16_units(a), _utf16_units(b)
    return (ua > ub) - (ua < ub)


def _java_sort_key(text: str) -> bytes:
    # Big-endian UTF-16 bytes compare exactly like Java's code-unit comparison.
    return _utf16_units(text)


def java_string_hash(text: str) -> int:
    """``String.hashCode`` (signed 32-bit)."""
    units = _utf16_units(text)
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & _INT_MASK
    return _to_int32(h)


def _java_key_hash(key: int | str | None) -> int:
    if key is None:  # Optional.empty()
        return 0
    if isinstance(key, str):  # Optional.of(s).hashCode() == s.hashCode()
        return java_string_hash(key)
    return _to_int32(key)  # Integer.hashCode


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
        h = _java_key_hash(key) & _INT_MASK
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
        shift = ((size - 1) & _INT_MASK).bit_length() % 32
        return (((1 << shift) - 1) & 0x3FFFFFFF) | 0x7

    mask = mask_for(initial_buffer_size)
    slots: list[int | None] = [None] * (mask + 1)
    size = 0
    has_zero = False
    has_min = False

    def to_index(key: int, table_mask: int) -> int:
        k = key & 0xFFFFFFFFFFFFFFFF
        h = _to_int32((k ^ (k >> 32)) & _INT_MASK)
        hu = h & _INT_MASK
        x = ((hu ^ (hu >> 16)) * 0x85EBCA6B) & _INT_MASK
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


# --------------------------------------------------------------------------------------------
# ZooKeeper mode: AdminUtils.assignReplicasToBrokers


def rack_alternated_brokers(racks: Mapping[int, str]) -> list[int]:
    """``AdminUtils.getRackAlternatedBrokerList``: one broker per rack in turn.

    Racks are ordered by Java ``String.compareTo``; brokers inside a rack by id.
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in racks.items():
        by_rack.setdefault(rack, []).append(broker)
    rack_names = sorted(by_rack, key=_java_sort_key)
    queues = [sorted(by_rack[name]) for name in rack_names]
    result: list[int] = []
    depth = 0
    while len(result) < len(racks):
        for queue in queues:
            if depth < len(queue):
                result.append(queue[depth])
        depth += 1
    return result


def _replica_index(first: int, second_replica_shift: int, j: int, n: int) -> int:
    return (first + 1 + (second_replica_shift + j) % (n - 1)) % n


def _zk_replicas(
    order: Sequence[int],
    rack_of: Mapping[int, str] | None,
    num_racks: int,
    replication_factor: int,
    first: int,
    shift: int,
) -> list[int]:
    """One partition's replicas, given its first-replica index and its current shift."""
    n = len(order)
    leader = order[first]
    replicas = [leader]
    if rack_of is None:
        for j in range(replication_factor - 1):
            replicas.append(order[_replica_index(first, shift, j, n)])
        return replicas
    racks_used = {rack_of[leader]}
    brokers_used = {leader}
    k = 0  # keeps counting across the followers of one partition, as in Kafka
    for _ in range(replication_factor - 1):
        while True:
            broker = order[_replica_index(first, shift * num_racks, k, n)]
            k += 1
            rack = rack_of[broker]
            if (rack not in racks_used or len(racks_used) == num_racks) and (
                broker not in brokers_used or len(brokers_used) == n
            ):
                replicas.append(broker)
                racks_used.add(rack)
                brokers_used.add(broker)
                break
    return replicas


def _place_zk(
    order: Sequence[int],
    rack_of: Mapping[int, str] | None,
    n_partitions: int,
    replication_factor: int,
    start_index: int,
    replica_shift: int,
    start_partition_id: int,
) -> dict[int, list[int]]:
    """The placement loop shared by both ZK paths, with start and shift given separately.

    ``order`` is the broker list as Kafka indexes it (the rack-alternated list when
    ``rack_of`` is given); no validation here.
    """
    n = len(order)
    num_racks = len(set(rack_of.values())) if rack_of is not None else 0
    shift = replica_shift
    partition = max(0, start_partition_id)
    out: dict[int, list[int]] = {}
    for _ in range(n_partitions):
        # The shift moves on each time the absolute partition id crosses a multiple of n.
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start_index) % n
        out[partition] = _zk_replicas(order, rack_of, num_racks, replication_factor, first, shift)
        partition += 1
    return out


def _batch_shift(n: int, base_shift: int, batch_first: int, partition: int) -> int:
    """Shift in effect at ``partition`` for a ZK call that started at ``batch_first``."""
    lowest = max(batch_first, 1)
    bumps = partition // n - (lowest - 1) // n if partition >= lowest else 0
    return base_shift + bumps


def _rack_map(
    brokers: Sequence[int], racks: Mapping[int, str | None] | None
) -> dict[int, str | None]:
    return {b: (racks.get(b) if racks is not None else None) for b in brokers}


def assign_replicas(
    brokers: Sequence[int],
    n_partitions: int,
    replication_factor: int,
    *,
    racks: Mapping[int, str | None] | None = None,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: RandomSource | None = None,
) -> dict[int, list[int]]:
    """ZK-mode ``AdminUtils.assignReplicasToBrokers``, bit for bit.

    ``brokers`` is used in the order given (Kafka's rack-unaware output depends on it).
    With ``fixed_start_index < 0`` the start index and then the replica shift are drawn from
    ``rng`` (a fresh ``JavaRandom(DEFAULT_SEED)`` when None), as Kafka draws them.
    """
    if n_partitions <= 0:
        raise InvalidPartitionsException("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorException("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorException(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}."
        )
    rack_by_broker = _rack_map(brokers, racks)
    racked = {b: r for b, r in rack_by_broker.items() if r is not None}
    if racked and len(racked) < len(rack_by_broker):
        raise AdminOperationException(
            "Not all brokers have rack information for replica rack aware assignment."
        )
    if racked:
        order = rack_alternated_brokers(racked)
        rack_of: dict[int, str] | None = racked
    else:
        order = list(brokers)
        rack_of = None
    if fixed_start_index >= 0:
        start = shift = fixed_start_index
    else:
        source = rng if rng is not None else JavaRandom(DEFAULT_SEED)
        start = source.next_int(len(order))
        shift = source.next_int(len(order))
    return _place_zk(
        order, rack_of, n_partitions, replication_factor, start, shift, start_partition_id
    )


def _zk_add_start_index(sorted_brokers: Sequence[int], partition0_leader: int) -> int:
    # Scala: math.max(0, allBrokers.indexWhere(_.id >= existingAssignmentPartition0.head))
    for index, broker in enumerate(sorted_brokers):
        if broker >= partition0_leader:
            return index
    return 0


def add_partitions(
    brokers: Sequence[int],
    existing: Mapping[int, Sequence[int]],
    new_total: int,
    *,
    racks: Mapping[int, str | None] | None = None,
    topic: str = "<topic>",
) -> dict[int, list[int]]:
    """ZK-mode add-partitions placement; returns the new partitions only.

    As ``AdminZkClient.createNewPartitionsAssignment``: brokers sorted by id, start index from
    partition 0's first replica (used for the shift too), start partition id = existing count,
    RF = partition 0's replica count. The decrease/equal checks are the ones the broker's
    ``ZkAdminManager.createPartitions`` runs first, so the messages are what operators see.
    """
    current = len(existing)
    if current == 0:
        raise UnknownTopicOrPartitionException(f"The topic '{topic}' does not exist.")
    if new_total < current:
        raise InvalidPartitionsException(
            f"Topic currently has {current} partitions, which is higher than the requested "
            f"{new_total}."
        )
    if new_total == current:
        raise InvalidPartitionsException(f"Topic already has {current} partitions.")
    if 0 not in existing:
        # Scala prints the Map[Int, ReplicaAssignment]; its entry order is Scala's, ours sorted.
        shown = ", ".join(
            f"{p} -> ReplicaAssignment(replicas={','.join(map(str, existing[p]))}, "
            "addingReplicas=, removingReplicas=)"
            for p in sorted(existing)
        )
        raise AdminOperationException(
            f"Unexpected existing replica assignment for topic '{topic}', partition id 0 is "
            f"missing. Assignment: Map({shown})"
        )
    partition0 = list(existing[0])
    sorted_brokers = sorted(set(brokers))
    rack_by_broker = _rack_map(sorted_brokers, racks)
    racked = [b for b, r in rack_by_broker.items() if r is not None]
    if racked and len(racked) < len(sorted_brokers):
        # getBrokerMetadatas(RackAwareMode.Enforced)
        raise AdminOperationException(
            "Not all brokers have rack information. Add --disable-rack-aware in command line "
            "to make replica assignment without rack information."
        )
    start = _zk_add_start_index(sorted_brokers, partition0[0]) if partition0 else 0
    return assign_replicas(
        sorted_brokers,
        new_total - current,
        len(partition0),
        racks=racks,
        fixed_start_index=start,
        start_partition_id=current,
    )


# --------------------------------------------------------------------------------------------
# KRaft mode: StripedReplicaPlacer


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
        self._rack_names.sort(key=lambda n: (n is not None, _java_sort_key(n or "")))
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


# --------------------------------------------------------------------------------------------
# Layout inference


def _add_call_replicas(
    order: Sequence[int],
    rack_of: Mapping[int, str] | None,
    num_racks: int,
    rf: int,
    add_start: int,
    call_start: int,
    partition: int,
) -> list[int]:
    """Replicas ZK add-partitions gives ``partition`` in a call that began at ``call_start``.

    The call passes fixedStartIndex = ``add_start`` (start and shift) and startPartitionId =
    ``call_start``; the shift then grows at each multiple of n from ``call_start`` on.
    """
    n = len(order)
    shift = _batch_shift(n, add_start, call_start, partition)
    return _zk_replicas(order, rack_of, num_racks, rf, (partition + add_start) % n, shift)


@dataclass(frozen=True)
class KafkaLayout:
    """Parameters under which ZK-mode Kafka reproduces a topic's assignment.

    ``broker_list`` is the list Kafka indexes (for ``rack_aware`` the rack-alternated list),
    ``start_index`` and ``replica_shift`` the two values Kafka draws at topic creation.
    ``conforming`` are the partitions whose replicas are a prefix of what :meth:`extend`
    returns; ``nonconforming`` the rest. ``added_ranges`` are ``(call_start, first, stop)``:
    partitions ``first..stop-1`` recognised as placed by a later ZK add-partitions call that
    began at partition ``call_start``. ``broker_racks`` holds the racks of a rack-aware layout.
    """

    broker_list: tuple[int, ...]
    start_index: int
    replica_shift: int
    rack_aware: bool
    conforming: tuple[int, ...]
    nonconforming: tuple[int, ...]
    added_ranges: tuple[tuple[int, int, int], ...] = ()
    broker_racks: tuple[tuple[int, str], ...] = ()

    @property
    def added_batches(self) -> tuple[tuple[int, int], ...]:
        """``(first, stop)`` of each range of partitions placed by ZK add-partitions."""
        return tuple((first, stop) for _, first, stop in self.added_ranges)

    def _rack_of(self) -> dict[int, str] | None:
        return dict(self.broker_racks) if self.rack_aware else None

    def _add_start_index(self) -> int:
        leader = self.broker_list[self.start_index % len(self.broker_list)]
        return _zk_add_start_index(sorted(self.broker_list), leader)

    def extend(self, n_partitions: int, rf: int) -> dict[int, list[int]]:
        """Kafka's replicas for partitions ``0..n_partitions-1`` at replication factor ``rf``.

        Partitions in ``added_ranges`` follow the add-partitions placement of their call,
        all others the creation placement (also past the known partitions: for Kafka's own
        placement of new partitions use :func:`add_partitions`). Raising ``rf`` only appends
        replicas (Kafka's placement is prefix-stable), so conforming partitions keep theirs.
        """
        if n_partitions <= 0:
            return {}
        rf = max(1, min(rf, len(self.broker_list)))
        rack_of = self._rack_of()
        out = _place_zk(
            self.broker_list, rack_of, n_partitions, rf, self.start_index, self.replica_shift, 0
        )
        if self.added_ranges:
            # ZK add-partitions indexes the id-sorted list (rack-alternated when racks).
            add_order = self.broker_list if self.rack_aware else sorted(self.broker_list)
            add_start = self._add_start_index()
            num_racks = len(set(rack_of.values())) if rack_of is not None else 0
            for call_start, first, stop in self.added_ranges:
                for p in range(first, min(stop, n_partitions)):
                    out[p] = _add_call_replicas(
                        add_order, rack_of, num_racks, rf, add_start, call_start, p
                    )
        return out


def _is_prefix(observed: Sequence[int], kafka: Sequence[int]) -> bool:
    return len(observed) <= len(kafka) and list(observed) == list(kafka[: len(observed)])


def _contiguous_ids(parts: Mapping[int, Sequence[int]]) -> int:
    count = 0
    while count in parts:
        count += 1
    return count


def _pinned_positions(
    replicas: Sequence[int], members: set[int], n: int, partition: int, shift: int
) -> list[tuple[int, int]] | None:
    """(list position, broker) pairs a rack-unaware placement needs for this partition.

    None when no order can give these replicas (duplicates, unknown brokers, RF above n).
    """
    if not replicas or len(replicas) > n or len(set(replicas)) != len(replicas):
        return None
    if not members.issuperset(replicas):
        return None
    first = partition % n
    current_shift = shift + partition // n
    pinned = [(first, replicas[0])]
    pinned.extend(
        (_replica_index(first, current_shift, j, n), broker)
        for j, broker in enumerate(replicas[1:])
    )
    return pinned


def _pin(at: dict[int, int], where: dict[int, int], pinned: list[tuple[int, int]] | None) -> bool:
    """Add the pins if they agree with those so far (position <-> broker is one-to-one)."""
    if pinned is None or any(at.get(pos, b) != b or where.get(b, pos) != pos for pos, b in pinned):
        return False
    for pos, b in pinned:
        at[pos] = b
        where[b] = pos
    return True


def _unaware_prefix(
    parts: Mapping[int, Sequence[int]], members: set[int], n: int, count: int, shift: int
) -> tuple[int, dict[int, int], dict[int, int]]:
    """Longest prefix of partitions consistent with some order (start 0) and this shift.

    Every replica pins a broker to a list position; pins are forced, so processing
    partitions in order and stopping at the first conflict gives the exact longest prefix.
    """
    at: dict[int, int] = {}  # position -> broker
    where: dict[int, int] = {}  # broker -> position
    for p in range(count):
        if not _pin(at, where, _pinned_positions(parts[p], members, n, p, shift)):
            return p, at, where
    return count, at, where


@dataclass(frozen=True)
class _Candidate:
    score: tuple[int, ...]
    layout: KafkaLayout


def _call_starts(n: int, lowest: int, partition: int, lookback: int = 4) -> list[int]:
    """Where the add-partitions call that placed ``partition`` may have begun, oldest first.

    A call's first partitions can coincide with an earlier placement, so it may have begun
    before ``partition``. Only ``(start - 1) // n`` changes the result, so one start per block
    of n is tried (the latest in the block), at most ``lookback`` blocks back. Oldest first:
    a later mismatch can still move on to a newer call, never back to an older one.
    """
    if partition < 1:
        return []
    starts = [partition]
    block_end = ((partition - 1) // n) * n  # latest start of the previous block
    while block_end >= max(lowest, 1) and len(starts) <= lookback:
        starts.append(block_end)
        block_end -= n
    return starts[::-1]


def _classify(
    parts: Mapping[int, Sequence[int]],
    order: Sequence[int],
    rack_of: Mapping[int, str] | None,
    start: int,
    shift: int,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, int, int], ...]]:
    """Split partitions into conforming / not, recognising ZK add-partitions calls.

    After the creation prefix, a partition is explained by the current add-partitions call,
    else by the creation layout, else by a new call (ZK add-partitions restarts at the then
    partition count with the id-sorted list and partition 0's leader). A partition nothing
    explains (edited by hand) leaves the current call running.
    """
    n = len(order)
    num_racks = len(set(rack_of.values())) if rack_of is not None else 0
    rf = max(1, min(n, max(len(r) for r in parts.values())))
    add_order = order if rack_of is not None else sorted(order)
    add_start = _zk_add_start_index(sorted(order), parts[0][0])

    def by_creation(p: int) -> bool:
        kafka = _zk_replicas(order, rack_of, num_racks, rf, (p + start) % n, shift + p // n)
        return _is_prefix(parts[p], kafka)

    def by_call(call_start: int, p: int) -> bool:
        kafka = _add_call_replicas(add_order, rack_of, num_racks, rf, add_start, call_start, p)
        return _is_prefix(parts[p], kafka)

    explained_by: dict[int, int | None] = {}  # conforming partition -> its call (None: creation)
    by_a_call: list[int] = []  # the partitions explained by a call, ascending
    nonconforming: list[int] = []
    call: int | None = None  # start of the add-partitions call in progress
    in_prefix = True
    for expected_id, p in enumerate(sorted(parts)):
        in_prefix = in_prefix and p == expected_id
        if in_prefix and by_creation(p):
            explained_by[p] = None
            continue
        in_prefix = False
        if call is not None and by_call(call, p):
            explained_by[p] = call
            by_a_call.append(p)
            continue
        if by_creation(p):
            explained_by[p] = None
            continue
        lowest = call + 1 if call is not None else 1
        for candidate in _call_starts(n, lowest, p):
            # Partitions from the candidate start on now belong to the new call: those the
            # previous call explained must fit the new one too.
            moved = by_a_call[bisect_left(by_a_call, candidate) :]
            if by_call(candidate, p) and all(by_call(candidate, q) for q in moved):
                for q in moved:
                    explained_by[q] = candidate
                explained_by[p] = candidate
                by_a_call.append(p)
                call = candidate
                break
        else:
            nonconforming.append(p)
    ranges: list[list[int]] = []  # [call_start, first, stop] over consecutive partition ids
    for p in sorted(explained_by):
        owner = explained_by[p]
        if owner is None:
            continue
        if ranges and ranges[-1][0] == owner and ranges[-1][2] == p:
            ranges[-1][2] = p + 1
        else:
            ranges.append([owner, p, p + 1])
    return (
        tuple(sorted(explained_by)),
        tuple(nonconforming),
        tuple((c, first, stop) for c, first, stop in ranges),
    )


# Partitions times tied shifts examined to break ties; bounds the cost for hand-made topics.
_TIE_BREAK_BUDGET = 10_000


def _infer_unaware(parts: Mapping[int, Sequence[int]], members: list[int]) -> KafkaLayout | None:
    n = len(members)
    member_set = set(members)
    count = _contiguous_ids(parts)
    has_followers = any(len(parts[p]) > 1 for p in range(count))
    shifts = range(n - 1) if n > 1 and has_followers else range(1)
    prefixes: list[tuple[int, int, dict[int, int], dict[int, int]]] = []
    for shift in shifts:
        matched, positions, where = _unaware_prefix(parts, member_set, n, count, shift)
        prefixes.append((matched, shift, positions, where))
        if matched == count:
            break
    longest = max(matched for matched, *_ in prefixes)
    if longest == 0:
        return None
    tied = [prefix for prefix in prefixes if prefix[0] == longest]
    if len(tied) * len(parts) > _TIE_BREAK_BUDGET:
        tied = tied[:1]  # a topic this far from Kafka's layout: any of the shifts will do
    best: tuple[int, int, dict[int, int]] | None = None
    for matched, shift, positions, where in tied:
        # Past the prefix, partitions that still agree pin the remaining positions (a
        # partition edited by hand then costs only itself); they also break ties of shifts.
        agreeing = sum(
            _pin(positions, where, _pinned_positions(parts[p], member_set, n, p, shift))
            for p in sorted(parts)
            if p > matched
        )
        if best is None or agreeing > best[0]:
            best = (agreeing, shift, positions)
    assert best is not None
    _, shift, positions = best
    # Positions nothing pins down get the spare brokers in id order (any order is valid).
    spare = iter(sorted(member_set - set(positions.values())))
    order = tuple(positions[i] if i in positions else next(spare) for i in range(n))
    conforming, nonconforming, ranges = _classify(parts, order, None, 0, shift)
    return KafkaLayout(order, 0, shift, False, conforming, nonconforming, ranges)


def _infer_unaware_by_votes(
    parts: Mapping[int, Sequence[int]], members: list[int]
) -> KafkaLayout | None:
    """A second opinion robust to partitions edited by hand: every partition votes.

    Leaders vote for list positions (partition p leads at position p mod n), then second
    replicas vote for the shift, then followers vote for the positions still open. One bad
    partition then costs only itself, where the longest-prefix search stops at it.
    """
    n = len(members)
    member_set = set(members)
    usable = [p for p in sorted(parts) if _pinned_positions(parts[p], member_set, n, p, 0)]
    if n < 2 or not usable:
        return None
    at: dict[int, int] = {}
    where: dict[int, int] = {}

    def settle(votes: Mapping[tuple[int, int], int]) -> None:
        # Strongest votes first; a position and a broker are each taken once.
        for (pos, broker), _ in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
            if pos not in at and broker not in where:
                at[pos] = broker
                where[broker] = pos

    leader_votes: dict[tuple[int, int], int] = {}
    for p in usable:
        key = (p % n, parts[p][0])
        leader_votes[key] = leader_votes.get(key, 0) + 1
    settle(leader_votes)
    shift_votes: dict[int, int] = {}
    for p in usable:
        if len(parts[p]) > 1 and parts[p][1] in where:
            gap = (where[parts[p][1]] - p % n - 1) % n  # = (shift + p // n) % (n - 1)
            if gap < n - 1:
                vote = (gap - p // n) % (n - 1)
                shift_votes[vote] = shift_votes.get(vote, 0) + 1
    shift = min(shift_votes, key=lambda s: (-shift_votes[s], s)) if shift_votes else 0
    follower_votes: dict[tuple[int, int], int] = {}
    for p in usable:
        for pos, broker in _pinned_positions(parts[p], member_set, n, p, shift) or []:
            follower_votes[(pos, broker)] = follower_votes.get((pos, broker), 0) + 1
    settle(follower_votes)
    spare = iter(sorted(member_set - set(where)))
    order = tuple(at[i] if i in at else next(spare) for i in range(n))
    conforming, nonconforming, ranges = _classify(parts, order, None, 0, shift)
    if 0 not in conforming:  # add-partitions and extend() both build on partition 0
        return None
    return KafkaLayout(order, 0, shift, False, conforming, nonconforming, ranges)


def _infer_aware(
    parts: Mapping[int, Sequence[int]], members: list[int], racks: Mapping[int, str]
) -> KafkaLayout | None:
    rack_of = {b: racks[b] for b in members}
    order = rack_alternated_brokers(rack_of)
    n = len(order)
    leader = parts[0][0] if parts[0] else None
    if leader not in rack_of:
        return None
    start = order.index(leader)
    count = _contiguous_ids(parts)
    rf = max(1, min(n, max(len(parts[p]) for p in range(count))))
    num_racks = len(set(rack_of.values()))

    def fits(p: int, shift: int) -> bool:
        kafka = _zk_replicas(order, rack_of, num_racks, rf, (p + start) % n, shift + p // n)
        return _is_prefix(parts[p], kafka)

    # shift * numRacks only matters modulo n - 1, and it grows by one per wrap.
    prefixes: list[tuple[int, int]] = []
    for shift in range(n - 1 if n > 1 else 1):
        matched = 0  # computed lazily: a wrong shift usually fails within the first round
        while matched < count and fits(matched, shift):
            matched += 1
        prefixes.append((matched, shift))
        if matched == count:
            break
    longest = max(matched for matched, _ in prefixes)
    if longest == 0:
        return None
    tied = [shift for matched, shift in prefixes if matched == longest]
    if len(tied) > 1 and len(tied) * len(parts) <= _TIE_BREAK_BUDGET:
        # A partition edited by hand ended the prefix early: let all partitions decide.
        shift = max(tied, key=lambda s: (sum(fits(p, s) for p in parts if p > longest), -s))
    else:
        shift = tied[0]
    conforming, nonconforming, ranges = _classify(parts, order, rack_of, start, shift)
    return KafkaLayout(
        tuple(order),
        start,
        shift,
        True,
        conforming,
        nonconforming,
        ranges,
        tuple(sorted(rack_of.items())),
    )


def infer_layout(
    assignment: Mapping[int, Sequence[int]],
    brokers: Sequence[int] | None = None,
    racks: Mapping[int, str | None] | None = None,
) -> KafkaLayout | None:
    """Find the broker order, start index and shift under which Kafka reproduces ``assignment``.

    Candidates: the longest run of partitions from 0 that one layout reproduces (rack-unaware,
    and rack-aware over the rack-alternated list when every broker has a rack), and a layout
    voted by all partitions (so one partition edited by hand costs only itself). The one that
    reproduces most partitions wins (then the longer run from 0); partitions placed later by
    ZK add-partitions count as reproduced. ``brokers`` widens the broker set beyond those the
    topic uses. Rack-unaware layouts come rotated to ``start_index`` 0 (indistinguishable).
    ``replica_shift`` is the smallest equivalent value (only its value modulo n - 1 matters);
    with no followers anywhere it is unconstrained and reported as 0. None when partition 0
    fits no layout. Cost: O(n) candidate shifts, never permutations of the brokers.
    """
    parts = {int(p): list(r) for p, r in assignment.items()}
    if not parts.get(0):
        return None
    observed = sorted({b for replicas in parts.values() for b in replicas})
    broker_sets = [observed]
    if brokers is not None:
        widened = sorted(set(brokers) | set(observed))
        if widened != observed:
            broker_sets.append(widened)
    candidates: list[_Candidate] = []
    for rank, members in enumerate(broker_sets):
        layouts = [_infer_unaware(parts, members), _infer_unaware_by_votes(parts, members)]
        rack_names = {b: racks.get(b) for b in members} if racks is not None else {}
        if racks is not None and all(r is not None for r in rack_names.values()):
            layouts.append(
                _infer_aware(parts, members, {b: r for b, r in rack_names.items() if r is not None})
            )
        for layout in layouts:
            if layout is None:
                continue
            prefix = _contiguous_prefix(layout.conforming)
            score = (len(layout.conforming), prefix, int(layout.rack_aware), rank)
            candidates.append(_Candidate(score, layout))
    if not candidates:
        return None
    return max(candidates, key=lambda c: c.score).layout


def _contiguous_prefix(conforming: Sequence[int]) -> int:
    prefix = 0
    for p in conforming:
        if p != prefix:
            break
        prefix += 1
    return prefix
