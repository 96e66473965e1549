"""A snapshot file read a chunk of topics at a time (sources/topicspans.py, snapshot.py's
`load_snapshot_columnar`) gives what parsing it whole gives: the same columns and snapshot,
or, for a file the scan does not read without doubt, the whole parse itself (the same
errors)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kreplica.columns import ColumnarSnapshot
from kreplica.errors import InputError
from kreplica.sources import snapshot as snapshot_module
from kreplica.sources.snapshot import load_snapshot_columnar, parse_snapshot_text_columnar
from kreplica.sources.topicspans import topic_spans


def _doc(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    ids = list(range(rng.randint(1, 8)))
    topics = []
    for t in range(rng.randint(0, 7)):
        parts = []
        for p in rng.sample(range(12), rng.randint(0, 6)):
            replicas = rng.sample(ids, rng.randint(1, len(ids)))
            part: dict[str, Any] = {"partition": p, "replicas": replicas}
            if rng.random() < 0.5:
                part["isr"] = sorted(replicas)[: rng.randint(0, len(replicas))]
                part["leader"] = rng.choice([*replicas, -1])
            if rng.random() < 0.5:
                part["size_bytes"] = rng.choice([None, rng.randrange(1 << 40)])
            parts.append(part)
        topic: dict[str, Any] = {"name": f"t{rng.randrange(10_000)}-{t}", "partitions": parts}
        if rng.random() < 0.3:
            topic["configs"] = {"min.insync.replicas": "2", "note": "a [bracket] {in} a string"}
        topics.append(topic)
    doc: dict[str, Any] = {
        "kreplica_snapshot": 1,
        "cluster_id": "c-[1]",
        "brokers": [{"id": b, "rack": rng.choice([None, "a", "b"])} for b in ids],
        "topics": topics,
    }
    if rng.random() < 0.3:
        doc = {"extra": {"topics": [1, 2]}, **doc}  # a `topics` key below the top level
    return doc


def _same(left: Any, right: Any) -> None:
    assert type(left) is type(right)
    assert left.brokers == right.brokers and left.cluster_id == right.cluster_id
    if isinstance(left, ColumnarSnapshot):
        a, b = left.columns, right.columns
        assert a is not None and b is not None
        assert a.topics == b.topics and a.isr_other == b.isr_other
        for field in ("start", "partition", "replicas", "rf", "leader", "isr_kind", "size"):
            x, y = getattr(a, field), getattr(b, field)
            assert x.dtype == y.dtype and np.array_equal(x, y), field
    assert left.fingerprint() == right.fingerprint()


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([None, 1, 2]), st.integers(1, 400))
def test_reading_by_topics_gives_the_whole_parse(
    tmp_path_factory: pytest.TempPathFactory, seed: int, indent: int | None, chunk: int
) -> None:
    doc = _doc(seed)
    text = json.dumps(doc, indent=indent)
    path = tmp_path_factory.mktemp("snap") / "s.json"
    path.write_text(text)
    # small chunks: many parts to join
    old = snapshot_module._CHUNK_BYTES
    snapshot_module._CHUNK_BYTES = chunk
    try:
        by_topics = load_snapshot_columnar(path)
    finally:
        snapshot_module._CHUNK_BYTES = old
    assert topic_spans(text.encode()) is not None
    _same(by_topics, parse_snapshot_text_columnar(text, origin=str(path)))


@pytest.mark.parametrize(
    "text",
    [
        '{"kreplica_snapshot": 1, "topics": [{"name": "a\\"]", "partitions": []}]}',  # escape
        '{"kreplica_snapshot": 1, "topics": [], "topics": [{"name": "b", "partitions": []}]}',
        '{"kreplica_snapshot": 1, "topics": [{"name": "a", "partitions": []} {"name": "b"}]}',
        '{"kreplica_snapshot": 1, "topics": [[{"name": "a", "partitions": []}]]}',
        '{"kreplica_snapshot": 1, "topics": [{"name": "a", "partitions": []}, 3]}',
        '{"kreplica_snapshot": 1, "topics": [{"name": "a", "partitions": [}]}',
        '[{"topics": []}]',
    ],
)
def test_a_file_the_scan_doubts_is_parsed_whole(tmp_path: Path, text: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(text)
    assert topic_spans(text.encode()) is None or text.count('"topics"') > 1
    try:
        whole: Any = parse_snapshot_text_columnar(text, origin=str(path))
    except InputError as exc:
        with pytest.raises(InputError) as raised:
            load_snapshot_columnar(path)
        assert raised.value.message == exc.message
    else:
        _same(load_snapshot_columnar(path), whole)
