"""`kreplica check PLAN.json` reads the plan document beside it, as apply does: a plan (or its
rollback) whose partitions changed since is refused with exit 5, whichever file is named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kreplica.errors import ExitCode
from tests.unit.cli.conftest import run_cli

EXPAND = ["expand", "-t", "orders", "--rf", "4", "--dry-run"]


def _changed(example_data: dict[str, Any], tmp_path: Path) -> Path:
    """The example cluster with orders-0 moved off broker 2 since the plan was made."""
    data = json.loads(json.dumps(example_data))
    orders = next(t for t in data["topics"] if t["name"] == "orders")
    orders["partitions"][0]["replicas"] = [3, 1, 4]
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(data))
    return path


def test_check_refuses_a_stale_plan_by_any_of_its_files(
    tmp_path: Path, example: Path, example_data: dict[str, Any]
) -> None:
    out = tmp_path / "p.json"
    made = run_cli([*EXPAND, "--snapshot", str(example), "--out", str(out)])
    assert made.code == 0, made.stderr
    assert run_cli(["check", str(out), "--snapshot", str(example)]).code == 0
    changed = _changed(example_data, tmp_path)
    for name in ("p.json", "p.kreplica.json"):
        run = run_cli(["check", str(tmp_path / name), "--snapshot", str(changed)])
        assert run.code == ExitCode.STALE_PLAN, (name, run.stdout, run.stderr)
        assert "orders-0 was [3, 1, 2] and is now [3, 1, 4]" in run.stderr, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1
    # the rollback is about the cluster after the plan: before it was applied, it is stale too
    run = run_cli(["check", str(tmp_path / "p.rollback.json"), "--snapshot", str(example)])
    assert run.code == ExitCode.STALE_PLAN, run.stderr
    assert "the cluster changed since this plan was made: orders-0 was [3, 1, 2, " in run.stderr


def test_check_refuses_a_plan_whose_document_lists_other_moves(
    tmp_path: Path, example: Path
) -> None:
    out = tmp_path / "p.json"
    made = run_cli([*EXPAND, "--snapshot", str(example), "--out", str(out)])
    assert made.code == 0, made.stderr
    data = json.loads(out.read_text())
    data["partitions"] = data["partitions"][1:]  # edited by hand after the plan was made
    out.write_text(json.dumps(data))
    run = run_cli(["check", str(out), "--snapshot", str(example)])
    assert run.code == ExitCode.STALE_PLAN, run.stderr
    assert "list different reassignments; one was edited" in run.stderr
