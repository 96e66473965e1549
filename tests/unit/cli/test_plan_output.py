"""Plan commands end to end on the shipped snapshot: the JSON envelope, --out files, apply.

Expected values come from the snapshot file itself (read with json, not with kreplica's
parser) and from the promises in DESIGN.md, never from kreplica's own earlier output.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import ExitCode
from tests.unit.cli.conftest import EXAMPLE, run_cli

RAW: dict[str, Any] = json.loads(EXAMPLE.read_text())
SNAP = ["--snapshot", str(EXAMPLE)]
RACK = {b["id"]: b["rack"] for b in RAW["brokers"]}


def raw_topic(name: str) -> dict[int, list[int]]:
    topic = next(t for t in RAW["topics"] if t["name"] == name)
    return {p["partition"]: p["replicas"] for p in topic["partitions"]}


def raw_replica_counts() -> Counter[int]:
    counts: Counter[int] = Counter(dict.fromkeys(RACK, 0))
    for topic in RAW["topics"]:
        for p in topic["partitions"]:
            counts.update(p["replicas"])
    return counts


def expand_json(*extra: str) -> dict[str, Any]:
    result = run_cli(
        ["expand", *SNAP, "-t", "orders", "--rf", "4", "--dry-run", "--output", "json", *extra]
    )
    assert result.code == 0, result.stderr
    doc: dict[str, Any] = result.json()
    return doc


def test_envelope_shape() -> None:
    doc = expand_json()
    assert set(doc) == {"kreplica", "command", "status", "data", "errors"}
    assert (doc["kreplica"], doc["command"], doc["status"], doc["errors"]) == (
        1,
        "expand",
        "ok",
        [],
    )
    report = doc["data"]["report"]
    for key in (
        "replicas_added",
        "replicas_removed",
        "existing_replicas_moved",
        "lower_bound_replicas_added",
        "lower_bound_replicas_removed",
        "bytes_to_move",
        "leaders_changed",
        "rack_violations_before",
        "rack_violations_after",
        "broker_replicas_before",
        "broker_replicas_after",
        "broker_leaders_after",
        "strategy",
    ):
        assert key in report, key


def test_expand_keeps_every_existing_replica_and_leader() -> None:
    data = expand_json()["data"]
    before = raw_topic("orders")
    moves = data["reassignment"]["partitions"]
    assert data["reassignment"]["version"] == 1
    assert sorted(m["partition"] for m in moves) == sorted(before)  # every partition gains one
    for move in moves:
        old = before[move["partition"]]
        assert move["replicas"][: len(old)] == old  # nothing moved or reordered, leader first
        assert len(move["replicas"]) == 4 == len(set(move["replicas"]))
        assert move["log_dirs"] == ["any"] * 4
        assert len({RACK[b] for b in move["replicas"]}) == 3  # 3 racks, all used
    assert data["new_partitions"] == []


def test_rollback_is_the_snapshot_before_state() -> None:
    data = expand_json()["data"]
    before = raw_topic("orders")
    rollback = {p["partition"]: p["replicas"] for p in data["rollback"]["partitions"]}
    assert rollback == before


def test_report_counts_match_the_reassignment() -> None:
    data = expand_json()["data"]
    report = data["report"]
    before = raw_topic("orders")
    added = sum(
        len(m["replicas"]) - len(before[m["partition"]]) for m in data["reassignment"]["partitions"]
    )
    assert report["replicas_added"] == added == report["lower_bound_replicas_added"] == 12
    assert report["replicas_removed"] == 0
    assert report["existing_replicas_moved"] == 0
    assert report["leaders_changed"] == 0
    now = raw_replica_counts()
    assert {int(k): v for k, v in report["broker_replicas_before"].items()} == dict(now)
    after = now.copy()
    for move in data["reassignment"]["partitions"]:
        after.update(set(move["replicas"]) - set(before[move["partition"]]))
    assert {int(k): v for k, v in report["broker_replicas_after"].items()} == dict(after)
    sizes = {
        p["partition"]: p["size_bytes"]
        for t in RAW["topics"]
        if t["name"] == "orders"
        for p in t["partitions"]
    }
    assert report["bytes_to_move"] == sum(sizes.values())  # one new copy of every partition


def test_json_output_is_deterministic() -> None:
    first = run_cli(["expand", *SNAP, "-t", "orders", "--rf", "4", "--dry-run", "--output", "json"])
    second = run_cli(
        ["expand", *SNAP, "-t", "orders", "--rf", "4", "--dry-run", "--output", "json"]
    )
    assert first.stdout == second.stdout


def test_add_partitions_lists_new_partitions_only() -> None:
    result = run_cli(
        ["add-partitions", *SNAP, "-t", "clicks", "-p", "30", "--dry-run", "--output", "json"]
    )
    assert result.code == 0, result.stderr
    data = result.json()["data"]
    assert data["reassignment"]["partitions"] == []  # existing partitions untouched
    new = data["new_partitions"]
    assert [p["partition"] for p in new] == list(range(24, 30))
    assert all(p["topic"] == "clicks" and len(p["replicas"]) == 2 for p in new)


def test_table_collapses_unchanged_runs_and_honours_limit() -> None:
    result = run_cli(
        ["add-partitions", *SNAP, "-t", "clicks", "-p", "30", "--dry-run", "--limit", "4"]
    )
    assert result.code == 0, result.stderr
    assert "(24 partitions unchanged)" in result.stdout
    assert "… 2 more changed partitions (--limit 0 shows all)" in result.stdout
    assert result.stdout.count("new partition") == 4


def test_fix_racks_marks_the_removed_and_added_replica() -> None:
    result = run_cli(
        ["plan", *SNAP, "-t", "payments", "--fix-racks", "--dry-run", "--output", "json"]
    )
    assert result.code == 0, result.stderr
    data = result.json()["data"]
    [move] = data["reassignment"]["partitions"]
    assert move["partition"] == 4  # the only partition with two replicas in one rack
    assert len({RACK[b] for b in move["replicas"]}) == 3
    assert data["report"]["rack_violations_before"] == 1
    assert data["report"]["rack_violations_after"] == 0
    table = run_cli(["plan", *SNAP, "-t", "payments", "--fix-racks", "--dry-run"]).stdout
    assert "(4 partitions unchanged)" in table and "drop " in table and "add " in table


def test_out_writes_kafka_json_rollback_and_plan_document(tmp_path: Path) -> None:
    out = tmp_path / "orders-rf4.json"
    result = run_cli(["expand", *SNAP, "-t", "orders", "--rf", "4", "--dry-run", "--out", str(out)])
    assert result.code == 0, result.stderr
    reassignment = json.loads(out.read_text())
    rollback = json.loads((tmp_path / "orders-rf4.rollback.json").read_text())
    document = json.loads((tmp_path / "orders-rf4.kreplica.json").read_text())
    # Kafka's format: version first, entries topic/partition/replicas/log_dirs, sorted.
    assert list(reassignment) == ["version", "partitions"]
    keys = [list(p) for p in reassignment["partitions"]]
    assert all(k == ["topic", "partition", "replicas", "log_dirs"] for k in keys)
    order = [(p["topic"], p["partition"]) for p in reassignment["partitions"]]
    assert order == sorted(order)
    assert {p["partition"]: p["replicas"] for p in rollback["partitions"]} == raw_topic("orders")
    assert document["cluster_id"] == RAW["cluster_id"]
    assert document["reassignment"] == reassignment
    assert "kafka-reassign-partitions.sh" in result.stdout  # the runbook follows the files
    assert str(out) in result.stdout


def test_check_accepts_the_plan_kreplica_wrote(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    assert (
        run_cli(["expand", *SNAP, "-t", "orders", "--rf", "4", "--dry-run", "--out", str(out)]).code
        == 0
    )
    for path in (out, tmp_path / "plan.kreplica.json"):
        result = run_cli(["check", *SNAP, str(path)])
        assert result.code == 0, result.stderr
        assert "0 errors" in result.stdout


def test_without_dry_run_a_snapshot_plan_is_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    out = tmp_path / "plan.json"
    result = run_cli(["expand", *SNAP, "-t", "orders", "--rf", "4", "--yes", "--out", str(out)])
    assert result.code == ExitCode.USAGE
    assert result.stderr.startswith("error: applying needs a live cluster")
    assert len(result.stderr.splitlines()) == 1
    assert not out.exists()


def test_without_dry_run_and_without_a_terminal_applying_needs_yes() -> None:
    result = run_cli(["expand", "--bootstrap-server", "127.0.0.1:1", "-t", "orders", "--rf", "4"])
    assert result.code in (ExitCode.SOURCE, ExitCode.USAGE)  # unreachable, or refused first


def test_without_dry_run_json_is_one_error_envelope() -> None:
    result = run_cli(["expand", *SNAP, "-t", "orders", "--rf", "4", "--output", "json"])
    assert result.code == ExitCode.USAGE
    doc = result.json()  # exactly one JSON document
    assert doc["status"] == "error"
    assert [e["code"] for e in doc["errors"]] == ["usage"]


def test_nothing_to_do_is_ok_and_says_so_in_one_line() -> None:
    result = run_cli(["set-rf", *SNAP, "-t", "orders", "--rf", "3"])
    assert result.code == 0, result.stderr
    assert result.stdout == (
        "set RF of orders (RF 3 → 3): nothing to change, the cluster already has this shape\n"
    )


@pytest.mark.parametrize("fmt", ["table", "json", "markdown"])
def test_nothing_to_do_writes_no_plan_file(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "plan.json"
    result = run_cli(
        ["set-rf", *SNAP, "-t", "orders", "--rf", "3", "--out", str(out), "--output", fmt]
    )
    assert result.code == 0, result.stderr
    assert list(tmp_path.iterdir()) == []
    line = f"nothing to change, the cluster already has this shape; no plan written to {out}"
    if fmt == "json":
        data = result.json()["data"]
        assert data["files"] is None and data["message"].endswith(line)
        assert data["reassignment"]["partitions"] == []
    else:
        assert result.stdout.count("\n") == 1 and result.stdout.rstrip("\n").endswith(line)


def test_a_topic_at_two_rfs_is_shown_as_a_range(tmp_path: Path) -> None:
    """An RF change stopped half way: the header says "RF 2-3", not partition 0's RF."""
    doc = json.loads(EXAMPLE.read_text())
    orders = next(t for t in doc["topics"] if t["name"] == "orders")
    orders["partitions"][1]["replicas"] = orders["partitions"][1]["replicas"][:2]
    snap = tmp_path / "mixed.json"
    snap.write_text(json.dumps(doc))
    result = run_cli(["expand", "--snapshot", str(snap), "-t", "orders", "--rf", "3", "--dry-run"])
    assert result.code == 0, result.stderr
    assert result.stdout.startswith("expand orders (RF 2-3 → 3)\n")
    # shrink never raises: RF 3 is above the topic's lowest
    refused = run_cli(["shrink", "--snapshot", str(snap), "-t", "orders", "--rf", "3"])
    assert refused.code == ExitCode.USAGE
    assert "orders has RF 2-3 and --rf is 3" in refused.stderr


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_markdown_and_table_name_the_cluster(fmt: str) -> None:
    result = run_cli(["expand", *SNAP, "-t", "orders", "--rf", "4", "--dry-run", "--output", fmt])
    assert RAW["cluster_id"] in result.stdout


def test_markdown_gives_apply_verify_and_rollback_commands() -> None:
    result = run_cli(
        [
            "expand",
            *SNAP,
            "-t",
            "orders",
            "--rf",
            "4",
            "--dry-run",
            "--output",
            "markdown",
            "--out",
            "x/p.json",
        ]
    )
    # --out into a missing folder fails before any output
    assert result.code == ExitCode.USAGE
    result = run_cli(
        ["add-partitions", *SNAP, "-t", "clicks", "-p", "26", "--dry-run", "--output", "markdown"]
    )
    text = result.stdout
    assert "kafka-topics.sh" in text and "--partitions 26" in text
    assignment = text.split("--replica-assignment ")[1].split()[0].split(",")
    assert len(assignment) == 26
    assert [list(map(int, a.split(":"))) for a in assignment[:24]] == [
        raw_topic("clicks")[p] for p in range(24)
    ]


def test_explain_json() -> None:
    result = run_cli(["explain", *SNAP, "-t", "orders", "--output", "json"])
    assert result.code == 0
    [topic] = result.json()["data"]["topics"]
    assert topic["topic"] == "orders" and topic["partitions"] == 12


class _Draws:
    """An rng that hands Kafka's algorithm a chosen start index, then shift."""

    def __init__(self, *values: int) -> None:
        self.values = list(values)

    def next_int(self, bound: int) -> int:
        return self.values.pop(0) % bound


def test_explain_json_single_topic_layout_reproduces_the_topic() -> None:
    from kreplica.kafka import assign_replicas

    result = run_cli(["explain", *SNAP, "-t", "orders", "--output", "json"])
    layout = result.json()["data"]["layout"]
    assert layout["kafka_default"] is True and layout["nonconforming_partitions"] == []
    raw = next(t for t in RAW["topics"] if t["name"] == "orders")
    racks = {b["id"]: b.get("rack") for b in RAW["brokers"]} if layout["rack_aware"] else None
    rebuilt = assign_replicas(
        layout["broker_list"],
        len(raw["partitions"]),
        len(raw["partitions"][0]["replicas"]),
        racks=racks,
        rng=_Draws(layout["start_index"], layout["replica_shift"]),
    )
    assert rebuilt == {p["partition"]: p["replicas"] for p in raw["partitions"]}


def test_snapshot_round_trip(tmp_path: Path) -> None:
    out = tmp_path / "copy.json"
    result = run_cli(["snapshot", *SNAP, "-o", str(out)])
    assert result.code == 0, result.stderr
    copy = json.loads(out.read_text())
    assert [t["name"] for t in copy["topics"]] == sorted(t["name"] for t in RAW["topics"])
    for topic in RAW["topics"]:
        mine = next(t for t in copy["topics"] if t["name"] == topic["name"])
        assert [p["replicas"] for p in mine["partitions"]] == [
            p["replicas"] for p in topic["partitions"]
        ]
    stdout = run_cli(["snapshot", *SNAP, "-t", "orders"])
    assert [t["name"] for t in json.loads(stdout.stdout)["topics"]] == ["orders"]


def test_version() -> None:
    result = run_cli(["--version"])
    assert result.code == 0 and result.stdout.startswith("kreplica ")


def test_a_snapshot_plan_is_refused_before_the_question(monkeypatch: pytest.MonkeyPatch) -> None:
    """Applying needs a live cluster: nobody is asked to confirm what cannot be applied."""
    import kreplica.cli.present as present

    monkeypatch.setattr(present, "interactive", lambda: True)
    result = run_cli(["expand", *SNAP, "-t", "orders", "--rf", "4"])
    assert result.code == ExitCode.USAGE
    assert "Apply this plan" not in result.stdout
    assert "--dry-run" in result.stderr


def test_check_json_lists_findings_and_errors() -> None:
    bad = str(EXAMPLE.parent / "bad-plan.json")
    result = run_cli(["check", *SNAP, bad, "--output", "json"])
    assert result.code == ExitCode.VERIFY_FAILED
    doc = result.json()
    assert doc["status"] == "error"
    codes = {f["code"] for f in doc["data"]["findings"]}
    assert "unknown-broker" in codes  # broker 9 does not exist in the snapshot
    assert [e["code"] for e in doc["errors"]] == ["unknown-broker"]
    assert "orders-0" in doc["errors"][0]["message"]


def test_names_with_brackets_print_literally(tmp_path: Path) -> None:
    data = json.loads(EXAMPLE.read_text())
    for broker in data["brokers"]:
        broker["rack"] = f"[bold]dc{broker['id'] % 3}"  # rich markup must not eat this
    snap = tmp_path / "[red]snap.json"
    snap.write_text(json.dumps(data))
    result = run_cli(["expand", "--snapshot", str(snap), "-t", "orders", "--rf", "4", "--dry-run"])
    assert result.code == 0, result.stderr
    assert "1 = [bold]dc1" in result.stdout  # the rack legend, literally
    assert "[red]snap.json" in result.stdout


def test_runbook_moves_first_then_creates_partitions_at_the_new_rf() -> None:
    args = [
        "plan",
        *SNAP,
        "-t",
        "orders",
        "--rf",
        "4",
        "-p",
        "14",
        "--dry-run",
        "--output",
        "markdown",
    ]
    text = run_cli(args).stdout
    assert text.index("--execute") < text.index("--verify") < text.index("kafka-topics.sh")
    assert "once verify reports every partition complete: create 2 partitions" in text
    assignment = text.split("--replica-assignment ")[1].split()[0].split(",")
    assert len(assignment) == 14 and all(len(a.split(":")) == 4 for a in assignment)


def test_runbook_commands_survive_paths_with_spaces(tmp_path: Path) -> None:
    import shlex

    folder = tmp_path / "change 42"
    folder.mkdir()
    out = folder / "orders rf4.json"
    config = tmp_path / "prod eu.properties"
    config.write_text("security.protocol=SSL\n")
    args = ["expand", *SNAP, "-t", "orders", "--rf", "4", "--dry-run", "--out", str(out)]
    text = run_cli([*args, "--command-config", str(config), "--output", "markdown"]).stdout
    commands = [line.strip() for line in text.splitlines() if "kafka-reassign" in line]
    assert len(commands) == 3  # execute, verify, cancel-or-rollback
    for command in commands:
        words = shlex.split(command, comments=True)  # what a shell passes to the tool
        assert words[words.index("--reassignment-json-file") + 1] == str(out)
        assert words[words.index("--command-config") + 1] == str(config)
    rollback = shlex.split(commands[2].split("# or: ", 1)[1])
    assert rollback[rollback.index("--reassignment-json-file") + 1] == str(
        folder / "orders rf4.rollback.json"
    )


def test_nothing_to_do_still_shows_the_warnings(tmp_path: Path) -> None:
    doc = json.loads(EXAMPLE.read_text())
    doc["brokers"][5]["alive"] = False  # broker 6 holds replicas of orders
    snap = tmp_path / "dead6.json"
    snap.write_text(json.dumps(doc))
    result = run_cli(["set-rf", "--snapshot", str(snap), "-t", "orders", "--rf", "3"])
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith(": nothing to change, the cluster already has this shape")
    assert lines[1].startswith("warning: broker 6 is down (rack eu-west-1c)")
    assert all(line.startswith("warning: ") for line in lines[1:])
