"""The snapshot file format (`kreplica_snapshot: 1`): the one place it is read and written.

Pure (standard library only), so the planner's tests and the fleet job can use it freely.
A wrong type or value raises InputError naming the JSON path, e.g.
`topics[3].partitions[7].replicas`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kreplica.errors import InputError
from kreplica.gcpause import gc_paused
from kreplica.model import Broker, ClusterSnapshot, LogDir, Partition, Topic, TrafficWindow
from kreplica.userfiles import decode_json, read_user_file

if TYPE_CHECKING:
    from kreplica.columns import PartitionColumns

FORMAT_VERSION = 1


def load_snapshot(path: str | Path) -> ClusterSnapshot:
    p = Path(path)
    text = read_user_file(p, "snapshot file", fix="check the path")
    with gc_paused():  # millions of acyclic objects: see kreplica/gcpause.py
        return parse_snapshot_text(text, origin=str(p))


def load_snapshot_columnar(path: str | Path) -> ClusterSnapshot:
    """`load_snapshot` for the planner's array path: a ColumnarSnapshot (kreplica/columns.py:
    partitions as arrays, objects built only when asked for) when every partition is of the
    plain kind, else exactly what load_snapshot returns (its checks and messages).

    The file is parsed a chunk of topics at a time where sources/topicspans.py finds the
    topics (only one chunk's JSON objects live at once: at a million partitions the whole
    tree is about 900 MB); else, and whenever a chunk is not of the plain kind, whole."""
    p = Path(path)
    with gc_paused():  # millions of acyclic objects: see kreplica/gcpause.py
        raw = read_user_file(p, "snapshot file", fix="check the path").encode()
        snapshot = _columnar_by_topics(raw, str(p))
        if snapshot is not None:
            return snapshot
        return parse_snapshot_text_columnar(raw.decode(), origin=str(p))


_CHUNK_BYTES = 8 << 20  # of topics' JSON parsed at once


def _columnar_by_topics(raw: bytes, origin: str) -> ClusterSnapshot | None:
    """The snapshot in columns, its topics parsed and put in columns a chunk at a time; None
    when the file is not read that way (the caller parses it whole, with every message)."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - a dependency; only a broken install lacks it
        return None
    from kreplica.columns import build_columns, concat_columns
    from kreplica.sources.topicspans import topic_spans

    found = topic_spans(raw)
    if found is None:
        return None
    first, last, spans = found
    try:
        root = orjson.loads(raw[: first + 1] + raw[last:])  # the topics array left empty
    except orjson.JSONDecodeError:
        return None
    if not isinstance(root, dict) or root.get("topics") != []:
        return None
    parts = []
    done = 0
    while done < len(spans):
        stop = done + 1
        while stop < len(spans) and spans[stop][1] - spans[done][0] <= _CHUNK_BYTES:
            stop += 1
        chunk = b"[" + b",".join(raw[a:b] for a, b in spans[done:stop]) + b"]"
        try:
            topics = orjson.loads(chunk)
            shells = [_topic_shell(t, origin, f"topics[{done + k}]") for k, t in enumerate(topics)]
        except (orjson.JSONDecodeError, InputError):
            return None
        del chunk, topics
        columns = build_columns(shells)
        if columns is None:
            return None
        parts.append(columns)
        done = stop
    whole = concat_columns(parts) if parts else build_columns([])
    if whole is None:
        return None
    return _columnar_snapshot(root, origin, whole, None)


def parse_snapshot_text_columnar(text: str, *, origin: str = "snapshot") -> ClusterSnapshot:
    """`parse_snapshot_text` for the array path (see `load_snapshot_columnar`): the same
    snapshot, or the same error, in columns when it can be."""
    data = decode_json(
        text, origin, fix="write it with `kreplica snapshot -o FILE` or fix the file"
    )
    del text
    snapshot = parse_snapshot_columnar(data, origin=origin)
    if snapshot is not None:
        return snapshot
    return parse_snapshot(data, origin=origin)


def parse_snapshot_columnar(data: Any, *, origin: str = "snapshot") -> ClusterSnapshot | None:
    """The snapshot with its partitions in columns, or None when anything is unusual (the
    object parser then reads it and names the problem)."""
    from kreplica.columns import build_columns

    try:
        root = _obj(data, origin, "the top level")
        raw_topics = _list(root.get("topics", []), origin, "topics")
        shells = [_topic_shell(t, origin, f"topics[{i}]") for i, t in enumerate(raw_topics)]
    except InputError:
        return None  # the object parser raises it again, after the checks that come first
    columns = build_columns(shells)
    if columns is None:
        return None
    maker = None
    if columns.copy_size is not None:
        # per-replica dirs and sizes are not in the columns: a topic is built from its
        # JSON by the object parser (the same objects, nothing left to refuse)
        where = {s.name: i for i, (s, _) in enumerate(shells)}
        names = [t.name for t in columns.topics]

        def maker(i: int) -> Topic:
            j = where[names[i]]
            return _parse_topic(raw_topics[j], origin, f"topics[{j}]")

    return _columnar_snapshot(root, origin, columns, maker)


def _columnar_snapshot(
    root: Mapping[str, Any],
    origin: str,
    columns: PartitionColumns,
    maker: Callable[[int], Topic] | None,
) -> ClusterSnapshot | None:
    """The ColumnarSnapshot of a parsed root (its topics in `columns`), or None when the
    root is unusual (the object parser reads it then, and names the problem)."""
    from kreplica.columns import ColumnarSnapshot

    try:
        if root.get("kreplica_snapshot") != FORMAT_VERSION or root.get("traffic") is not None:
            return None  # rates are not in the columns: read as objects
        raw_brokers = _list(root.get("brokers", []), origin, "brokers")
        brokers = tuple(
            sorted(
                (_parse_broker(b, origin, f"brokers[{i}]") for i, b in enumerate(raw_brokers)),
                key=lambda b: b.id,
            )
        )
        if len({b.id for b in brokers}) != len(brokers):
            return None
        return ColumnarSnapshot(
            brokers,
            cluster_id=_opt_str(root.get("cluster_id"), origin, "cluster_id"),
            source=_opt_str(root.get("source"), origin, "source"),
            captured_at=_opt_str(root.get("captured_at"), origin, "captured_at"),
            columns=columns,
            maker=maker,
        )
    except InputError:
        return None  # the object parser raises it again, after the checks that come first


def _topic_shell(raw: Any, origin: str, path: str) -> tuple[Topic, Any]:
    """A topic without its partitions, and its raw partition list."""
    t = _obj(raw, origin, path)
    name = t.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(origin, f"{path}.name", "must be a non-empty string")
    configs_raw = _obj(t.get("configs", {}) or {}, origin, f"{path}.configs")
    configs = {str(k): str(v) for k, v in configs_raw.items() if v is not None}
    if MIN_ISR in configs:
        configs[MIN_ISR] = _min_isr_config(configs[MIN_ISR], origin, f"{path}.configs.{MIN_ISR}")
    min_isr = t.get("min_insync_replicas")
    if min_isr is not None:
        min_isr = _id(min_isr, origin, f"{path}.min_insync_replicas", "min.insync.replicas", 1)
    shell = Topic(
        name=name,
        partitions=(),
        configs=configs,
        effective_min_isr=min_isr,
        min_isr_source=_opt_str(
            t.get("min_insync_replicas_source"), origin, f"{path}.min_insync_replicas_source"
        ),
    )
    return shell, t.get("partitions", [])


def parse_snapshot_text(text: str, *, origin: str = "snapshot") -> ClusterSnapshot:
    data = decode_json(
        text, origin, fix="write it with `kreplica snapshot -o FILE` or fix the file"
    )
    return parse_snapshot(data, origin=origin)


def _fail(origin: str, path: str, problem: str) -> InputError:
    return InputError(f"{origin}: {path} {problem}")


def _int(value: Any, origin: str, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(origin, path, f"must be an integer, got {json.dumps(value)}")
    return value


def _opt_str(value: Any, origin: str, path: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _fail(origin, path, f"must be a string or null, got {json.dumps(value)}")


INT32_MAX = 2**31 - 1  # Kafka's broker and partition ids are 32-bit, >= 0


def _id(value: Any, origin: str, path: str, what: str, low: int = 0) -> int:
    """An integer in Kafka's range for `what` (a broker id, a partition id): low..2^31-1."""
    number = _int(value, origin, path)
    if not low <= number <= INT32_MAX:
        raise _fail(
            origin, path, f"must be a {what} from {low} to {INT32_MAX} (Kafka's), got {number}"
        )
    return number


def _int_list(value: Any, origin: str, path: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise _fail(origin, path, f"must be a list of broker ids, got {json.dumps(value)}")
    return tuple(_id(v, origin, f"{path}[{i}]", "broker id") for i, v in enumerate(value))


MIN_ISR = "min.insync.replicas"


def _min_isr_config(value: str, origin: str, path: str) -> str:
    """A topic's `min.insync.replicas` as Kafka parses it (an int, surrounding blanks
    trimmed, at least 1), written the one way the model reads it."""
    text = value.strip()
    digits = text[1:] if text[:1] in "+-" else text
    number = int(text) if digits.isascii() and digits.isdigit() else None
    if number is None or not 1 <= number <= INT32_MAX:
        raise _fail(
            origin, path, f"must be a whole number >= 1 as Kafka takes it, got {json.dumps(value)}"
        )
    return str(number)


def _list(value: Any, origin: str, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(origin, path, "must be a list")
    return value


def _obj(value: Any, origin: str, path: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise _fail(origin, path, "must be an object")
    return value


def parse_snapshot(data: Any, *, origin: str = "snapshot") -> ClusterSnapshot:
    root = _obj(data, origin, "the top level")
    version = root.get("kreplica_snapshot")
    if version is None:
        raise _fail(origin, "kreplica_snapshot", "is missing: this is not a kreplica snapshot file")
    if version != FORMAT_VERSION:
        raise _fail(
            origin, "kreplica_snapshot", f"is {json.dumps(version)}; this kreplica reads version 1"
        )
    brokers = tuple(
        sorted(
            (
                _parse_broker(b, origin, f"brokers[{i}]")
                for i, b in enumerate(_list(root.get("brokers", []), origin, "brokers"))
            ),
            key=lambda b: b.id,
        )
    )
    seen: set[int] = set()
    for b in brokers:
        if b.id in seen:
            raise _fail(origin, "brokers", f"lists broker {b.id} twice")
        seen.add(b.id)
    topics: list[Topic] = []
    names: set[str] = set()
    shared: dict[tuple[int, ...], tuple[int, ...]] = {}  # one tuple per distinct replica list
    for i, t in enumerate(_list(root.get("topics", []), origin, "topics")):
        topic = _parse_topic(t, origin, f"topics[{i}]", shared)
        if topic.name in names:
            raise _fail(origin, f"topics[{i}].name", f"repeats topic {topic.name!r}")
        names.add(topic.name)
        topics.append(topic)
    return ClusterSnapshot(
        brokers=brokers,
        topics=tuple(sorted(topics, key=lambda t: t.name)),
        cluster_id=_opt_str(root.get("cluster_id"), origin, "cluster_id"),
        source=_opt_str(root.get("source"), origin, "source"),
        captured_at=_opt_str(root.get("captured_at"), origin, "captured_at"),
        traffic=_traffic_window(root.get("traffic"), origin),
    )


def _traffic_window(raw: Any, origin: str) -> TrafficWindow | None:
    """The top-level `traffic` object (`snapshot --traffic`): the window and when it ended."""
    if raw is None:
        return None
    t = _obj(raw, origin, "traffic")
    window = t.get("window_s")
    if not isinstance(window, int | float) or isinstance(window, bool) or not window > 0:
        raise _fail(origin, "traffic.window_s", f"must be a number of seconds > 0, got {window!r}")
    measured_at = _opt_str(t.get("measured_at"), origin, "traffic.measured_at")
    peak_of = t.get("peak_of_s")
    if peak_of is not None and (
        not isinstance(peak_of, int | float) or isinstance(peak_of, bool) or not peak_of > 0
    ):
        raise _fail(
            origin, "traffic.peak_of_s", f"must be a number of seconds > 0, got {peak_of!r}"
        )
    read_from = _opt_str(t.get("from"), origin, "traffic.from")
    return TrafficWindow(
        float(window), measured_at or "", None if peak_of is None else float(peak_of), read_from
    )


INF = float("inf")


def _rate(value: Any, origin: str, path: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value < INF:
        raise _fail(origin, path, f"must be a number of bytes per second >= 0, got {value!r}")
    return float(value)


def _parse_broker(raw: Any, origin: str, path: str) -> Broker:
    b = _obj(raw, origin, path)
    if "id" not in b:
        raise _fail(origin, f"{path}.id", "is missing")
    alive = b.get("alive", True)
    if not isinstance(alive, bool):
        raise _fail(origin, f"{path}.alive", "must be true or false")
    port = b.get("port")
    return Broker(
        id=_id(b["id"], origin, f"{path}.id", "broker id"),
        rack=_opt_str(b.get("rack"), origin, f"{path}.rack"),
        host=_opt_str(b.get("host"), origin, f"{path}.host"),
        port=None if port is None else _int(port, origin, f"{path}.port"),
        alive=alive,
        disks=_log_dirs(b.get("log_dirs"), origin, f"{path}.log_dirs"),
    )


def _log_dirs(raw: Any, origin: str, path: str) -> tuple[LogDir, ...] | None:
    """A broker's log dirs: paths (older snapshots), or objects with a "path" and optionally
    "total_bytes" and "usable_bytes" (its disk figures)."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise _fail(origin, path, 'must be a list of paths or of {"path": ...} objects')
    dirs = []
    for i, entry in enumerate(raw):
        value = entry.get("path") if isinstance(entry, dict) else entry
        if not isinstance(value, str) or not value:
            raise _fail(origin, f"{path}[{i}]", 'must be a path or an object with a "path"')
        if not isinstance(entry, dict):
            dirs.append(LogDir(value))
            continue
        total = _opt_bytes(entry.get("total_bytes"), origin, f"{path}[{i}].total_bytes")
        usable = _opt_bytes(entry.get("usable_bytes"), origin, f"{path}[{i}].usable_bytes")
        if total is not None and usable is not None and usable > total:
            raise _fail(
                origin,
                f"{path}[{i}].usable_bytes",
                f"is {usable}, more than total_bytes {total}",
            )
        dirs.append(LogDir(value, total, usable))
    return tuple(dirs)


def _opt_bytes(value: Any, origin: str, path: str) -> int | None:
    if value is None:
        return None
    number = _int(value, origin, path)
    if number < 0:
        raise _fail(origin, path, f"must be >= 0, got {number}")
    return number


def _per_replica(raw: Any, replicas: tuple[int, ...], origin: str, path: str) -> list[Any] | None:
    """A list with one entry per replica (same order), or None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) != len(replicas):
        raise _fail(
            origin, path, f"must be a list with one entry per replica ({len(replicas)}), or null"
        )
    return raw


def _replica_dirs(
    raw: Any, replicas: tuple[int, ...], origin: str, path: str
) -> tuple[str | None, ...] | None:
    entries = _per_replica(raw, replicas, origin, path)
    if entries is None:
        return None
    for i, value in enumerate(entries):
        if value is not None and (not isinstance(value, str) or not value):
            raise _fail(origin, f"{path}[{i}]", f"must be a path or null, got {json.dumps(value)}")
    return tuple(entries)


def _replica_sizes(
    raw: Any, replicas: tuple[int, ...], origin: str, path: str
) -> tuple[int | None, ...] | None:
    entries = _per_replica(raw, replicas, origin, path)
    if entries is None:
        return None
    return tuple(_opt_bytes(v, origin, f"{path}[{i}]") for i, v in enumerate(entries))


def _parse_topic(
    raw: Any, origin: str, path: str, shared: dict[tuple[int, ...], tuple[int, ...]] | None = None
) -> Topic:
    shared = {} if shared is None else shared
    shell, raw_parts = _topic_shell(raw, origin, path)
    parts: dict[int, Partition] = {}
    for j, p in enumerate(_list(raw_parts, origin, f"{path}.partitions")):
        part = _plain_partition(p, shell.name, shared) or _parse_partition(
            p, shell.name, origin, f"{path}.partitions[{j}]"
        )
        if part.partition in parts:
            raise _fail(
                origin, f"{path}.partitions[{j}].partition", f"repeats partition {part.partition}"
            )
        parts[part.partition] = part
    return replace(shell, partitions=tuple(parts[k] for k in sorted(parts)))


_CHECKED_ONLY = (
    "replica_dirs",
    "replica_sizes",
    "bytes_in_per_s",
    "fanout",
)  # keys the plain path leaves to the checks


def _plain_partition(
    p: Any, topic: str, shared: dict[tuple[int, ...], tuple[int, ...]]
) -> Partition | None:
    """The common, well-formed partition, read without building a JSON path per field (the
    snapshot of a million partitions spent most of its parse there); None: anything unusual,
    which `_parse_partition` reads with its checks and messages. Equal replica lists share
    one tuple (`shared`), and an ISR equal to the replicas is that tuple."""
    if type(p) is not dict:
        return None
    number = p.get("partition")
    raw = p.get("replicas")
    if type(number) is not int or not 0 <= number <= INT32_MAX or type(raw) is not list:
        return None
    for b in raw:
        if type(b) is not int or not 0 <= b <= INT32_MAX:
            return None
    replicas = tuple(raw)
    if len(set(replicas)) != len(replicas):
        return None
    replicas = shared.setdefault(replicas, replicas)
    leader = p.get("leader")
    if leader is not None and (type(leader) is not int or not -1 <= leader <= INT32_MAX):
        return None
    isr_raw = p.get("isr")
    isr: tuple[int, ...] | None = None
    if isr_raw is not None:
        if type(isr_raw) is not list:
            return None
        for b in isr_raw:
            if type(b) is not int or not 0 <= b <= INT32_MAX:
                return None
        isr = tuple(isr_raw)
        isr = replicas if isr == replicas else shared.setdefault(isr, isr)
    size = p.get("size_bytes")
    if size is not None and (type(size) is not int or size < 0):
        return None
    for key in ("adding_replicas", "removing_replicas"):
        if key in p and (type(p[key]) is not list or p[key]):
            return None  # in flight (rare) or not a list: read with the checks
    for key in _CHECKED_ONLY:
        if p.get(key) is not None:
            return None
    return Partition(
        topic,
        number,
        replicas,
        leader=replicas[0] if replicas and leader == replicas[0] else leader,
        isr=isr,
        size_bytes=size,
    )


def _parse_partition(raw: Any, topic: str, origin: str, path: str) -> Partition:
    p = _obj(raw, origin, path)
    for key in ("partition", "replicas"):
        if key not in p:
            raise _fail(origin, f"{path}.{key}", "is missing")
    number = _id(p["partition"], origin, f"{path}.partition", "partition id")
    replicas = _int_list(p["replicas"], origin, f"{path}.replicas")
    if len(set(replicas)) != len(replicas):
        raise _fail(origin, f"{path}.replicas", f"lists a broker twice: {list(replicas)}")
    leader = p.get("leader")
    isr = p.get("isr")
    size = p.get("size_bytes")
    fanout = p.get("fanout")
    size_bytes = None if size is None else _int(size, origin, f"{path}.size_bytes")
    if size_bytes is not None and size_bytes < 0:
        raise _fail(origin, f"{path}.size_bytes", f"must be >= 0, got {size_bytes}")
    return Partition(
        topic=topic,
        partition=number,
        replicas=replicas,
        leader=None if leader is None else _id(leader, origin, f"{path}.leader", "leader", -1),
        isr=None if isr is None else _int_list(isr, origin, f"{path}.isr"),
        size_bytes=size_bytes,
        adding_replicas=_int_list(p.get("adding_replicas", []), origin, f"{path}.adding_replicas"),
        removing_replicas=_int_list(
            p.get("removing_replicas", []), origin, f"{path}.removing_replicas"
        ),
        replica_dirs=_replica_dirs(p.get("replica_dirs"), replicas, origin, f"{path}.replica_dirs"),
        replica_sizes=_replica_sizes(
            p.get("replica_sizes"), replicas, origin, f"{path}.replica_sizes"
        ),
        bytes_in_per_s=_rate(p.get("bytes_in_per_s"), origin, f"{path}.bytes_in_per_s"),
        fanout=None if fanout is None else _id(fanout, origin, f"{path}.fanout", "fan-out"),
    )


def _broker_to_dict(b: Broker) -> dict[str, Any]:
    out: dict[str, Any] = {"id": b.id, "rack": b.rack, "host": b.host, "port": b.port}
    out["alive"] = b.alive
    if b.disks is not None:
        out["log_dirs"] = [_log_dir_to_dict(d) for d in b.disks]
    elif b.log_dirs is not None:
        out["log_dirs"] = [{"path": d} for d in b.log_dirs]
    return out


def _log_dir_to_dict(d: LogDir) -> dict[str, Any]:
    out: dict[str, Any] = {"path": d.path}
    if d.total_bytes is not None:
        out["total_bytes"] = d.total_bytes
    if d.usable_bytes is not None:
        out["usable_bytes"] = d.usable_bytes
    return out


def snapshot_to_dict(snapshot: ClusterSnapshot) -> dict[str, Any]:
    """The file form of a snapshot; keys in a fixed order so output is byte-stable."""
    return {
        "kreplica_snapshot": FORMAT_VERSION,
        "cluster_id": snapshot.cluster_id,
        "source": snapshot.source,
        "captured_at": snapshot.captured_at,
        "brokers": [_broker_to_dict(b) for b in snapshot.brokers],
        "topics": [_topic_to_dict(t) for t in snapshot.topics],
        **_traffic_to_dict(snapshot.traffic),
    }


def _traffic_to_dict(traffic: TrafficWindow | None) -> dict[str, Any]:
    if traffic is None:
        return {}
    out: dict[str, Any] = {"window_s": traffic.window_s, "measured_at": traffic.measured_at}
    if traffic.origin is not None:  # rates from metrics: peaks over a range
        out.update(peak_of_s=traffic.peak_of_s, **{"from": traffic.origin})
    return {"traffic": out}


def _topic_to_dict(t: Topic) -> dict[str, Any]:
    out: dict[str, Any] = {"name": t.name, "configs": dict(sorted(t.configs.items()))}
    if t.effective_min_isr is not None:  # as the source reported it, never a guess
        out["min_insync_replicas"] = t.effective_min_isr
        if t.min_isr_source is not None:
            out["min_insync_replicas_source"] = t.min_isr_source
    out["partitions"] = [_partition_to_dict(p) for p in t.partitions]
    return out


def _partition_to_dict(p: Partition) -> dict[str, Any]:
    out: dict[str, Any] = {"partition": p.partition, "replicas": list(p.replicas)}
    if p.leader is not None:
        out["leader"] = p.leader
    if p.isr is not None:
        out["isr"] = list(p.isr)
    if p.size_bytes is not None:
        out["size_bytes"] = p.size_bytes
    out["adding_replicas"] = list(p.adding_replicas)
    out["removing_replicas"] = list(p.removing_replicas)
    if p.replica_dirs is not None:
        out["replica_dirs"] = list(p.replica_dirs)
    if p.replica_sizes is not None:
        out["replica_sizes"] = list(p.replica_sizes)
    if p.bytes_in_per_s is not None:
        out["bytes_in_per_s"] = p.bytes_in_per_s
        out["fanout"] = p.fanout  # null: unknown
    return out


def dump_snapshot(snapshot: ClusterSnapshot) -> str:
    return json.dumps(snapshot_to_dict(snapshot), indent=2) + "\n"


def write_snapshot(snapshot: ClusterSnapshot, path: str | Path) -> None:
    Path(path).write_text(dump_snapshot(snapshot), encoding="utf-8")
