"""A port that answers in another protocol is named as such at once, through the CLI: a Kafka
broker port given as --zookeeper (Kafka 3.9 in ZooKeeper mode, Kafka 4.x KRaft) and a ZooKeeper
port given as --bootstrap-server. Only silence waits for --timeout (tests/unit/cli)."""

from __future__ import annotations

import subprocess

import pytest

from kreplica.errors import ExitCode
from kreplica.sandbox import SandboxInfo
from tests.support.cli import run_kreplica
from tests.support.groups import uses

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _explain(flag: str, address: str) -> subprocess.CompletedProcess[str]:
    # "At once" without a stopwatch: with a 300 s --timeout, waiting for it would hit the
    # subprocess limit and fail the test.
    return run_kreplica("explain", flag, address, "--timeout", "300", timeout=90)


@pytest.mark.parametrize(
    "fixture", [pytest.param(f, marks=uses(f)) for f in ("zk_cluster", "kraft_cluster")]
)
def test_a_kafka_port_as_zookeeper_is_named(fixture: str, request: pytest.FixtureRequest) -> None:
    info: SandboxInfo = request.getfixturevalue(fixture)
    broker = info.bootstrap_servers.split(",")[0]
    proc = _explain("--zookeeper", broker)
    assert proc.returncode == ExitCode.SOURCE
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"{broker} answered, but is not ZooKeeper" in lines[0]
    assert "a Kafka port? pass it as --bootstrap-server" in lines[0]


def test_a_zookeeper_port_as_bootstrap_server_is_named(zk_cluster: SandboxInfo) -> None:
    assert zk_cluster.zookeeper is not None
    proc = _explain("--bootstrap-server", zk_cluster.zookeeper)
    assert proc.returncode == ExitCode.SOURCE
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"{zk_cluster.zookeeper} answered, but is not Kafka" in lines[0]
    assert "a ZooKeeper port? pass it as --zookeeper" in lines[0]


def test_the_right_ports_still_read_the_cluster(zk_cluster: SandboxInfo) -> None:
    # the probe's handshakes leave both servers serving the real clients that follow
    assert zk_cluster.zookeeper is not None
    for flag, address in (
        ("--zookeeper", zk_cluster.zookeeper),
        ("--bootstrap-server", zk_cluster.bootstrap_servers),
    ):
        proc = _explain(flag, address)
        assert proc.returncode == 0, proc.stderr
