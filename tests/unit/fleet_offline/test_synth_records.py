"""Synthetic fleets and the records the Spark job reads (pure parts, no Spark)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from kreplica.fleet.policy import parse_policy
from kreplica.fleet.records import file_stem, record_row
from kreplica.fleet.synth import cluster_sizes, synth_fleet, write_fleet
from kreplica.sources.snapshot import dump_snapshot, load_snapshot


def test_sizes_sum_and_skew() -> None:
    sizes = cluster_sizes(100, 100_000, random.Random(1))
    assert sum(sizes) == 100_000
    assert min(sizes) >= 1
    assert max(sizes) > 3 * min(sizes)


def test_fleet_is_deterministic_and_valid(tmp_path: Path) -> None:
    a = [dump_snapshot(s) for s in synth_fleet(5, 2000, seed=7)]
    b = [dump_snapshot(s) for s in synth_fleet(5, 2000, seed=7)]
    assert a == b
    paths = write_fleet(tmp_path, 5, 2000, seed=7)
    snaps = [load_snapshot(p) for p in paths]  # the CLI's reader accepts every file
    assert sum(len(t.partitions) for s in snaps for t in s.topics) == 2000
    rfs = {len(p.replicas) for s in snaps for t in s.topics for p in t.partitions}
    assert {2, 3} <= rfs
    for s in snaps:
        ids = {b.id for b in s.brokers}
        for t in s.topics:
            for p in t.partitions:
                assert set(p.replicas) <= ids and len(set(p.replicas)) == len(p.replicas)


def test_record_row_enriches_and_reports_bad_files(tmp_path: Path) -> None:
    snapshot = next(synth_fleet(1, 200, seed=3))
    policy = parse_policy(
        {
            "rule": [{"topics": ".*", "rf": 3, "min_insync": 2}],
            "clusters": {"synth-0000": {"drain": [1], "exempt": [snapshot.topics[0].name]}},
        }
    )
    row = record_row("file:/x/synth-0000.json", dump_snapshot(snapshot), policy)
    assert row["error"] is None and row["cluster_id"] == "synth-0000"
    assert row["file"] == "/x/synth-0000.json"
    data = json.loads(row["json"])
    assert data["fleet_drain"] == [1]
    first = data["topics"][0]["fleet"]
    assert first["exempt"] is True and first["target_rf"] == 3
    assert isinstance(first["kafka_default"], bool)
    bad = record_row("file:/x/broken.json", '{"kreplica_snapshot": 1, "brokers": [', policy)
    assert bad["cluster_id"] is None and bad["json"] is None
    assert bad["error"].startswith("/x/broken.json is not valid JSON")
    wrong = record_row("/x/w.json", '{"kreplica_snapshot": 1, "topics": [{"name": 3}]}', policy)
    assert wrong["error"] == "/x/w.json: topics[0].name must be a non-empty string"


def test_file_stem() -> None:
    assert file_stem("s3a://b/fleet/c1.json") == "c1"
