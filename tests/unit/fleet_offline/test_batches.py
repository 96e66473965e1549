"""The audit's Arrow batch of a snapshot file built from the columnar reader's arrays is the
batch the object record gives, value for value, on synthetic fleets, the examples and odd
hand-made snapshots (no Spark session: the batches are what its Python tasks would yield)."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the fleet extra is not installed (pip install '.[fleet]')")

from kreplica.columns import ColumnarSnapshot
from kreplica.fleet.batches import snapshot_batch
from kreplica.fleet.policy import Policy, parse_policy
from kreplica.fleet.records import parse_record
from kreplica.fleet.synth import synth_fleet
from kreplica.sources.snapshot import dump_snapshot

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
POLICY = parse_policy(
    {
        "rule": [
            {"topics": "orders.*", "rf": 3, "min_insync": 2, "racks": 3},
            {"topics": ".*", "rf": 2, "max_partitions_per_broker": 40},
        ],
        "clusters": {"odd": {"drain": [2, 9], "exempt": ["audit.*"]}},
    }
)


@pytest.fixture(scope="module")
def schema() -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    from kreplica.fleet.frames import PARSED_ROW

    return to_arrow_schema(PARSED_ROW)


def in_arrays(text: str) -> bool:
    snapshot, _ = parse_record("x.json", text, columnar=True)
    return isinstance(snapshot, ColumnarSnapshot) and snapshot.columns is not None


def assert_same(
    text: str, schema: Any, policy: Policy = POLICY, *, layouts: bool = False, arrays: bool = True
) -> Any:
    """Both paths' batch of `text`: equal, and the array path taken when `arrays`."""
    assert in_arrays(text) is arrays
    file = "file:/fleet/odd.json"
    got = snapshot_batch(file, text, policy, schema, layouts=layouts)
    want = snapshot_batch(file, text, policy, schema, layouts=layouts, columnar=False)
    assert got.to_pylist() == want.to_pylist()
    assert got.equals(want)  # types and null-ness too
    return got.to_pylist()[0]


def test_synthetic_fleet_with_layouts(schema: Any) -> None:
    for snapshot in synth_fleet(4, 2400, seed=5):
        row = assert_same(dump_snapshot(snapshot), schema, layouts=True)
        assert row["n_partitions"] == sum(len(t.partitions) for t in snapshot.topics)
        assert {t["kafka_default"] for t in row["topics"]} <= {True, False}


def test_every_example_snapshot(schema: Any) -> None:
    seen = []
    for path in sorted(EXAMPLES.glob("*.json")):
        text = path.read_text()
        if "kreplica_snapshot" in json.loads(text):
            assert_same(text, schema, layouts=True, arrays=in_arrays(text))
            seen.append(in_arrays(text))
    assert len(seen) >= 3 and seen.count(True) >= 2  # some read as objects (in flight)


def broker(i: int, rack: str | None = None, *, alive: bool = True) -> dict[str, Any]:
    return {"id": i, "rack": rack, "alive": alive}


def part(pid: int, replicas: list[int], **more: Any) -> dict[str, Any]:
    return {"partition": pid, "replicas": replicas, **more}


ODD: dict[str, Any] = {
    "kreplica_snapshot": 1,
    "cluster_id": "odd",
    # racks on some brokers only; a dead one with a rack; broker 9 only named by replicas
    "brokers": [broker(3, "b"), broker(1, "a"), broker(2), broker(4, "c", alive=False)],
    "topics": [
        {
            "name": "orders",
            "configs": {"min.insync.replicas": "2"},
            "partitions": [
                part(2, [3, 1, 2], leader=-1, isr=[], size_bytes=0),
                part(0, [1, 2, 3], isr=[1, 2, 3], size_bytes=100),  # leader unknown
                part(1, [2, 3], leader=3, isr=[3, 2], size_bytes=7),  # reordered ISR
                part(3, [4, 9, 1, 3], leader=9, isr=[9], size_bytes=2**40),  # wider row
            ],
        },
        {
            "name": "audit-log",  # exempt by the policy
            "min_insync_replicas": 2,
            "min_insync_replicas_source": "cluster default",
            "partitions": [part(0, [9]), part(1, [1], leader=1, isr=[1, 5])],
        },
        {"name": "empty", "partitions": []},
        {"name": "a-first", "partitions": [part(0, [2, 4], leader=7, isr=[2], size_bytes=5)]},
    ],
}


def test_odd_snapshot(schema: Any) -> None:
    row = assert_same(json.dumps(ODD), schema)
    assert row["cluster_id"] == "odd" and row["drain"] == [2, 9]
    assert [b["id"] for b in row["brokers"]] == [1, 2, 3, 4, 9]
    assert row["brokers"][-1]["listed"] is False  # named by replicas only
    assert [t["topic"] for t in row["topics"]] == ["a-first", "audit-log", "empty", "orders"]
    orders = [p for p in row["partitions"] if p["topic"] == "orders"]
    assert [p["racks"] for p in orders] == [2, 1, 2, 3]  # dead broker 4's rack counts
    assert orders[0]["leader"] is None and orders[2]["isr"] == []


@pytest.mark.parametrize(
    "change",
    [
        "no topics",
        "no brokers",
        "no racks",
        "sizes on some",
        "replica sizes and dirs",
        "no policy",
    ],
)
def test_odd_variants(change: str, schema: Any) -> None:
    data = copy.deepcopy(ODD)
    policy = POLICY
    first = data["topics"][0]["partitions"]
    if change == "no topics":
        data["topics"] = []
    elif change == "no brokers":
        data["brokers"] = []
    elif change == "no racks":
        data["brokers"] = [broker(b["id"], alive=b["alive"]) for b in data["brokers"]]
    elif change == "sizes on some":
        for p in first[::2]:
            p.pop("size_bytes")
    elif change == "replica sizes and dirs":  # the columns keep them aside (copy_size)
        first[0]["replica_sizes"] = [1, None, 3]
        first[1]["replica_dirs"] = ["/d1", None, "/d2"]
    elif change == "no policy":
        policy = Policy()
    assert_same(json.dumps(data), schema, policy)


def test_what_the_arrays_do_not_hold_takes_the_object_path(schema: Any) -> None:
    data = copy.deepcopy(ODD)
    data["topics"][0]["partitions"][0]["adding_replicas"] = [4]  # in flight
    row = assert_same(json.dumps(data), schema, arrays=False)
    assert [p["reassigning"] for p in row["partitions"]].count(True) == 1
    bad = assert_same('{"kreplica_snapshot": 1, "brokers": [', schema, arrays=False)
    assert bad["error"].startswith("/fleet/odd.json") and bad["partitions"] is None


def random_snapshot(rng: random.Random) -> dict[str, Any]:
    """Brokers with and without racks (some dead, some unlisted but named), partitions with
    any mix of leader (unknown, -1, any broker), ISR (unknown, equal, reordered, other),
    size (unknown, 0, large) and replica count."""
    ids = rng.sample(range(0, 40), rng.randint(1, 8))
    racks = [None, "r1", "r2", "r3"]
    brokers = [broker(i, rng.choice(racks), alive=rng.random() > 0.2) for i in ids]
    named = ids + rng.sample(range(40, 50), rng.randint(0, 2))
    topics = []
    for t in range(rng.randint(0, 5)):
        parts = []
        for pid in rng.sample(range(30), rng.randint(0, 12)):
            reps = rng.sample(named, rng.randint(1, min(4, len(named))))
            more: dict[str, Any] = {}
            leader = rng.choice([None, -1, *reps, rng.choice(named)])
            if leader is not None:
                more["leader"] = leader
            isr = rng.choice([None, reps, sorted(reps), reps[:1], []])
            if isr is not None:
                more["isr"] = list(isr)
            size = rng.choice([None, 0, rng.randint(1, 2**45)])
            if size is not None:
                more["size_bytes"] = size
            parts.append(part(pid, reps, **more))
        topics.append({"name": rng.choice(["orders", "audit", "t"]) + f"-{t}", "partitions": parts})
    return {"kreplica_snapshot": 1, "cluster_id": "odd", "brokers": brokers, "topics": topics}


def test_random_snapshots(schema: Any) -> None:
    rng = random.Random(24)
    for _ in range(60):
        assert_same(json.dumps(random_snapshot(rng)), schema)
