"""The AdminClient source: any cluster (ZooKeeper mode or KRaft) read through the Kafka protocol.

confluent-kafka gives brokers and racks (DescribeCluster), assignments, leaders and ISR
(Metadata), and topic config overrides with each topic's effective min.insync.replicas and its
source (DescribeConfigs). kafka-python gives what confluent-kafka lacks: in-flight
reassignments (ListPartitionReassignments), replica sizes (DescribeLogDirs), and KRaft brokers
that are registered but fenced (DescribeCluster v2 with IncludeFencedBrokers, KIP-1073, Kafka
4.0+), which are dead for planning but keep their rack and address; on plain listeners a
snapshot asks the first two itself (kreplica.sources.kafkawire: kafka-python's import and
decoder cost as much CPU as the rest of the read). Each is one batched
request, so 10,000 partitions take seconds. Client objects never leave this module: errors
become SourceError, results model objects.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import struct
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import Any, NamedTuple

from kreplica.errors import SourceError, UsageError
from kreplica.model import Broker, ClusterSnapshot, LogDir, Partition, Topic
from kreplica.sources import kafkawire
from kreplica.sources.assemble import (
    LiveSource,
    assemble_snapshot,
    select_topics,
    utc_timestamp,
)
from kreplica.sources.clientconfig import confluent_config, kafka_python_config, principal_name
from kreplica.sources.kafkawire import BrokerConnection, plain_listener

# Client libraries log refused connections (kafka-python with stack traces); a NullHandler keeps
# them off stderr unless the application configures logging itself.
_LOG = logging.getLogger("kreplica.sources.librdkafka")
_LOG.addHandler(logging.NullHandler())
_LOG.propagate = False
logging.getLogger("kafka").addHandler(logging.NullHandler())

# librdkafka error names that mean "these credentials or TLS settings are wrong".
_AUTH_ERRORS = {"_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED", "_SSL", "ILLEGAL_SASL_STATE"}


def _import_kafka_python() -> None:
    """Import kafka-python once, without the DeprecationWarnings its import emits."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka  # noqa: F401


def _abandon(client: Any) -> None:
    """Stop what a half-constructed kafka-python client started (its network thread)."""
    for part in ("_client", "_net"):
        stop = getattr(getattr(client, part, None), "close" if part == "_client" else "stop", None)
        if stop is not None:
            with contextlib.suppress(Exception):
                stop()


def replica_sizes(log_dirs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], int]:
    """(topic, partition) → size of its largest replica, from kafka-python's describe_log_dirs
    result (one entry per broker). Future replicas (a log-dir move in progress) are skipped."""
    return {
        key: max(size for _, size in placed.values())
        for key, placed in replica_placement(log_dirs).items()
    }


def broker_log_dirs(log_dirs: Iterable[Mapping[str, Any]]) -> dict[int, tuple[str, ...]]:
    """Broker id → the paths of its log dirs (offline ones included: they exist on the broker),
    from kafka-python's describe_log_dirs result."""
    return {
        int(broker["broker"]): tuple(sorted(d["log_dir"] for d in broker.get("log_dirs") or []))
        for broker in log_dirs
        if "broker" in broker
    }


def _figure(value: Any) -> int | None:
    """A DescribeLogDirs byte figure: None when absent or -1 (versions before 4, Kafka < 3.3)."""
    return int(value) if isinstance(value, int) and value >= 0 else None


def broker_disks(log_dirs: Iterable[Mapping[str, Any]]) -> dict[int, tuple[LogDir, ...]]:
    """Broker id → its log dirs with total and usable bytes (DescribeLogDirs v4, KIP-827), by
    path, from kafka-python's describe_log_dirs result. An offline dir (an error code) is
    listed without figures: nothing can be placed on it."""
    out: dict[int, tuple[LogDir, ...]] = {}
    for broker in log_dirs:
        if "broker" not in broker:
            continue
        dirs = []
        for d in broker.get("log_dirs") or []:
            online = not d.get("error_code", 0)
            total = _figure(d.get("total_bytes")) if online else None
            usable = _figure(d.get("usable_bytes")) if online else None
            dirs.append(LogDir(d["log_dir"], total, usable))
        out[int(broker["broker"])] = tuple(sorted(dirs, key=lambda d: d.path))
    return out


def current_replicas(
    log_dirs: Iterable[Mapping[str, Any]],
) -> Iterator[tuple[int, str, str, int, int]]:
    """(broker, dir, topic, partition, size) of each replica in kafka-python's
    describe_log_dirs result, from the dirs that answered. Future replicas (a dir move in
    progress) are skipped: the replica still lives, and is still read, in its current dir."""
    for broker in log_dirs:
        if "broker" not in broker:
            continue
        broker_id = int(broker["broker"])
        for log_dir in broker.get("log_dirs") or []:
            if log_dir.get("error_code", 0):
                continue
            path = log_dir["log_dir"]
            for topic in log_dir.get("topics") or []:
                name = topic.get("name")
                for partition in topic.get("partitions") or []:
                    if partition.get("is_future_key"):
                        continue
                    size = int(partition.get("partition_size", 0))
                    yield broker_id, path, name, partition["partition_index"], size


def replica_placement(
    log_dirs: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, int], dict[int, tuple[str, int]]]:
    """(topic, partition) → {broker: (its dir, its replica's size)} (current_replicas)."""
    out: dict[tuple[str, int], dict[int, tuple[str, int]]] = {}
    for broker_id, path, name, number, size in current_replicas(log_dirs):
        out.setdefault((name, number), {})[broker_id] = (path, size)
    return out


class LogDirs:
    """What one DescribeLogDirs round adds to a snapshot, indexed once: each broker's dirs and
    disk figures, and where each replica lives with its size."""

    def __init__(self, log_dirs: Iterable[Mapping[str, Any]]) -> None:
        answer = list(log_dirs)
        self.dirs = broker_log_dirs(answer)
        self.disks = broker_disks(answer)
        self.placement = replica_placement(answer)

    def broker(self, b: Broker) -> Broker:
        if b.id not in self.dirs:
            return b
        return dataclasses.replace(b, log_dirs=self.dirs[b.id], disks=self.disks.get(b.id))

    def partition(
        self,
        topic: str,
        partition: int,
        replicas: tuple[int, ...],
        leader: int | None,
        isr: tuple[int, ...] | None,
        adding: tuple[int, ...],
        removing: tuple[int, ...],
        size_bytes: int | None = None,
    ) -> Partition:
        """A Partition with its size and per-replica dirs and sizes, built in one call (a
        dataclasses.replace per partition cost most of a second at 20,000 partitions)."""
        placed = self.placement.get((topic, partition))
        if placed:
            size_bytes = max(size for _, size in placed.values())
        own_dirs, own_sizes = per_replica(replicas, placed)
        return Partition(
            topic=topic,
            partition=partition,
            replicas=replicas,
            leader=leader,
            isr=isr,
            size_bytes=size_bytes,
            adding_replicas=adding,
            removing_replicas=removing,
            replica_dirs=own_dirs,
            replica_sizes=own_sizes,
        )


def with_log_dirs(
    snapshot: ClusterSnapshot, log_dirs: Iterable[Mapping[str, Any]]
) -> ClusterSnapshot:
    """The snapshot with what DescribeLogDirs adds and ZooKeeper does not hold: each broker's
    log dirs and disk figures, each partition's size, each replica's dir and own size."""
    index = LogDirs(log_dirs)
    topics = tuple(
        dataclasses.replace(
            topic,
            partitions=tuple(
                index.partition(
                    p.topic,
                    p.partition,
                    p.replicas,
                    p.leader,
                    p.isr,
                    p.adding_replicas,
                    p.removing_replicas,
                    p.size_bytes,
                )
                for p in topic.partitions
            ),
        )
        for topic in snapshot.topics
    )
    return dataclasses.replace(
        snapshot, brokers=tuple(map(index.broker, snapshot.brokers)), topics=topics
    )


def per_replica(
    replicas: tuple[int, ...], placed: Mapping[int, tuple[str, int]] | None
) -> tuple[tuple[str | None, ...] | None, tuple[int | None, ...] | None]:
    """A partition's replica_dirs and replica_sizes (replicas' order), None when unknown."""
    if not placed:
        return None, None
    found = [placed.get(b, _UNPLACED) for b in replicas]
    return tuple([f[0] for f in found]), tuple([f[1] for f in found])


_UNPLACED: tuple[None, None] = (None, None)  # a replica DescribeLogDirs did not list


# DescribeConfigs' ConfigSource names → where the effective value comes from (model's
# MIN_ISR_SOURCES). Checked on Kafka 3.9 (ZooKeeper) and 4.3 (KRaft), see the integration tests.
_MIN_ISR_SOURCES = {
    "DYNAMIC_TOPIC_CONFIG": "topic",
    "DYNAMIC_DEFAULT_BROKER_CONFIG": "cluster default",
    "DYNAMIC_BROKER_CONFIG": "broker config",
    "STATIC_BROKER_CONFIG": "broker config",
    "DEFAULT_CONFIG": "kafka default",
}


def min_isr_from_config(entry_value: str | None, source_name: str) -> tuple[int, str] | None:
    """A TOPIC resource's DescribeConfigs entry for min.insync.replicas (its value and its
    ConfigSource name) → (value, where it comes from); None when the value is not a number."""
    if entry_value is None or not entry_value.strip().isdigit():
        return None
    return int(entry_value), _MIN_ISR_SOURCES.get(source_name, f"{source_name.lower()} config")


def fenced_brokers(described: Mapping[str, Any]) -> list[Broker]:
    """Dead brokers from kafka-python's describe_cluster result: those marked `is_fenced`
    (only present in DescribeCluster v2 answers)."""
    return [
        Broker(
            id=int(b["broker_id"]),
            rack=b.get("rack") or None,
            host=b.get("host"),
            port=b.get("port"),
            alive=False,
        )
        for b in described.get("brokers") or []
        if b.get("is_fenced")
    ]


# DescribeConfigs' ConfigSource numbers (Kafka's wire values, confluent-kafka's ConfigSource
# enum) -> their names; a number neither knows is UNKNOWN_<n>.
_CONFIG_SOURCES = {
    0: "UNKNOWN_CONFIG",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    8: "GROUP_CONFIG",
}
_DYNAMIC_TOPIC_CONFIG = 1

# What a request on kreplica's own connection may raise besides its errors: an answer this
# reader does not take apart (confluent-kafka then asks, and names any problem).
_WIRE_FAILURES = (kafkawire.WireError, struct.error, IndexError, ValueError)
# how often librdkafka refreshes its metadata (brokers and the controller) when idle
_METADATA_REFRESH = "topic.metadata.refresh.interval.ms"


def _configs_of(
    entries: Mapping[str, Sequence[tuple[str, str | None, int]]],
) -> tuple[dict[str, dict[str, str]], dict[str, tuple[int, str]]]:
    """Per topic, from its DescribeConfigs entries (name, value, source number): its
    overrides, sorted by name, and its effective min.insync.replicas with where it comes
    from (min_isr_from_config)."""
    out: dict[str, dict[str, str]] = {}
    min_isr: dict[str, tuple[int, str]] = {}
    for name, listed in entries.items():
        by_key = {key: (value, source) for key, value, source in listed}
        out[name] = {
            key: value
            for key, (value, source) in sorted(by_key.items())
            if source == _DYNAMIC_TOPIC_CONFIG and value is not None
        }
        entry = by_key.get("min.insync.replicas")
        if entry is not None:
            value, source = entry
            effective = min_isr_from_config(value, _CONFIG_SOURCES.get(source, f"UNKNOWN_{source}"))
            if effective is not None:
                min_isr[name] = effective
    return out, min_isr


class AdminSource(LiveSource):
    """Reads a cluster through its brokers. `bootstrap` is HOST:PORT[,HOST:PORT...]."""

    source_name = "admin"
    columnar = True  # snapshot(columnar=True) reads into columns

    def __init__(
        self,
        bootstrap: str,
        *,
        client_config: dict[str, str] | None = None,
        timeout_s: float = 15.0,
        probe: bool = True,
        read_sizes: bool = True,
    ) -> None:
        if not bootstrap or not bootstrap.strip():
            raise UsageError("`bootstrap_server` is empty; give HOST:PORT[,HOST:PORT]")
        self._bootstrap = bootstrap.strip()
        self._timeout_s = timeout_s
        self._client_config = dict(client_config or {})
        # the last connection error librdkafka logged, and when (monotonic)
        self._errors = _ErrorLog()
        self._call_started = 0.0
        self._kafka_python: Any = None
        # kafka-python imported and bootstrapped in a thread while confluent-kafka reads
        # (importing it alone costs about half a second), and what that thread raised
        self._kafka_python_thread: threading.Thread | None = None
        self._kafka_python_error: BaseException | None = None
        # DescribeLogDirs (sizes, dirs, disk figures) in snapshot(); False: none are read
        self.read_sizes = read_sizes
        # plain listeners: snapshot() asks ApiVersions, DescribeLogDirs and
        # ListPartitionReassignments on connections of its own (kreplica.sources.kafkawire),
        # broker id -> a connection that has its ApiVersions answer; kafka-python otherwise
        self._wire = plain_listener(self._client_config)
        self._wire_conns: dict[int, Future[BrokerConnection]] = {}
        self._wire_addresses: dict[int, tuple[str, int]] = {}
        self._controller: Broker | None = None
        self._kafka_python_config = kafka_python_config(
            self._bootstrap, self._client_config, timeout_s
        )
        config = confluent_config(self._bootstrap, self._client_config)
        if probe:
            # refused fails at once, another protocol is named; only silence waits the timeout
            from kreplica.sources.probe import require_server

            protocol = str(self._client_config.get("security.protocol", "PLAINTEXT")).upper()
            require_server(
                self._bootstrap,
                protocol="kafka",
                default_port=9092,
                timeout_s=timeout_s,
                flag="`bootstrap_server`",
                handshake=not protocol.endswith("SSL"),  # TLS first: a TCP connect only
            )
        # the callback holds the log, not this source: a client reachable from a reference cycle
        # could be freed by the cyclic collector on librdkafka's own thread, which aborts
        config.update({"error_cb": self._errors.remember, "logger": _LOG})
        config.setdefault("client.id", "kreplica")
        self._confluent_config = config
        self._admin: Any = None
        self._closed = False
        # Plain listeners and no client properties to check: a snapshot reads through
        # kafkawire alone, and confluent-kafka (its import costs more than the read's metadata
        # request) is started only if something asks for it.
        if not (self._wire and not self._client_config):
            self._admin = self._new_admin()

    def _new_admin(self) -> Any:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        # An apply's client may idle for minutes while kreplica's own connections read: without
        # a periodic refresh it kept a killed controller's id and timed out on every request
        # that goes to the controller (the user's setting, if any, wins)
        config = {_METADATA_REFRESH: "5000", **self._confluent_config}
        try:
            return AdminClient(config)
        except (KafkaException, ValueError, TypeError) as exc:
            error: Any = exc.args[0] if exc.args else exc
            detail = error.str() if hasattr(error, "str") else str(error)
            raise UsageError(f"bad Kafka client config: {detail}; check `client_config`") from None

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self._admin = None  # confluent-kafka clients are released when dropped
        self._closed = True
        self._close_wire()
        thread = self._kafka_python_thread
        if thread is not None and thread is not threading.current_thread():
            # a bootstrap still under way (the caller failed meanwhile) ends within the
            # timeout on its own: its client is dropped with the thread (a daemon)
            thread.join(self._timeout_s)
            if thread.is_alive():
                return
        client, self._kafka_python = self._kafka_python, None
        if client is not None:
            # a broken connection has nothing left to report on close
            with contextlib.suppress(Exception):
                client.close()

    # -- errors ------------------------------------------------------------------------------

    def _failure(self, what: str, exc: BaseException) -> SourceError:
        """One line for a failed confluent-kafka call, using the connection error it logged."""
        if self._admin is not None:
            self._admin.poll(0)  # serves error_cb, which records the underlying cause
        error: Any = exc.args[0] if exc.args else None
        name = error.name() if hasattr(error, "name") else type(exc).__name__
        text = error.str() if hasattr(error, "str") else str(exc)
        # only an error logged during this call explains it: an older one (a broker that was
        # down a minute ago) would name the wrong cause
        recent = self._errors.last if self._errors.at >= self._call_started - 1.0 else None
        cause_name, cause = recent or (name, text)
        if "certificate verify failed" in cause or "certificate verify failed" in text:
            from kreplica.sources.tlscheck import diagnose

            reason = diagnose(self._bootstrap, self._client_config, self._timeout_s)
            if reason:
                return SourceError(
                    f"Kafka at {self._bootstrap} refused by TLS: {reason} (client config "
                    "ssl.* settings)"
                )
        if cause_name in _AUTH_ERRORS or name in _AUTH_ERRORS or "handshake failed" in cause:
            return SourceError(
                f"Kafka at {self._bootstrap} rejected the connection ({cause}); check "
                "security.protocol, sasl.* and ssl.* in the client config"
            )
        if name in ("_TIMED_OUT", "_TRANSPORT", "_ALL_BROKERS_DOWN") or cause_name in (
            "_TRANSPORT",
            "_ALL_BROKERS_DOWN",
            "_RESOLVE",
        ):
            return SourceError(
                f"cannot reach Kafka at {self._bootstrap} within {self._timeout_s:g}s "
                f"({cause}); check `bootstrap_server` and that the brokers are running"
            )
        return SourceError(f"Kafka at {self._bootstrap} failed to {what}: {text}")

    def _renew_admin(self) -> None:
        """A fresh confluent-kafka client. librdkafka sends some requests (DescribeConfigs,
        for one) to the controller it knows, and keeps waiting for a controller that died
        until its next metadata refresh (minutes): a new client looks it up at once."""
        from confluent_kafka.admin import AdminClient

        if self._admin is not None:
            self._admin = AdminClient(self._confluent_config)

    def _result(self, future: Any, what: str) -> Any:
        from confluent_kafka import KafkaException

        # In slices: a login or certificate the brokers refuse is reported as soon as the
        # client logs it, not after the timeout.
        deadline = time.monotonic() + self._timeout_s + 5
        self._call_started = time.monotonic()
        while True:
            try:
                return future.result(timeout=0.25)
            except KafkaException as exc:
                error: Any = exc.args[0] if exc.args else None
                text = error.str() if hasattr(error, "str") else str(exc)
                if "controller" in text.lower():
                    self._renew_admin()
                    self._errors.last = None
                    raise SourceError(
                        f"no controller of the cluster at {self._bootstrap} answered ({what}: "
                        f"{text}); a controller failover takes seconds: retry"
                    ) from None
                raise self._failure(what, exc) from None
            except TimeoutError:
                if self._admin is not None:
                    self._admin.poll(0)
                recent = self._errors.at >= self._call_started - 1.0
                cause_name, cause = (self._errors.last if recent else None) or ("", "")
                if cause_name in _AUTH_ERRORS or "certificate verify failed" in cause:
                    raise self._failure(what, TimeoutError()) from None
                if time.monotonic() > deadline:
                    raise SourceError(
                        f"Kafka at {self._bootstrap} did not answer ({what}) within "
                        f"{self._timeout_s:g}s; check `bootstrap_server`"
                    ) from None

    def _admin_client(self) -> Any:
        if self._closed:
            raise UsageError("this AdminClient source is closed")
        if self._admin is None:
            self._admin = self._new_admin()
        return self._admin

    def _start_kafka_python(self) -> None:
        """Import and bootstrap kafka-python in a thread: it overlaps confluent-kafka's
        requests, which wait on the network (or in C) without holding the GIL."""
        if self._kafka_python is not None or self._kafka_python_thread is not None:
            return

        def bootstrap() -> None:
            try:
                self._kafka_python_client()
            except BaseException as exc:  # re-raised by the caller that needs the client
                self._kafka_python_error = exc

        thread = threading.Thread(target=bootstrap, name="kreplica-kafka-python", daemon=True)
        self._kafka_python_thread = thread
        thread.start()

    def _join_kafka_python(self) -> None:
        """Wait for the bootstrap thread; raise what it raised (to every thread that waits,
        until reset_kafka_python)."""
        thread = self._kafka_python_thread
        if thread is None or thread is threading.current_thread():
            return
        thread.join()
        if self._kafka_python_error is not None:
            raise self._kafka_python_error

    def _kafka_python_client(self) -> Any:
        """kafka-python's admin client, started on first use (it connects on construction)."""
        self._join_kafka_python()
        if self._kafka_python is None:
            _import_kafka_python()
            from kafka import KafkaAdminClient
            from kafka.errors import KafkaError

            # kafka-python starts its I/O thread before it bootstraps and leaves it running
            # when bootstrapping fails, so build the object first and stop it on failure.
            client = KafkaAdminClient.__new__(KafkaAdminClient)
            try:
                client.__init__(**self._kafka_python_config)
            except (KafkaError, OSError, ValueError) as exc:
                _abandon(client)
                raise SourceError(
                    f"kafka-python cannot connect to {self._bootstrap} ({exc}); "
                    "check `bootstrap_server` and `client_config`"
                ) from None
            self._kafka_python = client
        return self._kafka_python

    # -- for the executor, which writes through the same connection --------------------------

    @property
    def bootstrap(self) -> str:
        return self._bootstrap

    @property
    def timeout_s(self) -> float:
        return self._timeout_s

    @property
    def principal(self) -> str | None:
        """User:NAME of the SASL login in the client config (None without SASL)."""
        return principal_name(self._client_config)

    def reset_kafka_python(self) -> None:
        """Drop kafka-python's client: the next call connects afresh and looks the controller
        up again (kafka-python keeps sending to a controller that died)."""
        with contextlib.suppress(Exception):
            self._join_kafka_python()
        self._kafka_python_thread, self._kafka_python_error = None, None
        client, self._kafka_python = self._kafka_python, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    def list_reassignments(self) -> Any:
        """ListPartitionReassignments, asked again of a fresh client once when it fails (the
        controller may have moved); SourceError naming the controller otherwise."""
        _import_kafka_python()
        from kafka.errors import KafkaError

        for attempt in range(2):
            client = self._kafka_python_client()
            try:
                return client.list_partition_reassignments(timeout_ms=int(self._timeout_s * 1000))
            except (KafkaError, RuntimeError) as exc:  # RuntimeError: no broker is controller
                self.reset_kafka_python()
                if attempt == 1:
                    raise SourceError(
                        f"the controller of the cluster at {self._bootstrap} did not list "
                        f"reassignments ({exc}); a controller failover takes seconds: retry"
                    ) from None
        raise AssertionError("unreachable")

    def confluent_admin(self) -> Any:
        return self._admin_client()

    def client_settings(self) -> dict[str, Any]:
        """librdkafka settings for another client of this cluster (apply's canary producer)."""
        return dict(confluent_config(self._bootstrap, self._client_config))

    def kafka_python_admin(self) -> Any:
        return self._kafka_python_client()

    def call(self, future: Any, what: str) -> Any:
        """A confluent-kafka future's result, or one SourceError line naming `what`."""
        return self._result(future, what)

    # -- plain connections of our own (kreplica.sources.kafkawire) ----------------------------

    def _open_wire(self, brokers: Sequence[Broker]) -> None:
        """Connect to every broker at once and ask each its ApiVersions, in threads."""
        from concurrent.futures import ThreadPoolExecutor

        def connect(broker: Broker) -> BrokerConnection:
            conn = BrokerConnection(broker.host or "", broker.port or 9092, self._timeout_s)
            try:
                conn.ask_versions()
            except BaseException:
                conn.close()
                raise
            return conn

        self._close_wire()
        listed = [b for b in brokers if b.host and b.port]
        self._wire_addresses = {b.id: (b.host or "", b.port or 9092) for b in listed}
        if not listed:
            return
        pool = ThreadPoolExecutor(len(listed), thread_name_prefix="kreplica-wire")
        self._wire_conns = {b.id: pool.submit(connect, b) for b in listed}
        pool.shutdown(wait=False)

    def _wire_conn(self, broker_id: int) -> BrokerConnection | None:
        """The broker's connection once it has its ApiVersions answer; None when this
        snapshot does not read through kafkawire. WireError when it could not connect."""
        future = self._wire_conns.get(broker_id)
        return None if future is None else future.result()

    def _first_wire_conn(self) -> BrokerConnection | None:
        """The first connection to have its ApiVersions answer (a paused broker's silence is
        not waited for); None when none did."""
        from concurrent.futures import as_completed

        for future in as_completed(self._wire_conns.values()):
            if future.exception() is None:
                return future.result()
        return None

    def _wire_reassignments(self) -> dict[tuple[str, int], dict[str, Any]] | None:
        """ListPartitionReassignments from the controller, on a connection of its own (the
        brokers' connections may be busy with DescribeLogDirs); None when this snapshot reads
        through kafka-python, or the request failed (kafka-python then says why, or
        answers). A controller that does not answer is reported at once."""
        controller = self._controller
        if not self._wire_conns or controller is None or not controller.host:
            return None
        address = f"{controller.host}:{controller.port or 9092}"
        try:
            with BrokerConnection(controller.host, controller.port or 9092, self._timeout_s) as c:
                c.ask_versions()
                return c.list_reassignments(int(self._timeout_s * 1000))
        except kafkawire.WireTimeout:
            raise SourceError(
                f"the controller of the cluster at {self._bootstrap} (broker {controller.id}, "
                f"{address}) did not list reassignments within {self._timeout_s:g}s; retry"
            ) from None
        except kafkawire.WireError:
            return None

    def _close_wire(self) -> None:
        conns, self._wire_conns = self._wire_conns, {}
        for future in conns.values():
            future.add_done_callback(_close_connection)

    # -- reading -----------------------------------------------------------------------------

    def _live_brokers(self) -> tuple[str | None, list[Broker]]:
        cluster = self._result(
            self._admin_client().describe_cluster(request_timeout=self._timeout_s),
            "describe the cluster",
        )
        brokers = [
            Broker(id=node.id, rack=node.rack or None, host=node.host, port=node.port, alive=True)
            for node in cluster.nodes
        ]
        controller = getattr(cluster, "controller", None)
        self._controller = next(
            (b for b in brokers if controller is not None and b.id == controller.id), None
        )
        return cluster.cluster_id, brokers

    def _wire_brokers(self) -> tuple[BrokerConnection, str | None, list[Broker]] | None:
        """What _live_brokers reads, from a Metadata request for no topic on a connection of
        kreplica's own to the first bootstrap server that answers, and that connection (for
        _wire_topics); None when none does (confluent-kafka then reads, and names any
        problem)."""
        for address in self._bootstrap.split(","):
            host, colon, port = address.strip().rpartition(":")
            if not colon or not port.isdigit():
                continue
            try:
                conn = BrokerConnection(host.strip("[]"), int(port), self._timeout_s)
            except kafkawire.WireError:
                continue
            try:
                conn.ask_versions()
                nodes, cluster_id, controller, _ = conn.describe_metadata(topics=False)
            except _WIRE_FAILURES:
                conn.close()
                continue
            brokers = [
                Broker(id=n["node_id"], rack=n["rack"] or None, host=n["host"], port=n["port"])
                for n in nodes
            ]
            self._controller = next((b for b in brokers if b.id == controller), None)
            return conn, cluster_id, brokers
        return None

    def _wire_topics(self, conn: BrokerConnection) -> dict[str, Any] | None:
        """What _topics reads, from one Metadata request on `conn` (confluent-kafka builds an
        object per partition), which it closes; None when the request fails."""
        try:
            with conn:
                _, _, _, topics = conn.describe_metadata()
        except _WIRE_FAILURES:
            return None
        return {
            name: {p: _Partition(*row) for p, row in parts.items()}
            for name, (error, parts) in topics.items()
            if not error or parts  # e.g. being deleted: no partitions to report
        }

    def zookeeper_mode(self) -> bool:
        """Whether the brokers run in ZooKeeper mode, from a broker's ApiVersions answer (on
        kreplica's own connection during a snapshot, else the one kafka-python got when it
        connected; no request of its own): only ZooKeeper-mode brokers serve the
        controller-to-broker APIs LeaderAndIsr, StopReplica, UpdateMetadata (keys 4-6). False
        when that answer is not at hand (a KRaft cluster is then asked for fenced brokers,
        which is what this saves on a ZooKeeper-mode one)."""
        conn = self._first_wire_conn()
        if conn is not None:
            return kafkawire.zookeeper_mode(conn.versions)
        client = self._kafka_python_client()
        manager = getattr(client, "_manager", None)
        versions = getattr(getattr(manager, "broker_version_data", None), "api_versions", None)
        return isinstance(versions, Mapping) and all(key in versions for key in (4, 5, 6))

    def _fenced_brokers(self) -> list[Broker]:
        """KRaft brokers that are registered but fenced (stopped heartbeating: crashed, killed,
        cut off), as dead brokers with their rack and address. Only Kafka 4.0+ answers
        DescribeCluster v2; older brokers (and ZooKeeper mode, where a dead broker's
        registration is gone) list live brokers only, so this is empty there."""
        conn = self._first_wire_conn()  # any broker answers (after its DescribeLogDirs)
        if conn is not None:
            with contextlib.suppress(kafkawire.WireError):  # else kafka-python answers
                return fenced_brokers(conn.describe_cluster())
        _import_kafka_python()
        from kafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError

        client = self._kafka_python_client()
        described: Any = None
        # kafka-python sends to one broker it picks; that may be the dead one a caller is
        # looking for, so a connection error is retried (each try picks again).
        for attempt in range(3):
            try:
                described = client.describe_cluster()
                break
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                if attempt == 2:
                    raise SourceError(
                        f"Kafka at {self._bootstrap} failed to describe the cluster "
                        f"(kafka-python): {exc}"
                    ) from None
            except KafkaError as exc:
                raise SourceError(
                    f"Kafka at {self._bootstrap} failed to describe the cluster "
                    f"(kafka-python): {exc}"
                ) from None
        return fenced_brokers(described)

    def _topics(self) -> dict[str, Any]:
        """Every topic's partitions from one Metadata request (name → number → librdkafka's
        PartitionMetadata, only the topics with partitions): names and assignments come from
        the same broker's view. (Listing, then describe_topics, can ask two brokers; right
        after a topic is created one may list it and the other call it unknown.)"""
        from confluent_kafka import KafkaException

        self._call_started = time.monotonic()
        try:
            metadata = self._admin_client().list_topics(timeout=self._timeout_s)
        except KafkaException as exc:
            raise self._failure("read topic metadata", exc) from None
        return {
            name: topic.partitions
            for name, topic in metadata.topics.items()
            # e.g. being deleted: no partitions to report
            if topic.error is None or topic.partitions
        }

    def _topic_configs(
        self, names: list[str]
    ) -> tuple[dict[str, dict[str, str]], dict[str, tuple[int, str]]]:
        """Per-topic overrides (what `/config/topics/<t>` holds), and each topic's effective
        min.insync.replicas with its source: DescribeConfigs on a TOPIC resource lists every
        config with where its value comes from (the answering broker's view of broker-level
        values)."""
        return self._configs_later(names)()

    def _configs_later(
        self, names: list[str]
    ) -> Callable[[], tuple[dict[str, dict[str, str]], dict[str, tuple[int, str]]]]:
        """Send DescribeConfigs for these topics and return what waits for the answers
        (_topic_configs'). On kreplica's own connections the topics are split over the
        brokers, each asked for its share at once (in threads); confluent-kafka otherwise, or
        when a broker's answer is not one this reader takes (it then names the problem)."""
        if not names:
            return lambda: ({}, {})
        ids = sorted(self._wire_conns)
        if not ids:
            return self._confluent_configs(names)
        from concurrent.futures import ThreadPoolExecutor

        share = [names[i :: len(ids)] for i in range(len(ids))]
        where = dict(self._wire_addresses)

        def ask(broker_id: int, topics: list[str]) -> Any:
            # a connection of its own: the broker's other one is busy with DescribeLogDirs
            host, port = where[broker_id]
            with BrokerConnection(host, port, self._timeout_s) as conn:
                conn.ask_versions()
                return conn.describe_topic_configs(topics)

        pool = ThreadPoolExecutor(len(ids), thread_name_prefix="kreplica-configs")
        futures = [pool.submit(ask, b, part) for b, part in zip(ids, share, strict=True) if part]
        pool.shutdown(wait=False)

        def answers() -> tuple[dict[str, dict[str, str]], dict[str, tuple[int, str]]]:
            entries: dict[str, list[tuple[str, str | None, int]]] = {}
            try:
                for future in futures:
                    entries.update(future.result())
            except _WIRE_FAILURES:
                return self._confluent_configs(names)()
            if any(name not in entries for name in names):
                return self._confluent_configs(names)()
            return _configs_of({name: entries[name] for name in names})

        return answers

    def _confluent_configs(
        self, names: list[str]
    ) -> Callable[[], tuple[dict[str, dict[str, str]], dict[str, tuple[int, str]]]]:
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            ConfigResource,
            ResourceType,
        )

        resources = [ConfigResource(ResourceType.TOPIC, name) for name in names]
        futures = self._admin_client().describe_configs(resources, request_timeout=self._timeout_s)

        def answers() -> tuple[dict[str, dict[str, str]], dict[str, tuple[int, str]]]:
            entries = {}
            for resource, future in futures.items():
                got = self._result(future, f"describe the configs of topic {resource.name!r}")
                entries[resource.name] = [(k, e.value, e.source) for k, e in got.items()]
            return _configs_of(entries)

        return answers

    def _reassignments(
        self, names: list[str]
    ) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]:
        """(topic, partition) → (adding, removing) for reassignments in flight."""
        wanted = set(names)
        wire = self._wire_reassignments()
        if wire is not None:
            return {
                key: (state["adding_replicas"], state["removing_replicas"])
                for key, state in wire.items()
                if key[0] in wanted
            }
        listed = self.list_reassignments()
        return {
            (tp.topic, tp.partition): (
                tuple(state["adding_replicas"]),
                tuple(state["removing_replicas"]),
            )
            for tp, state in listed.items()
            if tp.topic in wanted
        }

    def describe_log_dirs(
        self, topic_partitions: Mapping[str, Iterable[int]], brokers: Iterable[int]
    ) -> list[Mapping[str, Any]]:
        """kafka-python's describe_log_dirs answer for these partitions ([] when not allowed),
        one request per broker, all in flight at once."""
        return self._log_dirs(topic_partitions, dict.fromkeys(brokers))()

    def _log_dirs(
        self,
        topic_partitions: Mapping[str, Iterable[int]] | None,
        brokers: Mapping[int, str | None],
    ) -> Callable[[], list[Mapping[str, Any]]]:
        """Send DescribeLogDirs for these partitions (given as partition ids: a topic list
        makes kafka-python read their metadata first) to every broker at once, and return
        what waits for the answers: kafka-python's describe_log_dirs answer, [] when the
        principal may not describe the cluster (sizes are optional). `brokers` maps each id
        to its HOST:PORT for errors. kafka-python waits for each broker before asking the next
        when given them all; a thread per broker keeps them in flight together on its I/O
        loop, while the caller goes on with other requests."""
        from concurrent.futures import ThreadPoolExecutor

        wanted = (
            None
            if topic_partitions is None  # every partition each broker holds
            else {name: sorted(parts) for name, parts in topic_partitions.items()}
        )
        ids = sorted(brokers)
        if not ids:
            return list

        # kafka-python is imported in the pool's threads (by the bootstrap thread, which they
        # wait for), never here: the caller goes on with its own requests meanwhile
        def ask(broker_id: int) -> list[Mapping[str, Any]] | BaseException:
            try:
                conn = self._wire_conn(broker_id)
                if conn is not None:
                    return [conn.describe_log_dirs(wanted, broker_id)]
            except (kafkawire.NotAuthorized, kafkawire.WireTimeout) as exc:
                return exc  # refused (no sizes), or silent (reported below)
            except kafkawire.WireError:
                pass  # kafka-python says what went wrong, or answers
            client = self._kafka_python_client()
            from kafka.errors import KafkaError

            try:
                answer: list[Mapping[str, Any]] = client.describe_log_dirs(
                    topic_partitions=wanted, brokers=[broker_id]
                )
            except KafkaError as exc:
                error: BaseException = exc
                return error
            return list(answer)

        pool = ThreadPoolExecutor(len(ids), thread_name_prefix="kreplica-log-dirs")
        futures = [pool.submit(ask, broker_id) for broker_id in ids]
        pool.shutdown(wait=False)  # its threads end with their request

        def answers() -> list[Mapping[str, Any]]:
            results = [future.result() for future in futures]
            if any(isinstance(r, kafkawire.NotAuthorized) for r in results):
                return []  # a principal without DESCRIBE on the cluster has no sizes
            if not any(isinstance(r, BaseException) for r in results):
                return [entry for r in results for entry in r]  # type: ignore[union-attr]
            from kafka.errors import ClusterAuthorizationFailedError, UnknownBrokerIdError

            failed: list[tuple[int, BaseException]] = []
            out: list[Mapping[str, Any]] = []
            for broker_id, result in zip(ids, results, strict=True):
                if isinstance(result, ClusterAuthorizationFailedError):
                    return []  # a principal without DESCRIBE on the cluster has no sizes
                if isinstance(result, UnknownBrokerIdError):
                    # gone from the cluster's metadata since it was listed (a broker that
                    # just died): it holds no log a client can read, so its sizes are unknown
                    continue
                if isinstance(result, BaseException):
                    failed.append((broker_id, result))
                else:
                    out.extend(result)
            if failed:
                who = ", ".join(
                    f"broker {b} ({brokers[b]})" if brokers.get(b) else f"broker {b}"
                    for b, _ in failed
                )
                raise SourceError(f"{who} failed to describe log dirs: {failed[0][1]}")
            return out

        return answers

    def snapshot(
        self, topics: Iterable[str] | None = None, *, columnar: bool = False
    ) -> ClusterSnapshot:
        """Brokers and topics (all when None). `columnar`: the partitions in columns
        (kreplica/columns.py, for the array planner), the objects built only if read; a
        cluster with reassignments in flight is read into objects."""
        if self._closed:  # the wire path below opens connections of its own
            raise UsageError("this AdminClient source is closed")
        captured_at = utc_timestamp(datetime.now(UTC))
        wanted = None if topics is None else list(topics)
        boot = self._wire_brokers() if self._wire else None
        if boot is not None:
            conn, cluster_id, live = boot
        else:
            cluster_id, live = self._live_brokers()
        addresses: dict[int, str | None] = {b.id: f"{b.host}:{b.port}" for b in live}
        early = None
        if self._wire:
            self._open_wire(live)
            if wanted is None and self.read_sizes:
                # every partition each broker holds, asked before the metadata is in: the
                # brokers' answers (the longest wait of a read) come while it is read
                early = self._log_dirs(None, addresses)
        else:
            # after the first answer: refused credentials are reported by librdkafka at once,
            # while kafka-python would retry them for the whole timeout
            self._start_kafka_python()
        metadata = self._wire_topics(conn) if boot is not None else None
        if metadata is None:
            metadata = self._topics()
        names = select_topics(metadata, wanted)
        log_dirs = early or (
            self._log_dirs({name: metadata[name].keys() for name in names}, addresses)
            if self.read_sizes
            else list
        )
        configs_later = self._configs_later(names)
        by_id = {b.id: b for b in live}
        # Asked after DescribeCluster, so its answer is the newer one when a broker was fenced
        # in between; ZooKeeper mode has no fenced brokers (a dead one's registration is gone).
        if not self.zookeeper_mode():
            for broker in self._fenced_brokers():
                by_id[broker.id] = broker
        moving = self._reassignments(names)
        configs, min_isr = configs_later()
        answer = log_dirs()
        self._close_wire()
        read = _Read(names, metadata, configs, min_isr, answer)
        if columnar and not moving:
            snap = read.columnar(by_id, cluster_id, self.source_name, captured_at)
            if snap is not None:
                return snap
        index = LogDirs(answer)
        return assemble_snapshot(
            brokers=[index.broker(by_id[k]) for k in sorted(by_id)],
            topics=[read.topic(name, index, moving) for name in names],
            cluster_id=cluster_id,
            source=self.source_name,
            captured_at=captured_at,
        )


_NO_MOVE: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())


class _Partition(NamedTuple):
    """A partition of a Metadata answer, read as librdkafka's PartitionMetadata is."""

    replicas: list[int]
    isrs: list[int]
    leader: int


class _Read:
    """What one snapshot read: topic names, librdkafka's partition metadata per topic,
    configs, min.insync.replicas and the DescribeLogDirs answer; made into topic objects, or
    into columns (the objects then made only when something reads them)."""

    def __init__(
        self,
        names: list[str],
        metadata: Mapping[str, Mapping[int, Any]],
        configs: Mapping[str, dict[str, str]],
        min_isr: Mapping[str, tuple[int, str]],
        answer: list[Mapping[str, Any]],
    ) -> None:
        self.names = names
        self.metadata = metadata
        self.configs = configs
        self.min_isr = min_isr
        self.answer = answer

    def topic(
        self,
        name: str,
        index: LogDirs,
        moving: Mapping[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]],
    ) -> Topic:
        parts = []
        for number, info in sorted(self.metadata[name].items()):
            adding, removing = moving.get((name, number), _NO_MOVE)
            parts.append(
                index.partition(
                    name,
                    number,
                    tuple(info.replicas),
                    info.leader if info.leader >= 0 else -1,
                    tuple(sorted(info.isrs)),
                    adding,
                    removing,
                )
            )
        return dataclasses.replace(self.shell(name), partitions=tuple(parts))

    def shell(self, name: str) -> Topic:
        effective, source = self.min_isr.get(name, (None, None))
        return Topic(
            name=name,
            partitions=(),
            configs=self.configs.get(name, {}),
            effective_min_isr=effective,
            min_isr_source=source,
        )

    def columnar(
        self,
        by_id: Mapping[int, Broker],
        cluster_id: str | None,
        source: str,
        captured_at: str,
    ) -> ClusterSnapshot | None:
        """The snapshot in columns, equal to the object read once built (None: something
        unusual, read into objects). No reassignment may be in flight."""
        import numpy as np

        from kreplica.columns import PAD, ColumnarSnapshot, live_columns

        order = sorted(self.names)
        counts: list[int] = []
        pids: list[int] = []
        replicas: list[list[int]] = []
        leaders: list[int] = []
        isrs: list[list[int]] = []
        # row of (topic, partition): start + partition when a topic's ids are 0..n-1
        where: dict[str, tuple[int, int, dict[int, int] | None]] = {}
        for name in order:
            parts = self.metadata[name]
            numbers = sorted(parts)
            start = len(pids)
            dense = numbers == list(range(len(numbers)))
            where[name] = (
                start,
                len(numbers),
                None if dense else {p: start + j for j, p in enumerate(numbers)},
            )
            counts.append(len(numbers))
            pids.extend(numbers)
            for number in numbers:
                info = parts[number]
                replicas.append(info.replicas)
                leaders.append(info.leader if info.leader >= 0 else -1)
                isrs.append(info.isrs)
        sizes = copies = None
        if self.answer:
            sizes, copies = _sizes(self.answer, where, len(pids), leaders)
        columns = live_columns(
            [self.shell(name) for name in order],
            counts,
            pids,
            replicas,
            leaders,
            isrs,
            sizes,
            copies,
        )
        if columns is None:
            return None
        dirs = broker_log_dirs(self.answer)
        disks = broker_disks(self.answer)
        brokers = {
            k: dataclasses.replace(b, log_dirs=dirs[k], disks=disks.get(k)) if k in dirs else b
            for k, b in by_id.items()
        }
        # replicas on brokers neither live nor fenced: dead (as assemble_snapshot adds them)
        held = np.unique(columns.replicas[columns.replicas != PAD]).tolist()
        for b in held:
            brokers.setdefault(b, Broker(id=b, alive=False))
        index: list[LogDirs] = []

        def make(i: int) -> Topic:
            if not index:  # where each replica lives: read only once a topic is built
                index.append(LogDirs(self.answer))
            return self.topic(order[i], index[0], {})

        return ColumnarSnapshot(
            tuple(brokers[k] for k in sorted(brokers)),
            cluster_id=cluster_id,
            source=source,
            captured_at=captured_at,
            columns=columns,
            maker=make,
        )


def _sizes(
    answer: Iterable[Mapping[str, Any]],
    where: Mapping[str, tuple[int, int, dict[int, int] | None]],
    rows: int,
    leaders: list[int],
) -> tuple[Any, Any]:
    """Per row, the largest replica's size (NO_SIZE when no broker listed one) and the
    bytes a new replica copies (disk.copy_size: the leader's own log when listed, else the
    largest), from the DescribeLogDirs answer."""
    import numpy as np

    from kreplica.columns import NO_SIZE

    at: list[int] = []
    on: list[int] = []
    sized: list[int] = []
    for broker_id, _, name, number, replica_size in current_replicas(answer):
        found = where.get(name)
        if found is None:
            continue
        start, count, lookup = found
        if lookup is None:
            if not 0 <= number < count:
                continue
            row = start + number
        else:
            row = lookup.get(number, -1)
            if row < 0:
                continue
        at.append(row)
        on.append(broker_id)
        sized.append(replica_size)
    row_arr = np.array(at, dtype=np.int64)
    on_arr = np.array(on, dtype=np.int64)
    size_arr = np.array(sized, dtype=np.int64)
    if len(row_arr):  # one replica per broker: a later dir's listing replaces an earlier one
        key = row_arr * (int(on_arr.max()) - int(on_arr.min()) + 1) + (on_arr - int(on_arr.min()))
        _, last = np.unique(key[::-1], return_index=True)
        keep = np.sort(len(key) - 1 - last)
        row_arr, on_arr, size_arr = row_arr[keep], on_arr[keep], size_arr[keep]
    low = np.iinfo(np.int64).min
    size = np.full(rows, low, dtype=np.int64)
    np.maximum.at(size, row_arr, size_arr)
    size[size == low] = NO_SIZE
    copy = size.copy()
    leader_arr = np.array(leaders, dtype=np.int64)
    own = on_arr == leader_arr[row_arr]
    copy[row_arr[own]] = size_arr[own]
    return size, copy


def _close_connection(future: Future[BrokerConnection]) -> None:
    if not future.cancelled() and future.exception() is None:
        future.result().close()


class _ErrorLog:
    """The last error confluent-kafka reported through error_cb, and when."""

    def __init__(self) -> None:
        self.last: tuple[str, str] | None = None
        self.at = 0.0

    def remember(self, error: Any) -> None:
        self.last = (error.name(), error.str())
        self.at = time.monotonic()
