"""drain / add-brokers / replace / rebalance on the shipped example snapshot: the dry-run diff,
--out files, JSON, and bad input (one line, exit 2 or 4, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import ExitCode
from tests.unit.cli.conftest import EXAMPLE, run_cli

S = ["--snapshot", str(EXAMPLE)]
ENV = {"NO_COLOR": "1", "COLUMNS": "100"}


def _json(args: list[str]) -> dict[str, Any]:
    run = run_cli([*args, *S, "--dry-run", "--output", "json"], ENV)
    assert run.code == 0, run.stderr
    data: dict[str, Any] = run.json()["data"]
    return data


def _reassigned(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The plan's partitions as the JSON output lists them."""
    keys = ("topic", "partition", "replicas")
    return [{k: p[k] for k in keys} for p in data["reassignment"]["partitions"]]


def _listed(changes: Any) -> list[dict[str, Any]]:
    return [
        {"topic": c.topic, "partition": c.partition, "replicas": list(c.after)} for c in changes
    ]


def test_drain_dry_run_shows_diff_and_bound() -> None:
    run = run_cli(["drain", "--brokers", "6", *S, "--dry-run"], ENV)
    assert run.code == 0, run.stderr
    assert "drain broker(s) 6" in run.stdout
    assert "adds 41 replicas = lower bound 41; removes 41 = lower bound 41" in run.stdout
    assert "LEADER 6→3" in run.stdout


def test_drain_json_no_replica_left_and_topic_scope() -> None:
    data = _json(["drain", "--brokers", "6", "-t", "orders"])
    moved = data["reassignment"]["partitions"]
    assert moved and {p["topic"] for p in moved} == {"orders"}
    assert all(6 not in p["replicas"] for p in moved)
    report = data["report"]
    assert report["replicas_added"] == report["lower_bound_replicas_added"]
    assert report["replicas_left_on_drained"] == 0


def test_drain_out_writes_plan_files(tmp_path: Path) -> None:
    out = tmp_path / "drain.json"
    run = run_cli(["drain", "--brokers", "5", *S, "--dry-run", "--out", str(out)], ENV)
    assert run.code == 0, run.stderr
    plan = json.loads(out.read_text())
    assert plan["version"] == 1 and plan["partitions"]
    document = json.loads((tmp_path / "drain.kreplica.json").read_text())
    assert document["strategy"] == "drain"
    assert (tmp_path / "drain.rollback.json").exists()
    assert "kafka-reassign-partitions" in run.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["drain", "--brokers", "9"], ExitCode.USAGE, "broker 9 is not in this cluster"),
        (["drain", "--brokers", "x"], ExitCode.USAGE, "is not a broker id"),
        (["drain", "--brokers", "3,6"], ExitCode.INFEASIBLE, "empties rack(s) eu-west-1c"),
        (["drain", "--brokers", "1-4"], ExitCode.INFEASIBLE, "leaves 2 broker(s)"),
        (["add-brokers", "--brokers", "7"], ExitCode.USAGE, "broker 7 is not in this cluster"),
        (["add-brokers", "--brokers", "6", "--by", "disk"], ExitCode.USAGE, "--by 'disk'"),
        (["replace", "--broker", "1", "--with", "2"], ExitCode.INFEASIBLE, "already holds"),
        (["replace", "--broker", "1", "--with", "1"], ExitCode.USAGE, "two different brokers"),
        (["rebalance", "--max-bytes", "12XB"], ExitCode.USAGE, "is not a size"),
        (["rebalance", "--max-moves", "-1"], ExitCode.USAGE, "give 0 or more"),
        # a typo in --exclude-brokers would leave the broker it meant in the plan
        *(
            ([*op, "--exclude-brokers", "99"], ExitCode.USAGE, "--exclude-brokers: broker 99 is")
            for op in (
                ["drain", "--brokers", "6"],
                ["add-brokers", "--brokers", "6"],
                ["rebalance"],
            )
        ),
    ],
)
def test_bad_input_one_line_nothing_written(
    tmp_path: Path, args: list[str], code: ExitCode, message: str
) -> None:
    out = tmp_path / "plan.json"
    run = run_cli([*args, *S, "--dry-run", "--out", str(out)], ENV)
    assert run.code == code, (run.stdout, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert list(tmp_path.iterdir()) == []


def test_apply_from_a_snapshot_is_refused_before_writing(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    run = run_cli(["drain", "--brokers", "6", *S, "--yes", "--out", str(out)], ENV)
    assert run.code == ExitCode.USAGE
    assert "applying needs a live cluster" in run.stderr
    assert list(tmp_path.iterdir()) == []


def test_replace_keeps_positions() -> None:
    data = _json(["replace", "--broker", "6", "--with", "3"])
    before = {(p["topic"], p["partition"]): p["replicas"] for p in data["rollback"]["partitions"]}
    for p in data["reassignment"]["partitions"]:
        old = before[(p["topic"], p["partition"])]
        assert p["replicas"] == [3 if b == 6 else b for b in old]


def test_add_brokers_and_rebalance_reports() -> None:
    data = _json(["add-brokers", "--brokers", "6"])
    report = data["report"]
    assert report["operation"] == "add-brokers"
    assert report["replicas_added"] == report["lower_bound_replicas_added"]
    for p in data["reassignment"]["partitions"]:
        assert 6 in p["replicas"]
    data = _json(["rebalance"])
    report = data["report"]
    assert report["cluster_spread_after"] <= 1
    assert all(v <= 1 for v in report["topic_spread_after"].values())
    assert report["leader_spread_after"] <= 1
    assert report["replicas_added"] >= report["lower_bound_replicas_added"]
    capped = _json(["rebalance", "--max-moves", "2", "--by", "bytes"])["report"]
    assert capped["replicas_added"] <= 2


@pytest.mark.parametrize(
    "args",
    [
        ["add-brokers", "--brokers", "6"],
        ["add-brokers", "--brokers", "6", "--by", "bytes"],
        ["rebalance"],
        ["rebalance", "--by", "bytes", "--max-moves", "3"],
    ],
)
def test_the_cli_and_the_library_plan_through_the_same_run(args: list[str]) -> None:
    """The CLI reads a snapshot file into columns and plans on the column run, as a library
    caller reading it with kreplica.api.read_cluster does; the object run (the same file
    parsed into objects) gives the same plan, and the report says which run made it."""
    from kreplica import api
    from kreplica.planner.brokers import add_brokers_plan, rebalance_plan
    from kreplica.sources.snapshot import load_snapshot

    data = _json(args)
    assert data["report"]["engine"]["name"] == "columns"
    by = args[args.index("--by") + 1] if "--by" in args else "count"

    def plan(snap: Any) -> Any:
        if args[0] == "add-brokers":
            return add_brokers_plan(snap, [6], by=by)
        budget = int(args[args.index("--max-moves") + 1]) if "--max-moves" in args else None
        return rebalance_plan(snap, by=by, max_moves=budget)

    library = plan(api.read_cluster(snapshot=EXAMPLE))
    objects = plan(load_snapshot(EXAMPLE))
    assert library.report["engine"] == data["report"]["engine"]
    assert objects.report["engine"]["name"] == "objects"
    assert _reassigned(data) == _listed(objects.changes)
    assert list(library.changes) == list(objects.changes)
    same = {k: v for k, v in objects.report.items() if k != "engine"}
    assert {k: v for k, v in library.report.items() if k in same} == same


def test_the_cli_and_the_library_drain_through_the_same_run() -> None:
    """`kreplica drain` and kreplica.api.read_cluster + drain_plan read the snapshot file into
    columns and plan on the column drain: the same plan, report and engine."""
    from kreplica import api
    from kreplica.planner.brokers import drain_plan

    data = _json(["drain", "--brokers", "6"])
    assert data["report"]["engine"]["name"] == "columns"
    library = drain_plan(api.read_cluster(snapshot=EXAMPLE), [6])
    assert library.report["engine"] == data["report"]["engine"]
    assert _reassigned(data) == _listed(library.changes)
    for key in ("preferred_leader_changes", "replicas_added", "topic_spread_after"):
        assert library.report[key] == data["report"][key], key


RATED = EXAMPLE.parent / "traffic-skewed.json"  # a snapshot taken with `snapshot --traffic`


@pytest.mark.parametrize("args", [["drain", "--brokers", "1"], ["add-brokers", "--brokers", "5,6"]])
def test_with_rates_the_cli_and_the_library_place_by_traffic(args: list[str]) -> None:
    """A snapshot with rates: `kreplica drain` / `add-brokers` and the library's plan place
    by traffic alike (the object run), the report's `traffic` and the info line say so."""
    from kreplica import api
    from kreplica.planner.brokers import add_brokers_plan, drain_plan

    run = run_cli([*args, "--snapshot", str(RATED), "--dry-run", "--output", "json"], ENV)
    assert run.code == 0, run.stderr
    data = run.json()["data"]
    ids = [int(b) for b in args[2].split(",")]
    snap = api.read_cluster(snapshot=RATED)
    library = drain_plan(snap, ids) if args[0] == "drain" else add_brokers_plan(snap, ids)
    assert data["report"]["engine"]["name"] == "objects"
    assert _reassigned(data) == _listed(library.changes)
    assert data["report"]["traffic"] == json.loads(json.dumps(library.report["traffic"]))
    traffic = data["report"]["traffic"]
    assert traffic["after"]["nw_out"]["max"] < traffic["count_plan"]["nw_out"]["max"]
    text = run_cli([*args, "--snapshot", str(RATED), "--dry-run"], ENV)
    assert f"info: {args[0]} by traffic (the snapshot's rates)" in text.stdout + text.stderr
