"""Kafka's ZooKeeper znode JSON, parsed into model objects (pure: no kazoo, no I/O).

Formats are those written by Kafka's `ZkData.scala` (see kafka-internals.md §5.6). Jackson
writes keys in hash order, so everything here is parsed by key, never by position. A znode
that does not hold what Kafka writes raises SourceError naming the znode path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kreplica.errors import SourceError
from kreplica.model import KAFKA_DEFAULT_MIN_ISR, Broker, Partition, Topic


@dataclass(frozen=True)
class TopicAssignment:
    """The content of `/brokers/topics/<topic>` (znode versions 1, 2 and 3)."""

    replicas: dict[int, tuple[int, ...]]
    adding: dict[int, tuple[int, ...]]
    removing: dict[int, tuple[int, ...]]
    topic_id: str | None = None


@dataclass(frozen=True)
class PartitionState:
    """The content of `/brokers/topics/<topic>/partitions/<p>/state`."""

    leader: int
    isr: tuple[int, ...]


def _bad(path: str, problem: str) -> SourceError:
    return SourceError(
        f"ZooKeeper znode {path} {problem}; is this a Kafka cluster's ZooKeeper (check the chroot)?"
    )


def _json_object(data: bytes | None, path: str) -> dict[str, Any]:
    if not data:
        raise _bad(path, "is empty")
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _bad(path, f"does not hold JSON ({exc})") from None
    if not isinstance(value, dict):
        raise _bad(path, "does not hold a JSON object")
    return value


def _int(value: Any, path: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(path, f"has a non-integer {key}: {json.dumps(value)}")
    return value


def _int_tuple(value: Any, path: str, key: str) -> tuple[int, ...]:
    if type(value) is list:  # the usual case, checked without a call per item
        for item in value:
            if type(item) is not int:
                break
        else:
            return tuple(value)
    if not isinstance(value, list):
        raise _bad(path, f"has a non-list {key}: {json.dumps(value)}")
    return tuple(_int(v, path, key) for v in value)


def _partition_map(value: Any, path: str, key: str) -> dict[int, tuple[int, ...]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _bad(path, f"has a non-object {key!r}")
    out: dict[int, tuple[int, ...]] = {}
    for raw_id, replicas in value.items():
        try:
            partition = int(raw_id)
        except ValueError:
            raise _bad(path, f"has a non-numeric partition {raw_id!r} in {key!r}") from None
        out[partition] = _int_tuple(replicas, path, f"{key}.{raw_id}")
    return dict(sorted(out.items()))


def parse_cluster_id(data: bytes | None, path: str = "/cluster/id") -> str | None:
    """`{"version":"1","id":"<clusterId>"}`; None when the znode is empty."""
    if not data:
        return None
    cid = _json_object(data, path).get("id")
    if cid is not None and not isinstance(cid, str):
        raise _bad(path, "has a non-string id")
    return cid


def _split_endpoint(endpoint: str) -> tuple[str, str, int] | None:
    """`LISTENER://host:port` (host may be `[v6]` or empty) → (listener, host, port)."""
    listener, sep, address = endpoint.partition("://")
    if not sep:
        return None
    host, colon, port_text = address.rpartition(":")
    if not colon or not port_text.isdigit():
        return None
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return listener, host, int(port_text)


def parse_broker(broker_id: int, data: bytes | None, path: str | None = None) -> Broker:
    """`/brokers/ids/<id>`: v1 has host/port only, v2+ has endpoints, v3+ an optional rack.

    host/port are the plain `host`/`port` keys (the first PLAINTEXT endpoint) when set,
    otherwise the first endpoint of any listener.
    """
    path = path or f"/brokers/ids/{broker_id}"
    obj = _json_object(data, path)
    host = obj.get("host")
    port = obj.get("port")
    if not isinstance(host, str) or not host or not isinstance(port, int) or port < 0:
        host, port = None, None
        endpoints = obj.get("endpoints") or []
        if not isinstance(endpoints, list):
            raise _bad(path, "has a non-list endpoints")
        for endpoint in endpoints:
            parsed = _split_endpoint(endpoint) if isinstance(endpoint, str) else None
            if parsed is not None:
                _, host, port = parsed
                break
    rack = obj.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise _bad(path, "has a non-string rack")
    return Broker(id=broker_id, rack=rack, host=host or None, port=port, alive=True)


def parse_topic_assignment(data: bytes | None, path: str) -> TopicAssignment:
    """`/brokers/topics/<topic>`: `partitions`, and since v2 `adding_replicas`/`removing_replicas`
    (missing maps mean none), since v3 an optional `topic_id`."""
    obj = _json_object(data, path)
    if "partitions" not in obj:
        raise _bad(path, "has no 'partitions'")
    topic_id = obj.get("topic_id")
    return TopicAssignment(
        replicas=_partition_map(obj["partitions"], path, "partitions"),
        adding=_partition_map(obj.get("adding_replicas"), path, "adding_replicas"),
        removing=_partition_map(obj.get("removing_replicas"), path, "removing_replicas"),
        topic_id=topic_id if isinstance(topic_id, str) else None,
    )


def parse_partition_state(data: bytes | None, path: str) -> PartitionState:
    """`{"version":1,"leader":2,"leader_epoch":0,"controller_epoch":1,"isr":[2,3,1]}`."""
    obj = _json_object(data, path)
    if "leader" not in obj or "isr" not in obj:
        raise _bad(path, "lacks 'leader' or 'isr'")
    return PartitionState(
        leader=_int(obj["leader"], path, "leader"), isr=_int_tuple(obj["isr"], path, "isr")
    )


def parse_topic_config(data: bytes | None, path: str) -> dict[str, str]:
    """`/config/topics/<topic>`: `{"version":1,"config":{"min.insync.replicas":"2",...}}`."""
    if not data:
        return {}
    config = _json_object(data, path).get("config") or {}
    if not isinstance(config, dict):
        raise _bad(path, "has a non-object 'config'")
    return {str(k): str(v) for k, v in sorted(config.items()) if v is not None}


# ZooKeeper holds topic overrides and dynamic broker configs, never a broker's server.properties.
MIN_ISR_ZK_UNKNOWN = "kafka default; static broker config not visible in ZooKeeper"
MIN_ISR_ZK_DENIED = (
    "kafka default; the cluster default in ZooKeeper is not readable (ACL) and static broker "
    "config is not visible in ZooKeeper"
)


def effective_min_isr(
    topic_configs: dict[str, str], cluster_default: dict[str, str] | None
) -> tuple[int, str]:
    """A topic's min.insync.replicas as far as ZooKeeper shows it: the topic override
    (`/config/topics/<t>`), else the dynamic cluster default (`/config/brokers/<default>`; None
    when an ACL hides it), else Kafka's default 1, marked as assumed: server.properties may set
    another value."""
    layers = ((topic_configs, "topic"), (cluster_default or {}, "cluster default"))
    for configs, source in layers:
        value = configs.get("min.insync.replicas")
        if value is not None and value.strip().isdigit():
            return int(value), source
    if cluster_default is None:
        return KAFKA_DEFAULT_MIN_ISR, MIN_ISR_ZK_DENIED
    return KAFKA_DEFAULT_MIN_ISR, MIN_ISR_ZK_UNKNOWN


def parse_reassign_partitions(
    data: bytes | None, path: str
) -> dict[tuple[str, int], tuple[int, ...]]:
    """`/admin/reassign_partitions`: `{"version":1,"partitions":[{topic, partition, replicas}]}`.

    Kafka treats invalid JSON here as empty, and the znode then blocks ZK-path reassignments
    forever, so invalid content is reported (with the fix) rather than ignored.
    """
    try:
        obj = json.loads(data or b"")
    except (ValueError, UnicodeDecodeError):
        obj = None
    if not isinstance(obj, dict):
        raise SourceError(
            f"ZooKeeper znode {path} does not hold reassignment JSON; Kafka ignores it, but it "
            f"blocks reassignments through ZooKeeper: inspect it and delete it "
            f"(zookeeper-shell HOST:PORT delete {path})"
        )
    entries = obj.get("partitions") or []
    if not isinstance(entries, list):
        raise _bad(path, "has a non-list 'partitions'")
    out: dict[tuple[str, int], tuple[int, ...]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str):
            raise _bad(path, f"has an entry without a topic: {json.dumps(entry)}")
        partition = _int(entry.get("partition"), path, "partition")
        out[(entry["topic"], partition)] = _int_tuple(entry.get("replicas"), path, "replicas")
    return out


def build_topic(
    name: str,
    assignment: TopicAssignment,
    states: dict[int, PartitionState | None],
    configs: dict[str, str],
    pending: dict[tuple[str, int], tuple[int, ...]] | None = None,
    cluster_default: dict[str, str] | None = None,
    *,
    cluster_default_readable: bool = True,
) -> Topic:
    """One topic from its znodes. `states` maps partition → state (None: no state znode yet).
    `pending` holds `/admin/reassign_partitions` targets; for a partition the controller has
    not picked up yet (no adding/removing in the topic znode) they give adding/removing.
    `cluster_default` is `/config/brokers/<default>`'s config (for min.insync.replicas), unless
    an ACL kept it from being read (`cluster_default_readable=False`)."""
    partitions = []
    for number, replicas in assignment.replicas.items():
        state = states.get(number)
        adding = assignment.adding.get(number, ())
        removing = assignment.removing.get(number, ())
        target = (pending or {}).get((name, number))
        if target is not None and not adding and not removing and target != replicas:
            adding = tuple(b for b in target if b not in replicas)
            removing = tuple(b for b in replicas if b not in target)
        partitions.append(
            Partition(
                topic=name,
                partition=number,
                replicas=replicas,
                leader=None if state is None else state.leader,
                isr=None if state is None else tuple(sorted(state.isr)),
                adding_replicas=adding,
                removing_replicas=removing,
            )
        )
    min_isr, min_isr_source = effective_min_isr(
        configs, (cluster_default or {}) if cluster_default_readable else None
    )
    return Topic(
        name=name,
        partitions=tuple(partitions),
        configs=dict(sorted(configs.items())),
        effective_min_isr=min_isr,
        min_isr_source=min_isr_source,
    )
