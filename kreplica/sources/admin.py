"""The AdminClient source: any cluster (ZooKeeper mode or KRaft) read through the Kafka protocol.

Three ways of asking, each in its own module, composed here: kreplica's own plain connections
(kreplica.sources.admin_wire: Metadata, DescribeLogDirs, DescribeConfigs, DescribeCluster,
ListPartitionReassignments), confluent-kafka (admin_confluent: brokers, metadata, configs, and
the writes of the executor), kafka-python (admin_kafka_python: what confluent-kafka lacks). On
plain listeners without client properties a snapshot reads through the first alone; the others
answer where it cannot (a TLS or SASL listener, an answer it does not take apart). What the
answers mean is in kreplica.sources.answers and kreplica.sources.logdirs (pure). Each read is
one batched request, so 10,000 partitions take seconds. Client objects never leave these
modules: errors become SourceError, results model objects.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from kreplica.errors import UsageError
from kreplica.model import Broker, ClusterSnapshot
from kreplica.sources import admin_kafka_python as kp
from kreplica.sources import kafkawire
from kreplica.sources.admin_confluent import ConfluentReads
from kreplica.sources.admin_kafka_python import KafkaPython
from kreplica.sources.admin_wire import WireReads
from kreplica.sources.answers import (
    Configs,
    SnapshotRead,
    fenced_brokers,
    min_isr_from_config,
)
from kreplica.sources.assemble import (
    LiveSource,
    assemble_snapshot,
    select_topics,
    utc_timestamp,
)
from kreplica.sources.clientconfig import confluent_config, kafka_python_config, principal_name
from kreplica.sources.kafkawire import BrokerConnection, plain_listener
from kreplica.sources.logdirs import (
    LogDirs,
    broker_disks,
    broker_log_dirs,
    current_replicas,
    per_replica,
    replica_placement,
    replica_sizes,
    with_log_dirs,
)

# the pure readers of the brokers' answers, imported from here by older code and tests
__all__ = [
    "AdminSource",
    "LogDirs",
    "broker_disks",
    "broker_log_dirs",
    "current_replicas",
    "fenced_brokers",
    "min_isr_from_config",
    "per_replica",
    "replica_placement",
    "replica_sizes",
    "with_log_dirs",
]


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
        # DescribeLogDirs (sizes, dirs, disk figures) in snapshot(); False: none are read
        self.read_sizes = read_sizes
        # plain listeners: snapshot() reads on connections of its own (admin_wire)
        self._wire = plain_listener(self._client_config)
        self._wire_reads = WireReads(self._bootstrap, timeout_s)
        self._controller: Broker | None = None
        self._kafka_python = KafkaPython(
            self._bootstrap,
            kafka_python_config(self._bootstrap, self._client_config, timeout_s),
            timeout_s,
        )
        self._confluent = ConfluentReads(self._bootstrap, self._client_config, timeout_s)
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
        self._closed = False
        # Plain listeners and no client properties to check: a snapshot reads through
        # kafkawire alone, and confluent-kafka (its import costs more than the read's metadata
        # request) is started only if something asks for it.
        if not (self._wire and not self._client_config):
            self._confluent.start()

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self._closed = True
        self._confluent.close()
        self._wire_reads.close()
        self._kafka_python.close()

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

    def _kafka_python_client(self) -> Any:
        """kafka-python's admin client, started on first use (it connects on construction)."""
        return self._kafka_python.client()

    def reset_kafka_python(self) -> None:
        """Drop kafka-python's client: the next call connects afresh and looks the controller
        up again (kafka-python keeps sending to a controller that died)."""
        self._kafka_python.reset()

    def list_reassignments(self) -> Any:
        """ListPartitionReassignments, asked again of a fresh client once when it fails (the
        controller may have moved); SourceError naming the controller otherwise."""
        return kp.list_reassignments(
            self._kafka_python_client, self.reset_kafka_python, self._bootstrap, self._timeout_s
        )

    def confluent_admin(self) -> Any:
        return self._confluent.client()

    def client_settings(self) -> dict[str, Any]:
        """librdkafka settings for another client of this cluster (apply's canary producer)."""
        return dict(confluent_config(self._bootstrap, self._client_config))

    def kafka_python_admin(self) -> Any:
        return self._kafka_python_client()

    def call(self, future: Any, what: str) -> Any:
        """A confluent-kafka future's result, or one SourceError line naming `what`."""
        return self._confluent.result(future, what)

    # -- reading -----------------------------------------------------------------------------

    def zookeeper_mode(self) -> bool:
        """Whether the brokers run in ZooKeeper mode, from a broker's ApiVersions answer (on
        kreplica's own connection during a snapshot, else the one kafka-python got when it
        connected; no request of its own): only ZooKeeper-mode brokers serve the
        controller-to-broker APIs LeaderAndIsr, StopReplica, UpdateMetadata (keys 4-6). False
        when that answer is not at hand (a KRaft cluster is then asked for fenced brokers,
        which is what this saves on a ZooKeeper-mode one)."""
        conn = self._wire_reads.first_conn()
        if conn is not None:
            return kafkawire.zookeeper_mode(conn.versions)
        return kp.zookeeper_mode(self._kafka_python_client())

    def _fenced_brokers(self) -> list[Broker]:
        """KRaft brokers that are registered but fenced (stopped heartbeating: crashed, killed,
        cut off), as dead brokers with their rack and address. Only Kafka 4.0+ answers
        DescribeCluster v2; older brokers (and ZooKeeper mode, where a dead broker's
        registration is gone) list live brokers only, so this is empty there."""
        conn = self._wire_reads.first_conn()  # any broker answers (after its DescribeLogDirs)
        if conn is not None:
            try:
                return fenced_brokers(conn.describe_cluster())
            except kafkawire.WireError:
                pass  # kafka-python answers
        return kp.fenced(self._kafka_python_client(), self._bootstrap)

    def _configs_later(self, names: list[str]) -> Callable[[], Configs]:
        """Send DescribeConfigs for these topics and return what waits for the answers: per
        topic its overrides (what `/config/topics/<t>` holds) and its effective
        min.insync.replicas with its source (the answering broker's view of broker-level
        values). On kreplica's own connections when this snapshot has them; confluent-kafka
        otherwise, or when a broker's answer is not one this reader takes (it then names the
        problem)."""
        if not names:
            return lambda: ({}, {})
        if not self._wire_reads.conns:
            return self._confluent.configs_later(names)
        return self._wire_reads.configs_later(names, self._confluent.configs_later)

    def _reassignments(
        self, names: list[str]
    ) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]:
        """(topic, partition) → (adding, removing) for reassignments in flight."""
        wanted = set(names)
        wire = self._wire_reads.reassignments(self._controller)
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
        to its HOST:PORT for errors. Each broker is asked on this snapshot's own connection
        to it when there is one, through kafka-python otherwise (kafka-python waits for each
        broker before asking the next when given them all; a thread per broker keeps them in
        flight together on its I/O loop), while the caller goes on with other requests."""
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
                conn = self._wire_reads.conn(broker_id)
                if conn is not None:
                    return [conn.describe_log_dirs(wanted, broker_id)]
            except (kafkawire.NotAuthorized, kafkawire.WireTimeout) as exc:
                return exc  # refused (no sizes), or silent (reported below)
            except kafkawire.WireError as exc:
                if broker_id not in self._wire_reads.conns:
                    return exc  # the snapshot gave up and closed its connections: no one waits
                # kafka-python says what went wrong, or answers
            return kp.log_dirs(self._kafka_python_client(), wanted, broker_id)

        pool = ThreadPoolExecutor(len(ids), thread_name_prefix="kreplica-log-dirs")
        futures = [pool.submit(ask, broker_id) for broker_id in ids]
        pool.shutdown(wait=False)  # its threads end with their request

        def answers() -> list[Mapping[str, Any]]:
            results = [future.result() for future in futures]
            if any(isinstance(r, kafkawire.NotAuthorized) for r in results):
                return []  # a principal without DESCRIBE on the cluster has no sizes
            if not any(isinstance(r, BaseException) for r in results):
                return [entry for r in results for entry in r]  # type: ignore[union-attr]
            return kp.merge_log_dirs(ids, results, brokers)

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
        boot = self._wire_reads.bootstrap_metadata() if self._wire else None
        try:
            return self._read(topics, columnar, captured_at, boot)
        finally:
            # on every path, a failed one included (an unknown topic, a broker that stopped
            # answering): the bootstrap connection and the brokers' ones are closed
            if boot is not None:
                boot[0].close()
            self._wire_reads.close()

    def _read(
        self,
        topics: Iterable[str] | None,
        columnar: bool,
        captured_at: str,
        boot: tuple[BrokerConnection, str | None, list[Broker], Broker | None] | None,
    ) -> ClusterSnapshot:
        wanted = None if topics is None else list(topics)
        if boot is not None:
            conn, cluster_id, live, self._controller = boot
        else:
            cluster_id, live, self._controller = self._confluent.live_brokers()
        addresses: dict[int, str | None] = {b.id: f"{b.host}:{b.port}" for b in live}
        early = None
        if self._wire:
            self._wire_reads.open(live)
            if wanted is None and self.read_sizes:
                # every partition each broker holds, asked before the metadata is in: the
                # brokers' answers (the longest wait of a read) come while it is read
                early = self._log_dirs(None, addresses)
        else:
            # after the first answer: refused credentials are reported by librdkafka at once,
            # while kafka-python would retry them for the whole timeout
            self._kafka_python.start()
        metadata = WireReads.topics(conn) if boot is not None else None
        if metadata is None:
            metadata = self._confluent.topics()
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
        self._wire_reads.close()
        read = SnapshotRead(names, metadata, configs, min_isr, answer)
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
