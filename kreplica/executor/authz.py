"""Before a write: may this client do it? Checked from the operations the cluster says this
principal is allowed (DescribeCluster and Metadata with include_authorized_operations, KIP-430),
so a principal without a permission is refused before anything is written, instead of halfway
(throttles set, then the reassignment refused). DescribeAcls would need Describe on the cluster
*and* tell what others may do; authorized operations need nothing and answer for us alone.

Pure (standard library only); the cluster's answer comes from KafkaCluster.authorized().
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kreplica.errors import SourceError

CLUSTER = "kafka-cluster"

# Kafka's AclOperation names -> what kafka-acls --operation takes
_ACL_NAMES = {
    "ALTER": "Alter",
    "ALTER_CONFIGS": "AlterConfigs",
    "DESCRIBE": "Describe",
    "DESCRIBE_CONFIGS": "DescribeConfigs",
}


class NotAuthorized(SourceError):
    """The client's principal lacks a permission a write needs; nothing was written."""

    code = "not-authorized"


@dataclass(frozen=True, order=True)
class Need:
    resource: str  # "cluster" or "topic"
    name: str  # CLUSTER or the topic's name
    operation: str  # Kafka's AclOperation name: ALTER, ALTER_CONFIGS
    why: str  # what kreplica wants to do with it


def apply_needs(
    *,
    moved_topics: Iterable[str],
    created_topics: Iterable[str],
    throttled: bool,
    via_kafka: bool = True,
) -> list[Need]:
    """What applying a plan writes: reassignments (Alter on the cluster), throttles
    (AlterConfigs on the brokers, i.e. the cluster, and on the moved topics), new partitions
    (Alter on their topics)."""
    moved = sorted(set(moved_topics))
    needs: list[Need] = []
    if moved and via_kafka:
        needs.append(Need("cluster", CLUSTER, "ALTER", "submit partition reassignments"))
    if moved and throttled:
        needs.append(Need("cluster", CLUSTER, "ALTER_CONFIGS", "set broker throttles"))
        needs += [Need("topic", t, "ALTER_CONFIGS", "set topic throttles") for t in moved]
    needs += [Need("topic", t, "ALTER", "create partitions") for t in sorted(set(created_topics))]
    return needs


def canary_needs(topic: str, *, exists: bool, delete: bool) -> list[Need]:
    """What the canary of `--pace auto` does with its topic: create it when missing (Create on
    the cluster, or on the topic, which only the create itself can tell), write to it, and
    delete it afterwards unless --keep-canary."""
    why = "run the --pace auto canary (or use --throttle RATE instead)"
    if not exists:
        return [Need("cluster", CLUSTER, "CREATE", f"create its topic {topic}: {why}")]
    needs = [Need("topic", topic, "WRITE", f"write to {topic}: {why}")]
    if delete:
        needs.append(
            Need("topic", topic, "DELETE", f"delete {topic} afterwards (or --keep-canary)")
        )
    return needs


def throttle_needs(kinds_and_names: Iterable[tuple[str, str]], why: str) -> list[Need]:
    """Changing throttle configs of ("broker", id) / ("topic", name) resources."""
    needs: set[Need] = set()
    for kind, name in kinds_and_names:
        if kind == "broker":
            needs.add(Need("cluster", CLUSTER, "ALTER_CONFIGS", why))
        else:
            needs.add(Need("topic", name, "ALTER_CONFIGS", why))
    return sorted(needs)


def missing(
    needs: Sequence[Need],
    cluster_ops: Iterable[str] | None,
    topic_ops: Mapping[str, Iterable[str] | None],
) -> list[Need]:
    """The needs the principal's authorized operations do not cover. None (the cluster did not
    say: an old broker, or no authorizer) counts as allowed: the write itself then decides."""
    cluster = None if cluster_ops is None else set(cluster_ops)
    topics = {k: (None if v is None else set(v)) for k, v in topic_ops.items()}
    out: list[Need] = []
    for need in needs:
        ops = cluster if need.resource == "cluster" else topics.get(need.name)
        if ops is None:
            continue
        if need.operation not in ops and "ALL" not in ops:
            out.append(need)
    return out


def _resource_text(need: Need) -> str:
    return "the cluster" if need.resource == "cluster" else f"topic {need.name!r}"


def _grant_text(need: Need, principal: str) -> str:
    target = "--cluster" if need.resource == "cluster" else f"--topic {need.name}"
    operation = _ACL_NAMES.get(need.operation, need.operation.title())
    return f"kafka-acls --add --allow-principal {principal} --operation {operation} {target}"


def refusal(lacking: Sequence[Need], principal: str | None, bootstrap: str) -> NotAuthorized:
    """One line: the first missing permission, Kafka's error for it, the ACL that grants it."""
    first = sorted(lacking)[0]
    who = principal or "this client's principal"
    error = (
        "CLUSTER_AUTHORIZATION_FAILED"
        if first.resource == "cluster"
        else "TOPIC_AUTHORIZATION_FAILED"
    )
    operation = _ACL_NAMES.get(first.operation, first.operation.title())
    others = sorted(
        {(n.resource, n.name, n.operation) for n in lacking}
        - {(first.resource, first.name, first.operation)}
    )
    more = f" (and {len(others)} more permission(s))" if others else ""
    return NotAuthorized(
        f"{who} may not {operation} {_resource_text(first)} at {bootstrap}, needed to "
        f"{first.why}{more}: Kafka would refuse it with {error}; nothing was changed; an "
        f"admin grants it with `{_grant_text(first, principal or 'User:NAME')}`, or run as a "
        "user who has it"
    )
