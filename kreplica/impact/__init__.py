"""Impact of a topic change on clients: the producer's key partitioning and the consumer
group assignors, computed exactly as the Java client (kafka-clients 3.9) does.

Pure standard library, like kreplica.model / planner / kafka: no client, no I/O, no clock.
"""

from kreplica.impact.assignors import (
    ASSIGNORS,
    GroupMember,
    GroupSpec,
    assign,
    parse_group_document,
)
from kreplica.impact.partitioner import (
    murmur2,
    partition_for_key,
    remap_share,
    to_positive,
)

__all__ = [
    "ASSIGNORS",
    "GroupMember",
    "GroupSpec",
    "assign",
    "murmur2",
    "parse_group_document",
    "partition_for_key",
    "remap_share",
    "to_positive",
]
