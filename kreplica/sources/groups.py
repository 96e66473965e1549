"""Consumer groups from the cluster: members, subscriptions, current assignment, assignor.

kafka-python's DescribeGroups decodes each member's subscription (the topics it subscribed
to, which confluent-kafka's describe_consumer_groups does not expose) and its assignment;
confluent-kafka lists the groups. Returns kreplica.impact objects, never client objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kreplica.errors import SourceError, UsageError
from kreplica.impact.assignors import JAVA_CLASSES, GroupMember, GroupSpec


@dataclass(frozen=True)
class ConsumerGroup:
    group_id: str
    state: str
    assignor: str | None  # range | roundrobin | sticky | cooperative-sticky | other name
    protocol: str  # the raw protocol name the members agreed on
    spec: GroupSpec  # members with their subscriptions and current assignment as `owned`


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _partitions(assignment: Any) -> list[tuple[str, int]]:
    """(topic, partition) from a decoded ConsumerProtocolAssignment (object or dict)."""
    if assignment is None or isinstance(assignment, bytes | bytearray):
        return []
    rows = _get(assignment, "assigned_partitions") or _get(assignment, "assignment") or []
    result: list[tuple[str, int]] = []
    for row in rows:
        topic = _get(row, "topic") if not isinstance(row, list | tuple) else row[0]
        numbers = _get(row, "partitions") if not isinstance(row, list | tuple) else row[1]
        result.extend((str(topic), int(p)) for p in numbers or [])
    return result


def _subscribed(metadata: Any) -> list[str] | None:
    if metadata is None or isinstance(metadata, bytes | bytearray):
        return None
    topics = _get(metadata, "topics")
    if topics is None:
        topics = _get(metadata, "subscription")
    return None if topics is None else [str(t) for t in topics]


def group_from_description(
    group_id: str, described: Mapping[str, Any], partition_counts: Mapping[str, int]
) -> ConsumerGroup:
    """One DescribeGroups answer (kafka-python's dict) as a ConsumerGroup."""
    protocol = str(described.get("protocol_data") or described.get("protocol") or "")
    members: list[GroupMember] = []
    for m in described.get("members") or []:
        owned = _partitions(m.get("member_assignment"))
        topics = _subscribed(m.get("member_metadata"))
        if topics is None:  # not decodable: what it was given is all we know
            topics = sorted({t for t, _ in owned})
        members.append(
            GroupMember(
                str(m.get("member_id")),
                tuple(topics),
                tuple(owned),
                None,
                m.get("group_instance_id") or None,
            )
        )
    counts = {t: partition_counts[t] for m in members for t in m.topics if t in partition_counts}
    assignor = JAVA_CLASSES.get(protocol, protocol or None)
    return ConsumerGroup(
        group_id,
        str(described.get("group_state") or described.get("state") or ""),
        assignor,
        protocol,
        GroupSpec(tuple(members), counts),
    )


def read_groups(
    source: Any, partition_counts: Mapping[str, int], group_ids: Iterable[str] | None = None
) -> list[ConsumerGroup]:
    """Groups of the cluster behind an AdminSource (all consumer groups when `group_ids` is
    None). Needs --bootstrap-server: ZooKeeper does not know consumer groups."""
    client_for = getattr(source, "_kafka_python_client", None)
    if client_for is None:
        raise UsageError(
            "consumer groups are read from the brokers: give `bootstrap_server` (or a `cluster` "
            "with one), not `zookeeper` or `snapshot`"
        )
    client = client_for()
    try:
        if group_ids is None:
            listed = client.list_groups()
            group_ids = sorted(
                str(_get(g, "group_id"))
                for g in listed
                if str(_get(g, "protocol_type") or "") in ("consumer", "")
            )
        wanted = list(group_ids)
        if not wanted:
            return []
        described = client.describe_groups(wanted)
    except Exception as exc:  # kafka-python raises its own KafkaError family
        raise SourceError(f"cannot describe consumer groups: {exc}") from None
    groups = []
    for group_id in wanted:
        answer = described.get(group_id)
        if answer is None:
            continue
        if answer.get("error"):
            raise SourceError(f"consumer group {group_id!r}: {answer['error']}")
        groups.append(group_from_description(group_id, answer, partition_counts))
    return groups
