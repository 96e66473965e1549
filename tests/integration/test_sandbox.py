"""The sandbox clusters are what the fixtures promise, checked from the outside (Kafka's own
metadata, ZooKeeper's znodes, the operating system's process table), and the launcher stops
exactly its own processes, even when start-up fails."""

from __future__ import annotations

import json
import os
import socket
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kreplica import sandbox
from kreplica.sandbox import SandboxError, SandboxInfo
from tests.support.groups import per_mode

pytestmark = pytest.mark.integration

STANDARD_SHAPES = {  # topic -> (partitions, replication factor)
    "orders": (6, 2),
    "payments": (3, 3),
    "grown": (5, 2),
    "manual": (3, 2),
    "single": (4, 1),
}


def _admin(info: SandboxInfo) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": info.bootstrap_servers})


def _pid_running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except FileNotFoundError:
        return False


@pytest.fixture(params=per_mode("cluster"))
def cluster(request: pytest.FixtureRequest) -> SandboxInfo:
    info: SandboxInfo = request.getfixturevalue(f"{request.param}_cluster")
    return info


def test_brokers_racks_and_ports(cluster: SandboxInfo) -> None:
    admin = _admin(cluster)  # keep the client alive until its future resolves
    described = admin.describe_cluster(request_timeout=10).result(timeout=15)
    assert {n.id: n.rack for n in described.nodes} == {1: "a", 2: "b", 3: "c"}
    assert {n.id: n.port for n in described.nodes} == {b.id: b.port for b in cluster.brokers}
    assert described.cluster_id == cluster.cluster_id
    assert cluster.bootstrap_servers == ",".join(f"127.0.0.1:{b.port}" for b in cluster.brokers)


def test_standard_topics_have_their_shapes_and_leaders(cluster: SandboxInfo) -> None:
    metadata = _admin(cluster).list_topics(timeout=10)
    for name, (partitions, rf) in STANDARD_SHAPES.items():
        parts = metadata.topics[name].partitions
        assert sorted(parts) == list(range(partitions)), name
        assert all(len(p.replicas) == rf for p in parts.values()), name
        assert all(len(set(p.replicas)) == rf for p in parts.values()), name
        assert all(p.leader in p.replicas for p in parts.values()), name
    manual = {p: part.replicas for p, part in metadata.topics["manual"].partitions.items()}
    assert manual == {0: [1, 2], 1: [2, 3], 2: [3, 1]}


def test_rack_aware_placement_spreads_replicas(cluster: SandboxInfo) -> None:
    # 3 brokers on 3 racks: Kafka's rack-aware placement never puts two replicas on one rack.
    racks = {b.id: b.rack for b in cluster.brokers}
    metadata = _admin(cluster).list_topics(timeout=10)
    for name in ("orders", "payments", "grown"):
        for part in metadata.topics[name].partitions.values():
            assert len({racks[r] for r in part.replicas}) == len(part.replicas), name


def test_payments_topic_config(cluster: SandboxInfo) -> None:
    from confluent_kafka.admin import ConfigResource

    resource = ConfigResource("topic", "payments")
    admin = _admin(cluster)
    configs = admin.describe_configs([resource])[resource].result(timeout=15)
    assert configs["min.insync.replicas"].value == "2"


def test_zk_cluster_znodes(zk_cluster: SandboxInfo) -> None:
    from kazoo.client import KazooClient

    assert zk_cluster.mode == "zk"
    assert zk_cluster.zookeeper is not None
    zk = KazooClient(hosts=zk_cluster.zookeeper, timeout=10)
    zk.start(timeout=10)
    try:
        assert sorted(zk.get_children("/brokers/ids"), key=int) == ["1", "2", "3"]
        cluster_id = json.loads(zk.get("/cluster/id")[0])["id"]
        assert cluster_id == zk_cluster.cluster_id
        broker_1 = json.loads(zk.get("/brokers/ids/1")[0])
        assert broker_1["rack"] == "a"
        manual = json.loads(zk.get("/brokers/topics/manual")[0])["partitions"]
        assert manual == {"0": [1, 2], "1": [2, 3], "2": [3, 1]}
    finally:
        zk.stop()
        zk.close()


def test_kraft_cluster_has_no_zookeeper(kraft_cluster: SandboxInfo) -> None:
    assert kraft_cluster.mode == "kraft"
    assert kraft_cluster.zookeeper is None
    assert kraft_cluster.kafka_version.startswith("4.")
    # The cluster id we formatted the nodes with is the one Kafka reports.
    meta = Path(kraft_cluster.state_dir, "node-1", "data", "meta.properties").read_text()
    assert f"cluster.id={kraft_cluster.cluster_id}" in meta


def test_status_and_state_file_describe_the_running_cluster(cluster: SandboxInfo) -> None:
    assert sandbox.status(cluster.name) == cluster
    state = json.loads(Path(cluster.state_dir, "state.json").read_text())
    procs = sandbox.processes(cluster.name)
    assert [p.pid for p in procs] == [p["pid"] for p in state["processes"]]
    assert all(p.alive and _pid_running(p.pid) for p in procs)
    expected = 4 if cluster.mode == "zk" else 3  # ZooKeeper + 3 brokers, or 3 combined nodes
    assert len(procs) == expected
    client_ports = {p.node_id: p.ports[0] for p in procs if p.node_id is not None}
    assert client_ports == {b.id: b.port for b in cluster.brokers}
    if cluster.zookeeper is not None:
        assert [p.ports for p in procs if p.role == "zookeeper"] == [
            (int(cluster.zookeeper.rsplit(":", 1)[1]),)
        ]
    all_ports = [port for p in procs for port in p.ports]
    assert len(all_ports) == len(set(all_ports))


def test_up_down_lifecycle_stops_exactly_its_pids(zk_cluster: SandboxInfo) -> None:
    # A second sandbox beside the session's: `down` must stop its pids and leave the other's.
    info = sandbox.up(mode="zk", brokers=1, racks=None, name=f"lifecycle-{os.getpid()}")
    try:
        assert [(b.id, b.rack) for b in info.brokers] == [(1, None)]
        with pytest.raises(SandboxError, match="already running"):
            sandbox.up(mode="zk", brokers=1, racks=None, name=info.name)
        pids = [p.pid for p in sandbox.processes(info.name)]
        assert len(pids) == 2 and all(_pid_running(pid) for pid in pids)
    finally:
        assert sandbox.down(info.name) is True
    assert not any(_pid_running(pid) for pid in pids)
    assert _processes_mentioning(info.state_dir) == []
    assert not Path(info.state_dir).exists()
    assert sandbox.status(info.name) is None
    assert sandbox.down(info.name) is False
    others = sandbox.processes(zk_cluster.name)
    assert others and all(p.alive for p in others)


def test_broker_that_cannot_start_gives_log_tail_and_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kreplica.sandbox import launch as launcher

    # Hold the broker's port so its real JVM fails to bind.
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    taken = blocker.getsockname()[1]
    monkeypatch.setattr(launcher.Launcher, "_broker_ports", lambda self: {1: taken})
    name = f"fails-{os.getpid()}"
    try:
        with pytest.raises(SandboxError) as caught:
            sandbox.up(mode="zk", brokers=1, racks=("a",), name=name, timeout_s=90)
    finally:
        blocker.close()
    message = str(caught.value)
    assert "broker 1" in message and "exited during start-up" in message
    assert "Address already in use" in message  # the log tail shows Kafka's own reason
    assert not (sandbox.sandbox_root() / name).exists()
    assert sandbox.status(name) is None
    assert _processes_mentioning(str(sandbox.sandbox_root() / name)) == []


def test_start_up_timeout_names_what_it_waited_for_and_cleans_up() -> None:
    name = f"slow-{os.getpid()}"
    # ZooKeeper answers within 1.5 s, three brokers cannot register that fast.
    with pytest.raises(SandboxError, match=r"did not start within 2s \(waiting for"):
        sandbox.up(mode="zk", brokers=3, name=name, timeout_s=1.5)
    state_dir = sandbox.sandbox_root() / name
    assert not state_dir.exists()
    assert _processes_mentioning(str(state_dir)) == []


def _processes_mentioning(text: str) -> list[int]:
    """Pids whose command line contains `text` (from /proc, independent of our state file)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _pid_running(int(entry)):
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if text.encode() in fh.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


def test_cli_up_status_down_json_envelopes() -> None:
    from typer.testing import CliRunner

    from kreplica.cli.sandbox_cmd import sandbox_app

    runner = CliRunner()
    name = f"cli-{os.getpid()}"
    up = runner.invoke(
        sandbox_app,
        [
            "up",
            "--mode",
            "kraft",
            "--brokers",
            "1",
            "--racks",
            "r1",
            "--name",
            name,
            "--output",
            "json",
        ],
    )
    try:
        assert up.exit_code == 0, up.output
        envelope = json.loads(up.stdout)
        assert {k: envelope[k] for k in ("kreplica", "command", "status", "errors")} == {
            "kreplica": 1,
            "command": "sandbox up",
            "status": "ok",
            "errors": [],
        }
        data = envelope["data"]
        assert data["name"] == name and data["mode"] == "kraft" and data["zookeeper"] is None
        assert [(b["id"], b["rack"]) for b in data["brokers"]] == [(1, "r1")]
        assert data["bootstrap_servers"] == f"127.0.0.1:{data['brokers'][0]['port']}"

        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": data["bootstrap_servers"]})
        described = admin.describe_cluster(request_timeout=10).result(timeout=15)
        assert described.cluster_id == data["cluster_id"]
        assert [(n.id, n.rack) for n in described.nodes] == [(1, "r1")]

        status = runner.invoke(sandbox_app, ["status", "--name", name, "--output", "json"])
        assert status.exit_code == 0, status.output
        procs = json.loads(status.stdout)["data"]["processes"]
        assert [(p["role"], p["node_id"], p["alive"]) for p in procs] == [
            ("broker,controller", 1, True)
        ]
    finally:
        down = runner.invoke(sandbox_app, ["down", "--name", name, "--output", "json"])
    assert json.loads(down.stdout)["data"] == {"name": name, "stopped": True}
    assert _processes_mentioning(data["state_dir"]) == []
    again = runner.invoke(sandbox_app, ["status", "--name", name])
    assert isinstance(again.exception, SandboxError)
    assert "no sandbox named" in str(again.exception)


def test_pytest_plugin_fixture_runs_a_cluster_and_tears_it_down(tmp_path: Path) -> None:
    import subprocess
    import sys

    # A user's project: only an ini file and a test; the fixture comes from the entry point.
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nkreplica_backend = sandbox\nkreplica_mode = zk\nkreplica_brokers = 2\n"
        "kreplica_racks = east,west\n"
    )
    (tmp_path / "test_user.py").write_text(
        textwrap.dedent(
            """
            from pathlib import Path
            from kreplica.testing import TopicSpec, create_topics

            def test_runbook(kreplica_cluster):
                Path("seen.txt").write_text(kreplica_cluster.state_dir)
                racks = [(b.id, b.rack) for b in kreplica_cluster.brokers]
                assert racks == [(1, "east"), (2, "west")]
                create_topics(
                    kreplica_cluster.bootstrap_servers,
                    [TopicSpec("t", partitions=4, replication_factor=2)],
                )
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    state_dir = (tmp_path / "seen.txt").read_text()
    assert Path(state_dir).parent == sandbox.sandbox_root()
    assert not Path(state_dir).exists()
    assert _processes_mentioning(state_dir) == []


def test_sandboxes_of_killed_sessions_are_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    from kreplica.testing import _reap_orphans

    # A private root: other test sessions on this machine reap orphans in the shared one.
    monkeypatch.setenv("KREPLICA_SANDBOX_DIR", str(tmp_path / "sandboxes"))

    dead_pid = subprocess.Popen(["true"])
    dead_pid.wait()
    name = f"pytest-zk-{dead_pid.pid}"  # named like the fixture of a session that died
    info = sandbox.up(mode="zk", brokers=1, racks=None, name=name)
    try:
        _reap_orphans()
        assert sandbox.status(name) is None
        assert _processes_mentioning(info.state_dir) == []
    finally:
        sandbox.down(name)
