"""drain-dir / balance-dirs on a JBOD snapshot file: the per-dir table, --output json, the
--out files (Kafka's reassignment JSON with log_dirs, rollback, plan document that apply reads),
and refusals (one line, exit 2 or 4, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kreplica.errors import ExitCode
from kreplica.executor.planfile import load_plan_file
from tests.unit.cli.conftest import run_cli

ENV = {"NO_COLOR": "1", "COLUMNS": "160"}
GB = 10**9


def _snapshot(tmp_path: Path, usable_b: int = 500 * GB) -> list[str]:
    data = {
        "kreplica_snapshot": 1,
        "cluster_id": "jbod-1",
        "brokers": [
            {
                "id": 1,
                "log_dirs": [
                    {"path": "/d/a", "total_bytes": 1000 * GB, "usable_bytes": 200 * GB},
                    {"path": "/d/b", "total_bytes": 1000 * GB, "usable_bytes": usable_b},
                ],
            },
            {
                "id": 2,
                "log_dirs": [
                    {"path": "/d/a", "total_bytes": 1000 * GB, "usable_bytes": 900 * GB},
                    {"path": "/d/b", "total_bytes": 1000 * GB, "usable_bytes": 900 * GB},
                ],
            },
        ],
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition": 0,
                        "replicas": [2, 1],
                        "size_bytes": 30 * GB,
                        "replica_dirs": ["/d/a", "/d/a"],
                        "replica_sizes": [30 * GB, 30 * GB],
                    },
                    {
                        "partition": 1,
                        "replicas": [1, 2],
                        "size_bytes": 50 * GB,
                        "replica_dirs": ["/d/a", "/d/b"],
                        "replica_sizes": [50 * GB, 50 * GB],
                    },
                ],
            }
        ],
    }
    path = tmp_path / "jbod.json"
    path.write_text(json.dumps(data))
    return ["--snapshot", str(path)]


def test_drain_dir_table_and_files(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    run = run_cli(
        ["drain-dir", "--broker", "1", "--dir", "/d/a/", *_snapshot(tmp_path), "--dry-run",
         "--out", str(out)],
        ENV,
    )  # fmt: skip
    assert run.code == 0, run.stderr
    assert "drain log dir /d/a of broker 1" in run.stdout
    assert "2 replica move(s) between log dirs" in run.stdout
    assert "kafka-reassign-partitions" in run.stdout  # the runbook for Kafka's tool
    kafka = json.loads(out.read_text())
    assert kafka == {
        "version": 1,
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [2, 1], "log_dirs": ["any", "/d/b"]},
            {"topic": "t", "partition": 1, "replicas": [1, 2], "log_dirs": ["/d/b", "any"]},
        ],
    }
    rollback = json.loads((tmp_path / "plan.rollback.json").read_text())
    assert [p["log_dirs"] for p in rollback["partitions"]] == [["any", "/d/a"], ["/d/a", "any"]]
    plan = load_plan_file(out)  # what apply reads
    assert plan.cluster_id == "jbod-1"
    assert plan.dirs == {("t", 0, 1): "/d/b", ("t", 1, 1): "/d/b"}
    assert plan.before_dirs == {("t", 0, 1): "/d/a", ("t", 1, 1): "/d/a"}
    assert plan.targets == {("t", 0): (2, 1), ("t", 1): (1, 2)}  # replicas stay


def test_balance_dirs_json(tmp_path: Path) -> None:
    run = run_cli(
        ["balance-dirs", "--brokers", "1", *_snapshot(tmp_path), "--dry-run", "--output", "json"],
        ENV,
    )
    assert run.code == 0, run.stderr
    data: dict[str, Any] = run.json()["data"]
    assert data["command"] == "balance-dirs" and data["brokers"] == [1]
    # broker 1 holds 80 GB in /d/a and nothing in /d/b: 30 GB fits the 40 GB gap, 50 does not
    assert [(m["partition"], m["to"]) for m in data["dir_moves"]] == [(0, "/d/b")]
    assert data["bytes_moved"] == 30 * GB and data["lower_bound_bytes"] == 40 * GB
    rows = {(r["broker"], r["path"]): r for r in data["dirs"]}
    assert rows[(1, "/d/a")]["bytes_after"] == 50 * GB
    assert rows[(1, "/d/b")]["bytes_after"] == 30 * GB


def test_refusals_are_one_line_and_write_nothing(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    # /d/b has 85 GB usable; 10% of 1000 GB must stay: 80 GB of replicas do not fit
    run = run_cli(
        ["drain-dir", "--broker", "1", "--dir", "/d/a", *_snapshot(tmp_path, 85 * GB),
         "--dry-run", "--out", str(out)],
        ENV,
    )  # fmt: skip
    assert run.code == ExitCode.INFEASIBLE
    assert len(run.stderr.strip().splitlines()) == 1 and "broker 1" in run.stderr
    assert not out.exists()
    run = run_cli(
        ["drain-dir", "--broker", "1", "--dir", "/d/x", *_snapshot(tmp_path), "--dry-run"], ENV
    )
    assert run.code == ExitCode.USAGE and "no log dir '/d/x'" in run.stderr
    run = run_cli(["balance-dirs", "--brokers", "9", *_snapshot(tmp_path), "--dry-run"], ENV)
    assert run.code == ExitCode.USAGE and "not in this cluster" in run.stderr
    # applying needs a live cluster
    run = run_cli(["drain-dir", "--broker", "1", "--dir", "/d/a", *_snapshot(tmp_path)], ENV)
    assert run.code == ExitCode.USAGE and "live cluster" in run.stderr
