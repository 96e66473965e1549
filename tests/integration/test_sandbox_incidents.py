"""`kreplica sandbox stop-broker` / `start-broker` on the session's scratch clusters (the
shared session clusters stay healthy): the killed broker drops out of kreplica's sources' live
set, and comes back with its config and data."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest

from kreplica.errors import ExitCode
from kreplica.model import ClusterSnapshot
from kreplica.sandbox import SandboxInfo, processes
from kreplica.sources import open_source
from kreplica.testing import TopicSpec, create_topics
from tests.integration.conftest import wait_broker_dead
from tests.support.cli import run_kreplica
from tests.support.groups import per_mode

pytestmark = pytest.mark.integration

VICTIM = 3


def envelope(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)["data"]
    return data


def _sources(info: SandboxInfo) -> list[dict[str, str]]:
    found = [{"bootstrap_server": info.bootstrap_servers}]
    if info.zookeeper:
        found.append({"zookeeper": info.zookeeper})
    return found


def _snapshot(source: dict[str, str]) -> ClusterSnapshot:
    with open_source(**source) as opened:
        return opened.snapshot(["crash"])


@pytest.fixture(scope="module", params=per_mode("scratch"))
def own(request: pytest.FixtureRequest) -> SandboxInfo:
    info: SandboxInfo = request.getfixturevalue(f"{request.param}_scratch")
    create_topics(info.bootstrap_servers, [TopicSpec("crash", partitions=3, replication_factor=3)])
    return info


def test_stop_and_start_a_broker(own: SandboxInfo) -> None:
    name = own.name
    stopped = envelope(
        run_kreplica(
            "sandbox", "stop-broker", str(VICTIM), "--name", name, "--no-wait", "--output", "json"
        )
    )
    assert stopped["broker"] == VICTIM and stopped["alive"] is False
    status = envelope(run_kreplica("sandbox", "status", "--name", name, "--output", "json"))
    victim = [p for p in status["processes"] if p["node_id"] == VICTIM]
    assert [(p["alive"], p["stopped"]) for p in victim] == [(False, True)]
    table = run_kreplica("sandbox", "status", "--name", name).stdout.splitlines()
    rows = [line.split() for line in table if line.split()[1:2] == [str(VICTIM)]]
    assert [row[3] for row in rows] == ["stopped"]

    # The cluster notices on its own clock (ZooKeeper session / KRaft heartbeat): bounded wait.
    wait_broker_dead(own, VICTIM)
    for source in _sources(own):
        snap = _snapshot(source)
        brokers = {b.id: b for b in snap.brokers}
        assert brokers[VICTIM].alive is False, source
        # KRaft keeps the fenced broker registered, so its rack is still known; ZooKeeper
        # dropped the registration with the rack in it.
        assert brokers[VICTIM].rack == ("c" if own.mode == "kraft" else None), source
        assert all(VICTIM not in p.isr for t in snap.topics for p in t.partitions)

    # Kafka's own tool still works against the surviving brokers.
    described = run_kreplica(
        "sandbox", "kafka", "--name", name, "kafka-topics", "--describe", "--topic", "crash"
    )
    assert described.returncode == 0, described.stderr
    assert described.stdout.count("Partition:") == 3

    started = envelope(
        run_kreplica("sandbox", "start-broker", str(VICTIM), "--name", name, "--output", "json")
    )
    assert started["alive"] is True
    assert [p.alive for p in processes(name) if p.node_id == VICTIM] == [True]
    deadline = time.monotonic() + 60
    for source in _sources(own):
        while True:
            brokers = {b.id: b for b in _snapshot(source).brokers}
            if brokers[VICTIM].alive and brokers[VICTIM].rack == "c":
                break
            assert time.monotonic() < deadline, f"broker {VICTIM} not back in {source}"
            time.sleep(0.5)


def test_stopping_or_starting_twice_changes_nothing(own: SandboxInfo) -> None:
    proc = run_kreplica("sandbox", "start-broker", "1", "--name", own.name)
    assert proc.returncode == 0, proc.stderr
    before = [p.pid for p in processes(own.name)]
    (pid,) = [p.pid for p in processes(own.name) if p.node_id == 1]
    assert proc.stdout == f"broker 1 of sandbox {own.name} is already running (pid {pid})\n"
    assert [p.pid for p in processes(own.name)] == before


def test_unknown_broker_is_a_usage_error(own: SandboxInfo) -> None:
    proc = run_kreplica("sandbox", "stop-broker", "9", "--name", own.name)
    assert proc.returncode == ExitCode.USAGE
    assert proc.stderr == f"error: sandbox {own.name!r} has no broker 9: its brokers are 1, 2, 3\n"
    assert all(p.alive for p in processes(own.name))
