"""One snapshot file in, one Arrow record batch out (a row of `frames.PARSED_ROW`): what the
audit's Python tasks hand Spark.

A snapshot the columnar reader holds in arrays (`kreplica.columns`: every partition of the
plain kind, the usual case) becomes Arrow with numpy, no object per partition; any other file
(one that does not parse, partitions in flight, an id Arrow's int32 cannot hold) goes through
the object record, `records.fleet_record`. Both give the same batch, value for value
(tests/unit/fleet_offline/test_batches.py). numpy and pyarrow only: no Spark here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from kreplica.columns import ISR_NONE, ISR_SAME, NO_LEADER, NO_SIZE, PAD, ColumnarSnapshot
from kreplica.columns import PartitionColumns as Columns
from kreplica.fleet.adapter import cluster_key
from kreplica.fleet.policy import Policy
from kreplica.fleet.records import (
    PARTITION_FIELDS,
    broker_entries,
    cluster_record,
    file_stem,
    fleet_record,
    live_racks,
    parse_record,
    row_name,
    topic_entry,
    topic_layouts,
)
from kreplica.gcpause import gc_paused
from kreplica.model import ClusterSnapshot

_META = ("cluster_id", "file", "error")
_BODY = ("drain", "n_brokers", "n_brokers_down", "n_topics", "n_partitions", "brokers", "topics")
_INT32 = np.iinfo(np.int32)
# a partition's fields that are its topic's (`records.topic_entry`'s names)
_REPEATED = {
    "topic": "topic",
    "min_isr": "min_isr",
    "min_isr_source": "min_isr_source",
    "target_rf": "target_rf",
    "target_racks": "target_racks",
    "cap": "max_partitions_per_broker",
}


def snapshot_batch(
    file: str,
    text: str,
    policy: Policy,
    schema: pa.Schema,
    *,
    layouts: bool = True,
    columnar: bool = True,
) -> pa.RecordBatch:
    """The file's row: cluster_id, file and the one-line error of a file that does not parse
    (its tables null), else its tables. `columnar` False: the object record only (the
    reference the array path is tested and measured against)."""
    with gc_paused():  # a parse's millions of acyclic objects: see kreplica/gcpause.py
        snapshot, error = parse_record(file, text, columnar=columnar)
    # not the layout search: its short-lived cycles would pile up (a quarter slower, measured)
    return _batch(file, snapshot, error, policy, schema, layouts=layouts)


def _batch(
    file: str,
    snapshot: ClusterSnapshot | None,
    error: str | None,
    policy: Policy,
    schema: pa.Schema,
    *,
    layouts: bool,
) -> pa.RecordBatch:
    origin = row_name(file)
    key = None if snapshot is None else cluster_key(snapshot, file_stem(origin))
    meta = [pa.array([value], pa.string()) for value in (key, origin, error)]
    struct = schema.field("partitions").type.value_type
    if snapshot is None or key is None:
        body = [pa.nulls(1, schema.field(n).type) for n in (*_BODY, "partitions")]
    elif isinstance(snapshot, ColumnarSnapshot) and _fits(snapshot.columns):
        body = _body(array_record(snapshot, policy, key, struct, layouts=layouts), schema)
    else:
        record = fleet_record(snapshot, policy, key, layouts=layouts)
        parts = record["partitions"]
        record["partitions"] = {f: pa.array(parts[f], struct.field(f).type) for f in parts}
        body = _body(record, schema)
    return pa.RecordBatch.from_arrays(meta + body, schema=schema)


def _fits(columns: Columns | None) -> bool:
    """Every id the arrays hold fits Arrow's int32 columns (else the object record: it
    fails, or not, as it always has)."""
    if columns is None:
        return False
    leaders = columns.leader[columns.leader != NO_LEADER]
    isr = [b for members in columns.isr_other.values() for b in members]
    return all(
        not len(values) or (_INT32.min <= int(np.min(values)) and int(np.max(values)) <= _INT32.max)
        for values in (columns.partition, leaders, np.asarray(isr, dtype=np.int64))
    )


def _body(record: Mapping[str, Any], schema: pa.Schema) -> list[pa.Array]:
    """The row's columns after its meta: its lists as one-element arrays; the partitions
    (already Arrow arrays, one per field) as one list of structs."""
    out = [pa.array([record[n]], schema.field(n).type) for n in _BODY]
    part_type = schema.field("partitions").type
    struct = part_type.value_type
    columns = record["partitions"]
    values = pa.StructArray.from_arrays([columns[f] for f in PARTITION_FIELDS], fields=list(struct))
    offsets = pa.array([0, len(values)], pa.int32())
    out.append(pa.ListArray.from_arrays(offsets, values, type=part_type))
    return out


def array_record(
    snapshot: ColumnarSnapshot,
    policy: Policy,
    key: str,
    struct: pa.StructType,
    *,
    layouts: bool = True,
) -> dict[str, Any]:
    """`records.fleet_record` of a snapshot in columns, from its arrays: the brokers and
    topics as the same small lists of dicts, the partitions as Arrow arrays of `struct`'s
    field types (one per PARTITION_FIELDS), built by numpy a column at a time."""
    columns = snapshot.columns
    assert columns is not None
    cluster = policy.cluster(key, snapshot.cluster_id)
    counts = np.diff(columns.start)
    firsts = columns.start[:-1].tolist()
    shells = columns.topics
    verdicts = topic_layouts(snapshot) if layouts else [(None, None)] * len(shells)
    topics = [
        topic_entry(
            shell,
            count,
            int(columns.rf[first]) if count else 0,
            policy.target(shell.name),
            cluster.is_exempt(shell.name),
            verdict,
        )
        for shell, count, first, verdict in zip(
            shells, counts.tolist(), firsts, verdicts, strict=True
        )
    ]
    # the topic's fields every row repeats, one value per topic taken per row
    per_topic = {f: [t[name] for t in topics] for f, name in _REPEATED.items()}
    per_topic["audited"] = [not t["exempt"] for t in topics]
    row_topic = pa.array(columns.topic_of_rows().astype(np.int32))
    parts = {f: pa.array(v, struct.field(f).type).take(row_topic) for f, v in per_topic.items()}
    parts.update(_partition_arrays(snapshot, columns, struct.field("replicas").type))
    brokers = broker_entries(snapshot, cluster, *_broker_load(columns))
    return cluster_record(snapshot, cluster, brokers, topics, parts)


def _partition_arrays(
    snapshot: ColumnarSnapshot, columns: Columns, ids: pa.ListType
) -> dict[str, pa.Array]:
    """The partitions' own columns (each row's replicas, leader, ISR, size, racks spanned)."""
    n = columns.rows
    kept = _kept(columns.rf, columns.replicas.shape[1])
    values = pa.array(columns.replicas[kept])
    replicas = pa.ListArray.from_arrays(_offsets(columns.rf), values, type=ids)
    no_leader = columns.leader == NO_LEADER
    leader = np.where(no_leader, 0, columns.leader).astype(np.int32)
    no_size = columns.size == NO_SIZE
    return {
        "partition": pa.array(columns.partition.astype(np.int32)),
        "replicas": replicas,
        "leader": pa.array(leader, mask=no_leader),
        "isr": _isr(columns, ids),
        "size_bytes": pa.array(columns.size, pa.int64(), mask=no_size),
        # the columns hold no partition in flight (those are read as objects)
        "reassigning": pa.array(np.zeros(n, dtype=bool)),
        "racks": pa.array(_racks_spanned(snapshot, columns)),
        "cluster_racks": pa.array(np.full(n, live_racks(snapshot), dtype=np.int32)),
    }


def _kept(lengths: npt.NDArray[np.int64], width: int) -> npt.NDArray[np.bool_]:
    """Which cells of a padded matrix hold a value: the first lengths[i] of row i."""
    return np.arange(width)[None, :] < lengths[:, None]


def _offsets(lengths: npt.NDArray[np.int64]) -> pa.Array:
    return pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))


def _isr(columns: Columns, ids: pa.ListType) -> pa.Array:
    """Each row's ISR: null when unknown, its replicas when equal, else its own list (the
    few rows of `isr_other`, copied into a matrix one by one)."""
    kind = columns.isr_kind
    lengths = np.where(kind == ISR_SAME, columns.rf, 0)
    other = columns.isr_other
    width = max([columns.replicas.shape[1], *map(len, other.values())])
    matrix = np.zeros((columns.rows, width), dtype=np.int32)
    matrix[:, : columns.replicas.shape[1]] = columns.replicas
    for row, members in other.items():
        lengths[row] = len(members)
        matrix[row, : len(members)] = members
    values = pa.array(matrix[_kept(lengths, width)])
    return pa.ListArray.from_arrays(
        _offsets(lengths), values, type=ids, mask=pa.array(kind == ISR_NONE, pa.bool_())
    )


def _racks_spanned(snapshot: ColumnarSnapshot, columns: Columns) -> npt.NDArray[np.int32]:
    """Per row, the distinct racks its replicas are on (a broker without a rack, or not
    listed, counts none): rack codes per cell, sorted per row, counted where they change."""
    racked = [b for b in snapshot.brokers if b.rack is not None]
    if not racked:
        return np.zeros(columns.rows, dtype=np.int32)
    names = sorted({b.rack for b in racked if b.rack is not None})
    ids = np.array([b.id for b in racked], dtype=np.int64)  # sorted: brokers are by id
    codes = np.array([names.index(b.rack) for b in racked if b.rack is not None], dtype=np.int64)
    cells = columns.replicas.astype(np.int64)
    where = np.searchsorted(ids, cells).clip(0, len(ids) - 1)
    rack = np.where((cells != PAD) & (ids[where] == cells), codes[where], -1)
    rack.sort(axis=1)
    new = rack >= 0
    new[:, 1:] &= rack[:, 1:] != rack[:, :-1]
    spanned: npt.NDArray[np.int32] = new.sum(axis=1).astype(np.int32)
    return spanned


def _broker_load(
    columns: Columns,
) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    """Per broker: replicas held, leaders now (the recorded leader, else the preferred one;
    -1 counts nothing), and bytes held (a replica holds its partition's size when known)."""
    kept = _kept(columns.rf, columns.replicas.shape[1])
    cells = columns.replicas[kept].astype(np.int64)
    ids, slot, held_count = np.unique(cells, return_inverse=True, return_counts=True)
    sizes = np.broadcast_to(np.maximum(columns.size, 0)[:, None], kept.shape)[kept]
    held = np.zeros(len(ids), dtype=np.int64)
    np.add.at(held, slot, sizes)
    now = np.where(columns.leader == NO_LEADER, columns.replicas[:, 0], columns.leader)
    leader_ids, led = np.unique(now[now >= 0], return_counts=True)
    ids_list = ids.tolist()
    return (
        dict(zip(ids_list, held_count.tolist(), strict=True)),
        dict(zip(leader_ids.tolist(), led.tolist(), strict=True)),
        dict(zip(ids_list, held.tolist(), strict=True)),
    )
