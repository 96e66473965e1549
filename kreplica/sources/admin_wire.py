"""A snapshot's reads on kreplica's own plain connections (kreplica.sources.kafkawire): Metadata
from a bootstrap server, then a connection per broker (ApiVersions) for DescribeLogDirs and
DescribeCluster, DescribeConfigs split over the brokers, ListPartitionReassignments from the
controller. kafka-python's import and decoder cost as much CPU as the rest of the read, and
confluent-kafka builds an object per partition. Any answer this reader does not take apart
returns None (or the fallback's answer): confluent-kafka or kafka-python then asks, and names
any problem."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from kreplica.errors import SourceError
from kreplica.model import Broker
from kreplica.sources import kafkawire
from kreplica.sources.answers import Configs, MetadataPartition, configs_of
from kreplica.sources.kafkawire import BrokerConnection

# What a request on kreplica's own connection may raise besides its errors: an answer this
# reader does not take apart.
WIRE_FAILURES = (kafkawire.WireError, struct.error, IndexError, ValueError)


class WireReads:
    """The connections of one snapshot: broker id -> a connection that has its ApiVersions
    answer (opened in threads, all at once), and each broker's address."""

    def __init__(self, bootstrap: str, timeout_s: float) -> None:
        self._bootstrap = bootstrap
        self._timeout_s = timeout_s
        self.conns: dict[int, Future[BrokerConnection]] = {}
        self.addresses: dict[int, tuple[str, int]] = {}

    def bootstrap_metadata(
        self,
    ) -> tuple[BrokerConnection, str | None, list[Broker], Broker | None] | None:
        """The live brokers, the cluster id and the controller from a Metadata request for no
        topic to the first bootstrap server that answers, and that connection (for `topics`);
        None when none does."""
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
            except WIRE_FAILURES:
                conn.close()
                continue
            brokers = [
                Broker(id=n["node_id"], rack=n["rack"] or None, host=n["host"], port=n["port"])
                for n in nodes
            ]
            return conn, cluster_id, brokers, next((b for b in brokers if b.id == controller), None)
        return None

    @staticmethod
    def topics(conn: BrokerConnection) -> dict[str, Any] | None:
        """Every topic's partitions (name -> number -> MetadataPartition) from one Metadata
        request on `conn`, which it closes; None when the request fails."""
        try:
            with conn:
                _, _, _, topics = conn.describe_metadata()
        except WIRE_FAILURES:
            return None
        return {
            name: {p: MetadataPartition(*row) for p, row in parts.items()}
            for name, (error, parts) in topics.items()
            if not error or parts  # e.g. being deleted: no partitions to report
        }

    def open(self, brokers: Sequence[Broker]) -> None:
        """Connect to every broker at once and ask each its ApiVersions, in threads."""
        from concurrent.futures import ThreadPoolExecutor

        timeout_s = self._timeout_s

        def connect(broker: Broker) -> BrokerConnection:
            conn = BrokerConnection(broker.host or "", broker.port or 9092, timeout_s)
            try:
                conn.ask_versions()
            except BaseException:
                conn.close()
                raise
            return conn

        self.close()
        listed = [b for b in brokers if b.host and b.port]
        self.addresses = {b.id: (b.host or "", b.port or 9092) for b in listed}
        if not listed:
            return
        pool = ThreadPoolExecutor(len(listed), thread_name_prefix="kreplica-wire")
        self.conns = {b.id: pool.submit(connect, b) for b in listed}
        pool.shutdown(wait=False)

    def conn(self, broker_id: int) -> BrokerConnection | None:
        """The broker's connection once it has its ApiVersions answer; None when this
        snapshot has none to it. WireError when it could not connect."""
        future = self.conns.get(broker_id)
        return None if future is None else future.result()

    def first_conn(self) -> BrokerConnection | None:
        """The first connection to have its ApiVersions answer (a paused broker's silence is
        not waited for); None when none did."""
        from concurrent.futures import as_completed

        for future in as_completed(self.conns.values()):
            if future.exception() is None:
                return future.result()
        return None

    def reassignments(self, controller: Broker | None) -> dict[tuple[str, int], Any] | None:
        """ListPartitionReassignments from the controller, on a connection of its own (the
        brokers' connections may be busy with DescribeLogDirs); None when no connection is
        open, or the request failed. A controller that does not answer is reported at once."""
        if not self.conns or controller is None or not controller.host:
            return None
        port = controller.port or 9092
        try:
            with BrokerConnection(controller.host, port, self._timeout_s) as c:
                c.ask_versions()
                return c.list_reassignments(int(self._timeout_s * 1000))
        except kafkawire.WireTimeout:
            raise SourceError(
                f"the controller of the cluster at {self._bootstrap} (broker {controller.id}, "
                f"{controller.host}:{port}) did not list reassignments within "
                f"{self._timeout_s:g}s; retry"
            ) from None
        except kafkawire.WireError:
            return None

    def configs_later(
        self, names: list[str], fallback: Callable[[list[str]], Callable[[], Configs]]
    ) -> Callable[[], Configs]:
        """Send DescribeConfigs for these topics, split over the brokers, each asked for its
        share at once (in threads, on connections of their own: the brokers' others are busy
        with DescribeLogDirs), and return what waits for the answers; `fallback`'s when a
        broker's answer is not one this reader takes."""
        from concurrent.futures import ThreadPoolExecutor

        ids = sorted(self.conns)
        share = [names[i :: len(ids)] for i in range(len(ids))]
        where = dict(self.addresses)
        timeout_s = self._timeout_s

        def ask(broker_id: int, topics: list[str]) -> Any:
            host, port = where[broker_id]
            with BrokerConnection(host, port, timeout_s) as conn:
                conn.ask_versions()
                return conn.describe_topic_configs(topics)

        pool = ThreadPoolExecutor(len(ids), thread_name_prefix="kreplica-configs")
        futures = [pool.submit(ask, b, part) for b, part in zip(ids, share, strict=True) if part]
        pool.shutdown(wait=False)

        def answers() -> Configs:
            entries: dict[str, list[tuple[str, str | None, int]]] = {}
            try:
                for future in futures:
                    entries.update(future.result())
            except WIRE_FAILURES:
                return fallback(names)()
            if any(name not in entries for name in names):
                return fallback(names)()
            return configs_of({name: entries[name] for name in names})

        return answers

    def close(self) -> None:
        """Close every broker's connection (each once it is open: connects still under way
        are closed as they finish)."""
        conns, self.conns = self.conns, {}
        for future in conns.values():
            future.add_done_callback(_close_connection)


def _close_connection(future: Future[BrokerConnection]) -> None:
    if not future.cancelled() and future.exception() is None:
        future.result().close()
