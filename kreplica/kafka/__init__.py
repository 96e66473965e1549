"""Kafka's own replica placement, reproduced bit for bit (standard library only).

* ZooKeeper mode: ``AdminUtils.assignReplicasToBrokers`` (rack-unaware and rack-aware) and the
  ZK add-partitions placement of ``AdminZkClient.createNewPartitionsAssignment``.
* KRaft mode: ``StripedReplicaPlacer.place``.
* ``java.util.Random`` (and Kafka's test ``MockRandom``), Java ``String.compareTo`` /
  ``hashCode`` and the collection iteration orders Kafka's callers feed into the placers.
* :func:`infer_layout`: recover the broker order, start index and replica shift a topic was
  created with, so a plan can extend it exactly as Kafka would have placed it.

One module per job: ``randoms``, ``javalang`` (shared with kreplica.impact), ``zk``, ``striped``,
``layout``, ``errors``. Errors are Kafka's exception names with Kafka's exact messages, all
subclasses of :class:`KafkaAssignmentError` (itself a :class:`~kreplica.errors.PlanInfeasible`).
"""

from __future__ import annotations

from kreplica.kafka.errors import (
    AdminOperationException,
    InvalidPartitionsException,
    InvalidReplicationFactorException,
    KafkaAssignmentError,
    UnknownTopicOrPartitionException,
)
from kreplica.kafka.javalang import (
    java_compare_strings,
    java_hashmap_order,
    java_string_hash,
    scala_longmap_order,
)
from kreplica.kafka.layout import KafkaLayout, infer_layout
from kreplica.kafka.randoms import DEFAULT_SEED, JavaRandom, MockRandom, RandomSource
from kreplica.kafka.striped import StripedRackList, striped_place
from kreplica.kafka.striped import _BrokerList as _BrokerList  # not public; its tests use it
from kreplica.kafka.zk import add_partitions, assign_replicas, rack_alternated_brokers

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
