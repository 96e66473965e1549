"""`kreplica fleet collect` against a real cluster (the session's KRaft cluster, read-only) and an
unreachable one: the reachable cluster lands, the other is reported and skipped (exit 9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.sources.snapshot import load_snapshot
from kreplica.testing import TopicSpec, create_topics
from tests.unit.cli.conftest import run_cli

pytestmark = pytest.mark.integration


@pytest.fixture
def kafka(kraft_cluster: SandboxInfo) -> SandboxInfo:
    create_topics(kraft_cluster.bootstrap_servers, [TopicSpec("fleet-a", partitions=3)])
    return kraft_cluster


def test_collect_lands_reachable_and_skips_unreachable(kafka: SandboxInfo, tmp_path: Path) -> None:
    config = tmp_path / "clusters.toml"
    config.write_text(
        f'[clusters.live]\nbootstrap_server = "{kafka.bootstrap_servers}"\n\n'
        '[clusters.gone]\nbootstrap_server = "127.0.0.1:1"\ntimeout_s = 3\n\n'
        f'[clusters.offline]\nsnapshot = "{tmp_path / "missing.json"}"\n'
    )
    out = tmp_path / "snaps"
    result = run_cli(
        ["fleet", "collect", "--out", str(out), "--output", "json"],
        env={"KREPLICA_CONFIG": str(config)},
    )
    assert result.code == 9, result.stderr  # PARTIAL: the others written, cron alerted
    rows = {r["name"]: r for r in result.json()["data"]["clusters"]}
    assert rows["live"]["ok"] and not rows["gone"]["ok"] and not rows["offline"]["ok"]
    assert "127.0.0.1:1" in result.stderr and "skipped gone" in result.stderr
    assert "skipped offline" in result.stderr
    snap = load_snapshot(rows["live"]["file"])
    assert Path(rows["live"]["file"]) == out / f"{kafka.cluster_id}.json"
    assert "fleet-a" in [t.name for t in snap.topics]
    # as sets: a KRaft cluster id is random and sorts before or after "_" by its first letter
    assert {p.name for p in out.iterdir()} == {"_KREPLICA_DONE", f"{kafka.cluster_id}.json"}


def test_collect_named_only_and_all_failing_is_exit_3(tmp_path: Path) -> None:
    config = tmp_path / "clusters.toml"
    config.write_text('[clusters.gone]\nbootstrap_server = "127.0.0.1:1"\ntimeout_s = 2\n')
    result = run_cli(
        ["fleet", "collect", "--out", str(tmp_path / "o"), "--cluster", "gone"],
        env={"KREPLICA_CONFIG": str(config)},
    )
    assert result.code == 3
    assert result.stderr.splitlines()[-1].startswith("error: no cluster could be read (gone: ")
    unknown = run_cli(
        ["fleet", "collect", "--out", str(tmp_path / "o"), "--cluster", "nope"],
        env={"KREPLICA_CONFIG": str(config)},
    )
    assert unknown.code == 2 and "cluster 'nope' is not in" in unknown.stderr
