"""The brokers' answers in the model's terms (pure): DescribeConfigs entries as overrides and
effective min.insync.replicas, DescribeCluster v2's fenced brokers, and one snapshot's read
(Metadata, configs, DescribeLogDirs) made into topic objects or into columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from kreplica.model import Broker, ClusterSnapshot, Topic
from kreplica.sources.logdirs import LogDirs, broker_disks, broker_log_dirs, current_replicas

# per topic: its overrides, and its effective min.insync.replicas with where it comes from
Configs = tuple[dict[str, dict[str, str]], dict[str, tuple[int, str]]]
# (topic, partition) -> (adding, removing) of a reassignment in flight
Moving = Mapping[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]


# DescribeConfigs' ConfigSource names → where the effective value comes from (model's
# MIN_ISR_SOURCES). Checked on Kafka 3.9 (ZooKeeper) and 4.3 (KRaft), see the integration tests.
_MIN_ISR_SOURCES = {
    "DYNAMIC_TOPIC_CONFIG": "topic",
    "DYNAMIC_DEFAULT_BROKER_CONFIG": "cluster default",
    "DYNAMIC_BROKER_CONFIG": "broker config",
    "STATIC_BROKER_CONFIG": "broker config",
    "DEFAULT_CONFIG": "kafka default",
}


def min_isr_from_config(entry_value: str | None, source_name: str) -> tuple[int, str] | None:
    """A TOPIC resource's DescribeConfigs entry for min.insync.replicas (its value and its
    ConfigSource name) → (value, where it comes from); None when the value is not a number."""
    if entry_value is None or not entry_value.strip().isdigit():
        return None
    return int(entry_value), _MIN_ISR_SOURCES.get(source_name, f"{source_name.lower()} config")


def fenced_brokers(described: Mapping[str, Any]) -> list[Broker]:
    """Dead brokers from kafka-python's describe_cluster result: those marked `is_fenced`
    (only present in DescribeCluster v2 answers)."""
    return [
        Broker(
            id=int(b["broker_id"]),
            rack=b.get("rack") or None,
            host=b.get("host"),
            port=b.get("port"),
            alive=False,
        )
        for b in described.get("brokers") or []
        if b.get("is_fenced")
    ]


# DescribeConfigs' ConfigSource numbers (Kafka's wire values, confluent-kafka's ConfigSource
# enum) -> their names; a number neither knows is UNKNOWN_<n>.
_CONFIG_SOURCES = {
    0: "UNKNOWN_CONFIG",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    8: "GROUP_CONFIG",
}
_DYNAMIC_TOPIC_CONFIG = 1


def configs_of(
    entries: Mapping[str, Sequence[tuple[str, str | None, int]]],
) -> Configs:
    """Per topic, from its DescribeConfigs entries (name, value, source number): its
    overrides, sorted by name, and its effective min.insync.replicas with where it comes
    from (min_isr_from_config)."""
    out: dict[str, dict[str, str]] = {}
    min_isr: dict[str, tuple[int, str]] = {}
    for name, listed in entries.items():
        by_key = {key: (value, source) for key, value, source in listed}
        out[name] = {
            key: value
            for key, (value, source) in sorted(by_key.items())
            if source == _DYNAMIC_TOPIC_CONFIG and value is not None
        }
        entry = by_key.get("min.insync.replicas")
        if entry is not None:
            value, source = entry
            effective = min_isr_from_config(value, _CONFIG_SOURCES.get(source, f"UNKNOWN_{source}"))
            if effective is not None:
                min_isr[name] = effective
    return out, min_isr


_NO_MOVE: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())


class MetadataPartition(NamedTuple):
    """A partition of a Metadata answer, read as librdkafka's PartitionMetadata is."""

    replicas: list[int]
    isrs: list[int]
    leader: int


class SnapshotRead:
    """What one snapshot read: topic names, librdkafka's partition metadata per topic,
    configs, min.insync.replicas and the DescribeLogDirs answer; made into topic objects, or
    into columns (the objects then made only when something reads them)."""

    def __init__(
        self,
        names: list[str],
        metadata: Mapping[str, Mapping[int, Any]],
        configs: Mapping[str, dict[str, str]],
        min_isr: Mapping[str, tuple[int, str]],
        answer: list[Mapping[str, Any]],
    ) -> None:
        self.names = names
        self.metadata = metadata
        self.configs = configs
        self.min_isr = min_isr
        self.answer = answer

    def topic(
        self,
        name: str,
        index: LogDirs,
        moving: Moving,
    ) -> Topic:
        parts = []
        for number, info in sorted(self.metadata[name].items()):
            adding, removing = moving.get((name, number), _NO_MOVE)
            parts.append(
                index.partition(
                    name,
                    number,
                    tuple(info.replicas),
                    info.leader if info.leader >= 0 else -1,
                    tuple(sorted(info.isrs)),
                    adding,
                    removing,
                )
            )
        return dataclasses.replace(self.shell(name), partitions=tuple(parts))

    def shell(self, name: str) -> Topic:
        effective, source = self.min_isr.get(name, (None, None))
        return Topic(
            name=name,
            partitions=(),
            configs=self.configs.get(name, {}),
            effective_min_isr=effective,
            min_isr_source=source,
        )

    def columnar(
        self,
        by_id: Mapping[int, Broker],
        cluster_id: str | None,
        source: str,
        captured_at: str,
    ) -> ClusterSnapshot | None:
        """The snapshot in columns, equal to the object read once built (None: something
        unusual, read into objects). No reassignment may be in flight."""
        import numpy as np

        from kreplica.columns import PAD, ColumnarSnapshot, live_columns

        order = sorted(self.names)
        counts: list[int] = []
        pids: list[int] = []
        replicas: list[list[int]] = []
        leaders: list[int] = []
        isrs: list[list[int]] = []
        # row of (topic, partition): start + partition when a topic's ids are 0..n-1
        where: dict[str, tuple[int, int, dict[int, int] | None]] = {}
        for name in order:
            parts = self.metadata[name]
            numbers = sorted(parts)
            start = len(pids)
            dense = numbers == list(range(len(numbers)))
            where[name] = (
                start,
                len(numbers),
                None if dense else {p: start + j for j, p in enumerate(numbers)},
            )
            counts.append(len(numbers))
            pids.extend(numbers)
            for number in numbers:
                info = parts[number]
                replicas.append(info.replicas)
                leaders.append(info.leader if info.leader >= 0 else -1)
                isrs.append(info.isrs)
        sizes = copies = None
        if self.answer:
            sizes, copies = _sizes(self.answer, where, len(pids), leaders)
        columns = live_columns(
            [self.shell(name) for name in order],
            counts,
            pids,
            replicas,
            leaders,
            isrs,
            sizes,
            copies,
        )
        if columns is None:
            return None
        dirs = broker_log_dirs(self.answer)
        disks = broker_disks(self.answer)
        brokers = {
            k: dataclasses.replace(b, log_dirs=dirs[k], disks=disks.get(k)) if k in dirs else b
            for k, b in by_id.items()
        }
        # replicas on brokers neither live nor fenced: dead (as assemble_snapshot adds them)
        held = np.unique(columns.replicas[columns.replicas != PAD]).tolist()
        for b in held:
            brokers.setdefault(b, Broker(id=b, alive=False))
        index: list[LogDirs] = []

        def make(i: int) -> Topic:
            if not index:  # where each replica lives: read only once a topic is built
                index.append(LogDirs(self.answer))
            return self.topic(order[i], index[0], {})

        return ColumnarSnapshot(
            tuple(brokers[k] for k in sorted(brokers)),
            cluster_id=cluster_id,
            source=source,
            captured_at=captured_at,
            columns=columns,
            maker=make,
        )


def _sizes(
    answer: Iterable[Mapping[str, Any]],
    where: Mapping[str, tuple[int, int, dict[int, int] | None]],
    rows: int,
    leaders: list[int],
) -> tuple[Any, Any]:
    """Per row, the largest replica's size (NO_SIZE when no broker listed one) and the
    bytes a new replica copies (disk.copy_size: the leader's own log when listed, else the
    largest), from the DescribeLogDirs answer."""
    import numpy as np

    from kreplica.columns import NO_SIZE

    at: list[int] = []
    on: list[int] = []
    sized: list[int] = []
    for broker_id, _, name, number, replica_size in current_replicas(answer):
        found = where.get(name)
        if found is None:
            continue
        start, count, lookup = found
        if lookup is None:
            if not 0 <= number < count:
                continue
            row = start + number
        else:
            row = lookup.get(number, -1)
            if row < 0:
                continue
        at.append(row)
        on.append(broker_id)
        sized.append(replica_size)
    row_arr = np.array(at, dtype=np.int64)
    on_arr = np.array(on, dtype=np.int64)
    size_arr = np.array(sized, dtype=np.int64)
    if len(row_arr):  # one replica per broker: a later dir's listing replaces an earlier one
        key = row_arr * (int(on_arr.max()) - int(on_arr.min()) + 1) + (on_arr - int(on_arr.min()))
        _, last = np.unique(key[::-1], return_index=True)
        keep = np.sort(len(key) - 1 - last)
        row_arr, on_arr, size_arr = row_arr[keep], on_arr[keep], size_arr[keep]
    low = np.iinfo(np.int64).min
    size = np.full(rows, low, dtype=np.int64)
    np.maximum.at(size, row_arr, size_arr)
    size[size == low] = NO_SIZE
    copy = size.copy()
    leader_arr = np.array(leaders, dtype=np.int64)
    own = on_arr == leader_arr[row_arr]
    copy[row_arr[own]] = size_arr[own]
    return size, copy
