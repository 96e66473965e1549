"""pytest plugin (entry point `kreplica`): a real Kafka cluster for your own CI.

    def test_runbook(kreplica_cluster):
        bootstrap = kreplica_cluster.bootstrap_servers
        create_topics(bootstrap, [TopicSpec("orders", partitions=6, replication_factor=2)])
        ...

`kreplica_cluster` is session-scoped and always torn down. Where a Docker engine answers and
`testcontainers[kafka]` is installed (`pip install kreplica[docker]`) it runs testcontainers'
Kafka (one broker, no racks, a Confluent Platform image: `kreplica_testcontainers_image`);
otherwise it starts the JVM sandbox (`kreplica.sandbox`, jars from Maven Central: needs Java 17+
and Maven). Choose with ini options (pytest.ini / pyproject `[tool.pytest.ini_options]`):
`kreplica_backend` (auto | sandbox | testcontainers), `kreplica_mode` (zk | kraft),
`kreplica_brokers`, `kreplica_racks` (comma-separated), `kreplica_kafka_version`,
`kreplica_testcontainers_image`.

Nothing heavy is imported until a fixture is used.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from kreplica.errors import UsageError

if TYPE_CHECKING:
    from kreplica.sandbox import SandboxInfo


@dataclass(frozen=True)
class TopicSpec:
    """A topic to create. Either `partitions` + `replication_factor` (Kafka places the replicas)
    or `assignment` {partition: [broker ids]}; `grow_to` then adds partitions with Kafka's own
    add-partitions placement."""

    name: str
    partitions: int | None = None
    replication_factor: int | None = None
    assignment: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str] = field(default_factory=dict)
    grow_to: int | None = None

    @property
    def final_partitions(self) -> int:
        if self.grow_to is not None:
            return self.grow_to
        if self.assignment is not None:
            return len(self.assignment)
        return self.partitions or 1


def _admin(bootstrap: str, client_config: Mapping[str, Any] | None = None) -> Any:
    from confluent_kafka.admin import AdminClient

    quiet = logging.getLogger("kreplica.testing.client")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": quiet}
    config.update(client_config or {})  # a secured cluster: security.protocol, sasl.*, ssl.*
    return AdminClient(config)


def _all_done(futures: Mapping[str, Any], timeout_s: float, what: str) -> None:
    for key, future in futures.items():
        try:
            future.result(timeout=timeout_s)
        except Exception as exc:
            raise RuntimeError(f"{what} {key} failed: {exc}") from exc


def create_topics(
    bootstrap: str,
    specs: Iterable[TopicSpec],
    *,
    timeout_s: float = 60,
    client_config: Mapping[str, Any] | None = None,
) -> None:
    """Create the topics (then grow those with `grow_to`) and wait until every partition has a
    leader. Uses the AdminClient, so Kafka's own placement decides unassigned replicas.
    `client_config`: librdkafka settings for a secured cluster (sandbox.client_config)."""
    from confluent_kafka.admin import NewPartitions, NewTopic  # type: ignore[attr-defined]

    specs = list(specs)
    admin = _admin(bootstrap, client_config)
    new_topics = []
    for spec in specs:
        if spec.assignment is not None:
            assignment = [list(spec.assignment[p]) for p in sorted(spec.assignment)]
            new_topics.append(
                NewTopic(
                    spec.name,
                    num_partitions=len(assignment),  # librdkafka insists on both
                    replica_assignment=assignment,
                    config=dict(spec.configs),
                )
            )
        else:
            new_topics.append(
                NewTopic(
                    spec.name,
                    num_partitions=spec.partitions or 1,
                    replication_factor=spec.replication_factor or 1,
                    config=dict(spec.configs),
                )
            )
    _all_done(
        admin.create_topics(new_topics, operation_timeout=timeout_s, request_timeout=timeout_s),
        timeout_s,
        "creating topic",
    )
    growing = [NewPartitions(s.name, s.grow_to) for s in specs if s.grow_to is not None]
    if growing:
        # The new topic must be known everywhere before it can grow.
        wait_for_leaders(
            bootstrap,
            {s.name: s.final_partitions for s in specs if not s.grow_to},
            timeout_s=timeout_s,
            client_config=client_config,
        )
        wait_for_leaders(
            bootstrap,
            {s.name: s.partitions or 1 for s in specs if s.grow_to is not None},
            timeout_s=timeout_s,
            client_config=client_config,
        )
        _all_done(
            admin.create_partitions(
                growing, operation_timeout=timeout_s, request_timeout=timeout_s
            ),
            timeout_s,
            "adding partitions to",
        )
    wait_for_leaders(
        bootstrap,
        {s.name: s.final_partitions for s in specs},
        timeout_s=timeout_s,
        client_config=client_config,
    )


def wait_for_leaders(
    bootstrap: str,
    partitions_by_topic: Mapping[str, int],
    *,
    timeout_s: float = 60,
    client_config: Mapping[str, Any] | None = None,
) -> None:
    """Wait until each topic has the given number of partitions, each with a leader, in the
    metadata of every broker (on a plain listener; else of the one librdkafka asks). A
    ZooKeeper-mode controller tells the brokers in turn: a broker asked first may not know
    a topic that another already serves."""
    if not partitions_by_topic:
        return
    from kreplica.sources.kafkawire import plain_listener

    admin = _admin(bootstrap, client_config)
    every_broker = plain_listener(client_config)
    deadline = time.monotonic() + timeout_s
    missing: list[str] = []
    while True:
        try:
            metadata = admin.list_topics(timeout=5)
            seen = {
                name: {p: part.leader for p, part in meta.partitions.items()}
                for name, meta in metadata.topics.items()
                if meta.error is None
            }
            missing = _without_leaders(seen, partitions_by_topic)
            if not missing and every_broker:
                for broker in metadata.brokers.values():
                    missing += [
                        f"{topic} (on broker {broker.id})"
                        for topic in _without_leaders(
                            _leaders_seen_by(broker.host, broker.port), partitions_by_topic
                        )
                    ]
        except Exception as exc:  # not answering yet; the deadline bounds this
            missing = [f"(metadata: {exc})"]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"topics {missing} have no leader for every partition after {timeout_s:.0f}s"
            )
        time.sleep(0.2)


def _without_leaders(
    seen: Mapping[str, Mapping[int, int]], partitions_by_topic: Mapping[str, int]
) -> list[str]:
    """The topics of `partitions_by_topic` not seen with that many partitions, each led."""
    missing = []
    for topic, count in partitions_by_topic.items():
        leaders = seen.get(topic)
        if leaders is None or len(leaders) != count or min(leaders.values(), default=0) < 0:
            missing.append(topic)
    return missing


def _leaders_seen_by(host: str, port: int) -> dict[str, dict[int, int]]:
    """Partition -> leader of each topic in one broker's own metadata."""
    from kreplica.sources.kafkawire import BrokerConnection

    with BrokerConnection(host, port, timeout_s=5) as conn:
        conn.ask_versions()
        _, _, _, topics = conn.describe_metadata()
    return {
        name: {index: leader for index, (_, _, leader) in parts.items()}
        for name, (error, parts) in topics.items()
        if error == 0
    }


# --------------------------------------------------------------------------- the fixture


@contextmanager
def _in_thread(run: Callable[[threading.Event], None]) -> Iterator[None]:
    """`run(stop)` in a thread for the duration of the block; `stop` is set when it ends."""
    stop = threading.Event()
    thread = threading.Thread(target=run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(60)


@contextmanager
def paced_producer(
    bootstrap: str, rates: Mapping[tuple[str, int], int], *, record_bytes: int = 2000
) -> Iterator[None]:
    """Write to each (topic, partition) at its rate in bytes per second (record values of
    `record_bytes` random, incompressible bytes, keyed so compacted topics take them) on a
    fixed schedule, from a thread, until the block ends (at most 10 minutes)."""
    import random

    from confluent_kafka import Producer

    # several records per batch: batch headers stay a small share of the bytes
    settings = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 200}
    producer = Producer({**settings, "compression.type": "none"})
    failures: list[str] = []
    rng = random.Random(34)

    def run(stop: threading.Event) -> None:
        sent = dict.fromkeys(rates, 0)
        begun = time.monotonic()
        while not stop.is_set() and time.monotonic() - begun < 600:
            elapsed = time.monotonic() - begun
            for (topic, partition), rate in rates.items():
                while sent[(topic, partition)] * record_bytes < elapsed * rate:
                    key = str(sent[(topic, partition)] % 100).encode()
                    producer.produce(topic, rng.randbytes(record_bytes), key, partition)
                    sent[(topic, partition)] += 1
            producer.poll(0)
            time.sleep(0.02)
        if producer.flush(30):
            failures.append("records left undelivered")

    with _in_thread(run):
        yield
    if failures:
        raise RuntimeError(f"paced producer: {failures[0]}")


@contextmanager
def group_reader(bootstrap: str, group: str, topic: str, *, commit: bool) -> Iterator[None]:
    """A consumer group member reading `topic` from a thread until the block ends, committing
    every 500 ms (`commit`) or never."""
    from confluent_kafka import Consumer

    reader = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": commit,
            "auto.commit.interval.ms": 500,
        }
    )
    reader.subscribe([topic])

    def run(stop: threading.Event) -> None:
        while not stop.is_set():
            reader.poll(0.2)

    try:
        with _in_thread(run):
            yield
    finally:
        reader.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("kreplica_backend", "auto | sandbox | testcontainers", default="auto")
    parser.addini("kreplica_mode", "zk | kraft (sandbox only)", default="kraft")
    parser.addini("kreplica_brokers", "number of brokers (sandbox only)", default="3")
    parser.addini("kreplica_racks", "comma-separated racks (sandbox only)", default="a,b,c")
    parser.addini("kreplica_kafka_version", "Kafka version (default: per mode)", default="")
    parser.addini(
        "kreplica_testcontainers_image",
        "Confluent Platform image for testcontainers (default: cp-kafka 7.9 for zk, 8.0 for kraft)",
        default="",
    )


def docker_available() -> bool:
    """True when testcontainers is installed and a Docker engine answers."""
    if importlib.util.find_spec("testcontainers") is None:
        return False
    try:
        import docker  # testcontainers brings it
    except ImportError:
        return False
    try:
        client = docker.from_env(timeout=3)
        client.ping()
        client.close()
    except Exception:
        return False
    return True


@contextmanager
def running_cluster(
    *,
    backend: str = "auto",
    mode: str = "kraft",
    brokers: int = 3,
    racks: Sequence[str] | None = ("a", "b", "c"),
    kafka_version: str | None = None,
    name: str | None = None,
    testcontainers_image: str | None = None,
    log_dirs: int = 1,
    metrics: bool = False,
) -> Iterator[SandboxInfo]:
    """A running cluster for the duration of the `with` block; always torn down. `metrics`:
    a sandbox with the JMX exporter on each broker and a Prometheus scraping them."""
    if backend not in ("auto", "sandbox", "testcontainers"):
        raise UsageError(
            f"kreplica_backend {backend!r} is unknown: use auto, sandbox or testcontainers"
        )
    if backend == "testcontainers" or (backend == "auto" and docker_available() and not metrics):
        with _testcontainers_cluster(mode, testcontainers_image) as info:
            yield info
        return
    from kreplica import sandbox

    _reap_orphans()
    name = name or f"pytest-{mode}-{os.getpid()}"
    info = sandbox.up(
        mode=mode,
        brokers=brokers,
        racks=racks,
        name=name,
        kafka_version=kafka_version,
        log_dirs=log_dirs,
        metrics=metrics,
    )
    try:
        yield info
    finally:
        sandbox.down(name)


def _reap_orphans() -> None:
    """Stop sandboxes left by test sessions that were killed before their teardown ran."""
    from kreplica import sandbox

    root = sandbox.sandbox_root()
    if not root.is_dir():
        return
    for entry in root.iterdir():
        match = re.fullmatch(r"pytest-(?:zk|kraft)-(\d+)", entry.name)
        if match and not _pid_exists(int(match.group(1))):
            sandbox.down(entry.name)


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# testcontainers-python's KafkaContainer drives Confluent's image scripts, so it needs a
# cp-kafka image: 7.9 is Kafka 3.9 (ZooKeeper inside the container), 8.0 is Kafka 4.0 (KRaft).
_CP_IMAGES = {"zk": "confluentinc/cp-kafka:7.9.0", "kraft": "confluentinc/cp-kafka:8.0.0"}


@contextmanager
def _testcontainers_cluster(mode: str, image: str | None) -> Iterator[SandboxInfo]:
    from testcontainers.kafka import KafkaContainer

    from kreplica.sandbox import SandboxBroker, SandboxInfo

    image = image or _CP_IMAGES.get(mode, _CP_IMAGES["kraft"])
    container = KafkaContainer(image)
    if mode == "kraft":
        container = container.with_kraft()
    with container:
        bootstrap = container.get_bootstrap_server()
        admin = _admin(bootstrap)
        described = admin.describe_cluster(request_timeout=30).result(timeout=30)
        port = int(bootstrap.rsplit(":", 1)[1])
        yield SandboxInfo(
            name="testcontainers",
            mode=mode,
            bootstrap_servers=bootstrap,
            zookeeper=None,  # ZooKeeper (zk mode) stays inside the container
            cluster_id=str(described.cluster_id),
            kafka_version=image.rsplit(":", 1)[-1],  # the image tag (Confluent's numbering)
            brokers=tuple(SandboxBroker(id=n.id, rack=n.rack, port=port) for n in described.nodes),
            state_dir="",
        )


@pytest.fixture(scope="session")
def kreplica_cluster(pytestconfig: pytest.Config) -> Iterator[SandboxInfo]:
    """A real Kafka cluster for the whole test session (see the module docstring)."""
    racks = [r.strip() for r in str(pytestconfig.getini("kreplica_racks")).split(",") if r.strip()]
    with running_cluster(
        backend=str(pytestconfig.getini("kreplica_backend")),
        mode=str(pytestconfig.getini("kreplica_mode")),
        brokers=int(str(pytestconfig.getini("kreplica_brokers"))),
        racks=racks or None,
        kafka_version=str(pytestconfig.getini("kreplica_kafka_version")) or None,
        testcontainers_image=str(pytestconfig.getini("kreplica_testcontainers_image")) or None,
    ) as info:
        yield info
