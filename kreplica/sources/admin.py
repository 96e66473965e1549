"""The AdminClient source: any cluster (ZooKeeper mode or KRaft) read through the Kafka protocol.

confluent-kafka gives brokers and racks (DescribeCluster), assignments, leaders and ISR
(Metadata), and topic config overrides (DescribeConfigs). kafka-python gives what
confluent-kafka lacks: in-flight reassignments (ListPartitionReassignments) and replica
sizes (DescribeLogDirs). Each is one batched request, so 10,000 partitions take seconds.
Client objects never leave this module: errors become SourceError, results model objects.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from kreplica.errors import SourceError, UsageError
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from kreplica.sources.assemble import (
    LiveSource,
    assemble_snapshot,
    select_topics,
    utc_timestamp,
)
from kreplica.sources.clientconfig import confluent_config, kafka_python_config

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
    sizes: dict[tuple[str, int], int] = {}
    for broker in log_dirs:
        for log_dir in broker.get("log_dirs") or []:
            if log_dir.get("error_code", 0):
                continue  # an offline log dir has no sizes to report
            for topic in log_dir.get("topics") or []:
                name = topic.get("name")
                for partition in topic.get("partitions") or []:
                    if partition.get("is_future_key"):
                        continue
                    key = (name, partition["partition_index"])
                    size = int(partition.get("partition_size", 0))
                    sizes[key] = max(size, sizes.get(key, 0))
    return sizes


class AdminSource(LiveSource):
    """Reads a cluster through its brokers. `bootstrap` is HOST:PORT[,HOST:PORT...]."""

    source_name = "admin"

    def __init__(
        self,
        bootstrap: str,
        *,
        client_config: dict[str, str] | None = None,
        timeout_s: float = 15.0,
    ) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        if not bootstrap or not bootstrap.strip():
            raise UsageError("--bootstrap-server is empty; pass HOST:PORT[,HOST:PORT]")
        self._bootstrap = bootstrap.strip()
        self._timeout_s = timeout_s
        self._client_config = dict(client_config or {})
        self._last_error: tuple[str, str] | None = None
        self._kafka_python: Any = None
        self._kafka_python_config = kafka_python_config(
            self._bootstrap, self._client_config, timeout_s
        )
        config = confluent_config(self._bootstrap, self._client_config)
        config.update({"error_cb": self._remember_error, "logger": _LOG})
        config.setdefault("client.id", "kreplica")
        try:
            self._admin: Any = AdminClient(config)
        except (KafkaException, ValueError, TypeError) as exc:
            error: Any = exc.args[0] if exc.args else exc
            detail = error.str() if hasattr(error, "str") else str(error)
            raise UsageError(f"bad Kafka client config: {detail}; check --command-config") from None

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self._admin = None  # confluent-kafka clients are released when dropped
        client, self._kafka_python = self._kafka_python, None
        if client is not None:
            # a broken connection has nothing left to report on close
            with contextlib.suppress(Exception):
                client.close()

    # -- errors ------------------------------------------------------------------------------

    def _remember_error(self, error: Any) -> None:
        self._last_error = (error.name(), error.str())

    def _failure(self, what: str, exc: BaseException) -> SourceError:
        """One line for a failed confluent-kafka call, using the connection error it logged."""
        if self._admin is not None:
            self._admin.poll(0)  # serves error_cb, which records the underlying cause
        error: Any = exc.args[0] if exc.args else None
        name = error.name() if hasattr(error, "name") else type(exc).__name__
        text = error.str() if hasattr(error, "str") else str(exc)
        cause_name, cause = self._last_error or (name, text)
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
                f"({cause}); check --bootstrap-server and that the brokers are running"
            )
        return SourceError(f"Kafka at {self._bootstrap} failed to {what}: {text}")

    def _result(self, future: Any, what: str) -> Any:
        from confluent_kafka import KafkaException

        try:
            return future.result(timeout=self._timeout_s + 5)
        except KafkaException as exc:
            raise self._failure(what, exc) from None
        except TimeoutError:
            raise SourceError(
                f"Kafka at {self._bootstrap} did not answer ({what}) within "
                f"{self._timeout_s:g}s; check --bootstrap-server"
            ) from None

    def _admin_client(self) -> Any:
        if self._admin is None:
            raise UsageError("this AdminClient source is closed")
        return self._admin

    def _kafka_python_client(self) -> Any:
        """kafka-python's admin client, started on first use (it connects on construction)."""
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
                    "check --bootstrap-server and the client config"
                ) from None
            self._kafka_python = client
        return self._kafka_python

    # -- reading -----------------------------------------------------------------------------

    def _brokers(self) -> tuple[str | None, list[Broker]]:
        cluster = self._result(
            self._admin_client().describe_cluster(request_timeout=self._timeout_s),
            "describe the cluster",
        )
        brokers = [
            Broker(id=node.id, rack=node.rack or None, host=node.host, port=node.port, alive=True)
            for node in cluster.nodes
        ]
        return cluster.cluster_id, brokers

    def _topics(self) -> dict[str, list[Partition]]:
        """Every topic's partitions from one Metadata request: names and assignments come from
        the same broker's view. (Listing, then describe_topics, can ask two brokers; right
        after a topic is created one may list it and the other call it unknown.)"""
        from confluent_kafka import KafkaException

        try:
            metadata = self._admin_client().list_topics(timeout=self._timeout_s)
        except KafkaException as exc:
            raise self._failure("read topic metadata", exc) from None
        out: dict[str, list[Partition]] = {}
        for name, topic in metadata.topics.items():
            if topic.error is not None and not topic.partitions:
                continue  # e.g. being deleted: no partitions to report
            out[name] = [
                Partition(
                    topic=name,
                    partition=number,
                    replicas=tuple(info.replicas),
                    leader=info.leader if info.leader >= 0 else -1,
                    isr=tuple(sorted(info.isrs)),
                )
                for number, info in sorted(topic.partitions.items())
            ]
        return out

    def _topic_configs(self, names: list[str]) -> dict[str, dict[str, str]]:
        """Per-topic overrides only (what `/config/topics/<t>` holds), not broker defaults."""
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            ConfigResource,
            ConfigSource,
            ResourceType,
        )

        if not names:
            return {}
        resources = [ConfigResource(ResourceType.TOPIC, name) for name in names]
        futures = self._admin_client().describe_configs(resources, request_timeout=self._timeout_s)
        out: dict[str, dict[str, str]] = {}
        for resource, future in futures.items():
            entries = self._result(future, f"describe the configs of topic {resource.name!r}")
            out[resource.name] = {
                key: entry.value
                for key, entry in sorted(entries.items())
                if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
                and entry.value is not None
            }
        return out

    def _reassignments(
        self, names: list[str]
    ) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]:
        """(topic, partition) → (adding, removing) for reassignments in flight."""
        _import_kafka_python()
        from kafka.errors import KafkaError

        try:
            listed = self._kafka_python_client().list_partition_reassignments(
                timeout_ms=int(self._timeout_s * 1000)
            )
        except KafkaError as exc:
            raise SourceError(
                f"Kafka at {self._bootstrap} failed to list reassignments: {exc}"
            ) from None
        wanted = set(names)
        return {
            (tp.topic, tp.partition): (
                tuple(state["adding_replicas"]),
                tuple(state["removing_replicas"]),
            )
            for tp, state in listed.items()
            if tp.topic in wanted
        }

    def _sizes(self, names: list[str]) -> dict[tuple[str, int], int]:
        _import_kafka_python()
        from kafka.errors import ClusterAuthorizationFailedError, KafkaError

        if not names:
            return {}
        try:
            log_dirs = self._kafka_python_client().describe_log_dirs(topic_partitions=names)
        except ClusterAuthorizationFailedError:
            return {}  # sizes are optional; a principal without DESCRIBE on the cluster has none
        except KafkaError as exc:
            raise SourceError(
                f"Kafka at {self._bootstrap} failed to describe log dirs: {exc}"
            ) from None
        return replica_sizes(log_dirs)

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot:
        captured_at = utc_timestamp(datetime.now(UTC))
        wanted = None if topics is None else list(topics)
        cluster_id, brokers = self._brokers()
        partitions = self._topics()
        names = select_topics(partitions, wanted)
        configs = self._topic_configs(names)
        moving = self._reassignments(names)
        sizes = self._sizes(names)
        result = []
        for name in names:
            parts = []
            for p in partitions[name]:
                adding, removing = moving.get((name, p.partition), ((), ()))
                parts.append(
                    Partition(
                        topic=name,
                        partition=p.partition,
                        replicas=p.replicas,
                        leader=p.leader,
                        isr=p.isr,
                        size_bytes=sizes.get((name, p.partition)),
                        adding_replicas=adding,
                        removing_replicas=removing,
                    )
                )
            result.append(Topic(name=name, partitions=tuple(parts), configs=configs.get(name, {})))
        return assemble_snapshot(
            brokers=brokers,
            topics=result,
            cluster_id=cluster_id,
            source=self.source_name,
            captured_at=captured_at,
        )
