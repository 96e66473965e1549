"""kafka-python's admin client, for what confluent-kafka lacks: in-flight reassignments
(ListPartitionReassignments), replica sizes (DescribeLogDirs), and KRaft brokers that are
registered but fenced (DescribeCluster v2 with IncludeFencedBrokers, KIP-1073, Kafka 4.0+).
On plain listeners a snapshot asks these on kreplica's own connections instead
(kreplica.sources.admin_wire); this client then never starts. Its import costs about half a
second, so it is imported and bootstrapped in a thread while the other reads go on."""

from __future__ import annotations

import contextlib
import logging
import threading
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kreplica.errors import SourceError
from kreplica.model import Broker
from kreplica.sources.answers import fenced_brokers

# kafka-python logs refused connections with stack traces; a NullHandler keeps them off
# stderr unless the application configures logging itself.
logging.getLogger("kafka").addHandler(logging.NullHandler())


def import_kafka_python() -> None:
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


class KafkaPython:
    """The client, made on first use (it connects on construction) or by `start`'s thread."""

    def __init__(self, bootstrap: str, config: dict[str, Any], timeout_s: float) -> None:
        self._bootstrap = bootstrap
        self._config = config
        self._timeout_s = timeout_s
        self._client: Any = None
        # the bootstrap thread, and what it raised
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def start(self) -> None:
        """Import and bootstrap kafka-python in a thread: it overlaps confluent-kafka's
        requests, which wait on the network (or in C) without holding the GIL."""
        if self._client is not None or self._thread is not None:
            return

        def bootstrap() -> None:
            try:
                self.client()
            except BaseException as exc:  # re-raised by the caller that needs the client
                self._error = exc

        thread = threading.Thread(target=bootstrap, name="kreplica-kafka-python", daemon=True)
        self._thread = thread
        thread.start()

    def _join(self) -> None:
        """Wait for the bootstrap thread; raise what it raised (to every thread that waits,
        until reset)."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return
        thread.join()
        if self._error is not None:
            raise self._error

    def client(self) -> Any:
        self._join()
        if self._client is None:
            import_kafka_python()
            from kafka import KafkaAdminClient
            from kafka.errors import KafkaError

            # kafka-python starts its I/O thread before it bootstraps and leaves it running
            # when bootstrapping fails, so build the object first and stop it on failure.
            client = KafkaAdminClient.__new__(KafkaAdminClient)
            try:
                client.__init__(**self._config)
            except (KafkaError, OSError, ValueError) as exc:
                _abandon(client)
                raise SourceError(
                    f"kafka-python cannot connect to {self._bootstrap} ({exc}); "
                    "check `bootstrap_server` and `client_config`"
                ) from None
            self._client = client
        return self._client

    def reset(self) -> None:
        """Drop the client: the next call connects afresh and looks the controller up again
        (kafka-python keeps sending to a controller that died)."""
        with contextlib.suppress(Exception):
            self._join()
        self._thread, self._error = None, None
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    def close(self) -> None:
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            # a bootstrap still under way (the caller failed meanwhile) ends within the
            # timeout on its own: its client is dropped with the thread (a daemon)
            thread.join(self._timeout_s)
            if thread.is_alive():
                return
        client, self._client = self._client, None
        if client is not None:
            # a broken connection has nothing left to report on close
            with contextlib.suppress(Exception):
                client.close()


def list_reassignments(
    client_for: Callable[[], Any], reset: Callable[[], None], bootstrap: str, timeout_s: float
) -> Any:
    """ListPartitionReassignments, asked again of a fresh client once when it fails (the
    controller may have moved); SourceError naming the controller otherwise."""
    import_kafka_python()
    from kafka.errors import KafkaError

    for attempt in range(2):
        client = client_for()
        try:
            return client.list_partition_reassignments(timeout_ms=int(timeout_s * 1000))
        except (KafkaError, RuntimeError) as exc:  # RuntimeError: no broker is controller
            reset()
            if attempt == 1:
                raise SourceError(
                    f"the controller of the cluster at {bootstrap} did not list "
                    f"reassignments ({exc}); a controller failover takes seconds: retry"
                ) from None
    raise AssertionError("unreachable")


def fenced(client: Any, bootstrap: str) -> list[Broker]:
    """The fenced brokers (answers.fenced_brokers) of kafka-python's describe_cluster."""
    import_kafka_python()
    from kafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError

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
                    f"Kafka at {bootstrap} failed to describe the cluster (kafka-python): {exc}"
                ) from None
        except KafkaError as exc:
            raise SourceError(
                f"Kafka at {bootstrap} failed to describe the cluster (kafka-python): {exc}"
            ) from None
    return fenced_brokers(described)


def zookeeper_mode(client: Any) -> bool:
    """Whether the ApiVersions answer kafka-python got when it connected lists the
    controller-to-broker APIs (keys 4-6) that only ZooKeeper-mode brokers serve."""
    manager = getattr(client, "_manager", None)
    versions = getattr(getattr(manager, "broker_version_data", None), "api_versions", None)
    return isinstance(versions, Mapping) and all(key in versions for key in (4, 5, 6))


def log_dirs(
    client: Any, wanted: Mapping[str, list[int]] | None, broker_id: int
) -> list[Mapping[str, Any]] | BaseException:
    """One broker's describe_log_dirs answer, or the KafkaError it raised."""
    from kafka.errors import KafkaError

    try:
        answer: list[Mapping[str, Any]] = client.describe_log_dirs(
            topic_partitions=wanted, brokers=[broker_id]
        )
    except KafkaError as exc:
        error: BaseException = exc
        return error
    return list(answer)


def merge_log_dirs(
    ids: Iterable[int],
    results: Iterable[list[Mapping[str, Any]] | BaseException],
    brokers: Mapping[int, str | None],
) -> list[Mapping[str, Any]]:
    """The brokers' DescribeLogDirs answers as one, when some failed: [] when the principal
    may not describe the cluster (sizes are optional), a broker gone from the metadata
    skipped, SourceError naming the brokers that failed otherwise."""
    from kafka.errors import ClusterAuthorizationFailedError, UnknownBrokerIdError

    failed: list[tuple[int, BaseException]] = []
    out: list[Mapping[str, Any]] = []
    for broker_id, result in zip(ids, results, strict=True):
        if isinstance(result, ClusterAuthorizationFailedError):
            return []  # a principal without DESCRIBE on the cluster has no sizes
        if isinstance(result, UnknownBrokerIdError):
            # gone from the cluster's metadata since it was listed (a broker that just died):
            # it holds no log a client can read, so its sizes are unknown
            continue
        if isinstance(result, BaseException):
            failed.append((broker_id, result))
        else:
            out.extend(result)
    if failed:
        who = ", ".join(
            f"broker {b} ({brokers[b]})" if brokers.get(b) else f"broker {b}" for b, _ in failed
        )
        raise SourceError(f"{who} failed to describe log dirs: {failed[0][1]}")
    return out
