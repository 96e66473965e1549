"""The CLI against real clusters (ZooKeeper-mode Kafka 3.9 and KRaft Kafka 4.x), run as the
`kreplica` console script in a subprocess: every source option, the config file, and the
errors an unreachable cluster gives. Expectations come from the topics conftest created."""

from __future__ import annotations

import json
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import ExitCode
from kreplica.sandbox import SandboxInfo
from tests.support.cli import run_kreplica
from tests.support.groups import per_mode, uses

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]


kreplica = partial(run_kreplica, cwd=REPO, isolated=True, timeout=120)


def envelope(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    assert doc["status"] == "ok"
    return doc


@pytest.fixture(
    params=[
        pytest.param("zookeeper", marks=uses("zk_cluster")),
        pytest.param("admin-zk", marks=uses("zk_cluster")),
        pytest.param("admin-kraft", marks=uses("kraft_cluster")),
    ]
)
def source(request: pytest.FixtureRequest) -> tuple[list[str], SandboxInfo]:
    # only the cluster the param reads: each one is in an xdist group of its own
    name = "kraft_cluster" if request.param == "admin-kraft" else "zk_cluster"
    info: SandboxInfo = request.getfixturevalue(name)
    if request.param == "zookeeper":
        assert info.zookeeper is not None
        return ["--zookeeper", info.zookeeper], info
    return ["--bootstrap-server", info.bootstrap_servers], info


def test_snapshot_command_writes_a_file_the_planner_reads(
    source: tuple[list[str], SandboxInfo], tmp_path: Path
) -> None:
    flags, info = source
    out = tmp_path / "snap.json"
    proc = kreplica("snapshot", *flags, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["cluster_id"] == info.cluster_id
    assert sorted(b["id"] for b in data["brokers"]) == sorted(b.id for b in info.brokers)
    orders = next(t for t in data["topics"] if t["name"] == "orders")
    assert len(orders["partitions"]) == 6
    # The file is a source in its own right: same plan from the file as from the cluster.
    live = envelope(
        kreplica("expand", *flags, "-t", "orders", "--rf", "3", "--dry-run", "--output", "json")
    )
    offline = envelope(
        kreplica(
            "expand",
            "--snapshot",
            str(out),
            "-t",
            "orders",
            "--rf",
            "3",
            "--dry-run",
            "--output",
            "json",
        )
    )
    assert live["data"]["reassignment"] == offline["data"]["reassignment"]


def test_expand_on_a_live_cluster_adds_one_replica_per_partition(
    source: tuple[list[str], SandboxInfo],
) -> None:
    flags, info = source
    doc = envelope(
        kreplica("expand", *flags, "-t", "orders", "--rf", "3", "--dry-run", "--output", "json")
    )
    data = doc["data"]
    assert data["cluster_id"] == info.cluster_id
    before = {p["partition"]: p["replicas"] for p in data["rollback"]["partitions"]}
    after = {p["partition"]: p["replicas"] for p in data["reassignment"]["partitions"]}
    assert sorted(after) == list(range(6))
    racks = {b.id: b.rack for b in info.brokers}
    for partition, replicas in after.items():
        assert replicas[:2] == before[partition]  # existing replicas and leader stay
        assert sorted(replicas) == sorted(racks)  # 3 brokers, RF 3: every broker
    assert data["report"]["replicas_added"] == 6 == data["report"]["lower_bound_replicas_added"]


def test_explain_and_check_on_a_live_cluster(
    source: tuple[list[str], SandboxInfo], tmp_path: Path
) -> None:
    flags, _info = source
    doc = envelope(kreplica("explain", *flags, "-t", "manual", "--output", "json"))
    [manual] = doc["data"]["topics"]
    assert manual["partitions"] == 3 and manual["replication_factor"] == 2
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": "manual", "partition": 7, "replicas": [1, 2]}]}
        )
    )
    proc = kreplica("check", *flags, str(plan))
    assert proc.returncode == ExitCode.VERIFY_FAILED
    assert proc.stderr.count("\n") == 1 and "manual-7" in proc.stderr


def test_command_config_and_named_cluster(zk_cluster: SandboxInfo, tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text(
        "# plain text on loopback\nsecurity.protocol=PLAINTEXT\nclient.id=kreplica-test\n"
    )
    config = tmp_path / "clusters.toml"
    config.write_text(
        f'[clusters.sandbox]\nbootstrap_server = "{zk_cluster.bootstrap_servers}"\n'
        'command_config = "client.properties"\ntimeout_s = 20\n'
    )
    env = {"KREPLICA_CONFIG": str(config)}
    doc = envelope(
        kreplica("explain", "--cluster", "sandbox", "-t", "orders", "--output", "json", env=env)
    )
    assert "from cluster 'sandbox'" in doc["data"]["source"]
    doc = envelope(
        kreplica(
            "explain",
            "--bootstrap-server",
            zk_cluster.bootstrap_servers,
            "--command-config",
            str(props),
            "-t",
            "orders",
            "--output",
            "json",
        )
    )
    assert doc["data"]["topics"][0]["partitions"] == 6


@pytest.mark.parametrize("flag", ["--bootstrap-server", "--zookeeper"])
def test_unreachable_cluster_is_a_one_line_source_error(flag: str) -> None:
    proc = kreplica("explain", flag, "127.0.0.1:1", "--timeout", "3", "-t", "orders")
    assert proc.returncode == ExitCode.SOURCE, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("mode", per_mode("cluster"))
def test_log_dirs_come_from_the_cluster_and_check_refuses_an_unknown_one(
    mode: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The AdminClient source reads each broker's log dirs (DescribeLogDirs); `check` then
    accepts a reassignment naming a real dir and refuses one the broker does not have."""
    info: SandboxInfo = request.getfixturevalue("zk_cluster" if mode == "zk" else "kraft_cluster")
    flags = ["--bootstrap-server", info.bootstrap_servers]
    snap = envelope(kreplica("snapshot", *flags, "--output", "json"))["data"]["snapshot"]
    dirs = {b["id"]: [d["path"] for d in b["log_dirs"]] for b in snap["brokers"]}
    assert sorted(dirs) == sorted(b.id for b in info.brokers)
    assert all(paths and all(Path(p).is_dir() for p in paths) for paths in dirs.values())
    manual = next(t for t in snap["topics"] if t["name"] == "manual")
    replicas = manual["partitions"][0]["replicas"]

    def plan(first_dir: str) -> str:
        path = tmp_path / f"plan-{len(first_dir)}.json"
        row = {"topic": "manual", "partition": 0, "replicas": replicas}
        row["log_dirs"] = [first_dir] + ["any"] * (len(replicas) - 1)
        path.write_text(json.dumps({"version": 1, "partitions": [row]}))
        return str(path)

    assert kreplica("check", *flags, plan(dirs[replicas[0]][0])).returncode == 0
    proc = kreplica("check", *flags, plan("/no/such/kafka-logs"))
    assert proc.returncode == ExitCode.VERIFY_FAILED
    assert "/no/such/kafka-logs" in proc.stderr and f"broker {replicas[0]}" in proc.stderr
