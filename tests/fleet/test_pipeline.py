"""The whole job on a synthetic fleet: audit outputs, plans equal to the CLI's, Parquet input,
bad files skipped by name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kreplica.cli.app import run
from kreplica.fleet.job import load_fleet_policy, run_audit, run_plan

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def audited(spark: Any, fleet_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("audit")
    policy = load_fleet_policy(None, rf=3, min_insync=2)
    return out, run_audit(spark, str(fleet_dir), str(out), policy, worst=3)


@pytest.fixture(scope="module")
def planned(spark: Any, fleet_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    out = tmp_path_factory.mktemp("plan")
    policy = load_fleet_policy(None, rf=3, min_insync=None)
    return out, run_plan(spark, str(fleet_dir / "*.json"), str(out), policy)


def test_audit_outputs(audited: Any, fleet_dir: Path) -> None:
    out, doc = audited
    assert doc["totals"]["clusters"] == 6 and doc["totals"]["partitions"] == 3000
    assert doc["skipped"] == [
        {
            "file": str(fleet_dir / "broken.json"),
            "error": f"{fleet_dir / 'broken.json'} is not valid JSON (line 2, column 1: "
            "Expecting value); write it with `kreplica snapshot -o FILE` or fix the file",
        }
    ]
    parts = sorted(p.name for p in (out / "findings").iterdir() if p.is_dir())
    assert parts and all(p.startswith("cluster_id=synth-") for p in parts)
    saved = json.loads((out / "audit-summary.json").read_text())
    assert saved["totals"] == doc["totals"]
    ranked = [c["cluster_id"] for c in saved["clusters"]]
    charts = sorted(p.name for p in (out / "charts").iterdir())
    assert charts == sorted(f"{c}.png" for c in ranked[:3])
    assert (out / "charts" / charts[0]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "audit-summary.md").read_text()
    assert md.startswith("## kreplica fleet audit") and "broken.json" in md
    worst = saved["clusters"][0]
    assert worst["top_findings"] and worst["chart"] == f"charts/{worst['cluster_id']}.png"
    # the worst first (errors before warnings), at most ten per charted cluster
    found = worst["errors"] + worst["warnings"] + worst["infos"]
    assert len(worst["top_findings"]) == min(10, found)
    levels = [f["level"] for f in worst["top_findings"]]
    assert levels == sorted(levels, key=["error", "warning", "info"].index)


def test_findings_parquet_reads_back(spark: Any, audited: Any) -> None:
    out, doc = audited
    df = spark.read.parquet(str(out / "findings"))
    by_cluster = {r["cluster_id"]: r["count"] for r in df.groupBy("cluster_id").count().collect()}
    for c in doc["clusters"]:
        assert by_cluster.get(c["cluster_id"], 0) == c["errors"] + c["warnings"] + c["infos"]


def test_fleet_plan_equals_cli_plan_per_cluster(
    planned: Any, fleet_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, doc = planned
    assert [r["cluster_id"] for r in doc["clusters"]] == [f"synth-{i:04d}" for i in range(6)]
    compared = 0
    for row in doc["clusters"]:
        capsys.readouterr()
        code = run(
            ["plan", "--snapshot", str(fleet_dir / f"{row['cluster_id']}.json"), "--topics",
             ".*", "--rf", "3", "--dry-run", "--output", "json"]
        )  # fmt: skip
        envelope = json.loads(capsys.readouterr().out)
        folder = out / "plans" / row["cluster_id"]
        if code != 0:
            assert row["status"] == "error" and not folder.exists()
            assert row["error"] == envelope["errors"][0]["message"]
            continue
        reassignment = json.loads((folder / "reassignment.json").read_text())
        assert reassignment == envelope["data"]["reassignment"]
        document = json.loads((folder / "plan.json").read_text())
        assert document["kreplica_plan"] == 1
        assert document["cluster_id"] == row["cluster_id"]
        assert row["replicas_added"] == envelope["data"]["report"]["replicas_added"]
        compared += 1
    assert compared >= 4
    md = (out / "plan-summary.md").read_text()
    assert "| synth-0000 |" in md and "lower bound" in md


def test_parquet_input_gives_the_same_plans(
    spark: Any, fleet_dir: Path, planned: Any, tmp_path: Path
) -> None:
    out, doc = planned
    dataset = tmp_path / "fleet.parquet"
    files = [str(p) for p in sorted(fleet_dir.glob("synth-*.json"))]
    spark.read.option("multiLine", True).json(files).write.parquet(str(dataset))
    again = tmp_path / "out"
    policy = load_fleet_policy(None, rf=3, min_insync=None)
    doc2 = run_plan(spark, str(dataset), str(again), policy)
    assert doc2["skipped"] == []
    for row in doc["clusters"]:
        if row["status"] != "ok":
            continue
        name = f"plans/{row['cluster_id']}/reassignment.json"
        assert (again / name).read_text() == (out / name).read_text()


def test_cli_audit_in_process(fleet_dir: Path, tmp_path: Path, spark: Any) -> None:
    """`kreplica fleet audit` (the same process: getOrCreate returns the shared session)."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[[rule]]\ntopics = ".*"\nrf = 3\nracks = 3\n')
    from typer.testing import CliRunner

    from kreplica.cli.app import app

    result = CliRunner().invoke(
        app,
        ["fleet", "audit", "--input", str(fleet_dir), "--out", str(tmp_path / "o"),
         "--policy", str(policy), "--output", "json", "--worst", "0"],
    )  # fmt: skip
    assert result.exit_code == 9, result.stderr  # broken.json skipped: PARTIAL
    envelope = json.loads(result.stdout)
    assert envelope["command"] == "fleet audit" and envelope["status"] == "partial"
    assert envelope["data"]["totals"]["clusters"] == 6
    assert "skipped: " in result.stderr and "broken.json" in result.stderr


ODD = "[2026-11] {a,b}? x"  # Hadoop's glob characters and a space


def test_folders_named_like_patterns_are_folders(
    spark: Any, fleet_dir: Path, planned: Any, tmp_path: Path
) -> None:
    """--input and --out folders whose names hold `[ ] { } ?` and a space are read and written
    as the folders they name (Spark's readers glob what they are given): the audit reads its
    findings back, the plans are the plans of the plain folders."""
    folder = tmp_path / f"in {ODD}"
    folder.mkdir()
    for snapshot in sorted(fleet_dir.glob("synth-*.json")):
        shutil.copy(snapshot, folder / snapshot.name)
    audit_out = tmp_path / f"audit {ODD}"
    policy = load_fleet_policy(None, rf=3, min_insync=2)
    audited = run_audit(spark, str(folder), str(audit_out), policy, worst=0)
    assert audited["skipped"] == [] and audited["totals"]["clusters"] == 6
    summary = json.loads((audit_out / "audit-summary.json").read_text())
    assert summary["totals"] == audited["totals"]
    assert sum(c["errors"] + c["warnings"] + c["infos"] for c in summary["clusters"]) > 0

    out, doc = planned
    plan_out = tmp_path / f"plan {ODD}"
    again = run_plan(
        spark, str(folder), str(plan_out), load_fleet_policy(None, rf=3, min_insync=None)
    )
    assert again["skipped"] == []
    compared = 0
    for row in doc["clusters"]:
        if row["status"] == "ok":
            name = f"plans/{row['cluster_id']}/reassignment.json"
            assert (plan_out / name).read_text() == (out / name).read_text()
            compared += 1
    assert compared >= 4
