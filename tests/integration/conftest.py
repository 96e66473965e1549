"""Session fixtures: a real ZooKeeper-mode Kafka 3.9 cluster and a real KRaft Kafka 4.x cluster,
3 brokers each on racks a, b, c, 2 log dirs per broker, with the same topics; and `zk_degraded`
/ `kraft_degraded`, 6 brokers each with broker 6 killed. Each starts at most once per session,
on first use, and is always torn down."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from kreplica.sandbox import DEFAULT_KRAFT_VERSION, DEFAULT_ZK_VERSION, SandboxInfo
from kreplica.testing import TopicSpec, create_topics, running_cluster
from tests.support.groups import claim, per_mode
from tests.support.lifetimes import releasable

RACKS = ("a", "b", "c")

# The topics every integration test may rely on (identical in both clusters).
STANDARD_TOPICS = (
    TopicSpec("orders", partitions=6, replication_factor=2),
    TopicSpec("payments", partitions=3, replication_factor=3, configs={"min.insync.replicas": "2"}),
    TopicSpec("grown", partitions=2, replication_factor=2, grow_to=5),
    TopicSpec("manual", assignment={0: [1, 2], 1: [2, 3], 2: [3, 1]}),
    TopicSpec("single", partitions=4, replication_factor=1),
)


def wait_for_replica_logs(info: SandboxInfo, command_config: str | None = None) -> None:
    """Wait until every broker reports a log for each replica of the standard topics. A leader
    in the metadata does not mean the replica's log exists yet (a KRaft broker updates its
    metadata first; a loaded ZooKeeper-mode broker may not have reached that LeaderAndIsr), and
    tests compare replica dirs between two reads."""
    from kreplica.cli.config import load_properties
    from kreplica.sources import open_source
    from tests.support.polling import eventually

    config = load_properties(command_config) if command_config else None
    names = [spec.name for spec in STANDARD_TOPICS]

    def unplaced() -> list[str]:
        with open_source(bootstrap_server=info.bootstrap_servers, client_config=config) as source:
            return [
                f"{p.topic}-{p.partition} on broker {broker}"
                for topic in source.snapshot(names).topics
                for p in topic.partitions
                for broker, where in zip(
                    p.replicas, p.replica_dirs or [None] * len(p.replicas), strict=True
                )
                if where is None
            ]

    missing = eventually(unplaced, lambda left: not left, timeout_s=60, interval_s=0.5)
    assert not missing, f"no log for {missing} after 60 s"


# The shared clusters' brokers have this many log dirs (JBOD: `data`, `data-2`), so the disk
# tests (tests/integration/test_dirs_clusters.py) need no cluster of their own.
SHARED_LOG_DIRS = 2


def _cluster(mode: str, version: str) -> Iterator[SandboxInfo]:
    claim(f"{mode}_cluster")
    with releasable(f"{mode}_cluster") as stack:
        info = stack.enter_context(
            running_cluster(
                backend="sandbox",
                mode=mode,
                brokers=3,
                racks=RACKS,
                kafka_version=version,
                log_dirs=SHARED_LOG_DIRS,
            )
        )
        create_topics(info.bootstrap_servers, STANDARD_TOPICS)
        wait_for_replica_logs(info)
        yield info


@pytest.fixture(scope="session")
def zk_cluster() -> Iterator[SandboxInfo]:
    """Kafka 3.9.x in ZooKeeper mode: `.zookeeper` and `.bootstrap_servers` are both set."""
    yield from _cluster("zk", DEFAULT_ZK_VERSION)


@pytest.fixture(scope="session")
def kraft_cluster() -> Iterator[SandboxInfo]:
    """Kafka 4.x in KRaft mode (combined broker+controller nodes); `.zookeeper` is None."""
    yield from _cluster("kraft", DEFAULT_KRAFT_VERSION)


@pytest.fixture(params=per_mode("cluster"))
def session_cluster(request: pytest.FixtureRequest) -> SandboxInfo:
    """`zk_cluster`, then `kraft_cluster`: a test that runs the same on both session clusters."""
    fixture = "zk_cluster" if request.param == "zk" else "kraft_cluster"
    result: SandboxInfo = request.getfixturevalue(fixture)
    return result


# --------------------------------------------------------------------------- degraded clusters
# 6 brokers on racks a, b, c with data on them, then broker 6 killed (SIGKILL, like a crash):
# what an operator has in front of them during an incident. Started on first use only.

DEGRADED_BROKERS = 6
DEAD_BROKER = 6
EVENTS_BYTES = 4 * 1024 * 1024  # copied by any move of `events`, so moves take real work

DEGRADED_TOPICS = (
    TopicSpec("events", partitions=12, replication_factor=3, configs={"min.insync.replicas": "2"}),
    TopicSpec("logs", partitions=6, replication_factor=2),
    # Broker 6 is the preferred (and, until it dies, the actual) leader of partitions 0 and 3.
    TopicSpec(
        "hand",
        assignment={
            0: [6, 1, 2],
            1: [1, 2, 3],
            2: [2, 6, 4],
            3: [6, 4, 5],
            4: [4, 5, 1],
            5: [5, 3, 6],
        },
    ),
    # The same layout for test_degraded_plans.py to shrink (it leaves `hand` as it is above).
    TopicSpec(
        "hand-shrink",
        assignment={
            0: [6, 1, 2],
            1: [1, 2, 3],
            2: [2, 6, 4],
            3: [6, 4, 5],
            4: [4, 5, 1],
            5: [5, 3, 6],
        },
    ),
)


# Created on `kraft_degraded` while its 6 brokers are all up (two per rack), so KRaft's striped
# placer chose every replica: tests/integration/test_explain_kraft.py explains them. Read only.
STRIPED_TOPICS = (
    TopicSpec("striped-events", partitions=12, replication_factor=3),
    TopicSpec("striped-clicks", partitions=12, replication_factor=2),
    TopicSpec("striped-logs", partitions=24, replication_factor=2),
    TopicSpec("striped-metrics", partitions=8, replication_factor=1),
)


def produce(
    bootstrap: str,
    topic: str,
    total_bytes: int,
    *,
    record_bytes: int = 1024,
    partition: int | None = None,
) -> None:
    """Write `total_bytes` of incompressible records, acks=all, spread over every partition or
    all to `partition`."""
    import random

    from confluent_kafka import Producer

    rng = random.Random(15)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "compression.type": "none"}
    )
    failures: list[str] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    for i in range(total_bytes // record_bytes):
        producer.produce(
            topic,
            rng.randbytes(record_bytes),
            key=str(i).encode(),
            on_delivery=delivered,
            **({} if partition is None else {"partition": partition}),
        )
        producer.poll(0)
    remaining = producer.flush(60)
    producer.close()  # a producer left open logs to stderr once its cluster is gone
    if remaining or failures:
        raise RuntimeError(f"producing to {topic}: {remaining} undelivered, errors {failures[:3]}")


def wait_broker_dead(info: SandboxInfo, broker_id: int, *, timeout_s: float = 90) -> None:
    """Wait until kreplica's sources (the AdminClient, and ZooKeeper in ZooKeeper mode) report
    the broker dead and no partition counts it in sync any more, but those whose ISR was the
    broker alone (an ISR never shrinks below its last member: an RF 1 partition on it, e.g. the
    scratch clusters' __consumer_offsets once a test used a consumer group)."""
    from kreplica.sources import open_source

    sources = [{"bootstrap_server": info.bootstrap_servers}]
    if info.zookeeper:
        sources.append({"zookeeper": info.zookeeper})
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    for kwargs in sources:
        while True:
            try:
                with open_source(**kwargs, timeout_s=10) as source:
                    snap = source.snapshot()
                dead = {b.id for b in snap.brokers if not b.alive}
                in_isr = [
                    f"{p.topic}-{p.partition}"
                    for t in snap.topics
                    for p in t.partitions
                    if broker_id in p.isr and tuple(p.isr) != (broker_id,)
                ]
                if broker_id in dead and not in_isr:
                    break
                last = f"dead brokers {sorted(dead)}, still in ISR of {in_isr[:5]}"
            except Exception as exc:  # a source that cannot answer yet; the deadline bounds it
                last = str(exc)
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"broker {broker_id} not reported dead by {kwargs} after {timeout_s:.0f}s: "
                    f"{last}"
                )
            time.sleep(0.5)


@contextmanager
def private_cluster(
    label: str, mode: str, *, brokers: int = 3, metrics: bool = False
) -> Iterator[SandboxInfo]:
    """A sandbox of this test session only (named `pytest-LABEL-MODE-PID`, so a later session
    stops it if this one is killed before its teardown); `metrics`: with its Prometheus."""
    from kreplica import sandbox

    claim(f"private cluster {label}-{mode}")
    sandbox.reap_orphans(f"pytest-{label}-")
    name = f"pytest-{label}-{mode}-{os.getpid()}"
    version = DEFAULT_ZK_VERSION if mode == "zk" else DEFAULT_KRAFT_VERSION
    with running_cluster(
        backend="sandbox",
        mode=mode,
        brokers=brokers,
        racks=RACKS,
        kafka_version=version,
        name=name,
        metrics=metrics,
    ) as info:
        yield info


def _scratch(mode: str) -> Iterator[SandboxInfo]:
    with releasable(f"{mode}_scratch") as stack:
        yield stack.enter_context(private_cluster("scratch", mode))


@pytest.fixture(scope="session")
def zk_scratch() -> Iterator[SandboxInfo]:
    """Kafka 3.9 ZooKeeper mode, 3 brokers on racks a, b, c, no topics: for the tests that stop
    a broker (start it again before you finish) or change broker-wide configs (they stay:
    test_min_isr_clusters.py sets min.insync.replicas=2 as the cluster default). Keeps the
    shared clusters at Kafka's defaults without a cluster per module."""
    yield from _scratch("zk")


@pytest.fixture(scope="session")
def kraft_scratch() -> Iterator[SandboxInfo]:
    """Kafka 4.x KRaft, otherwise as `zk_scratch`."""
    yield from _scratch("kraft")


def _degraded(mode: str) -> Iterator[SandboxInfo]:
    from kreplica import sandbox

    with releasable(f"{mode}_degraded") as stack:
        info = stack.enter_context(private_cluster("degraded", mode, brokers=DEGRADED_BROKERS))
        create_topics(info.bootstrap_servers, DEGRADED_TOPICS)
        if mode == "kraft":
            create_topics(info.bootstrap_servers, STRIPED_TOPICS)
        produce(info.bootstrap_servers, "events", EVENTS_BYTES)
        sandbox.stop_broker(info.name, DEAD_BROKER)
        wait_broker_dead(info, DEAD_BROKER)
        yield info


@pytest.fixture(scope="session")
def zk_degraded() -> Iterator[SandboxInfo]:
    """Kafka 3.9 ZooKeeper mode, brokers 1-6 on racks a,b,c,a,b,c, broker 6 killed: ZooKeeper
    has dropped its registration (its rack is unknown to every source) and no ISR holds it.
    Topics: `events` (12 partitions, RF 3, min.insync.replicas=2, 4 MiB of records), `logs`
    (6 partitions, RF 2), `hand` (6 partitions, RF 3, broker 6 first in partitions 0 and 3).
    Do not restart broker 6 or change the topics: other tests share it."""
    yield from _degraded("zk")


@pytest.fixture(scope="session")
def kraft_degraded() -> Iterator[SandboxInfo]:
    """Kafka 4.x KRaft (nodes 1-3 combined broker+controller, 4-6 brokers), the same brokers,
    racks and topics as `zk_degraded`, broker 6 killed: fenced (registered, so the AdminClient
    source still knows its rack) and out of every ISR; also STRIPED_TOPICS, placed by KRaft
    before broker 6 died. Shared: do not restart it."""
    yield from _degraded("kraft")


# --------------------------------------------------------------------------- secured clusters
# SASL_SSL (SCRAM-SHA-512 users admin and readonly, TLS from a throwaway CA, an authorizer with
# ACLs: readonly may Describe and DescribeConfigs only), the standard topics created as admin.


def _secured(mode: str) -> Iterator[SandboxInfo]:
    from kreplica import sandbox

    claim(f"{mode}_secured")
    sandbox.reap_orphans("pytest-secured-")
    name = f"pytest-secured-{mode}-{os.getpid()}"
    version = DEFAULT_ZK_VERSION if mode == "zk" else DEFAULT_KRAFT_VERSION
    with releasable(f"{mode}_secured") as stack:
        info = sandbox.up(
            mode=mode, brokers=3, racks=RACKS, kafka_version=version, name=name, security="sasl_ssl"
        )
        stack.callback(sandbox.down, name)
        create_topics(
            info.bootstrap_servers, STANDARD_TOPICS, client_config=sandbox.client_config(name)
        )
        wait_for_replica_logs(info, info.client_configs["admin"])
        yield info


@pytest.fixture(scope="session")
def zk_secured() -> Iterator[SandboxInfo]:
    """Kafka 3.9 ZooKeeper mode over SASL_SSL with ACLs; `.client_configs` holds the
    --command-config files of users admin and readonly. Shared: change nothing but your own
    topics."""
    yield from _secured("zk")


@pytest.fixture(scope="session")
def kraft_secured() -> Iterator[SandboxInfo]:
    """Kafka 4.x KRaft over SASL_SSL with ACLs (see zk_secured)."""
    yield from _secured("kraft")
