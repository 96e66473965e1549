"""The CLI on the shipped degraded example (broker 6 down, clicks-2 being reassigned):
refusals with their exit codes, --replace-dead / --skip-in-flight, and `check` errors."""

from __future__ import annotations

import json
from pathlib import Path

from kreplica.errors import ExitCode
from tests.unit.cli.conftest import REPO, run_cli

DEGRADED = REPO / "examples" / "degraded.json"
S = ["--snapshot", str(DEGRADED)]


def _plan_json(*args: str) -> dict:
    run = run_cli([*args, *S, "--dry-run", "--output", "json"])
    assert run.code == 0, run.stderr
    return run.json()["data"]


def test_expand_with_a_dead_replica_exits_4_naming_broker_and_fix():
    run = run_cli(["expand", "--topic", "orders", "--rf", "4", *S, "--dry-run"])
    assert run.code == ExitCode.INFEASIBLE
    line = run.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "dead broker(s) 6" in line and "--replace-dead" in line


def test_replace_dead_plans_without_the_dead_broker_and_writes_files(tmp_path: Path):
    out = tmp_path / "plan.json"
    args = ["expand", "--topic", "orders", "--rf", "4", *S, "--dry-run", "--replace-dead"]
    run = run_cli([*args, "--out", str(out)])
    assert run.code == 0, run.stderr
    plan = json.loads(out.read_text())
    assert plan["partitions"] and all(6 not in p["replicas"] for p in plan["partitions"])
    assert "! broker down" in run.stdout and "6 (down)" in run.stdout


def test_shrink_drops_the_dead_replicas_and_keeps_the_leaders():
    data = _plan_json("shrink", "--topic", "orders", "--rf", "2", "--force")
    snapshot = json.loads(DEGRADED.read_text())
    orders = next(t for t in snapshot["topics"] if t["name"] == "orders")
    leaders = {p["partition"]: p["leader"] for p in orders["partitions"]}
    for row in data["reassignment"]["partitions"]:
        assert 6 not in row["replicas"]
        assert row["replicas"][0] == leaders[row["partition"]]
    assert data["report"]["leaders_changed"] == 0


def test_a_partition_in_flight_exits_6_or_is_left_out():
    run = run_cli(["expand", "--topic", "clicks", "--rf", "4", *S, "--dry-run"])
    assert run.code == ExitCode.IN_PROGRESS  # before the dead broker: waiting may fix both
    assert "clicks: 2" in run.stderr and "--skip-in-flight" in run.stderr
    data = _plan_json(
        "expand", "--topic", "clicks", "--rf", "4", "--skip-in-flight", "--replace-dead"
    )
    assert 2 not in {p["partition"] for p in data["reassignment"]["partitions"]}
    assert any(f["code"] == "skipped-in-flight" for f in data["findings"])


def _write(tmp_path: Path, rows: list[dict], name: str = "p.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "partitions": rows}))
    return str(path)


def test_check_makes_a_dead_target_an_error(tmp_path: Path):
    plan = _write(tmp_path, [{"topic": "orders", "partition": 0, "replicas": [3, 1, 2, 6]}])
    run = run_cli(["check", plan, *S, "--output", "json"])
    assert run.code == ExitCode.VERIFY_FAILED
    codes = {e["code"] for e in run.json()["errors"]}
    assert "offline-broker" in codes


def test_check_makes_an_in_flight_partition_an_error(tmp_path: Path):
    plan = _write(tmp_path, [{"topic": "clicks", "partition": 2, "replicas": [1, 2, 3]}])
    run = run_cli(["check", plan, *S, "--output", "json"])
    assert run.code == ExitCode.VERIFY_FAILED
    assert "reassignment-in-progress" in {e["code"] for e in run.json()["errors"]}


def test_check_reports_what_a_rollback_removes(tmp_path: Path):
    """Once an expand is applied, its rollback removes the added replicas: check says so."""
    example = REPO / "examples" / "cluster.json"
    out = tmp_path / "up.json"
    args = ["expand", "--topic", "orders", "--rf", "4", "--snapshot", str(example)]
    run = run_cli([*args, "--dry-run", "--out", str(out)])
    assert run.code == 0, run.stderr
    applied = json.loads(example.read_text())
    moved = {p["partition"]: p["replicas"] for p in json.loads(out.read_text())["partitions"]}
    for topic in applied["topics"]:
        for part in topic["partitions"]:
            if topic["name"] == "orders":
                part["replicas"] = part["isr"] = moved[part["partition"]]
    snap = tmp_path / "applied.json"
    snap.write_text(json.dumps(applied))
    run = run_cli(["check", str(tmp_path / "up.rollback.json"), "--snapshot", str(snap)])
    assert run.code == 0, run.stderr
    assert "12 replica(s) would be removed from 12 partition(s)" in run.stdout
    assert "1 warning" in run.stdout


def test_check_knows_the_log_dirs_a_snapshot_lists(tmp_path: Path):
    snapshot = json.loads(DEGRADED.read_text())
    for broker in snapshot["brokers"]:
        broker["log_dirs"] = [{"path": "/data/kafka-1"}, "/data/kafka-2"]
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(snapshot))
    row = {"topic": "orders", "partition": 0, "replicas": [3, 1, 2]}
    good = _write(tmp_path, [{**row, "log_dirs": ["/data/kafka-2", "any", "any"]}], "good.json")
    bad = _write(tmp_path, [{**row, "log_dirs": ["/data/kafka-9", "any", "any"]}], "bad.json")
    assert run_cli(["check", good, "--snapshot", str(snap)]).code == 0
    run = run_cli(["check", bad, "--snapshot", str(snap)])
    assert run.code == ExitCode.VERIFY_FAILED
    assert "/data/kafka-9" in run.stderr and "broker 3" in run.stderr
