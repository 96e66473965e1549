"""Moves that watch the cluster, on the shared session clusters (Kafka 3.9 ZooKeeper mode and
Kafka 4.x KRaft; a topic per test), kreplica run in subprocesses as an operator runs it:

1. safe starts: right after a controller election (ZooKeeper mode: /controller deleted, so the
   brokers elect again) apply refuses with exit 11 and writes nothing; `--controller-settle 0`
   applies. KRaft and --bootstrap-server say the controller's age is not known to a client.
2. throttle hygiene: throttles left on a topic by an earlier run are reported at the start and
   at the end of an apply, and stay as they were.
3. `--pace auto`: the throttle starts at the floor and rises while a canary producer's p99
   holds, and backs off when the canary's writes fail; every step is a journal event with its
   reason; the canary topic is deleted after.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.integration.conftest import produce
from tests.integration.test_apply import (
    Kafka,
    LoadProducer,
    Operator,
    _collect_lines,
    _ok,
    _one_line,
    consume_all,
)
from tests.support.groups import per_mode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture(params=per_mode("cluster"))
def shared(request: pytest.FixtureRequest) -> SandboxInfo:
    info: SandboxInfo = request.getfixturevalue(f"{request.param}_cluster")
    return info


@pytest.fixture
def kafka(shared: SandboxInfo) -> Iterator[Kafka]:
    client = Kafka(shared)
    yield client
    client.close()


@pytest.fixture
def op(shared: SandboxInfo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Operator:
    # the safe starts on, as an operator has them (tests/conftest.py turns them off)
    monkeypatch.delenv("KREPLICA_CONTROLLER_SETTLE", raising=False)
    monkeypatch.delenv("KREPLICA_ALLOW_UNDER_REPLICATED", raising=False)
    return Operator(shared, tmp_path)


def _events(proc: Any) -> list[dict[str, Any]]:
    """The JSON lines an apply with --output json writes on stderr."""
    out = []
    for line in proc.stderr.splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def _reelect_controller(zookeeper: str) -> None:
    """Delete /controller: the ZooKeeper-mode brokers elect a controller again."""
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zookeeper, timeout=10)
    client.start(timeout=15)
    try:
        before = client.get("/controller")[1].ctime
        client.delete("/controller")
        deadline = time.monotonic() + 30
        while True:
            stat = client.exists("/controller")
            if stat is not None and stat.ctime != before:
                return
            assert time.monotonic() < deadline, "no controller elected again within 30 s"
            time.sleep(0.1)
    finally:
        client.stop()
        client.close()


def test_safe_start_after_a_controller_change(op: Operator, kafka: Kafka) -> None:
    topic = f"safe-start-{op.info.mode}"
    create_topics(op.info.bootstrap_servers, [TopicSpec(topic, partitions=2, replication_factor=1)])
    _ok(op.run("expand", "-t", topic, "--rf", "2", "--dry-run", "--out", "s.json", *op.source))
    was = kafka.replicas(topic)
    if op.info.zookeeper:
        _reelect_controller(op.info.zookeeper)
        zk = ["--zookeeper", op.info.zookeeper]
        line = _one_line(op.run("apply", "s.json", "--throttle", "1MB/s", *zk), 11)
        assert "became the active controller" in line and "--controller-settle" in line
        assert kafka.replicas(topic) == was
        assert kafka.throttles([topic]) == {}
        assert not (op.cwd / "s.journal.jsonl").exists()  # nothing written, not even a journal
        op.log.append(line)
        proc = _ok(op.run("apply", "s.json", "--controller-settle", "0", *zk, "--output", "json"))
    else:
        proc = _ok(op.run("apply", "s.json", *op.source, "--output", "json"))
        notes = [e["message"] for e in _events(proc) if e["event"] == "note"]
        assert any("KRaft tells a client who leads the quorum, not since when" in n for n in notes)
        op.log += notes
    assert kafka.replicas(topic) == json_plan(op.cwd / "s.json")
    print("\n".join(op.log))


def json_plan(path: Path) -> dict[tuple[str, int], list[int]]:
    data = json.loads(path.read_text())
    return {(p["topic"], p["partition"]): list(p["replicas"]) for p in data["partitions"]}


def test_leftover_throttles_are_reported_and_kept(op: Operator, kafka: Kafka) -> None:
    topic = f"leftover-{op.info.mode}"
    other = f"leftover-other-{op.info.mode}"
    create_topics(
        op.info.bootstrap_servers,
        [
            TopicSpec(topic, partitions=2, replication_factor=1),
            TopicSpec(other, partitions=1, replication_factor=1),
        ],
    )
    produce(op.info.bootstrap_servers, topic, 64 * 1024)
    # an earlier run's leftover, on a topic outside the plan
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    key = "leader.replication.throttled.replicas"
    entry = ConfigEntry(key, "0:1", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, other, incremental_configs=[entry])
    for future in kafka.admin.incremental_alter_configs([resource]).values():
        future.result(timeout=20)
    try:
        kafka.wait("the leftover throttle visible", lambda: bool(kafka.throttles([other])))
        _ok(op.run("expand", "-t", topic, "--rf", "2", "--dry-run", "--out", "l.json", *op.source))
        proc = _ok(
            op.run("apply", "l.json", "--throttle", "5MB/s", *op.source, "--controller-settle", "0")
        )
        text = proc.stdout + proc.stderr
        assert text.count("throttles left from earlier runs") == 2, text  # start and end
        found = [e for e in op.journal("l.json") if e["event"] == "leftover-throttles"]
        assert [e["when"] for e in found] == ["start", "end"]
        for event in found:
            assert {"kind": "topic", "name": other, "config": key, "value": "0:1"} in event[
                "configs"
            ]
            assert not [r for r in event["configs"] if r["name"] == topic]  # ours: not listed
        assert kafka.throttles([other]) == {f"topic {other}": {key: "0:1"}}  # kept
        assert kafka.throttles([topic]) == {}
        op.log += [x for x in text.splitlines() if "earlier runs" in x]
    finally:
        resource = ConfigResource(
            ResourceType.TOPIC,
            other,
            incremental_configs=[
                ConfigEntry(key, "", incremental_operation=AlterConfigOpType.DELETE)
            ],
        )
        for future in kafka.admin.incremental_alter_configs([resource]).values():
            future.result(timeout=20)
    print("\n".join(op.log))


def _canary_max_message_bytes(kafka: Kafka, value: str | None) -> None:
    """Set (or, None, remove) the canary topic's max.message.bytes: below a canary record's
    size every canary write fails at once (MESSAGE_TOO_LARGE is not retried), a degradation
    that does not depend on how busy the machine is."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    from kreplica.executor.canary import CANARY_TOPIC

    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    entry = ConfigEntry("max.message.bytes", value or "", incremental_operation=op)
    resource = ConfigResource(ResourceType.TOPIC, CANARY_TOPIC, incremental_configs=[entry])
    for future in kafka.admin.incremental_alter_configs([resource]).values():
        future.result(timeout=20)


@pytest.mark.timeout(420)
def test_pace_auto_rises_then_backs_off_when_the_canary_fails(op: Operator, kafka: Kafka) -> None:
    """A steady producer runs all along; the throttle starts at the floor and rises while the
    canary is healthy; when the canary's writes start failing, pace backs off at the next
    interval, and the new rate reaches the brokers. Every acknowledged record of the steady
    producer is readable afterwards. (A load step's effect on latency is what bench_pace.py
    measures: on a shared 2-core machine it is too noisy to assert.)"""
    topic = f"paced-{op.info.mode}"
    create_topics(op.info.bootstrap_servers, [TopicSpec(topic, partitions=6, replication_factor=1)])
    produce(op.info.bootstrap_servers, topic, 24 * 1024 * 1024)
    _ok(op.run("expand", "-t", topic, "--rf", "2", "--dry-run", "--out", "p.json", *op.source))
    # the steady producer well under the floor (~0.1 MB/s against 0.5 MB/s a broker), so the
    # followers catch up even at the floor; a ceiling low enough that the move outlasts the
    # back-off
    floor, ceiling = 500_000, 2_000_000
    steady = LoadProducer(op.info.bootstrap_servers, topic, records_per_s=500)
    steady.start()
    apply = op.start(
        "apply", "p.json", *op.source, "--pace", "auto", "--throttle-min", "500KB/s",
        "--throttle-max", "2MB/s", "--pace-interval", "1", "--controller-settle", "0",
    )  # fmt: skip
    lines = _collect_lines(apply)  # read as it comes: a full pipe would block the apply
    degraded_at = 0
    try:
        op.wait_journal("p.json", "pace", apply)  # the first change: a raise, all is quiet
        degraded_at = len([e for e in op.journal("p.json") if e["event"] == "pace"])
        _canary_max_message_bytes(kafka, "16")
        deadline = time.monotonic() + 30
        while apply.poll() is None and time.monotonic() < deadline:
            paced = [e for e in op.journal("p.json") if e["event"] == "pace"][degraded_at:]
            if any(e["reason"].startswith("back off:") for e in paced):
                break
            time.sleep(0.2)
        _canary_max_message_bytes(kafka, None)
        apply.wait(timeout=300)
    finally:
        steady.stop.set()
        if apply.poll() is None:
            apply.kill()
    steady.join(timeout=150)
    out = "".join(lines)
    assert apply.returncode == 0, out
    events = op.journal("p.json")
    start = next(e for e in events if e["event"] == "pace-start")
    assert start["rate"] == floor and start["baseline_p99_ms"] is not None
    paces = [e for e in events if e["event"] == "pace"]
    assert paces[0]["reason"].startswith("raise:") and paces[0]["rate"] > floor
    assert all(floor <= e["rate"] <= ceiling for e in paces)
    for e in paces:  # each change reached the brokers through the journal's throttle-set
        index = events.index(e)
        rates = [x for x in events[: index + 1] if x["event"] == "throttle-set"]
        assert rates[-1]["values"]["follower.replication.throttled.rate"] == str(e["rate"])
    downs = [e for e in paces[degraded_at:] if e["reason"].startswith("back off:")]
    op.log += [f"{e['previous']} -> {e['rate']}: {e['reason']}" for e in paces]
    print("\n".join(op.log))
    failed = [e for e in downs if "canary record(s) failed" in e["reason"]]
    assert failed, "no back-off after the canary's writes failed"
    assert failed[0]["rate"] < failed[0]["previous"]
    assert "pace: throttle" in out
    # afterwards: the plan applied, no throttle, the canary topic gone, nothing lost
    assert kafka.replicas(topic) == json_plan(op.cwd / "p.json")
    assert kafka.throttles([topic]) == {}
    topics = kafka.admin.list_topics(timeout=15).topics
    assert "kreplica-canary" not in topics
    assert not steady.failed and steady.unflushed == 0
    records = consume_all(op.info.bootstrap_servers, topic).values()
    read = {int(v[:10]) for part in records for _, v in part if len(v) == 200}  # the steady's
    assert steady.acked and set(steady.acked) <= read
