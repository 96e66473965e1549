"""`kreplica apply` and friends against real clusters, run as an operator runs them.

One private sandbox per mode for the whole module (Kafka 3.9 ZooKeeper mode, Kafka 4.x KRaft),
4 brokers on racks a, b, c, a; every test works on topics of its own. kreplica runs in
subprocesses (`python -m kreplica`, KREPLICA_POLL_INTERVAL=0.3); the cluster is judged through
the AdminClient (confluent-kafka), kafka-python's ListPartitionReassignments and the records
themselves (a consumer reads back everything that was produced).

1. RF 1 -> 3 -> 2 on a topic holding keyed records: the assignment equals each plan, leaders on
   their preferred replica (after `kreplica elect` when needed), no throttle left, every record
   still there in its partition's order.
2. Under load: an idempotent acks=all producer writes during `expand --rf 3` of every partition
   of a min.insync.replicas=2 topic: no failed send, nothing lost, nothing duplicated.
3. Faults: kill -9 of apply then --resume (nothing submitted twice); cancel from another
   process (apply exits 7, old replicas back, throttles gone); a receiving broker stopped
   mid-move (stall reported, the move completes once it is back; ZooKeeper mode); a plan for
   another cluster and a drifted plan (exit 5, nothing written); --via zookeeper (ZooKeeper
   mode), refused with exit 6 while the znode holds a move.
4. Bad input: one line on stderr, the exit code, nothing written.

Each test prints what it measured (pytest -s); the load test's counts go to the closing note.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kreplica import sandbox
from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.integration.conftest import private_cluster, produce
from tests.support.cli import collect_lines, kreplica_argv, kreplica_env, run_kreplica
from tests.support.polling import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

Key = tuple[str, int]
WAIT_S = 90  # bound on any wait for the cluster (never asserted as a duration)
THROTTLE_KEYS = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
)


# --------------------------------------------------------------------------- the cluster


@pytest.fixture(scope="module", params=["zk", "kraft"])
def cluster(request: pytest.FixtureRequest) -> Iterator[SandboxInfo]:
    """4 brokers on racks a, b, c, a, private to this module (one per mode)."""
    with private_cluster("apply", request.param, brokers=4) as info:
        yield info


class Kafka:
    """Reads the cluster without kreplica (and sets a test's own configs): confluent-kafka's
    AdminClient and kafka-python."""

    def __init__(self, info: SandboxInfo) -> None:
        import logging

        from confluent_kafka.admin import AdminClient
        from kafka.admin import KafkaAdminClient

        quiet = logging.getLogger("tests.apply.client")
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
        self.info = info
        self.bootstrap = info.bootstrap_servers
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap, "logger": quiet})
        self._kp = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=15000)

    def close(self) -> None:
        self._kp.close()

    def alter(self, kind: str, name: str, values: dict[str, str | None]) -> None:
        """Set (a value) or remove (None) configs of one topic or broker."""
        from confluent_kafka.admin import (
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ResourceType,
        )

        entries = [
            ConfigEntry(
                k,
                v or "",
                incremental_operation=AlterConfigOpType.SET if v else AlterConfigOpType.DELETE,
            )
            for k, v in values.items()
        ]
        rtype = ResourceType.TOPIC if kind == "topic" else ResourceType.BROKER
        resource = ConfigResource(rtype, name, incremental_configs=entries)
        for future in self.admin.incremental_alter_configs([resource]).values():
            future.result(timeout=20)

    def partitions(self, topic: str) -> dict[int, tuple[list[int], int, list[int]]]:
        """partition -> (replicas in assignment order, leader, isr)."""
        deadline = time.monotonic() + 15
        while True:  # a topic just created may not have reached the broker asked yet
            meta = self.admin.list_topics(topic, timeout=15).topics[topic]
            if meta.error is None or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert meta.error is None, meta.error
        return {p: (list(m.replicas), m.leader, sorted(m.isrs)) for p, m in meta.partitions.items()}

    def replicas(self, topic: str) -> dict[Key, list[int]]:
        return {(topic, p): r for p, (r, _, _) in self.partitions(topic).items()}

    def in_flight(self) -> set[Key]:
        listed = self._kp.list_partition_reassignments(timeout_ms=15000)
        return {(tp.topic, tp.partition) for tp in listed}

    def throttles(self, topics: Sequence[str]) -> dict[str, dict[str, str]]:
        """Throttle configs set (not Kafka's defaults) on these topics and every live broker."""
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            ConfigResource,
            ConfigSource,
            ResourceType,
        )

        live = [str(n.id) for n in self.admin.describe_cluster(request_timeout=15).result().nodes]
        resources = [(f"topic {t}", ConfigResource(ResourceType.TOPIC, t)) for t in topics] + [
            (f"broker {b}", ConfigResource(ResourceType.BROKER, b)) for b in live
        ]
        found: dict[str, dict[str, str]] = {}
        for name, resource in resources:  # one BROKER resource per request
            entries = self.admin.describe_configs([resource], request_timeout=15)[resource].result(
                timeout=20
            )
            values = {
                k: e.value
                for k, e in entries.items()
                if k in THROTTLE_KEYS
                and e.value not in (None, "")
                and e.source != ConfigSource.DEFAULT_CONFIG.value
            }
            if values:
                found[name] = values
        return found

    def wait(self, what: str, done: Any) -> None:
        deadline = time.monotonic() + WAIT_S
        while not done():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not reached within {WAIT_S} s")
            time.sleep(0.3)


@pytest.fixture(scope="module")
def kafka(cluster: SandboxInfo) -> Iterator[Kafka]:
    client = Kafka(cluster)
    yield client
    client.close()


# --------------------------------------------------------------------------- running kreplica


def _env(cwd: Path) -> dict[str, str]:
    """What the runner adds to the test's environment: quick polls, a state folder per test."""
    return {"KREPLICA_POLL_INTERVAL": "0.3", "KREPLICA_STATE_DIR": str(cwd / "state")}


@dataclass
class Operator:
    """kreplica in subprocesses, in one working folder, against one cluster."""

    info: SandboxInfo
    cwd: Path
    log: list[str] = field(default_factory=list)

    @property
    def source(self) -> list[str]:
        return ["--bootstrap-server", self.info.bootstrap_servers]

    def run(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        started = time.monotonic()
        proc = run_kreplica(*args, cwd=self.cwd, env=_env(self.cwd), columns=160, timeout=timeout)
        self.log.append(
            f"[{proc.returncode}] kreplica {' '.join(args[:6])} ({time.monotonic() - started:.1f}s)"
        )
        return proc

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            kreplica_argv(*args),
            cwd=self.cwd,
            env=kreplica_env(_env(self.cwd), columns=160),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def journal(self, plan: str) -> list[dict[str, Any]]:
        path = self.cwd / plan.replace(".json", ".journal.jsonl")
        if not path.exists():
            return []
        events = []
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError):  # a line being written
                events.append(json.loads(line))
        return events

    def wait_journal(self, plan: str, event: str, proc: subprocess.Popen[str]) -> None:
        deadline = time.monotonic() + WAIT_S
        while not any(e.get("event") == event for e in self.journal(plan)):
            if proc.poll() is not None:
                out, err = proc.communicate()
                raise AssertionError(f"apply ended ({proc.returncode}) before {event}: {out}{err}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {event} in the journal of {plan} after {WAIT_S} s")
            time.sleep(0.05)


@pytest.fixture
def op(cluster: SandboxInfo, tmp_path: Path) -> Operator:
    return Operator(cluster, tmp_path)


def _ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def _one_line(proc: subprocess.CompletedProcess[str], code: int) -> str:
    assert proc.returncode == code, f"exit {proc.returncode}, not {code}:\n{proc.stderr}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr:\n{proc.stderr}"
    return lines[0]


def _plan(path: Path) -> dict[Key, list[int]]:
    data = json.loads(path.read_text())
    return {(p["topic"], p["partition"]): list(p["replicas"]) for p in data["partitions"]}


def _envelope(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(proc.stdout)["data"]
    return data


def assert_no_throttles(op: Operator, kafka: Kafka, topics: Sequence[str]) -> None:
    listed = _envelope(_ok(op.run("throttles", *op.source, "--output", "json")))["throttles"]
    assert listed == [], listed
    assert kafka.throttles(topics) == {}


def assert_as_planned(op: Operator, kafka: Kafka, plan: str) -> None:
    """verify exits 0, the assignment is the plan's, nothing in flight, leaders preferred."""
    _ok(op.run("verify", plan, *op.source))
    wanted = _plan(op.cwd / plan)
    topics = sorted({t for t, _ in wanted})
    now = {k: v for t in topics for k, v in kafka.replicas(t).items()}
    assert {k: now[k] for k in wanted} == wanted
    assert not (kafka.in_flight() & set(wanted))

    def off() -> list[Key]:
        parts = {(t, p): v for t in topics for p, v in kafka.partitions(t).items()}
        return [k for k in wanted if parts[k][1] != parts[k][0][0]]

    if off():
        op.log.append(f"leaders off their preferred replica after {plan}: {off()}; elect")
        _ok(op.run("elect", plan, *op.source))
        kafka.wait("preferred leaders after kreplica elect", lambda: not off())


# --------------------------------------------------------------------------- records


def produce_keyed(bootstrap: str, topic: str, count: int) -> dict[int, list[tuple[bytes, bytes]]]:
    """`count` keyed records (acks=all); partition -> [(key, value)] in offset order."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 10})
    acked: list[tuple[int, int, bytes, bytes]] = []
    errors: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            acked.append((msg.partition(), msg.offset(), msg.key(), msg.value()))

    for i in range(count):
        producer.produce(
            topic, f"v{i:06d}".encode(), key=f"k{i % 37}".encode(), on_delivery=delivered
        )
        producer.poll(0)
    remaining = producer.flush(60)
    producer.close()  # a producer left open logs to stderr once its cluster is gone
    assert remaining == 0 and not errors, errors[:3]
    out: dict[int, list[tuple[bytes, bytes]]] = {}
    for partition, _, key, value in sorted(acked):
        out.setdefault(partition, []).append((key, value))
    return out


def consume_all(bootstrap: str, topic: str) -> dict[int, list[tuple[bytes, bytes]]]:
    """Every record of the topic, from the beginning: partition -> [(key, value)] in order."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "kreplica-test-reader",  # assign() only: no group is joined
            "enable.auto.commit": False,
            "isolation.level": "read_uncommitted",
        }
    )
    try:
        meta = consumer.list_topics(topic, timeout=15).topics[topic]
        parts = sorted(meta.partitions)
        high = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1]
            for p in parts
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        out: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in parts}
        remaining = {p for p in parts if high[p] > 0}
        deadline = time.monotonic() + WAIT_S
        while remaining:
            assert time.monotonic() < deadline, f"still reading {remaining} of {topic}"
            for msg in consumer.consume(num_messages=5000, timeout=1.0):
                if msg.error():
                    continue
                out[msg.partition()].append((msg.key(), msg.value()))
                if msg.offset() + 1 >= high[msg.partition()]:
                    remaining.discard(msg.partition())
        return {p: v for p, v in out.items() if v}
    finally:
        consumer.close()


class LoadProducer(threading.Thread):
    """Idempotent acks=all producer writing sequence numbers until stopped; records every
    delivery report."""

    def __init__(self, bootstrap: str, topic: str, *, records_per_s: int | None = None) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.topic = topic
        # None: as fast as 50 records per poll allow (a few thousand a second, more on an
        # idle machine); a number: at most that many, whatever the machine
        self.records_per_s = records_per_s
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "message.timeout.ms": 120000,
            }
        )
        self.stop = threading.Event()
        self.sent = 0
        self.acked: list[int] = []
        self.acked_partitions: set[int] = set()
        self.failed: list[str] = []
        self.unflushed = 0

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked.append(int(msg.value()[:10]))
            self.acked_partitions.add(msg.partition())

    def wait_every_partition(self, partitions: int, timeout_s: float = 60) -> None:
        """Until a record is acked on each of the topic's partitions (a move that starts
        then finds records everywhere), instead of a sleep that assumes a speed."""
        wanted = set(range(partitions))
        got = eventually(
            lambda: set(self.acked_partitions), lambda a: a >= wanted, timeout_s=timeout_s
        )
        assert got >= wanted, (sorted(got), self.failed[-3:])

    def run(self) -> None:
        pad = b"." * 190
        started = time.monotonic()
        while not self.stop.is_set():
            if self.records_per_s is not None:
                ahead = self.sent / self.records_per_s - (time.monotonic() - started)
                if ahead > 0:
                    self.producer.poll(ahead)
                    continue
            for _ in range(50):  # ~50 records every 10 ms: a few thousand a second
                self.producer.produce(
                    self.topic,
                    b"%010d" % self.sent + pad,
                    key=b"%d" % (self.sent % 97),
                    on_delivery=self._delivered,
                )
                self.sent += 1
            self.producer.poll(0.01)
        self.unflushed = self.producer.flush(120)
        self.producer.close()  # a producer left open logs to stderr once its cluster is gone


# --------------------------------------------------------------------------- 1. RF 1 -> 3 -> 2


def test_rf_up_then_down_keeps_every_record(op: Operator, kafka: Kafka) -> None:
    topic = "grow"
    create_topics(op.info.bootstrap_servers, [TopicSpec(topic, partitions=4, replication_factor=1)])
    produced = produce_keyed(op.info.bootstrap_servers, topic, 4000)
    before = kafka.replicas(topic)

    _ok(
        op.run(
            "expand", "-t", topic, "--rf", "3", "--yes", "--out", "p1.json",
            "--throttle", "20MB/s", *op.source,
        )
    )  # fmt: skip
    plan1 = _plan(op.cwd / "p1.json")
    assert set(plan1) == set(before) and all(len(r) == 3 for r in plan1.values())
    assert all(plan1[k][0] == before[k][0] for k in before)  # the leader replica stays first
    assert_as_planned(op, kafka, "p1.json")
    assert_no_throttles(op, kafka, [topic])
    assert {e["event"] for e in op.journal("p1.json")} >= {
        "start", "throttle-set", "submit", "complete", "throttle-restored", "finish",
    }  # fmt: skip

    _ok(op.run("shrink", "-t", topic, "--rf", "2", "--yes", "--out", "p2.json", *op.source))
    plan2 = _plan(op.cwd / "p2.json")
    assert all(len(r) == 2 and set(r) <= set(plan1[k]) for k, r in plan2.items())
    assert_as_planned(op, kafka, "p2.json")
    assert_no_throttles(op, kafka, [topic])

    consumed = consume_all(op.info.bootstrap_servers, topic)
    assert sum(map(len, consumed.values())) == sum(map(len, produced.values())) == 4000
    assert Counter(r for v in consumed.values() for r in v) == Counter(
        r for v in produced.values() for r in v
    )
    assert consumed == produced  # per partition, in order
    print("\n".join(op.log))


# --------------------------------------------------------------------------- 2. under load


def test_rf_up_under_load_loses_nothing(op: Operator, kafka: Kafka) -> None:
    topic = "load"
    create_topics(
        op.info.bootstrap_servers,
        [
            TopicSpec(
                topic, partitions=6, replication_factor=2, configs={"min.insync.replicas": "2"}
            )
        ],
    )
    before = kafka.replicas(topic)
    load = LoadProducer(op.info.bootstrap_servers, topic)
    load.start()
    started = time.monotonic()
    try:
        load.wait_every_partition(6)  # records on every partition before the move starts
        proc = op.run(
            "expand", "-t", topic, "--rf", "3", "--yes", "--out", "load.json",
            "--throttle", "5MB/s", *op.source, timeout=120,
        )  # fmt: skip
        time.sleep(1)
    finally:
        load.stop.set()
        load.join(150)
    _ok(proc)
    plan = _plan(op.cwd / "load.json")
    assert set(plan) == set(before)  # every partition moves
    assert all(set(before[k]) < set(plan[k]) for k in plan)
    assert_as_planned(op, kafka, "load.json")

    consumed = consume_all(op.info.bootstrap_servers, topic)
    seqs = Counter(int(v[:10]) for records in consumed.values() for _, v in records)
    acked = set(load.acked)
    lost = acked - set(seqs)
    duplicated = {s: n for s, n in seqs.items() if n > 1}
    counts = {
        "sent": load.sent,
        "acked": len(load.acked),
        "failed": len(load.failed),
        "consumed": sum(seqs.values()),
        "lost": len(lost),
        "duplicated": len(duplicated),
        "seconds": round(time.monotonic() - started, 1),
    }
    print(f"\nload test ({op.info.mode}): {counts}")
    assert load.failed == [] and load.unflushed == 0
    assert len(acked) == len(load.acked) == load.sent
    assert not lost and not duplicated
    assert set(seqs) == acked


# --------------------------------------------------------------------------- 3. faults


def _slow_topic(
    op: Operator, kafka: Kafka, topic: str, partitions: int, total_bytes: int
) -> dict[Key, list[int]]:
    create_topics(
        op.info.bootstrap_servers,
        [TopicSpec(topic, partitions=partitions, replication_factor=1)],
    )
    produce(op.info.bootstrap_servers, topic, total_bytes)
    return kafka.replicas(topic)


def test_kill_then_resume_submits_nothing_twice(op: Operator, kafka: Kafka) -> None:
    topic = "killed"
    _slow_topic(op, kafka, topic, 4, 8 * 1024 * 1024)
    _ok(op.run("expand", "-t", topic, "--rf", "2", "--dry-run", "--out", "k.json", *op.source))
    plan = _plan(op.cwd / "k.json")
    apply = op.start("apply", "k.json", "--throttle", "30KB/s", "--max-partitions", "2", *op.source)
    try:
        op.wait_journal("k.json", "submit", apply)
        kafka.wait("the first wave in flight", lambda: bool(kafka.in_flight() & set(plan)))
    finally:
        apply.send_signal(signal.SIGKILL)
        apply.communicate(timeout=30)
    assert apply.returncode == -signal.SIGKILL
    moving = kafka.in_flight() & set(plan)
    throttled = kafka.throttles([topic])
    submitted_before = {
        (e["topic"], e["partition"]) for e in op.journal("k.json") if e["event"] == "submit"
    }
    op.log.append(f"killed with {sorted(moving)} in flight, submitted {sorted(submitted_before)}")
    assert throttled, "the throttles of a running move stay after a crash"

    _ok(op.run("apply", "k.json", "--resume", "--throttle", "50MB/s", *op.source))
    assert_as_planned(op, kafka, "k.json")
    assert_no_throttles(op, kafka, [topic])
    events = op.journal("k.json")
    submits = Counter((e["topic"], e["partition"]) for e in events if e["event"] == "submit")
    assert submits == Counter(dict.fromkeys(plan, 1)), submits
    assert len(submitted_before) < len(plan)  # the resume submitted the second wave itself
    assert [e["event"] for e in events].count("finish") == 1
    # applying a finished plan again is a no-op that says so
    again = _ok(op.run("apply", "k.json", *op.source))
    assert "nothing to do" in again.stdout + again.stderr
    print("\n".join(op.log))


def test_cancel_from_another_process(op: Operator, kafka: Kafka) -> None:
    topic = "cancelled"
    before = _slow_topic(op, kafka, topic, 2, 8 * 1024 * 1024)
    _ok(op.run("expand", "-t", topic, "--rf", "2", "--dry-run", "--out", "c.json", *op.source))
    plan = _plan(op.cwd / "c.json")
    apply = op.start("apply", "c.json", "--throttle", "30KB/s", *op.source)
    try:
        op.wait_journal("c.json", "submit", apply)
        kafka.wait("the move in flight", lambda: bool(kafka.in_flight() & set(plan)))
        cancel = _ok(op.run("cancel", "c.json", *op.source))
        out, err = apply.communicate(timeout=120)
    finally:
        if apply.poll() is None:
            apply.kill()
            apply.communicate()
    op.log.append(f"cancel: {cancel.stdout.strip()}")
    op.log.append(f"apply exit {apply.returncode}: {err.strip().splitlines()[-1:]}")
    assert apply.returncode == 7, f"{out}\n{err}"
    assert "cancelled" in err
    kafka.wait("no move in flight", lambda: not (kafka.in_flight() & set(plan)))
    assert kafka.replicas(topic) == before
    assert_no_throttles(op, kafka, [topic])
    assert op.run("verify", "c.json", *op.source).returncode == 7
    print("\n".join(op.log))


def test_broker_down_mid_move_stalls_then_completes(op: Operator, kafka: Kafka) -> None:
    if op.info.mode != "zk":
        pytest.skip("one mode is enough: ZooKeeper mode (a KRaft voter would be stopped)")
    topic = "stalled"
    controller = kafka.admin.describe_cluster(request_timeout=15).result().controller.id
    receiver = next(b for b in (2, 3) if b != controller)  # racks b, c; the leader is on rack a
    create_topics(op.info.bootstrap_servers, [TopicSpec(topic, assignment={0: [4]})])
    produce(op.info.bootstrap_servers, topic, 8 * 1024 * 1024)
    _ok(
        op.run(
            "expand", "-t", topic, "--rf", "2", "--brokers", f"4,{receiver}", "--dry-run",
            "--out", "s.json", *op.source,
        )
    )  # fmt: skip
    assert _plan(op.cwd / "s.json") == {(topic, 0): [4, receiver]}
    apply = op.start("apply", "s.json", "--throttle", "2MB/s", "--stall-timeout", "3", *op.source)
    lines = collect_lines(apply)
    down_line = f"broker(s) {receiver} are down"
    stopped = False
    try:
        op.wait_journal("s.json", "submit", apply)
        sandbox.stop_broker(op.info.name, receiver)
        stopped = True
        # Wait for the stall report itself (stall timeout 3 s, plus reading the cluster with
        # a broker gone), not a fixed time: on a loaded machine that takes longer.
        deadline = time.monotonic() + 90
        while not any(down_line in line for line in lines) and time.monotonic() < deadline:
            assert apply.poll() is None, "".join(lines)
            time.sleep(0.2)
        assert apply.poll() is None, "".join(lines)
        sandbox.start_broker(op.info.name, receiver)
        stopped = False
        apply.wait(timeout=150)
    finally:
        if stopped:
            sandbox.start_broker(op.info.name, receiver)
        if apply.poll() is None:
            apply.kill()
        apply.wait()
    text = "".join(lines.complete())  # the readers take the last lines
    stalls = [line.rstrip() for line in lines if "stalled:" in line]
    op.log += stalls
    assert apply.returncode == 0, text
    assert stalls, text
    assert any(f"receiving brokers {receiver}" in line for line in stalls), stalls
    assert any(down_line in line for line in stalls), stalls
    assert_as_planned(op, kafka, "s.json")
    assert_no_throttles(op, kafka, [topic])
    print("\n".join(op.log))


def _nothing_written(op: Operator, kafka: Kafka, plan: str, topic: str, was: Any) -> None:
    assert not kafka.in_flight()
    assert kafka.throttles([topic]) == {}
    assert kafka.replicas(topic) == was
    assert not [e for e in op.journal(plan) if e["event"] != "error"]


def test_wrong_cluster_and_drifted_plans_are_refused(op: Operator, kafka: Kafka) -> None:
    topic = "refused"
    create_topics(op.info.bootstrap_servers, [TopicSpec(topic, partitions=2, replication_factor=1)])
    produce(op.info.bootstrap_servers, topic, 64 * 1024)
    _ok(op.run("expand", "-t", topic, "--rf", "2", "--dry-run", "--out", "a.json", *op.source))

    # the same plan, its plan document edited to name another cluster
    for name in ("other.json", "other.rollback.json", "other.kreplica.json"):
        source = op.cwd / name.replace("other", "a")
        (op.cwd / name).write_text(source.read_text())
    doc_path = op.cwd / "other.kreplica.json"
    doc = json.loads(doc_path.read_text())
    doc["cluster_id"] = "AnotherClusterId00000w"
    doc_path.write_text(json.dumps(doc))
    was = kafka.replicas(topic)
    line = _one_line(op.run("apply", "other.json", "--throttle", "1MB/s", *op.source), 5)
    assert "AnotherClusterId00000w" in line
    _nothing_written(op, kafka, "other.json", topic, was)

    # the partitions change after a.json was made: another plan (RF 3) is applied first
    _ok(op.run("expand", "-t", topic, "--rf", "3", "--yes", "--out", "b.json", *op.source))
    was = kafka.replicas(topic)
    line = _one_line(op.run("apply", "a.json", "--throttle", "1MB/s", *op.source), 5)
    assert f"{topic}-0" in line or f"{topic}-1" in line
    _nothing_written(op, kafka, "a.json", topic, was)
    op.log.append(line)
    print("\n".join(op.log))


def test_via_zookeeper(op: Operator, kafka: Kafka) -> None:
    if op.info.mode != "zk":
        pytest.skip("the /admin/reassign_partitions znode exists in ZooKeeper mode only")
    assert op.info.zookeeper
    zk = ["--zookeeper", op.info.zookeeper]
    slow, quick = "znode-slow", "znode-quick"
    create_topics(
        op.info.bootstrap_servers,
        [
            TopicSpec(slow, partitions=1, replication_factor=1),
            TopicSpec(quick, partitions=2, replication_factor=1),
        ],
    )
    produce(op.info.bootstrap_servers, slow, 8 * 1024 * 1024)
    produce_keyed(op.info.bootstrap_servers, quick, 500)

    # a plan applied through the znode, read from ZooKeeper
    _ok(op.run("expand", "-t", quick, "--rf", "2", "--dry-run", "--out", "q.json", *zk))
    _ok(op.run("apply", "q.json", "--via", "zookeeper", "--throttle", "20MB/s", *zk))
    assert_as_planned(op, kafka, "q.json")
    assert_no_throttles(op, kafka, [quick])

    # the znode holds a slow move: another plan through the znode is refused with exit 6
    _ok(op.run("expand", "-t", slow, "--rf", "2", "--dry-run", "--out", "slow.json", *zk))
    _ok(op.run("expand", "-t", quick, "--rf", "3", "--dry-run", "--out", "q2.json", *zk))
    held = op.start("apply", "slow.json", "--via", "zookeeper", "--throttle", "30KB/s", *zk)
    try:
        op.wait_journal("slow.json", "submit", held)
        kafka.wait("the slow move in flight", lambda: (slow, 0) in kafka.in_flight())
        was = kafka.replicas(quick)
        refused = op.run(
            "apply", "q2.json", "--via", "zookeeper", "--additional", "--throttle", "1MB/s", *zk
        )
        line = _one_line(refused, 6)
        assert "/admin/reassign_partitions" in line
        assert kafka.replicas(quick) == was
        assert (quick, 0) not in kafka.in_flight() and (quick, 1) not in kafka.in_flight()
        assert "topic " + quick not in kafka.throttles([quick]), "a refused apply left throttles"
        op.log.append(line)
    finally:
        _ok(op.run("cancel", "slow.json", *zk))
        held.communicate(timeout=120)
    assert held.returncode == 7
    kafka.wait("the slow move cancelled", lambda: not kafka.in_flight())
    assert_no_throttles(op, kafka, [slow, quick])
    print("\n".join(op.log))


# --------------------------------------------------------------------------- 4. bad input


def test_bad_input_is_one_line_and_writes_nothing(op: Operator, kafka: Kafka) -> None:
    topic = "untouched"
    create_topics(op.info.bootstrap_servers, [TopicSpec(topic, partitions=2, replication_factor=1)])
    was = kafka.replicas(topic)
    other = next(b for b in (1, 2, 3, 4) if b not in was[(topic, 0)])

    def bare(name: str, rows: list[dict[str, Any]]) -> str:
        (op.cwd / name).write_text(json.dumps({"version": 1, "partitions": rows}))
        return name

    (op.cwd / "notes.json").write_text('{"plan": "move everything"}')
    (op.cwd / "text.json").write_text("topic untouched partition 0 -> 1,2\n")
    cases: list[tuple[str, list[str], int]] = [
        ("not Kafka's JSON", ["apply", "notes.json"], 2),
        ("not JSON", ["apply", "text.json"], 2),
        (
            "unknown topic",
            ["apply", bare("t.json", [{"topic": "nope", "partition": 0, "replicas": [1, 2]}])],
            3,  # kreplica's code for a topic the cluster does not have (as every command)
        ),
        (
            "unknown partition",
            ["apply", bare("p.json", [{"topic": topic, "partition": 9, "replicas": [1, 2]}])],
            7,
        ),
        (
            "unknown broker",
            ["apply", bare("b.json", [{"topic": topic, "partition": 0, "replicas": [1, 99]}])],
            7,
        ),
    ]
    good = bare(
        "good.json", [{"topic": topic, "partition": 0, "replicas": [*was[(topic, 0)], other]}]
    )
    cases += [
        ("--throttle 0", ["apply", good, "--throttle", "0"], 2),
        ("--throttle fast", ["apply", good, "--throttle", "fast"], 2),
        ("--throttle -5MB/s", ["apply", good, "--throttle", "-5MB/s"], 2),
        ("--resume without a journal", ["apply", good, "--resume"], 2),
        ("planning with --throttle fast", ["expand", "-t", topic, "--rf", "2", "--yes",
                                           "--throttle", "fast"], 2),
    ]  # fmt: skip
    for what, args, code in cases:
        proc = op.run(*args, *op.source)
        line = _one_line(proc, code)
        op.log.append(f"{what}: exit {proc.returncode}: {line}")
    # read once after them all: whatever a refused command wrote would still be there (a
    # throttle, a moved replica: a move of this empty topic ends at once)
    assert not kafka.in_flight()
    assert kafka.throttles([topic]) == {}
    assert kafka.replicas(topic) == was
    assert not (op.cwd / "good.journal.jsonl").exists() or not op.journal("good.json")
    print("\n".join(op.log))
