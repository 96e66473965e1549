"""Synthetic fleets and the records the Spark job reads (pure parts, no Spark)."""

from __future__ import annotations

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
    data = row["record"]
    assert data["drain"] == [1]
    first = data["topics"][0]
    assert first["exempt"] is True and first["target_rf"] == 3
    assert isinstance(first["kafka_default"], bool)
    assert first["partitions"] == len(snapshot.topics[0].partitions)
    parts = data["partitions"]
    assert len(parts["topic"]) == 200 and all(len(v) == 200 for v in parts.values())
    assert parts["replicas"][0] == snapshot.topics[0].partitions[0].replicas
    bad = record_row("file:/x/broken.json", '{"kreplica_snapshot": 1, "brokers": [', policy)
    assert bad["cluster_id"] is None and bad["record"] is None
    assert bad["error"].startswith("/x/broken.json is not valid JSON")
    wrong = record_row("/x/w.json", '{"kreplica_snapshot": 1, "topics": [{"name": 3}]}', policy)
    assert wrong["error"] == "/x/w.json: topics[0].name must be a non-empty string"


def test_file_stem() -> None:
    assert file_stem("s3a://b/fleet/c1.json") == "c1"


def test_layout_verdict_is_explain_topics_verdict() -> None:
    """The audit's layout check takes `layout_verdict`'s short cut; its answer must be the one
    `kreplica explain` gives, on every kind of topic synth makes (Kafka's default, grown by
    add-partitions, hand-made; with and without racks)."""
    from kreplica.planner import explain_topic
    from kreplica.planner.explain import layout_verdict

    seen = set()
    for snapshot in synth_fleet(12, 3000, seed=11):
        for topic in snapshot.topics:
            layout = explain_topic(snapshot, topic.name)["layout"]
            expected = (
                bool(layout["kafka_default"]),
                layout["placement"] or layout["closest_placement"],
            )
            assert layout_verdict(snapshot, topic) == expected, topic.name
            seen.add(expected)
    # the short cut and the full search both answered
    assert (True, "zookeeper") in seen and any(not default for default, _ in seen)


def test_the_audits_layouts_are_explain_topics() -> None:
    """`topic_layouts` (the cluster's replica table, then a search that stops at the first
    layout reproducing every partition) says what `kreplica explain` says: Kafka's default,
    or else the closest placement, for every topic synth makes."""
    from kreplica.fleet.records import topic_layouts
    from kreplica.planner import explain_topic
    from kreplica.sources.snapshot import parse_snapshot_text_columnar

    seen = set()
    for snapshot in synth_fleet(12, 3000, seed=5):
        columnar = parse_snapshot_text_columnar(dump_snapshot(snapshot))
        for topic, verdict in zip(snapshot.topics, topic_layouts(columnar), strict=True):
            layout = explain_topic(snapshot, topic.name)["layout"]
            default = bool(layout["kafka_default"])
            closest = None if default else layout["placement"] or layout["closest_placement"]
            assert verdict == (default, closest), topic.name
            seen.add(verdict)
        assert topic_layouts(snapshot) == topic_layouts(columnar)  # objects: the same
    assert (True, None) in seen and any(default is False for default, _ in seen)


def test_fleet_written_by_processes_is_the_same(tmp_path: Path) -> None:
    paths = write_fleet(tmp_path, 5, 2500, seed=9, processes=2)
    assert [p.name for p in paths] == [f"synth-{i:04d}.json" for i in range(5)]
    expected = [dump_snapshot(s) for s in synth_fleet(5, 2500, seed=9)]
    assert [p.read_text(encoding="utf-8") for p in paths] == expected
