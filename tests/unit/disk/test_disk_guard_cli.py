"""The disk guard on every command that adds replicas: a refusal in one line naming the
broker, dir, bytes needed and free, exit 4, nothing written; "disk: unchecked" when the
snapshot has no disk sizes; `--log-dirs balanced` naming dirs; `any` output unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kreplica.errors import ExitCode
from tests.unit.cli.conftest import EXAMPLE, run_cli
from tests.unit.disk.disk_snapshots import DIRS, KEEP, TOTAL, disk_snapshot, write

# Every command that adds replicas, on a cluster whose every dir is already 1 byte under the
# headroom: no replica may land anywhere (an empty new partition included: it grows there).
COMMANDS = [
    ("expand", ["expand", "-t", "orders", "--rf", "4"]),
    ("plan-rf", ["plan", "-t", "orders", "--rf", "4"]),
    ("add-partitions", ["add-partitions", "-t", "orders", "--partitions", "16"]),
    ("rack-repair", ["plan", "-t", "payments", "--fix-racks"]),
    ("drain", ["drain", "--brokers", "1"]),
    ("add-brokers", ["add-brokers", "--brokers", "7"]),
    ("replace", ["replace", "--broker", "1", "--with", "7"]),
    ("rebalance", ["rebalance"]),
]


@pytest.mark.parametrize(("name", "args"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_no_room_refuses_in_one_line_exit_4_and_writes_nothing(
    tmp_path: Path, name: str, args: list[str]
) -> None:
    snap = write(tmp_path, disk_snapshot(lambda b, p: KEEP - 1, extra_broker=True))
    out = tmp_path / "plan.json"
    result = run_cli([*args, "--snapshot", snap, "--dry-run", "--out", str(out)])
    assert result.code == ExitCode.INFEASIBLE, (name, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("error: disk: broker "), line
    assert "/data/" in line and "would receive" in line and "free above the headroom" in line
    assert "Traceback" not in result.stderr + result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["snap.json"]


@pytest.mark.parametrize(("name", "args"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_with_room_the_same_commands_plan_and_say_disks_were_checked(
    tmp_path: Path, name: str, args: list[str]
) -> None:
    snap = write(tmp_path, disk_snapshot(lambda b, p: TOTAL // 2, extra_broker=True))
    result = run_cli([*args, "--snapshot", snap, "--dry-run"])
    assert result.code == 0, (name, result.stderr)
    assert "disk: checked" in result.stdout
    assert "disk: unchecked" not in result.stdout


def test_a_full_broker_gets_no_new_replica_others_do(tmp_path: Path) -> None:
    """Broker 6 is under the headroom: the picker skips it; without the guard it gets some."""
    args = ["expand", "-t", "orders", "--rf", "4", "--dry-run", "--output", "json"]
    roomy = write(tmp_path, disk_snapshot(lambda b, p: TOTAL // 2), "roomy.json")
    full6 = write(tmp_path, disk_snapshot(lambda b, p: KEEP - 1 if b == 6 else TOTAL // 2))

    def added(snap: str) -> list[int]:
        result = run_cli([*args, "--snapshot", snap])
        assert result.code == 0, result.stderr
        moves = result.json()["data"]["reassignment"]["partitions"]
        return [b for m in moves for b in m["replicas"][3:]]

    assert 6 in added(roomy)
    assert 6 not in added(full6) and len(added(full6)) == 12


def test_the_refusal_names_bytes_needed_and_free(tmp_path: Path) -> None:
    # 1 MiB above the headroom on every dir of brokers 4-6; orders' partitions are larger.
    data = disk_snapshot(lambda b, p: KEEP + 2**20)
    data["brokers"] = data["brokers"]
    snap = write(tmp_path, data)
    result = run_cli(["expand", "--snapshot", snap, "-t", "orders", "--rf", "4", "--dry-run"])
    assert result.code == ExitCode.INFEASIBLE
    line = result.stderr.strip()
    assert "dirs /data/a, /data/b" in line
    assert f"({2 * 2**20} bytes) free above the headroom" in line  # two dirs, 1 MiB each


def test_unchecked_when_the_snapshot_has_no_disk_sizes() -> None:
    result = run_cli(
        ["expand", "--snapshot", str(EXAMPLE), "-t", "orders", "--rf", "4", "--dry-run"]
    )
    assert result.code == 0, result.stderr
    [line] = [x for x in result.stdout.splitlines() if x.startswith("disk:")]
    assert line.startswith("disk: unchecked (") and "ZooKeeper" in line  # the example's source


def test_unchecked_names_an_old_snapshot(tmp_path: Path) -> None:
    data = json.loads(EXAMPLE.read_text())
    data["source"] = "snapshot"
    snap = write(tmp_path, data)
    result = run_cli(["expand", "--snapshot", snap, "-t", "orders", "--rf", "4", "--dry-run"])
    assert "disk: unchecked (the snapshot records no log dir sizes)" in result.stdout


def test_paths_without_sizes_are_unchecked_too(tmp_path: Path) -> None:
    data = json.loads(EXAMPLE.read_text())
    for b in data["brokers"]:
        b["log_dirs"] = ["/data/a"]
    snap = write(tmp_path, data)
    result = run_cli(["expand", "--snapshot", snap, "-t", "orders", "--rf", "4", "--dry-run"])
    assert result.code == 0
    assert "disk: unchecked (the brokers report no total/usable bytes" in result.stdout


def test_any_keeps_the_plan_files_byte_for_byte(tmp_path: Path) -> None:
    """With room on every disk, `--log-dirs any` writes the same Kafka JSON and rollback as
    a snapshot without disk data."""
    roomy = write(tmp_path, disk_snapshot(lambda b, p: TOTAL // 2), "roomy.json")
    for snap, out in ((str(EXAMPLE), "old"), (roomy, "new")):
        (tmp_path / out).mkdir()
        args = ["expand", "--snapshot", snap, "-t", "orders", "--rf", "4", "--dry-run"]
        assert run_cli([*args, "--out", str(tmp_path / out / "p.json")]).code == 0
    for name in ("p.json", "p.rollback.json"):
        old = (tmp_path / "old" / name).read_bytes()
        assert old == (tmp_path / "new" / name).read_bytes()
        assert b'"any"' in old


def _expected_dirs(data: dict, moves: list[dict]) -> dict[tuple[str, int, int], str]:
    """An independent oracle: in plan order, each new replica goes to its broker's dir with
    the most usable bytes after the earlier placements (ties: lowest path)."""
    usable = {
        (b["id"], d["path"]): d["usable_bytes"] for b in data["brokers"] for d in b["log_dirs"]
    }
    parts = {(t["name"], p["partition"]): p for t in data["topics"] for p in t["partitions"]}
    out = {}
    for m in moves:
        part = parts[(m["topic"], m["partition"])]
        leader = part["leader"]
        size = part["size_bytes"] if "replica_sizes" not in part else None
        if size is None:
            size = part["replica_sizes"][part["replicas"].index(leader)]
        for b in m["replicas"]:
            if b in part["replicas"]:
                continue
            path = max(DIRS, key=lambda p: (usable[(b, p)], [-ord(c) for c in p]))
            usable[(b, path)] -= size
            out[(m["topic"], m["partition"], b)] = path
    return out


def test_balanced_names_the_roomiest_dir_after_earlier_placements(tmp_path: Path) -> None:
    # /data/b has 1 GiB more than /data/a on every broker: the first new replica on a broker
    # goes to /data/b, and once enough arrived there, /data/a takes the next ones.
    gib = 2**30
    data = disk_snapshot(lambda b, p: (300 if p == "/data/a" else 301) * gib)
    snap = write(tmp_path, data)
    args = ["expand", "--snapshot", snap, "-t", "orders", "--rf", "4", "--dry-run"]
    result = run_cli([*args, "--log-dirs", "balanced", "--output", "json"])
    assert result.code == 0, result.stderr
    moves = result.json()["data"]["reassignment"]["partitions"]
    expected = _expected_dirs(data, moves)
    seen = set()
    for m in moves:
        for b, d in zip(m["replicas"], m["log_dirs"], strict=True):
            key = (m["topic"], m["partition"], b)
            assert d == expected.get(key, "any"), (key, d)
            seen.add(d)
    assert {"/data/a", "/data/b", "any"} <= seen  # both dirs used: the choice follows bytes
    # and the table shows per-dir rows
    table = run_cli([*args, "--log-dirs", "balanced"]).stdout
    assert "/data/a" in table and "/data/b" in table and "disk: checked" in table


def test_balanced_refuses_per_dir_when_the_roomiest_dir_is_too_small(tmp_path: Path) -> None:
    # Together the two dirs have room, but no single dir does: balanced checks the dir.
    data = disk_snapshot(lambda b, p: KEEP + 2 * 2**30)  # 2 GiB above the headroom per dir
    snap = write(tmp_path, data)
    args = ["expand", "--snapshot", snap, "-t", "audit-log", "--rf", "3", "--dry-run"]
    result = run_cli([*args, "--log-dirs", "balanced"])
    assert result.code == ExitCode.INFEASIBLE, result.stdout
    assert "dir /data/" in result.stderr and "dirs /data/a" not in result.stderr


def test_balanced_without_disk_sizes_is_a_usage_error() -> None:
    args = ["expand", "--snapshot", str(EXAMPLE), "-t", "orders", "--rf", "4", "--dry-run"]
    result = run_cli([*args, "--log-dirs", "balanced"])
    assert result.code == ExitCode.USAGE
    assert len(result.stderr.strip().splitlines()) == 1 and "usable bytes" in result.stderr


@pytest.mark.parametrize(
    ("value", "refused"),
    [("5%", False), ("50GiB", False), ("99%", True), ("990GiB", True)],
)
def test_disk_headroom_takes_a_percentage_or_a_size(
    tmp_path: Path, value: str, refused: bool
) -> None:
    snap = write(tmp_path, disk_snapshot(lambda b, p: TOTAL // 2))
    args = ["expand", "--snapshot", snap, "-t", "orders", "--rf", "4", "--dry-run"]
    result = run_cli([*args, "--disk-headroom", value])
    assert result.code == (ExitCode.INFEASIBLE if refused else 0), result.stderr


@pytest.mark.parametrize("value", ["ten", "100%", "-5%", "5 apples"])
def test_a_bad_disk_headroom_is_a_usage_error(tmp_path: Path, value: str) -> None:
    snap = write(tmp_path, disk_snapshot(lambda b, p: TOTAL // 2))
    args = ["expand", "--snapshot", snap, "-t", "orders", "--rf", "4", "--dry-run"]
    result = run_cli([*args, "--disk-headroom", value])
    assert result.code == ExitCode.USAGE
    assert result.stderr.count("\n") == 1 and "--disk-headroom" in result.stderr


def test_tiered_storage_topics_say_bytes_are_local_only(tmp_path: Path) -> None:
    data = disk_snapshot(lambda b, p: TOTAL // 2)
    for t in data["topics"]:
        if t["name"] == "orders":
            t["configs"]["remote.storage.enable"] = "true"
    snap = write(tmp_path, data)
    args = ["expand", "--snapshot", snap, "-t", "orders", "--rf", "4", "--dry-run"]
    out = run_cli(args).stdout
    assert "tiered storage: orders (remote.storage.enable=true)" in out
    assert "local log only" in out
    plain = run_cli(["expand", "--snapshot", snap, "-t", "payments", "--rf", "4", "--dry-run"])
    assert "tiered storage" not in plain.stdout
