"""partition-for, consumers simulate and the add-partitions impact section, offline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kreplica.impact.partitioner import partition_for_key


def test_partition_for_offline_json(cli: Any) -> None:
    run = cli(["partition-for", "--partitions", "12", "--key", "21", "--output", "json"])
    assert run.code == 0, run.stderr
    data = run.json()["data"]
    assert data["partition"] == partition_for_key(b"21", 12) == 0
    assert data["keys"][0]["murmur2"] == -973932308


def test_partition_for_hex_keys_file_and_after(cli: Any, tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("00ff\n0a0b0c\n")
    run = cli(
        [
            "partition-for",
            "-p",
            "6",
            "--keys-file",
            str(keys),
            "--key-hex",
            "--after",
            "8",
            "--output",
            "json",
        ]
    )
    assert run.code == 0, run.stderr
    data = run.json()["data"]
    assert [k["partition"] for k in data["keys"]] == [
        partition_for_key(b"\x00\xff", 6),
        partition_for_key(b"\x0a\x0b\x0c", 6),
    ]
    assert data["after"]["share"]["moving_fraction"] == "3/4"
    assert "partition" not in data  # two keys: see data.keys


def test_partition_for_needs_a_count(cli: Any) -> None:
    run = cli(["partition-for", "--key", "k"])
    assert run.code == 2
    assert "--partitions N" in run.stderr


def test_partition_for_reads_the_count_from_the_source(cli: Any, example: Path) -> None:
    run = cli(["partition-for", "--snapshot", str(example), "-t", "orders", "-k", "x"])
    assert run.code == 0, run.stderr
    assert f"x → partition {partition_for_key(b'x', 12)} of orders (12 partitions)" in run.stdout


def test_consumers_simulate_json(cli: Any, tmp_path: Path) -> None:
    group = tmp_path / "g.json"
    group.write_text(
        json.dumps(
            {
                "members": [{"id": c, "topics": ["T1"]} for c in ("C1", "C2", "C3")],
                "topics": {"T1": 11},
            }
        )
    )
    run = cli(
        [
            "consumers",
            "simulate",
            "--assignor",
            "range",
            "--group-file",
            str(group),
            "--output",
            "json",
        ]
    )
    assert run.code == 0, run.stderr
    assert run.json()["command"] == "consumers simulate"
    assert run.json()["data"]["assignment"] == {
        "C1": ["T1-0", "T1-1", "T1-2", "T1-3"],
        "C2": ["T1-4", "T1-5", "T1-6", "T1-7"],
        "C3": ["T1-8", "T1-9", "T1-10"],
    }
    table = cli(["consumers", "simulate", "--assignor", "roundrobin", "--group-file", str(group)])
    assert table.code == 0 and "C1" in table.stdout


def test_consumers_simulate_bad_input(cli: Any, tmp_path: Path) -> None:
    group = tmp_path / "g.json"
    group.write_text('{"members": []}')
    run = cli(["consumers", "simulate", "--assignor", "range", "--group-file", str(group)])
    assert run.code == 2 and "members" in run.stderr
    run = cli(["consumers", "simulate", "--assignor", "nope", "--group-file", str(group)])
    assert run.code == 2


def test_consumers_live_needs_bootstrap(cli: Any, example: Path) -> None:
    run = cli(["consumers", "--snapshot", str(example), "--group", "g"])
    assert run.code == 2 and "--bootstrap-server" in run.stderr


def test_add_partitions_plan_has_the_impact_section(
    cli: Any, example: Path, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("user-1\nuser-2\nuser-3\n")
    base = ["add-partitions", "--snapshot", str(example), "-t", "orders", "-p", "16", "--dry-run"]
    data = cli([*base, "--keys-file", str(keys), "--output", "json"]).json()["data"]
    [row] = data["impact"]["topics"]
    assert row["keys"]["moving_fraction"] == "3/4"  # gcd(12, 16) / 16 of keys stay
    assert row["measured"]["keys"] == 3
    assert data["impact"]["groups"] is None and "snapshot" in data["impact"]["groups_note"]
    table = cli(base)
    assert "Impact on producers and consumers" in table.stdout and "75.0% of keys" in table.stdout
    markdown = cli([*base, "--output", "markdown"])
    assert "### Impact on producers and consumers" in markdown.stdout
    # RF changes make no new partitions: no impact section
    rf = cli(["expand", "--snapshot", str(example), "-t", "orders", "--rf", "3", "--dry-run"])
    assert "Impact on producers" not in rf.stdout
