"""Reads through confluent-kafka's AdminClient: brokers and racks (DescribeCluster), every
topic's partitions (Metadata), configs (DescribeConfigs); and the one place its failures
become SourceError lines (librdkafka reports the cause through error_cb, the future only a
code). The client starts only when something asks for it: its import costs more than a
snapshot's metadata request."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from kreplica.errors import SourceError, UsageError
from kreplica.model import Broker
from kreplica.sources.answers import Configs, configs_of
from kreplica.sources.clientconfig import confluent_config

# librdkafka logs refused connections; a NullHandler keeps them off stderr unless the
# application configures logging itself.
_LOG = logging.getLogger("kreplica.sources.librdkafka")
_LOG.addHandler(logging.NullHandler())
_LOG.propagate = False

# librdkafka error names that mean "these credentials or TLS settings are wrong".
AUTH_ERRORS = {"_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED", "_SSL", "ILLEGAL_SASL_STATE"}
# how often librdkafka refreshes its metadata (brokers and the controller) when idle
_METADATA_REFRESH = "topic.metadata.refresh.interval.ms"


class ConfluentReads:
    """One cluster's confluent-kafka client and its errors. The settings are checked when
    built (a bad client config is a UsageError before any connection); `start` makes the
    client."""

    def __init__(self, bootstrap: str, client_config: dict[str, str], timeout_s: float) -> None:
        self._bootstrap = bootstrap
        self._client_config = client_config
        self._timeout_s = timeout_s
        # the last connection error librdkafka logged, and when (monotonic)
        self._errors = _ErrorLog()
        self._call_started = 0.0
        config = confluent_config(bootstrap, client_config)
        # the callback holds the log, not this object: a client reachable from a reference
        # cycle could be freed by the cyclic collector on librdkafka's own thread, which aborts
        config.update({"error_cb": self._errors.remember, "logger": _LOG})
        config.setdefault("client.id", "kreplica")
        self._config = config
        self._admin: Any = None
        self.closed = False

    def start(self) -> None:
        self._admin = self._new_admin()

    def _new_admin(self) -> Any:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        # An apply's client may idle for minutes while kreplica's own connections read: without
        # a periodic refresh it kept a killed controller's id and timed out on every request
        # that goes to the controller (the user's setting, if any, wins)
        config = {_METADATA_REFRESH: "5000", **self._config}
        try:
            return AdminClient(config)
        except (KafkaException, ValueError, TypeError) as exc:
            error: Any = exc.args[0] if exc.args else exc
            detail = error.str() if hasattr(error, "str") else str(error)
            raise UsageError(f"bad Kafka client config: {detail}; check `client_config`") from None

    def client(self) -> Any:
        if self.closed:
            raise UsageError("this AdminClient source is closed")
        if self._admin is None:
            self._admin = self._new_admin()
        return self._admin

    def close(self) -> None:
        self._admin = None  # confluent-kafka clients are released when dropped
        self.closed = True

    # -- errors ------------------------------------------------------------------------------

    def failure(self, what: str, exc: BaseException) -> SourceError:
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
        if cause_name in AUTH_ERRORS or name in AUTH_ERRORS or "handshake failed" in cause:
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

    def _renew(self) -> None:
        """A fresh confluent-kafka client. librdkafka sends some requests (DescribeConfigs,
        for one) to the controller it knows, and keeps waiting for a controller that died
        until its next metadata refresh (minutes): a new client looks it up at once."""
        from confluent_kafka.admin import AdminClient

        if self._admin is not None:
            self._admin = AdminClient(self._config)

    def result(self, future: Any, what: str) -> Any:
        """A future's result, or one SourceError line naming `what`."""
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
                    self._renew()
                    self._errors.last = None
                    raise SourceError(
                        f"no controller of the cluster at {self._bootstrap} answered ({what}: "
                        f"{text}); a controller failover takes seconds: retry"
                    ) from None
                raise self.failure(what, exc) from None
            except TimeoutError:
                if self._admin is not None:
                    self._admin.poll(0)
                recent = self._errors.at >= self._call_started - 1.0
                cause_name, cause = (self._errors.last if recent else None) or ("", "")
                if cause_name in AUTH_ERRORS or "certificate verify failed" in cause:
                    raise self.failure(what, TimeoutError()) from None
                if time.monotonic() > deadline:
                    raise SourceError(
                        f"Kafka at {self._bootstrap} did not answer ({what}) within "
                        f"{self._timeout_s:g}s; check `bootstrap_server`"
                    ) from None

    # -- reads -------------------------------------------------------------------------------

    def live_brokers(self) -> tuple[str | None, list[Broker], Broker | None]:
        """The cluster id, its live brokers and the controller among them."""
        cluster = self.result(
            self.client().describe_cluster(request_timeout=self._timeout_s),
            "describe the cluster",
        )
        brokers = [
            Broker(id=node.id, rack=node.rack or None, host=node.host, port=node.port, alive=True)
            for node in cluster.nodes
        ]
        controller = getattr(cluster, "controller", None)
        found = next((b for b in brokers if controller is not None and b.id == controller.id), None)
        return cluster.cluster_id, brokers, found

    def topics(self) -> dict[str, Any]:
        """Every topic's partitions from one Metadata request (name → number → librdkafka's
        PartitionMetadata, only the topics with partitions): names and assignments come from
        the same broker's view. (Listing, then describe_topics, can ask two brokers; right
        after a topic is created one may list it and the other call it unknown.)"""
        from confluent_kafka import KafkaException

        self._call_started = time.monotonic()
        try:
            metadata = self.client().list_topics(timeout=self._timeout_s)
        except KafkaException as exc:
            raise self.failure("read topic metadata", exc) from None
        return {
            name: topic.partitions
            for name, topic in metadata.topics.items()
            # e.g. being deleted: no partitions to report
            if topic.error is None or topic.partitions
        }

    def configs_later(self, names: list[str]) -> Callable[[], Configs]:
        """Send DescribeConfigs for these topics; return what waits for the answers."""
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            ConfigResource,
            ResourceType,
        )

        resources = [ConfigResource(ResourceType.TOPIC, name) for name in names]
        futures = self.client().describe_configs(resources, request_timeout=self._timeout_s)

        def answers() -> Configs:
            entries = {}
            for resource, future in futures.items():
                got = self.result(future, f"describe the configs of topic {resource.name!r}")
                entries[resource.name] = [(k, e.value, e.source) for k, e in got.items()]
            return configs_of(entries)

        return answers


class _ErrorLog:
    """The last error confluent-kafka reported through error_cb, and when."""

    def __init__(self) -> None:
        self.last: tuple[str, str] | None = None
        self.at = 0.0

    def remember(self, error: Any) -> None:
        self.last = (error.name(), error.str())
        self.at = time.monotonic()
