"""The Kafka requests a plan's read needs beyond confluent-kafka, on plain connections of its
own: ApiVersions, Metadata (brokers, racks and every partition: confluent-kafka builds an
object per partition), DescribeLogDirs, ListPartitionReassignments and (KRaft) DescribeCluster
v2 with fenced brokers (no kafka-python), and DescribeConfigs of the topics split over the
brokers (a ZooKeeper-mode broker reads each topic's config znode in turn: 200 topics asked of
one broker waited 0.1-0.3 s).

kafka-python costs a plan's read about 0.3 s of CPU on a 20,000-partition cluster (its import,
and its schema-driven decoder turning every replica's entry into objects and then dicts), on a
2-core machine as much as the rest of the read. Here each request is one frame written and one
read, decoded with struct in the calling thread, and the answer has kafka-python's shape (the
same dicts), so everything downstream is unchanged. Only PLAINTEXT listeners without a login
are read this way; AdminSource keeps kafka-python for TLS and SASL, and falls back to it when
this reader fails (WireError: refused, an error code, a version it does not speak).

Kafka's wire format (big-endian): a frame is an int32 length then its body. A request header:
api_key int16, api_version int16, correlation_id int32, client_id (int16 length + bytes), and
for a flexible version an empty tag buffer (one 0 byte). A response: correlation_id int32, and
for a flexible version a tag buffer, then the body. Flexible versions write arrays and strings
"compact" (unsigned varint of length + 1, 0 for null) and end each struct with a tag buffer.
ApiVersions is asked at v0 (no tag buffers), which every broker speaks.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Mapping, Sequence
from typing import Any

METADATA = 3
API_VERSIONS = 18
DESCRIBE_CONFIGS = 32
DESCRIBE_LOG_DIRS = 35
LIST_PARTITION_REASSIGNMENTS = 46
DESCRIBE_CLUSTER = 60
# versions this reader speaks: DescribeLogDirs 1 (Kafka 2.x) to 4 (total/usable bytes, 3.3+);
# DescribeConfigs 1-2 (each entry's source; v0 has none, v3 adds documentation)
LOG_DIRS_VERSIONS = (1, 4)
CONFIGS_VERSIONS = (1, 2)
# Metadata 4 (Kafka 1.0; 4.0 removed 0-3) to 8, the last before flexible versions
METADATA_VERSIONS = (4, 8)
_TOPIC_RESOURCE = 2
_CLIENT_ID = b"kreplica"
_CLUSTER_AUTHORIZATION_FAILED = 31

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PARTITION = struct.Struct(">iqq?")  # partition_index, partition_size, offset_lag, is_future_key


class WireError(Exception):
    """This reader cannot answer; the caller asks kafka-python instead."""


class WireTimeout(WireError):
    """The broker did not answer within the timeout: asking kafka-python would wait as long
    again, so the caller reports it instead."""


class NotAuthorized(WireError):
    """The broker refused DescribeLogDirs: the principal may not describe the cluster."""


# -------------------------------------------------------------------------- encoding


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _compact_string(text: str) -> bytes:
    raw = text.encode()
    return _uvarint(len(raw) + 1) + raw


def request_frame(
    api_key: int, version: int, correlation_id: int, body: bytes, *, flexible: bool
) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(_CLIENT_ID)) + _CLIENT_ID
    if flexible:
        header += b"\0"  # no tagged fields
    return _I32.pack(len(header) + len(body)) + header + body


def log_dirs_body(topics: Mapping[str, Sequence[int]] | None, version: int) -> bytes:
    """DescribeLogDirs' body: the topics with their partition ids (None: every partition the
    broker holds, a null array)."""
    if topics is None:
        return b"\0\0" if version >= 2 else _I32.pack(-1)
    parts = []
    if version >= 2:
        parts.append(_uvarint(len(topics) + 1))
        for name, partitions in topics.items():
            parts.append(_compact_string(name))
            parts.append(_uvarint(len(partitions) + 1))
            parts.append(struct.pack(f">{len(partitions)}i", *partitions))
            parts.append(b"\0")
        parts.append(b"\0")
    else:
        parts.append(_I32.pack(len(topics)))
        for name, partitions in topics.items():
            raw = name.encode()
            parts.append(_I16.pack(len(raw)) + raw)
            parts.append(struct.pack(f">i{len(partitions)}i", len(partitions), *partitions))
    return b"".join(parts)


def metadata_body(version: int, *, topics: bool = True) -> bytes:
    """Metadata v4-v8's body: every topic (null; `topics` False: none, an empty array, for
    the brokers alone), none created, no authorized operations."""
    return _I32.pack(-1 if topics else 0) + (b"\0\0\0" if version >= 8 else b"\0")


def configs_body(topics: Sequence[str]) -> bytes:
    """DescribeConfigs v1/v2's body: every config (null keys) of each TOPIC resource, no
    synonyms."""
    parts = [_I32.pack(len(topics))]
    for name in topics:
        raw = name.encode()
        parts.append(struct.pack(">bh", _TOPIC_RESOURCE, len(raw)) + raw + _I32.pack(-1))
    parts.append(b"\0")  # include_synonyms: false
    return b"".join(parts)


def list_reassignments_body(timeout_ms: int) -> bytes:
    """ListPartitionReassignments v0 (flexible): the timeout, every topic (null), no tags."""
    return _I32.pack(timeout_ms) + b"\0" + b"\0"


# -------------------------------------------------------------------------- decoding


class _Reader:
    """A cursor over one response body."""

    __slots__ = ("buf", "flexible", "pos")

    def __init__(self, buf: bytes, flexible: bool) -> None:
        self.buf, self.pos, self.flexible = buf, 0, flexible

    def int16(self) -> int:
        (value,) = _I16.unpack_from(self.buf, self.pos)
        self.pos += 2
        return int(value)

    def int32(self) -> int:
        (value,) = _I32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return int(value)

    def int64(self) -> int:
        (value,) = struct.unpack_from(">q", self.buf, self.pos)
        self.pos += 8
        return int(value)

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.buf[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def length(self) -> int:
        """An array's or a string's length (-1: null)."""
        if self.flexible:
            return self.uvarint() - 1
        return self.int32()

    def string(self) -> str | None:
        size = self.uvarint() - 1 if self.flexible else self.int16()
        if size < 0:
            return None
        text = self.buf[self.pos : self.pos + size].decode()
        self.pos += size
        return text

    def int32_array(self) -> list[int]:
        count = self.length()
        if count <= 0:
            return []
        values = struct.unpack_from(f">{count}i", self.buf, self.pos)
        self.pos += 4 * count
        return list(values)

    def tags(self) -> None:
        """Skip a tag buffer (flexible versions only)."""
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self.pos += self.uvarint()  # its data


def api_versions(body: bytes) -> dict[int, tuple[int, int]]:
    """ApiVersions v0's answer: api key → (min, max) version."""
    reader = _Reader(body, flexible=False)
    error = reader.int16()
    if error:
        raise WireError(f"ApiVersions error code {error}")
    out = {}
    for _ in range(reader.int32()):
        key, low, high = struct.unpack_from(">hhh", body, reader.pos)
        reader.pos += 6
        out[key] = (low, high)
    return out


def log_dirs(body: bytes, version: int, broker: int) -> dict[str, Any]:
    """DescribeLogDirs' answer as kafka-python's describe_log_dirs gives it for one broker:
    {"broker": id, "log_dirs": [{"error_code", "log_dir", "topics": [{"name", "partitions":
    [{"partition_index", "partition_size", "offset_lag", "is_future_key"}]}], "total_bytes",
    "usable_bytes"}]}. NotAuthorized when the principal may not describe the cluster."""
    reader = _Reader(body, flexible=version >= 2)
    reader.int32()  # throttle_time_ms
    if version >= 3:
        error = reader.int16()
        if error == _CLUSTER_AUTHORIZATION_FAILED:
            raise NotAuthorized("DescribeLogDirs: cluster authorization failed")
        if error:
            raise WireError(f"DescribeLogDirs error code {error}")
    results = []
    unpack = _PARTITION.unpack_from
    step = _PARTITION.size
    for _ in range(max(0, reader.length())):
        error = reader.int16()
        if error == _CLUSTER_AUTHORIZATION_FAILED:
            raise NotAuthorized("DescribeLogDirs: cluster authorization failed")
        path = reader.string()
        topics = []
        for _ in range(max(0, reader.length())):
            name = reader.string()
            partitions = []
            for _ in range(max(0, reader.length())):
                index, size, lag, future = unpack(body, reader.pos)
                reader.pos += step
                reader.tags()
                partitions.append(
                    {
                        "partition_index": index,
                        "partition_size": size,
                        "offset_lag": lag,
                        "is_future_key": future,
                    }
                )
            reader.tags()
            topics.append({"name": name, "partitions": partitions})
        entry: dict[str, Any] = {"error_code": error, "log_dir": path, "topics": topics}
        if version >= 4:
            entry["total_bytes"] = reader.int64()
            entry["usable_bytes"] = reader.int64()
        reader.tags()
        results.append(entry)
    return {"broker": broker, "log_dirs": results}


# one partition: error_code, partition_index, leader_id (then leader_epoch from v7)
_PART_HEAD = struct.Struct(">hii")

# Metadata's answer: (brokers as {"node_id", "host", "port", "rack"}, cluster id, controller
# id, topic → (error code, partition → (replicas, isr, leader)))
Metadata = tuple[
    list[dict[str, Any]],
    str | None,
    int,
    dict[str, tuple[int, dict[int, tuple[list[int], list[int], int]]]],
]


def metadata(body: bytes, version: int) -> Metadata:
    """Metadata v4-v8's answer (see `Metadata`). The partitions are the bulk of it (20,000
    in 0.85 MB on the bench cluster): read with precompiled structs, one slice per list."""
    reader = _Reader(body, flexible=False)
    reader.int32()  # throttle_time_ms
    brokers = []
    for _ in range(max(0, reader.int32())):
        node = reader.int32()
        host = reader.string()
        port = reader.int32()
        rack = reader.string()
        brokers.append({"node_id": node, "host": host, "port": port, "rack": rack})
    cluster_id = reader.string()
    controller = reader.int32()
    buf = body
    pos = reader.pos
    unpack_i32 = _I32.unpack_from
    head = _PART_HEAD.unpack_from
    head_size = _PART_HEAD.size + (4 if version >= 7 else 0)
    offline = version >= 5
    topics: dict[str, tuple[int, dict[int, tuple[list[int], list[int], int]]]] = {}
    (count,) = unpack_i32(buf, pos)
    pos += 4
    for _ in range(max(0, count)):
        reader.pos = pos
        error = reader.int16()
        name = reader.string() or ""
        pos = reader.pos + 1  # is_internal
        (n_parts,) = unpack_i32(buf, pos)
        pos += 4
        parts: dict[int, tuple[list[int], list[int], int]] = {}
        for _ in range(max(0, n_parts)):
            _error, index, leader = head(buf, pos)
            pos += head_size
            (n,) = unpack_i32(buf, pos)
            replicas = list(struct.unpack_from(f">{n}i", buf, pos + 4)) if n > 0 else []
            pos += 4 + 4 * max(n, 0)
            (n,) = unpack_i32(buf, pos)
            isr = list(struct.unpack_from(f">{n}i", buf, pos + 4)) if n > 0 else []
            pos += 4 + 4 * max(n, 0)
            if offline:
                (n,) = unpack_i32(buf, pos)
                pos += 4 + 4 * max(n, 0)
            parts[index] = (replicas, isr, leader)
        if version >= 8:
            pos += 4  # topic_authorized_operations
        topics[name] = (error, parts)
    return brokers, cluster_id, controller, topics


def topic_configs(body: bytes) -> dict[str, list[tuple[str, str | None, int]]]:
    """DescribeConfigs v1/v2's answer: topic → its (name, value, config source) entries, in
    the broker's order. WireError on any resource's error (AdminSource then asks
    confluent-kafka, which names it)."""
    reader = _Reader(body, flexible=False)
    reader.int32()  # throttle_time_ms
    out: dict[str, list[tuple[str, str | None, int]]] = {}
    for _ in range(max(0, reader.int32())):
        error = reader.int16()
        message = reader.string()
        reader.pos += 1  # resource_type
        name = reader.string() or ""
        if error:
            raise WireError(f"DescribeConfigs error code {error} for {name}: {message}")
        entries = []
        for _ in range(max(0, reader.int32())):
            key = reader.string() or ""
            value = reader.string()
            source = reader.buf[reader.pos + 1]  # read_only, config_source, is_sensitive
            reader.pos += 3
            for _ in range(max(0, reader.int32())):  # synonyms (none asked for)
                reader.string()
                reader.string()
                reader.pos += 1
            entries.append((key, value, source if source < 128 else source - 256))
        out[name] = entries
    return out


def reassignments(body: bytes) -> dict[tuple[str, int], dict[str, tuple[int, ...]]]:
    """ListPartitionReassignments v0's answer: (topic, partition) → its replicas, adding and
    removing replicas (kafka-python's list_partition_reassignments, keyed by tuples)."""
    reader = _Reader(body, flexible=True)
    reader.int32()  # throttle_time_ms
    error = reader.int16()
    message = reader.string()
    if error:
        raise WireError(f"ListPartitionReassignments error code {error}: {message}")
    out: dict[tuple[str, int], dict[str, tuple[int, ...]]] = {}
    for _ in range(max(0, reader.length())):
        name = reader.string() or ""
        for _ in range(max(0, reader.length())):
            index = reader.int32()
            replicas = tuple(reader.int32_array())
            adding = tuple(reader.int32_array())
            removing = tuple(reader.int32_array())
            reader.tags()
            out[(name, index)] = {
                "replicas": replicas,
                "adding_replicas": adding,
                "removing_replicas": removing,
            }
        reader.tags()
    return out


def described_cluster(body: bytes, version: int) -> dict[str, Any]:
    """DescribeCluster's answer in kafka-python's describe_cluster shape (what
    admin.fenced_brokers reads): {"cluster_id", "controller_id", "brokers": [{"broker_id",
    "host", "port", "rack", "is_fenced"}]}."""
    reader = _Reader(body, flexible=True)
    reader.int32()  # throttle_time_ms
    error = reader.int16()
    message = reader.string()
    if error:
        raise WireError(f"DescribeCluster error code {error}: {message}")
    if version >= 1:
        reader.pos += 1  # endpoint_type
    cluster_id = reader.string()
    controller = reader.int32()
    brokers = []
    for _ in range(max(0, reader.length())):
        broker_id = reader.int32()
        host = reader.string()
        port = reader.int32()
        rack = reader.string()
        fenced = False
        if version >= 2:
            fenced = bool(reader.buf[reader.pos])
            reader.pos += 1
        reader.tags()
        brokers.append(
            {"broker_id": broker_id, "host": host, "port": port, "rack": rack, "is_fenced": fenced}
        )
    return {"cluster_id": cluster_id, "controller_id": controller, "brokers": brokers}


# -------------------------------------------------------------------------- a connection


class BrokerConnection:
    """One plain TCP connection to one broker, one request at a time."""

    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as exc:
            raise WireError(f"cannot connect to {host}:{port}: {exc}") from None
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._next_id = 1
        # one request at a time on the socket: threads share a broker's connection
        self._lock = threading.Lock()
        self.versions: dict[int, tuple[int, int]] = {}

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, api_key: int, version: int, body: bytes, *, flexible: bool) -> bytes:
        """Send one request, return its response's body (header stripped)."""
        with self._lock:
            correlation = self._next_id
            self._next_id += 1
            try:
                frame = request_frame(api_key, version, correlation, body, flexible=flexible)
                self._sock.sendall(frame)
                (size,) = _I32.unpack(self._read(4))
                frame = self._read(size)
            except TimeoutError:
                raise WireTimeout(f"no answer within {self._sock.gettimeout():g}s") from None
            except OSError as exc:
                raise WireError(f"request {api_key} v{version}: {exc}") from None
        if _I32.unpack_from(frame)[0] != correlation:
            raise WireError("a response to another request")
        start = 4  # the correlation id; a flexible response header adds a tag buffer
        if flexible:
            reader = _Reader(frame, flexible=True)
            reader.pos = 4
            reader.tags()
            start = reader.pos
        return frame[start:]

    def _read(self, size: int) -> bytes:
        chunks = []
        while size:
            chunk = self._sock.recv(min(size, 1 << 20))
            if not chunk:
                raise WireError("the broker closed the connection")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def ask_versions(self) -> dict[int, tuple[int, int]]:
        self.versions = api_versions(self.request(API_VERSIONS, 0, b"", flexible=False))
        return self.versions

    def version_of(self, api_key: int, ours: tuple[int, int]) -> int:
        """The highest version of `api_key` both sides speak."""
        low, high = self.versions.get(api_key, (0, -1))
        best = min(high, ours[1])
        if best < max(low, ours[0]):
            raise WireError(f"no common version of API {api_key} (broker {low}-{high})")
        return best

    def describe_log_dirs(
        self, topics: Mapping[str, Sequence[int]] | None, broker: int
    ) -> dict[str, Any]:
        version = self.version_of(DESCRIBE_LOG_DIRS, LOG_DIRS_VERSIONS)
        body = self.request(
            DESCRIBE_LOG_DIRS, version, log_dirs_body(topics, version), flexible=version >= 2
        )
        return log_dirs(body, version, broker)

    def describe_metadata(self, *, topics: bool = True) -> Metadata:
        version = self.version_of(METADATA, METADATA_VERSIONS)
        body = self.request(
            METADATA, version, metadata_body(version, topics=topics), flexible=False
        )
        return metadata(body, version)

    def describe_topic_configs(
        self, topics: Sequence[str]
    ) -> dict[str, list[tuple[str, str | None, int]]]:
        version = self.version_of(DESCRIBE_CONFIGS, CONFIGS_VERSIONS)
        return topic_configs(
            self.request(DESCRIBE_CONFIGS, version, configs_body(topics), flexible=False)
        )

    def list_reassignments(self, timeout_ms: int) -> dict[tuple[str, int], dict[str, Any]]:
        self.version_of(LIST_PARTITION_REASSIGNMENTS, (0, 0))
        body = self.request(
            LIST_PARTITION_REASSIGNMENTS, 0, list_reassignments_body(timeout_ms), flexible=True
        )
        return reassignments(body)

    def describe_cluster(self) -> dict[str, Any]:
        """DescribeCluster v2 with fenced brokers (Kafka 4.0+; KIP-1073); WireError before."""
        self.version_of(DESCRIBE_CLUSTER, (2, 2))
        # include_cluster_authorized_operations false, endpoint_type 1 (brokers), fenced too
        body = self.request(DESCRIBE_CLUSTER, 2, b"\0\x01\x01\0", flexible=True)
        return described_cluster(body, 2)


def zookeeper_mode(versions: Mapping[int, Any]) -> bool:
    """Only ZooKeeper-mode brokers serve the controller-to-broker APIs LeaderAndIsr,
    StopReplica and UpdateMetadata (keys 4-6)."""
    return all(key in versions for key in (4, 5, 6))


def plain_listener(client_config: Mapping[str, str] | None) -> bool:
    """Whether this reader may talk to the brokers: PLAINTEXT, no login."""
    config = dict(client_config or {})
    protocol = str(config.get("security.protocol", "PLAINTEXT")).upper()
    return protocol == "PLAINTEXT" and not any(k.startswith("sasl.") for k in config)
