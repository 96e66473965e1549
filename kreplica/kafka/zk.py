"""ZooKeeper-mode placement: ``AdminUtils.assignReplicasToBrokers`` (rack-unaware and
rack-aware) and the add-partitions placement of ``AdminZkClient.createNewPartitionsAssignment``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kreplica.kafka.errors import (
    AdminOperationException,
    InvalidPartitionsException,
    InvalidReplicationFactorException,
    UnknownTopicOrPartitionException,
)
from kreplica.kafka.javalang import java_sort_key
from kreplica.kafka.randoms import DEFAULT_SEED, JavaRandom, RandomSource


def rack_alternated_brokers(racks: Mapping[int, str]) -> list[int]:
    """``AdminUtils.getRackAlternatedBrokerList``: one broker per rack in turn.

    Racks are ordered by Java ``String.compareTo``; brokers inside a rack by id.
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in racks.items():
        by_rack.setdefault(rack, []).append(broker)
    rack_names = sorted(by_rack, key=java_sort_key)
    queues = [sorted(by_rack[name]) for name in rack_names]
    result: list[int] = []
    depth = 0
    while len(result) < len(racks):
        for queue in queues:
            if depth < len(queue):
                result.append(queue[depth])
        depth += 1
    return result


def replica_index(first: int, second_replica_shift: int, j: int, n: int) -> int:
    return (first + 1 + (second_replica_shift + j) % (n - 1)) % n


def zk_replicas(
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
            replicas.append(order[replica_index(first, shift, j, n)])
        return replicas
    racks_used = {rack_of[leader]}
    brokers_used = {leader}
    k = 0  # keeps counting across the followers of one partition, as in Kafka
    for _ in range(replication_factor - 1):
        while True:
            broker = order[replica_index(first, shift * num_racks, k, n)]
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


def place_zk(
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
        out[partition] = zk_replicas(order, rack_of, num_racks, replication_factor, first, shift)
        partition += 1
    return out


def batch_shift(n: int, base_shift: int, batch_first: int, partition: int) -> int:
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
    return place_zk(
        order, rack_of, n_partitions, replication_factor, start, shift, start_partition_id
    )


def zk_add_start_index(sorted_brokers: Sequence[int], partition0_leader: int) -> int:
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
    start = zk_add_start_index(sorted_brokers, partition0[0]) if partition0 else 0
    return assign_replicas(
        sorted_brokers,
        new_total - current,
        len(partition0),
        racks=racks,
        fixed_start_index=start,
        start_partition_id=current,
    )
