"""`kreplica sandbox kafka TOOL ...` runs Kafka's own tools against real sandboxes: the
read-only ones against the shared session clusters, a reassignment (generate, execute, verify)
on a cluster of this module only."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import ExitCode
from kreplica.sandbox import DEFAULT_KRAFT_VERSION, DEFAULT_ZK_VERSION, TOOLS, SandboxInfo, fetch
from kreplica.testing import TopicSpec, create_topics, wait_for_leaders
from tests.support.cli import run_kreplica
from tests.support.groups import per_mode

pytestmark = pytest.mark.integration


def kafka_tool(
    info: SandboxInfo, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The console script's path: `python -m kreplica sandbox kafka --name NAME ARGS...`."""
    return run_kreplica("sandbox", "kafka", "--name", info.name, *args, input=stdin, timeout=120)


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    # Quiet logging: nothing on stderr from log4j, SLF4J or the JVM.
    assert proc.stderr == "", proc.stderr
    return proc.stdout


@pytest.fixture(params=per_mode("cluster"))
def cluster(request: pytest.FixtureRequest) -> SandboxInfo:
    info: SandboxInfo = request.getfixturevalue(f"{request.param}_cluster")
    return info


@pytest.mark.parametrize("version", [DEFAULT_ZK_VERSION, DEFAULT_KRAFT_VERSION])
def test_every_tool_main_class_is_in_the_jars(version: str) -> None:
    jars = [p for p in fetch(version).split(os.pathsep) if "/org/apache/kafka/" in p]
    classes: set[str] = set()
    for jar in jars:
        with zipfile.ZipFile(jar) as zf:
            classes.update(n for n in zf.namelist() if n.endswith(".class"))
    for tool in TOOLS.values():
        found = [c for c in tool.main_classes if c.replace(".", "/") + ".class" in classes]
        assert found, f"{tool.name} in Kafka {version}"


def test_kafka_topics_describe(cluster: SandboxInfo) -> None:
    out = _ok(kafka_tool(cluster, "kafka-topics", "--describe", "--topic", "manual"))
    rows = [line.split() for line in out.splitlines() if "Partition:" in line]
    replicas = {int(r[r.index("Partition:") + 1]): r[r.index("Replicas:") + 1] for r in rows}
    assert replicas == {0: "1,2", 1: "2,3", 2: "3,1"}


# Each tool below runs in one mode only (each run is a JVM of its own); kafka-topics --describe
# above runs in both, which shows the 3.9 and 4.x tools are both found and run.
def test_kafka_configs_describe(kraft_cluster: SandboxInfo) -> None:
    out = _ok(
        kafka_tool(
            kraft_cluster,
            "kafka-configs",
            "--entity-type",
            "topics",
            "--entity-name",
            "payments",
            "--describe",
        )
    )
    assert "min.insync.replicas=2" in out


def test_the_tools_exit_code_and_own_message_come_through(zk_cluster: SandboxInfo) -> None:
    proc = kafka_tool(zk_cluster, "kafka-topics.sh", "--describe", "--topic", "no-such-topic")
    assert proc.returncode == 1
    # Kafka 3.9 prints "Topic 'Optional[no-such-topic]' does not exist as expected"
    assert "does not exist as expected" in proc.stdout and "no-such-topic" in proc.stdout


def test_unknown_tool_and_stopped_sandbox(cluster: SandboxInfo) -> None:
    proc = kafka_tool(cluster, "kafka-nope")
    assert proc.returncode == ExitCode.USAGE
    assert proc.stderr.startswith("error: unknown Kafka tool 'kafka-nope'")
    assert proc.stderr.count("\n") == 1
    gone = SandboxInfo(**{**cluster.__dict__, "name": "not-running"})
    proc = kafka_tool(gone, "kafka-topics", "--list")
    assert proc.returncode == ExitCode.SOURCE
    assert proc.stderr.count("\n") == 1 and "no sandbox named 'not-running'" in proc.stderr


# --------------------------------------------------------------------------- writes, own topics
# On the shared clusters, each on topics of its own (no broker is stopped, no config changed).


def _reassignment(out: str, heading: str) -> dict[str, Any]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    plan: dict[str, Any] = json.loads(lines[start + 1])
    return plan


def test_reassign_generate_execute_verify(kraft_cluster: SandboxInfo, tmp_path: Path) -> None:
    own = kraft_cluster
    create_topics(
        own.bootstrap_servers, [TopicSpec("tools-moving", assignment={0: [1, 2], 1: [2, 3]})]
    )
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "tools-moving"}]}))
    out = _ok(
        kafka_tool(
            own,
            "kafka-reassign-partitions",
            "--generate",
            "--topics-to-move-json-file",
            str(topics),
            "--broker-list",
            "1,2,3",
        )
    )
    current = _reassignment(out, "Current partition replica assignment")
    assert {(p["partition"], tuple(p["replicas"])) for p in current["partitions"]} == {
        (0, (1, 2)),
        (1, (2, 3)),
    }
    proposed = _reassignment(out, "Proposed partition reassignment configuration")
    assert {p["partition"] for p in proposed["partitions"]} == {0, 1}

    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": "tools-moving", "partition": 0, "replicas": [3, 1]},
                    {"topic": "tools-moving", "partition": 1, "replicas": [2, 3, 1]},
                ],
            }
        )
    )
    out = _ok(
        kafka_tool(
            own, "kafka-reassign-partitions", "--execute", "--reassignment-json-file", str(plan)
        )
    )
    assert "Successfully started partition reassignments" in out
    # --verify reports progress; an empty partition completes at once, but the controller may
    # not have finished when the first --verify asks, so ask until it says so (bounded).
    for _ in range(30):
        out = _ok(
            kafka_tool(
                own, "kafka-reassign-partitions", "--verify", "--reassignment-json-file", str(plan)
            )
        )
        if out.count("is completed") == 2:
            break
    assert "Reassignment of partition tools-moving-0 is completed" in out
    assert "Reassignment of partition tools-moving-1 is completed" in out
    wait_for_leaders(own.bootstrap_servers, {"tools-moving": 2})
    described = _ok(kafka_tool(own, "kafka-topics", "--describe", "--topic", "tools-moving"))
    assert "Replicas: 3,1\t" in described and "Replicas: 2,3,1\t" in described


def test_leader_election_and_stdin_reach_the_tool(zk_cluster: SandboxInfo, tmp_path: Path) -> None:
    own = zk_cluster
    create_topics(own.bootstrap_servers, [TopicSpec("tools-typed", assignment={0: [2, 3]})])
    _ok(
        kafka_tool(
            own, "kafka-console-producer", "--topic", "tools-typed", stdin="one\ntwo\nthree\n"
        )
    )
    offsets = _ok(kafka_tool(own, "kafka-get-offsets", "--topic", "tools-typed"))
    assert offsets.strip() == "tools-typed:0:3"
    out = _ok(
        kafka_tool(
            own,
            "kafka-leader-election",
            "--election-type",
            "preferred",
            "--topic",
            "tools-typed",
            "--partition",
            "0",
        )
    )
    # Broker 2 already leads: Kafka says so rather than electing.
    assert "tools-typed-0" in out


def test_producer_perf_test_loads_data(cluster: SandboxInfo) -> None:
    """docs/sandbox.md's way to put data in a topic: 3.9's tool has no --bootstrap-server (the
    sandbox passes `--producer-props bootstrap.servers=...`), 4.3's has it."""
    topic = "tools-perf"
    create_topics(cluster.bootstrap_servers, [TopicSpec(topic, assignment={0: [1, 2], 1: [2, 3]})])
    proc = kafka_tool(
        cluster,
        "kafka-producer-perf-test",
        "--topic",
        topic,
        "--num-records",
        "2000",
        "--record-size",
        "512",
        "--throughput",
        "-1",
        "--producer-props",
        "acks=1",
    )
    assert proc.returncode == 0, proc.stderr
    assert "2000 records sent" in proc.stdout
    offsets = _ok(kafka_tool(cluster, "kafka-get-offsets", "--topic", topic))
    ends = [int(line.rsplit(":", 1)[1]) for line in offsets.split()]
    assert sum(ends) == 2000
