"""The plan files' partition lists written from arrays (the array planner's ArrayChanges).

A million changes as one dict and two lists each cost seconds to build and to encode. Here
orjson writes each topic's rows as one int matrix, with negative markers (never broker ids
or partition ids) where the keys go, and a few `bytes.replace` passes turn that into the
text orjson writes for the list of dicts: compact with sorted keys (`--output json`), or
indented by two spaces in Kafka's key order (the plan files), byte for byte. The result is
a `LazyEntries` placed in the document where the list goes, written in pieces by
cli/output.py (a plan file or --output json of a million partitions never exists whole in
memory) or whole as an `orjson.Fragment`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from kreplica.columns import PAD, ArrayChanges

_START, _PART, _REPS, _DIRS, _ANY = -5, -6, -7, -8, -9
_KEEP_ROWS = 200_000  # a plan list kept as text for the plan document (a million are not)
_SEP, _OPEN, _END = b"\x01", b"\x02", b"\x03"


def _matrix(partition: Any, replicas: Any, rf: Any, log_dirs: bool, kafka_order: bool) -> Any:
    """Rows of [_START, ..fields.. ] with PAD after each list's end (removed later)."""
    n, width = replicas.shape
    reps = np.where(np.arange(width)[None, :] < rf[:, None], replicas, PAD)
    dirs = np.where(np.arange(width)[None, :] < rf[:, None], _ANY, PAD)
    mark = np.full((n, 1), 0, dtype=np.int64)
    pid = partition.astype(np.int64)[:, None]
    if kafka_order:  # topic, partition, replicas, log_dirs
        parts = [mark + _START, pid, mark + _REPS, reps]
        if log_dirs:
            parts += [mark + _DIRS, dirs]
    else:  # sorted: log_dirs, partition, replicas, topic
        parts = [mark + _START]
        if log_dirs:
            parts += [dirs, mark + _PART]
        else:
            parts += [mark + _PART]
        parts += [pid, mark + _REPS, reps]
    return np.concatenate([np.asarray(p, dtype=np.int64) for p in parts], axis=1)


def _items(
    heads: list[bytes],
    tails: list[bytes],
    topic: list[int],
    compact: bytes,
    log_dirs: bool,
    kafka_order: bool,
    indent: int | None,
) -> bytes:
    """The rows (orjson's compact text of _matrix, pads removed) as the items of the list,
    without the enclosing brackets; row i is topic[i]'s, wrapped in heads[topic[i]] and
    tails[topic[i]] (_wrappers)."""
    text = compact[1:-1]  # [[row],[row]] -> [row],[row]
    text = text.replace(b"],[", _SEP)[1:-1]  # row<SEP>row
    anys = b'"any"'
    if indent is None:  # compact, sorted keys
        if log_dirs:
            text = text.replace(b"%d," % _START, b"").replace(b"%d" % _ANY, anys)
            text = text.replace(b",%d," % _PART, b'],"partition":')
        else:
            text = text.replace(b"%d,%d," % (_START, _PART), b"")
        text = text.replace(b",%d," % _REPS, b',"replicas":[')
        sep = b","
    else:
        pad = b" " * indent
        inner = b"\n" + pad + b"  "
        item = b"\n" + pad + b"    "
        text = text.replace(b"%d," % _START, b"")
        text = text.replace(b",%d," % _REPS, _OPEN)
        if log_dirs:
            text = text.replace(b",%d," % _DIRS, _END)
        text = text.replace(b",", b"," + item).replace(b"%d" % _ANY, anys)
        text = text.replace(_OPEN, b"," + inner + b'"replicas": [' + item)
        text = text.replace(_END, inner + b"]," + inner + b'"log_dirs": [' + item)
        sep = b",\n"
    rows = text.split(_SEP)
    return sep.join(
        map(
            b"".join,
            zip(map(heads.__getitem__, topic), rows, map(tails.__getitem__, topic), strict=True),
        )
    )


def _wrappers(
    names: list[bytes], log_dirs: bool, indent: int | None
) -> tuple[list[bytes], list[bytes]]:
    """Per topic (its name as JSON), what goes before and after each of its rows."""
    if indent is None:
        head = b'{"log_dirs":[' if log_dirs else b'{"partition":'
        return [head] * len(names), [b'],"topic":' + name + b"}" for name in names]
    pad = b" " * indent
    inner = b"\n" + pad + b"  "
    tail = inner + b"]\n" + pad + b"}"
    heads = [
        pad + b"{" + inner + b'"topic": ' + name + b"," + inner + b'"partition": ' for name in names
    ]
    return heads, [tail] * len(names)


class LazyEntries:
    """A plan's partition list, written from the arrays only when a writer asks: in pieces
    (`chunks`, for a file or stdout written as it goes: cli/output.py), or whole (`text`).
    `after`: the replicas after (reassignment), else before (rollback, `before`)."""

    def __init__(self, changes: ArrayChanges, *, after: bool, log_dirs: bool) -> None:
        self.changes = changes
        self.after = after
        self.log_dirs = log_dirs
        # the indented text once written, (indent, text), when small enough to keep: the plan
        # document holds the reassignment and rollback lists again, two spaces further in
        self._kept: tuple[int, bytes] | None = None

    def as_dicts(self) -> list[dict[str, Any]]:
        """The list of dicts it stands for (what serialize.py writes for an object plan)."""
        out: list[dict[str, Any]] = []
        for c in self.changes:
            replicas = list(c.after if self.after else c.before or ())
            entry: dict[str, Any] = {
                "topic": c.topic,
                "partition": c.partition,
                "replicas": replicas,
            }
            if self.log_dirs:
                entry["log_dirs"] = ["any"] * len(replicas)
            out.append(entry)
        return out

    def text(self, indent: int | None = None) -> bytes:
        return b"".join(self.chunks(indent))

    def fragment(self, indent: int | None = None) -> Any:
        import orjson

        return orjson.Fragment(self.text(indent))

    def chunks(self, indent: int | None = None) -> Iterator[bytes]:
        """The list's text: `indent` None: compact, keys sorted; else its items indented by
        `indent` spaces (its closing bracket by indent - 2), Kafka's key order. An indented
        text of up to _KEEP_ROWS rows is kept, and a deeper one made from it (every line of
        the list, after the first, further in)."""
        kept = self._kept
        if indent is not None and kept is not None and indent >= kept[0]:
            yield kept[1].replace(b"\n", b"\n" + b" " * (indent - kept[0]))
            return
        if indent is None or len(self.changes) > _KEEP_ROWS:
            yield from self._chunks(indent)
            return
        pieces = list(self._chunks(indent))
        self._kept = (indent, b"".join(pieces))
        yield from pieces

    def _chunks(self, indent: int | None) -> Iterator[bytes]:
        import orjson

        changes = self.changes
        if not len(changes):
            yield b"[]"
            return
        columns = changes.columns
        names = [orjson.dumps(t.name) for t in columns.topics]
        heads, tails = _wrappers(names, self.log_dirs, indent)
        kafka_order = indent is not None
        yield b"[" if indent is None else b"[\n"
        step = 1 << 16  # rows per piece: pieces of a few MB whatever the topics
        for a in range(0, len(changes), step):
            b = min(len(changes), a + step)
            rows = changes.rows[a:b]
            if self.after:
                replicas: npt.NDArray[Any] = changes.after[a:b]
                rf = changes.rf[a:b]
            else:
                replicas = columns.replicas[rows]
                rf = columns.rf[rows]
            matrix = _matrix(columns.partition[rows], replicas, rf, self.log_dirs, kafka_order)
            compact = orjson.dumps(matrix, option=orjson.OPT_SERIALIZE_NUMPY)
            compact = compact.replace(b",%d" % PAD, b"")
            topic = changes.topic_index[a:b].tolist()
            items = _items(heads, tails, topic, compact, self.log_dirs, kafka_order, indent)
            if a:
                yield b"," if indent is None else b",\n"
            yield items
        yield b"]" if indent is None else b"\n" + b" " * (indent - 2) + b"]"
