"""The per-cluster planning adapter, without Spark: the same plan as `kreplica plan`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kreplica.cli.app import run
from kreplica.fleet.adapter import PlanSettings, plan_cluster, requests_for
from kreplica.fleet.policy import Policy, parse_policy
from kreplica.fleet.synth import synth_fleet
from kreplica.sources.snapshot import load_snapshot, load_snapshot_columnar, write_snapshot

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "cluster.json"


def cli_reassignment(
    snapshot: Path, rf: int, capsys: pytest.CaptureFixture[str]
) -> tuple[int, dict]:
    capsys.readouterr()
    code = run(
        [
            "plan",
            "--snapshot",
            str(snapshot),
            "--topics",
            ".*",
            "--rf",
            str(rf),
            "--dry-run",
            "--output",
            "json",
        ]
    )
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("rf", [3, 4])
def test_example_equals_cli_plan(rf: int, capsys: pytest.CaptureFixture[str]) -> None:
    code, envelope = cli_reassignment(EXAMPLE, rf, capsys)
    assert code == 0
    row = plan_cluster(load_snapshot(EXAMPLE), Policy(rf=rf), key="example")
    assert row["status"] == "ok"
    assert json.loads(row["reassignment"]) == envelope["data"]["reassignment"]
    document = json.loads(row["plan_document"])
    assert document["cluster_id"] == envelope["data"]["cluster_id"]
    assert document["new_partitions"] == envelope["data"]["new_partitions"]
    assert row["replicas_added"] == envelope["data"]["report"]["replicas_added"]


def test_synthetic_clusters_equal_cli_plans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checked = 0
    for snapshot in synth_fleet(6, 1500, seed=11):
        path = tmp_path / f"{snapshot.cluster_id}.json"
        write_snapshot(snapshot, path)
        code, envelope = cli_reassignment(path, 3, capsys)
        # read as the CLI and the fleet's plan task read it (plantask.py: in columns)
        row = plan_cluster(load_snapshot_columnar(path), Policy(rf=3), key=str(snapshot.cluster_id))
        if code == 0:
            assert row["status"] == "ok"
            assert json.loads(row["reassignment"]) == envelope["data"]["reassignment"]
            checked += 1
        else:  # the CLI refuses: the fleet reports the same refusal for that cluster
            assert row["status"] == "error"
            assert row["error"] == envelope["errors"][0]["message"]
    assert checked >= 3


def test_refusal_is_the_clusters_error_not_an_exception() -> None:
    row = plan_cluster(load_snapshot(EXAMPLE), Policy(rf=2), key="example")
    assert row["status"] == "error"
    assert row["error_code"] == "infeasible"
    assert "min.insync.replicas" in row["error"]
    assert row["reassignment"] is None
    forced = plan_cluster(
        load_snapshot(EXAMPLE), Policy(rf=2), key="example", settings=PlanSettings(force=True)
    )
    assert forced["status"] == "ok"


def test_policy_rules_exempt_and_drain() -> None:
    snapshot = load_snapshot(EXAMPLE)
    policy = parse_policy(
        {
            "rule": [{"topics": "__.*", "rf": 3}, {"topics": "orders|payments", "rf": 4}],
            "clusters": {"kR9pQ2vXT3aWm1bLc8dEfg": {"drain": [6], "exempt": ["payments"]}},
        }
    )
    requests = requests_for(snapshot, policy, "kR9pQ2vXT3aWm1bLc8dEfg")
    assert [(r.topic, r.rf) for r in requests] == [("__consumer_offsets", 3), ("orders", 4)]
    row = plan_cluster(snapshot, policy, key="kR9pQ2vXT3aWm1bLc8dEfg")
    assert row["status"] == "ok"
    moved = json.loads(row["reassignment"])["partitions"]
    assert moved and all(6 not in p["replicas"][3:] for p in moved)  # no new replica on 6
    assert {p["topic"] for p in moved} == {"orders"}


def test_nothing_to_plan_without_targets() -> None:
    row = plan_cluster(load_snapshot(EXAMPLE), Policy(min_insync=2), key="x")
    assert row["status"] == "nothing-to-plan"


def test_replace_dead_is_passed_to_the_planner() -> None:
    snapshot = load_snapshot(REPO / "examples" / "degraded.json")
    base = PlanSettings(force=True, skip_in_flight=True)
    plain = plan_cluster(snapshot, Policy(rf=3), key="d", settings=base)
    assert plain["status"] == "error" and "--replace-dead" in plain["error"]
    fixed = plan_cluster(
        snapshot, Policy(rf=3), key="d", settings=dataclasses.replace(base, replace_dead=True)
    )
    assert fixed["status"] == "ok", fixed["error"]


def test_plan_text_writes_the_clis_plan_files_byte_for_byte(tmp_path: Path) -> None:
    """What each `fleet plan` task runs per file gives `kreplica plan --out`'s files: the
    reassignment and the plan document, the same bytes."""
    from kreplica.fleet.plantask import plan_text

    compared = 0
    for snapshot in synth_fleet(3, 900, seed=11):
        path = tmp_path / f"{snapshot.cluster_id}.json"
        write_snapshot(snapshot, path)
        out = tmp_path / f"{snapshot.cluster_id}-plan.json"
        code = run(["plan", "--snapshot", str(path), "--topics", ".*", "--rf", "3",
                    "--dry-run", "--out", str(out), "--output", "json"])  # fmt: skip
        row = plan_text(str(path), path.read_text(encoding="utf-8"), Policy(rf=3))
        assert row["skip"] is None and row["cluster_id"] == snapshot.cluster_id
        if code != 0:
            assert row["status"] == "error" and row["reassignment"] is None
            continue
        assert row["reassignment"] == out.read_text(encoding="utf-8")
        kreplica = out.with_name(f"{out.stem}.kreplica.json")
        assert row["plan_document"] == kreplica.read_text(encoding="utf-8")
        compared += 1
    assert compared >= 2
    bad = plan_text("file:/x/broken.json", '{"kreplica_snapshot": 1, "brokers": [', Policy(rf=3))
    assert bad["cluster_id"] is None and bad["skip"].startswith("/x/broken.json is not valid JSON")
