"""Drained brokers remembered per cluster (kreplica/cli/drained.py): later plans leave them out
and say so, `kreplica brokers list` / `undrain` show and forget them, and a plan that fills an
empty broker nobody asked for warns. The applied drain itself: tests/integration/test_oncall.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kreplica.cli import drained
from kreplica.errors import ExitCode
from kreplica.model import Plan
from kreplica.planner.drained import empty_broker_findings, left_out_finding
from tests.unit.cli.conftest import EXAMPLE, run_cli

CLUSTER = json.loads(EXAMPLE.read_text())["cluster_id"]
SNAP = ["--snapshot", str(EXAMPLE)]


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("KREPLICA_STATE_DIR", str(folder))
    return folder


def _new_replicas(data: dict[str, Any]) -> set[int]:
    """The brokers a plan's reassignment adds a replica to (after, less its rollback)."""
    before = {(p["topic"], p["partition"]): p["replicas"] for p in data["rollback"]["partitions"]}
    return {
        b
        for p in data["reassignment"]["partitions"]
        for b in p["replicas"]
        if b not in before[(p["topic"], p["partition"])]
    }


def _expand(*extra: str) -> dict[str, Any]:
    run = run_cli(
        ["expand", *SNAP, "-t", "orders", "--rf", "4", "--dry-run", "--output", "json", *extra]
    )
    assert run.code == 0, run.stderr
    data: dict[str, Any] = run.json()["data"]
    return data


def _codes(data: dict[str, Any]) -> list[str]:
    return [f["code"] for f in data["findings"]]


def test_an_applied_drain_is_remembered_and_an_applied_add_brokers_forgets_it() -> None:
    plan = Path("/plans/drain.json")
    line = drained.after_apply(CLUSTER, {"drained_brokers": [6, 5]}, plan)
    assert line == (
        f"brokers 5,6 drained: later plans on cluster {CLUSTER} leave them out until "
        "`kreplica brokers undrain 5,6`"
    )
    assert sorted(drained.drained_on(CLUSTER)) == [5, 6]
    assert drained.drained_on("another-cluster") == {}
    assert drained.after_apply(CLUSTER, {"strategy": "balanced"}, plan) is None  # no drain
    assert drained.after_apply(None, {"drained_brokers": [1]}, plan) is None  # bare Kafka JSON
    back = drained.after_apply(CLUSTER, {"new_brokers": [6]}, plan)
    assert back == "broker 6 added back: later plans may place replicas on it again"
    assert sorted(drained.drained_on(CLUSTER)) == [5]


def test_a_later_plan_leaves_a_drained_broker_out_and_says_so_in_one_line() -> None:
    assert 6 in _new_replicas(_expand())  # without the record, broker 6 takes new replicas
    drained.remember(CLUSTER, [6], Path("drain.json"))
    data = _expand()
    assert 6 not in _new_replicas(data)
    notes = [f for f in data["findings"] if f["code"] == "drained-left-out"]
    assert len(notes) == 1 and notes[0]["level"] == "info"
    assert notes[0]["message"].startswith("broker 6 left out: drained on 20")
    assert notes[0]["message"].endswith("`kreplica brokers undrain 6` places replicas on it again")
    table = run_cli(["expand", *SNAP, "-t", "orders", "--rf", "4", "--dry-run"])
    assert table.stdout.count("info: broker 6 left out: drained on ") == 1
    # --brokers names every broker the plan may use: asking for 6 is asking for it
    named = _expand("--brokers", "1-6")
    assert 6 in _new_replicas(named) and "drained-left-out" not in _codes(named)


def test_brokers_list_and_undrain() -> None:
    empty = run_cli(["brokers", "list"])
    assert empty.code == 0 and empty.stdout == "no broker is remembered as drained\n"
    drained.remember(CLUSTER, [5, 6], Path("drain.json"))
    drained.remember("other", [6], Path("other.json"))
    listed = run_cli(["brokers", "list", "--output", "json"]).json()["data"]["drained"]
    assert [(r["cluster_id"], r["broker"], Path(r["plan"]).name) for r in listed] == [
        (CLUSTER, 5, "drain.json"),
        (CLUSTER, 6, "drain.json"),
        ("other", 6, "other.json"),
    ]
    assert all(Path(r["plan"]).is_absolute() for r in listed)
    table = run_cli(["brokers", "drained", "--cluster-id", "other"]).stdout.splitlines()
    assert table[0].split() == ["cluster", "broker", "drained", "plan"]
    assert table[1].split()[:2] == ["other", "6"] and len(table) == 2
    # broker 6 is drained on two clusters: which one?
    ambiguous = run_cli(["brokers", "undrain", "6"])
    assert ambiguous.code == ExitCode.USAGE and ambiguous.stderr.count("\n") == 1
    assert f"drained on clusters {CLUSTER}, other; pass --cluster-id" in ambiguous.stderr
    done = run_cli(["brokers", "undrain", "5,6", "--cluster-id", CLUSTER])
    assert done.code == 0, done.stderr
    assert done.stdout == (
        f"brokers 5,6 undrained on cluster {CLUSTER}: later plans may place replicas on them "
        "again\n"
    )
    assert drained.drained_on(CLUSTER) == {} and list(drained.drained_on("other")) == [6]
    assert 6 in _new_replicas(_expand())
    again = run_cli(["brokers", "undrain", "5", "--cluster-id", CLUSTER])
    assert again.code == ExitCode.USAGE
    assert again.stderr == (
        f"error: broker 5: not remembered as drained on cluster {CLUSTER}; `kreplica brokers "
        "list` shows the ones that are\n"
    )


def test_a_record_that_is_not_one_is_a_one_line_error(_state: Path) -> None:
    _state.mkdir()
    (_state / "drained-brokers.json").write_text('{"clusters": []}')
    run = run_cli(["expand", *SNAP, "-t", "orders", "--rf", "4", "--dry-run"])
    assert run.code == ExitCode.USAGE
    assert run.stderr.count("\n") == 1
    assert "is not kreplica's record of drained brokers; fix or delete it" in run.stderr


def _with_empty_broker(tmp_path: Path) -> list[str]:
    doc = json.loads(EXAMPLE.read_text())
    doc["brokers"].append({"id": 7, "rack": "eu-west-1c", "host": "h", "port": 9092})
    path = tmp_path / "seven.json"
    path.write_text(json.dumps(doc))
    return ["--snapshot", str(path)]


def test_a_plan_that_fills_an_empty_broker_nobody_asked_for_warns(tmp_path: Path) -> None:
    snap = _with_empty_broker(tmp_path)
    run = run_cli(["expand", *snap, "-t", "orders", "--rf", "4", "--dry-run", "--output", "json"])
    data = run.json()["data"]
    assert 7 in _new_replicas(data)
    warned = [f for f in data["findings"] if f["code"] == "empty-broker-filled"]
    assert [f["level"] for f in warned] == ["warning"]
    assert warned[0]["message"].startswith("broker 7 holds no replica now and gets ")
    # add-brokers asks for it: no warning
    added = run_cli(["add-brokers", *snap, "--brokers", "7", "--dry-run", "--output", "json"])
    assert added.code == 0, added.stderr
    assert 7 in _new_replicas(added.json()["data"])
    assert "empty-broker-filled" not in _codes(added.json()["data"])


def test_findings_are_pure_data() -> None:
    note = left_out_finding({4: "2026-11-27T10:00:00Z", 5: "2026-11-28T09:00:00Z"})
    assert note.message == (
        "brokers 4,5 left out: drained 4 on 2026-11-27; 5 on 2026-11-28; `kreplica brokers "
        "undrain 4,5` places replicas on them again"
    )
    plan = Plan(
        None,
        "f",
        "balanced",
        (),
        report={
            "broker_replicas_before": {1: 3, 2: 0, 3: 0},
            "broker_replicas_after": {1: 2, 2: 1, 3: 0},
        },
    )
    assert [f.message.split(" holds")[0] for f in empty_broker_findings(plan)] == ["broker 2"]
    assert empty_broker_findings(plan, frozenset({2})) == []


def test_the_broker_tables_spread_is_the_footers_replica_spread(tmp_path: Path) -> None:
    """An excluded empty broker (drained earlier) counted in the table but not in the footer
    gave `spread 18 -> 21` above `replica spread 3 -> 2`: one meaning now, the same brokers."""
    import re

    snap = _with_empty_broker(tmp_path)
    args = ["expand", *snap, "-t", "orders", "--rf", "4", "--dry-run", "--exclude-brokers", "7"]
    run = run_cli(args)
    assert run.code == 0, run.stderr
    row = next(line.split() for line in run.stdout.splitlines() if line.startswith("spread "))
    footer = re.search(r"replica spread (\d+) → (\d+)", run.stdout)
    assert footer is not None, run.stdout
    assert (row[1], row[2]) == footer.groups()
