"""Writes to a Kafka cluster: reassignments, throttle configs, new partitions, leader elections.

Reads go through the AdminClient source (the same code `kreplica snapshot` uses); writes use
confluent-kafka where it has the call (IncrementalAlterConfigs, CreatePartitions, ElectLeaders)
and kafka-python for what it lacks (AlterPartitionReassignments, ListPartitionReassignments,
DescribeLogDirs). Every failure becomes one KreplicaError line naming the call and the cause.

Two ways to submit a reassignment, behind one interface (`Submitter`):
- KIP-455 AlterPartitionReassignments (default; any Kafka >= 2.4, KRaft included);
- the `/admin/reassign_partitions` znode (ZooKeeper-mode clusters, `--via zookeeper`),
  create-only: an existing znode means a reassignment is in flight.
Progress, throttles and cancel use the Kafka protocol in both cases (a ZooKeeper-mode controller
lists and cancels znode-submitted moves through KIP-455 too).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kreplica.errors import KreplicaError, ReassignmentInProgress, SourceError
from kreplica.executor.safestart import MIGRATION_FLAG
from kreplica.executor.throttles import BROKER_KEYS, TOPIC_KEYS
from kreplica.model import ClusterSnapshot, TrafficWindow

Key = tuple[str, int]
FIRST_EPOCH = 1  # the first controller's epoch, ZooKeeper's and a KRaft quorum's
FAILOVER_S = 60.0  # how long a write waits for a controller to answer again (a failover)
TOPIC_BATCH = 200  # topics per DescribeConfigs request


class ExecutorError(KreplicaError):
    """A write the cluster refused (exit 1 unless a subclass says otherwise)."""

    code = "executor"


class BrokerDown(SourceError):
    """One broker cannot be reached (the others can): the message names it."""

    code = "broker-down"

    def __init__(self, broker: int, message: str) -> None:
        super().__init__(message)
        self.broker = broker


@dataclass(frozen=True)
class InFlight:
    """A reassignment the cluster reports as running."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


class Submitter(Protocol):
    """How a reassignment reaches the controller."""

    name: str

    def submit(self, targets: Mapping[Key, Sequence[int]]) -> None: ...


# AlterReplicaLogDirs' answers for a replica the broker does not host yet (it keeps the dir).
_NOT_HOSTED_YET = (
    "NotLeaderForPartitionError",
    "NotLeaderOrFollowerError",
    "ReplicaNotAvailableError",
)


class KafkaCluster:
    """One cluster, through its brokers. Built from an AdminSource (reads) it also writes."""

    def __init__(self, source: Any) -> None:
        self.source = source  # kreplica.sources.admin.AdminSource
        self.bootstrap: str = source.bootstrap
        # where a down broker's configs go (kreplica.executor.offline_configs); set by the CLI
        self.offline: Any = None
        self.last_path: str | None = None  # how the last alter_configs reached its broker
        # kreplica.sources.zookeeper.ZooKeeperSource of a ZooKeeper-mode cluster; set by the CLI
        self.zookeeper: Any = None

    def close(self) -> None:
        if self.offline is not None:
            self.offline.close()
        self.source.close()

    @property
    def timeout_s(self) -> float:
        return float(self.source.timeout_s)

    def live_broker_ids(self) -> set[int]:
        """The brokers the cluster lists as up now (DescribeCluster: the controller's view; a
        broker's Metadata answer may still list a broker just killed)."""
        described = self.source.call(
            self.source.confluent_admin().describe_cluster(request_timeout=self.source.timeout_s),
            "describe the cluster",
        )
        return {int(node.id) for node in described.nodes}

    def _live_broker_configs(self, *, together: bool) -> Iterator[tuple[int, Mapping[str, Any]]]:
        """Each live broker's configs, whatever their source, in broker order; a broker that
        does not answer is passed over. `together`: every request in flight at once (all are
        read); otherwise one broker at a time (the caller may stop at the first)."""
        from confluent_kafka.admin import ConfigResource, ResourceType  # type: ignore[attr-defined]

        brokers = sorted(self.live_broker_ids())
        resources = {b: ConfigResource(ResourceType.BROKER, str(b)) for b in brokers}
        admin = self.source.confluent_admin()

        def ask(resource: Any) -> Any:  # one BROKER resource per call (librdkafka's rule)
            return admin.describe_configs([resource], request_timeout=self.source.timeout_s)

        sent = {b: ask(r) for b, r in resources.items()} if together else {}
        for broker, resource in resources.items():
            futures = sent[broker] if together else ask(resource)
            try:
                entries = self.source.call(futures[resource], f"describe broker {broker} configs")
            except SourceError:
                continue
            yield broker, entries

    def static_configs(self, keys: Sequence[str]) -> dict[str, str]:
        """These configs of one live broker, whatever their source (for discovery)."""
        for _broker, entries in self._live_broker_configs(together=False):
            return {
                k: str(entries[k].value)
                for k in keys
                if k in entries and entries[k].value not in (None, "")
            }
        return {}

    def controller_facts(self) -> Any:
        """What a client can tell about the controller and a ZooKeeper-to-KRaft migration
        (kreplica.executor.safestart.ControllerFacts; that module says what cannot be told)."""
        from kafka.errors import KafkaError

        from kreplica.executor.safestart import (
            ControllerFacts,
            flagged_for_migration,
            read_controller_znode,
        )

        migration: str | None = None
        controller: str | None = None
        age: float | None = None
        leaderless = False
        first: bool | None = None
        unknown: list[str] = []
        if self.zookeeper is not None:
            node = self.zookeeper.controller_znode()
            if node is None:
                leaderless = True  # an election is under way
            else:
                data, created = node
                controller, migration = read_controller_znode(data)
                age = time.time() - created
                epoch = self.zookeeper.controller_epoch()
                first = None if epoch is None else epoch <= FIRST_EPOCH
        flags: dict[int, str | None] = {}
        for broker, entries in self._live_broker_configs(together=True):
            entry = entries.get(MIGRATION_FLAG)
            flags[broker] = None if entry is None or entry.value is None else str(entry.value)
        if migration is None:
            migration = flagged_for_migration(flags)
        if self.zookeeper is None:
            try:
                quorum = self.source.kafka_python_admin().describe_metadata_quorum()
                part = quorum["topics"][0]["partitions"][0]
            except (KafkaError, KeyError, IndexError):
                unknown.append(
                    "the controller's age: this cluster does not answer DescribeQuorum "
                    "(ZooKeeper mode?); pass --zookeeper to check it"
                )
            else:
                leader = int(part.get("leader_id", -1))
                leaderless = leader < 0
                epoch = part.get("leader_epoch")
                controller = f"KRaft controller {leader} (epoch {epoch})"
                first = epoch == FIRST_EPOCH if isinstance(epoch, int) else None
                unknown.append(
                    "the controller's age: KRaft tells a client who leads the quorum, not "
                    "since when"
                )
        return ControllerFacts(migration, controller, age, leaderless, first, tuple(unknown))

    # -- reading -----------------------------------------------------------------------------

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot:
        result: ClusterSnapshot = self.source.snapshot(topics)
        return result

    def in_flight(self) -> dict[Key, InFlight]:
        """Every reassignment the controller is running, cluster-wide."""
        listed = self.source.list_reassignments()
        return {
            (tp.topic, tp.partition): InFlight(
                tuple(state.get("replicas") or ()),
                tuple(state.get("adding_replicas") or ()),
                tuple(state.get("removing_replicas") or ()),
            )
            for tp, state in listed.items()
        }

    def replica_bytes(
        self, topics: Sequence[str], brokers: Collection[int]
    ) -> dict[tuple[str, int, int], int]:
        """(topic, partition, broker) -> bytes of that replica's log now on these brokers
        (DescribeLogDirs); a replica being moved between log dirs counts its future log too."""
        from kafka.errors import KafkaError

        if not topics or not brokers:
            return {}
        admin = self.source.kafka_python_admin()
        try:
            answer = admin.describe_log_dirs(topic_partitions=list(topics), brokers=sorted(brokers))
        except KafkaError:
            # one broker just died (still listed): the others' replicas still tell progress
            answer = []
            for broker in sorted(brokers):
                try:
                    answer += admin.describe_log_dirs(
                        topic_partitions=list(topics), brokers=[broker]
                    )
                except KafkaError:
                    continue
        sizes: dict[tuple[str, int, int], int] = {}
        for broker in answer:
            for log_dir in broker.get("log_dirs") or []:
                for topic in log_dir.get("topics") or []:
                    for part in topic.get("partitions") or []:
                        key = (topic["name"], part["partition_index"], int(broker["broker"]))
                        size = int(part.get("partition_size", 0))
                        sizes[key] = max(size, sizes.get(key, 0))
        return sizes

    def replica_logs(self, topics: Sequence[str], brokers: Collection[int]) -> dict[Any, Any]:
        """(topic, partition, broker) -> ReplicaLog (kreplica.executor.dirmoves): the dir each
        replica lives in and its size, and its future log while it moves between dirs
        (DescribeLogDirs `is_future_key`). A read failure is a SourceError."""
        from kafka.errors import KafkaError

        from kreplica.executor.dirmoves import ReplicaLog

        if not topics or not brokers:
            return {}
        try:
            answer = self.source.kafka_python_admin().describe_log_dirs(
                topic_partitions=list(topics), brokers=sorted(brokers)
            )
        except KafkaError as exc:
            raise SourceError(
                f"Kafka at {self.bootstrap} failed to describe log dirs: {exc}"
            ) from None
        current: dict[tuple[str, int, int], tuple[str, int]] = {}
        future: dict[tuple[str, int, int], tuple[str, int]] = {}
        for broker in answer:
            for log_dir in broker.get("log_dirs") or []:
                if log_dir.get("error_code", 0):
                    continue
                for topic in log_dir.get("topics") or []:
                    for part in topic.get("partitions") or []:
                        key = (topic["name"], int(part["partition_index"]), int(broker["broker"]))
                        found = (str(log_dir["log_dir"]), int(part.get("partition_size", 0)))
                        (future if part.get("is_future_key") else current)[key] = found
        out: dict[Any, Any] = {}
        for key, (path, size) in current.items():
            fpath, fsize = future.get(key, (None, 0))
            out[key] = ReplicaLog(path, size, fpath, fsize)
        return out

    def configs(self, kind: str, names: Sequence[str]) -> dict[str, dict[str, str]]:
        """Non-default values of the throttle configs on topics or brokers (kind: "topic" or
        "broker"), as Kafka reports them. A broker that is down is read from ZooKeeper where
        that is open (`offline`); one that cannot be read at all is left out of the answer."""
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            ConfigResource,
            ConfigSource,
            ResourceType,
        )

        resource_type = ResourceType.TOPIC if kind == "topic" else ResourceType.BROKER
        wanted = TOPIC_KEYS if kind == "topic" else BROKER_KEYS
        out: dict[str, dict[str, str]] = {}
        live = self.live_broker_ids() if kind == "broker" and names else set()
        answers: dict[str, Any] = {}
        if kind == "topic":  # many topics in one request (one BROKER resource per request)
            for start in range(0, len(names), TOPIC_BATCH):
                resources = [
                    ConfigResource(resource_type, str(n)) for n in names[start:][:TOPIC_BATCH]
                ]
                futures = self.source.confluent_admin().describe_configs(
                    resources, request_timeout=self.source.timeout_s
                )
                for resource in resources:
                    answers[resource.name] = futures[resource]
        for name in names:
            if kind == "broker" and int(name) not in live:
                stored = self.offline.read(int(name)) if self.offline is not None else None
                if stored is not None:
                    out[str(name)] = {k: v for k, v in stored.items() if k in wanted}
                continue
            future = answers.get(str(name))
            if future is None:
                resource = ConfigResource(resource_type, str(name))
                future = self.source.confluent_admin().describe_configs(
                    [resource], request_timeout=self.source.timeout_s
                )[resource]
            entries = self.source.call(future, f"describe {kind} {name} configs")
            values: dict[str, str] = {}
            for key in wanted:
                entry = entries.get(key)
                if entry is None or entry.value in (None, ""):
                    continue
                if entry.source == ConfigSource.DEFAULT_CONFIG.value:
                    continue
                values[key] = entry.value
            out[str(name)] = values
        return out

    # -- permissions -------------------------------------------------------------------------

    @property
    def principal(self) -> str | None:
        """User:NAME of a SASL login (None with client certificates: the broker maps those)."""
        name = getattr(self.source, "principal", None)
        return str(name) if name else None

    def authorized(
        self, topics: Sequence[str]
    ) -> tuple[set[str] | None, dict[str, set[str] | None]]:
        """The operations this principal may perform on the cluster and on each topic (Kafka's
        AclOperation names); None where the cluster does not say."""
        from confluent_kafka import KafkaException, TopicCollection

        admin = self.source.confluent_admin()
        described = self.source.call(
            admin.describe_cluster(
                include_authorized_operations=True, request_timeout=self.source.timeout_s
            ),
            "describe the cluster's authorized operations",
        )
        cluster_ops = _op_names(described.authorized_operations)
        topic_ops: dict[str, set[str] | None] = {}
        if topics:
            futures = admin.describe_topics(
                TopicCollection(sorted(set(topics))),
                include_authorized_operations=True,
                request_timeout=self.source.timeout_s,
            )
            for name, future in futures.items():
                try:
                    topic_ops[name] = _op_names(
                        future.result(timeout=self.source.timeout_s + 5).authorized_operations
                    )
                except KafkaException as exc:
                    error: Any = exc.args[0] if exc.args else None
                    if getattr(error, "name", lambda: "")() == "TOPIC_AUTHORIZATION_FAILED":
                        topic_ops[name] = set()
                    else:
                        raise SourceError(
                            f"Kafka at {self.bootstrap} failed to describe topic {name!r}: "
                            f"{error.str() if hasattr(error, 'str') else exc}"
                        ) from None
        return cluster_ops, topic_ops

    def require(self, needs: Sequence[Any]) -> None:
        """Refuse (NotAuthorized, one line) when this principal lacks a permission in `needs`
        (kreplica.executor.authz.Need); nothing has been written then."""
        from kreplica.executor.authz import missing, refusal

        if not needs:
            return
        topics = sorted({n.name for n in needs if n.resource == "topic"})
        cluster_ops, topic_ops = self.authorized(topics)
        lacking = missing(needs, cluster_ops, topic_ops)
        if lacking:
            raise refusal(lacking, self.principal, self.bootstrap)

    # -- writing -----------------------------------------------------------------------------

    def alter_configs(self, kind: str, name: str, values: Mapping[str, str | None]) -> None:
        """IncrementalAlterConfigs on one topic or broker: SET a value, DELETE on None. One
        resource per call (confluent-kafka allows one BROKER resource per request)."""
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ResourceType,
        )

        if not values:
            return
        entries = [
            ConfigEntry(
                key,
                value if value is not None else "",
                incremental_operation=(
                    AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
                ),
            )
            for key, value in sorted(values.items())
        ]
        resource_type = ResourceType.TOPIC if kind == "topic" else ResourceType.BROKER
        self.last_path = "the Admin API"
        if kind == "broker" and int(name) not in self.live_broker_ids():
            # the Admin API sends a broker's configs to that broker: down, it cannot take them
            if self.offline is None:
                raise BrokerDown(
                    int(name), f"broker {name} is down: its throttle configs cannot be written now"
                )
            try:
                self.last_path = self.offline.write(int(name), values)
            except SourceError as exc:
                raise BrokerDown(int(name), f"broker {name} is down and {exc}") from None
            return
        resource = ConfigResource(resource_type, str(name), incremental_configs=entries)
        futures = self.source.confluent_admin().incremental_alter_configs(
            [resource], request_timeout=self.source.timeout_s
        )
        for future in futures.values():
            try:
                self.source.call(future, f"set throttle configs on {kind} {name}")
            except SourceError as exc:
                if kind == "broker":  # name the broker, not the bootstrap address
                    raise BrokerDown(
                        int(name), f"broker {name} did not take its throttle configs ({exc})"
                    ) from None
                raise

    def alter_reassignments(self, targets: Mapping[Key, Sequence[int] | None]) -> None:
        """KIP-455: start (replicas) or cancel (None) reassignments; any refusal is raised."""
        from kafka import TopicPartition
        from kafka.errors import (
            KafkaConnectionError,
            KafkaError,
            KafkaTimeoutError,
            NotControllerError,
        )

        if not targets:
            return
        request = {
            TopicPartition(topic, partition): (list(replicas) if replicas is not None else None)
            for (topic, partition), replicas in sorted(targets.items())
        }
        results = None
        deadline = time.monotonic() + FAILOVER_S
        while results is None:
            try:
                results = self.source.kafka_python_admin().alter_partition_reassignments(
                    request, timeout_ms=self._timeout_ms()
                )
            except (KafkaConnectionError, KafkaTimeoutError, NotControllerError) as exc:
                # the controller died or moved: ask again, of a fresh client that looks the
                # new one up (the same targets again change nothing)
                self.source.reset_kafka_python()
                if time.monotonic() > deadline:
                    raise ExecutorError(
                        f"no controller of the cluster at {self.bootstrap} took the "
                        f"reassignment request within {FAILOVER_S:g}s ({exc}); check the "
                        "brokers, then continue with `resume`"
                    ) from None
                time.sleep(1.0)
            except KafkaError as exc:
                raise ExecutorError(
                    f"the controller refused the reassignment request: {exc}"
                ) from None
        failed = sorted(
            (f"{tp.topic}-{tp.partition}", error.__name__)
            for tp, error in (results or {}).items()
            if error is not None and error.__name__ != "NoError"
        )
        if failed:
            shown = ", ".join(f"{where} ({name})" for where, name in failed[:5])
            more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
            if all(name == "NoReassignmentInProgressError" for _, name in failed):
                return  # cancelling what already finished: nothing to undo
            raise ExecutorError(f"Kafka refused the reassignment of {shown}{more}")

    def alter_replica_log_dirs(
        self, targets: Mapping[tuple[str, int, int], str], *, missing_ok: bool = False
    ) -> None:
        """AlterReplicaLogDirs: move each (topic, partition, broker) replica into the named dir
        of its broker (the dir it is in already: a move between dirs running stops). For a
        replica the broker does not host yet it records the dir to create it in and answers
        NotLeaderOrFollower (or ReplicaNotAvailable); `missing_ok` accepts those answers."""
        from kafka import TopicPartitionReplica
        from kafka.errors import KafkaError

        if not targets:
            return
        request = {
            TopicPartitionReplica(topic, partition, broker): path
            for (topic, partition, broker), path in sorted(targets.items())
        }
        try:
            results = self.source.kafka_python_admin().alter_replica_log_dirs(request)
        except KafkaError as exc:
            raise ExecutorError(
                f"Kafka at {self.bootstrap} refused the log dir moves: {exc}"
            ) from None
        failed = sorted(
            (f"{r.topic}-{r.partition} on broker {r.broker_id}", error.__name__)
            for r, error in (results or {}).items()
            if error is not None and error.__name__ != "NoError"
        )
        if missing_ok:
            failed = [(w, n) for w, n in failed if n not in _NOT_HOSTED_YET]
        if failed:
            shown = ", ".join(f"{where} ({name})" for where, name in failed[:5])
            more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
            raise ExecutorError(f"Kafka refused the log dir move of {shown}{more}")

    def create_partitions(self, topic: str, total: int, new: Sequence[Sequence[int]]) -> None:
        """Grow `topic` to `total` partitions placed as `new` (the replicas of each new one)."""
        from confluent_kafka.admin import NewPartitions  # type: ignore[attr-defined]

        request = NewPartitions(topic, total, replica_assignment=[list(r) for r in new])
        futures = self.source.confluent_admin().create_partitions(
            [request], request_timeout=self.source.timeout_s
        )
        for future in futures.values():
            self.source.call(future, f"create partitions of {topic}")

    def create_topic_if_missing(self, topic: str, assignment: Sequence[Sequence[int]]) -> bool:
        """Create `topic` with these replicas per partition unless it exists; True when created.
        Waits until every partition has a leader."""
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

        admin = self.source.confluent_admin()
        if topic in admin.list_topics(timeout=self.source.timeout_s).topics:
            return False
        request = NewTopic(
            topic,
            num_partitions=len(assignment),  # librdkafka wants the count with the assignment
            replica_assignment=[list(r) for r in assignment],
        )
        for future in admin.create_topics(
            [request], request_timeout=self.source.timeout_s
        ).values():
            try:
                self.source.call(future, f"create topic {topic}")
            except SourceError as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc) and "already exists" not in str(exc):
                    raise
                return False
        deadline = time.monotonic() + self.source.timeout_s
        while time.monotonic() < deadline:
            meta = admin.list_topics(topic, timeout=self.source.timeout_s).topics.get(topic)
            if (
                meta is not None
                and meta.error is None
                and len(meta.partitions) == len(assignment)
                and all(p.leader >= 0 for p in meta.partitions.values())
            ):
                break
            time.sleep(0.2)
        return True

    def require_canary(self, topic: str, assignment: Sequence[Sequence[int]], delete: bool) -> None:
        """Refuse (NotAuthorized, one line) before anything is written when this principal may
        not run the canary: an existing topic is checked from its authorized operations; a
        missing one with a CreateTopics that only validates (Create may be granted on the
        cluster or on the topic's name: only Kafka's answer to the request tells)."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

        from kreplica.executor.authz import canary_needs, refusal

        admin = self.source.confluent_admin()
        exists = topic in admin.list_topics(timeout=self.source.timeout_s).topics
        needs = canary_needs(topic, exists=exists, delete=delete)
        if exists:
            self.require(needs)
            return
        request = NewTopic(
            topic, num_partitions=len(assignment), replica_assignment=[list(r) for r in assignment]
        )
        for future in admin.create_topics(
            [request], request_timeout=self.source.timeout_s, validate_only=True
        ).values():
            try:
                future.result(timeout=self.source.timeout_s + 5)
            except KafkaException as exc:
                error: Any = exc.args[0] if exc.args else None
                name = getattr(error, "name", lambda: "")()
                if name in ("TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"):
                    raise refusal(needs, self.principal, self.bootstrap) from None
                # anything else (it appeared meanwhile, a policy): the create itself will say
            except Exception:  # no answer in time: the create itself will say
                pass

    def delete_topic(self, topic: str) -> None:
        admin = self.source.confluent_admin()
        for future in admin.delete_topics([topic], request_timeout=self.source.timeout_s).values():
            self.source.call(future, f"delete topic {topic}")

    def write_rates(
        self,
        keys: Collection[Key],
        window_s: float,
        progress: Callable[[float, float], None] | None = None,
    ) -> tuple[dict[Key, float | None], TrafficWindow]:
        """Bytes/s written to each of `keys` (kreplica.sources.traffic: two ListOffsets reads
        `window_s` apart times bytes per offset; no consumer group read)."""
        from kreplica.sources.traffic import measure

        wanted = set(keys)
        snap, measured = measure(
            self.source,
            window_s,
            sorted({topic for topic, _ in wanted}),
            progress=progress,
            partitions=wanted,
            fanout=False,
        )
        rates = {
            (m.topic, m.partition): m.bytes_in_per_s
            for m in measured
            if (m.topic, m.partition) in wanted
        }
        return rates, snap.traffic or TrafficWindow(window_s, "")

    def out_of_isr(self, exclude: Collection[Key] = ()) -> int:
        """Partitions with a replica out of the ISR now, cluster-wide (one Metadata request),
        those in `exclude` left out."""
        meta = self.source.confluent_admin().list_topics(timeout=self.source.timeout_s)
        count = 0
        for name, topic in meta.topics.items():
            for pid, part in topic.partitions.items():
                if (name, pid) not in exclude and len(part.isrs) < len(part.replicas):
                    count += 1
        return count

    def elect_preferred(self, keys: Sequence[Key]) -> dict[Key, str | None]:
        """Preferred leader election; key -> None when elected (or not needed), else the error."""
        from confluent_kafka import ElectionType, TopicPartition  # ElectionType: top level only

        if not keys:
            return {}
        partitions = [TopicPartition(t, p) for t, p in keys]
        # no request_timeout: confluent-kafka 2.16's binding fails on any keyword here
        # (SystemError "more argument specifiers than keyword list entries"); `call` bounds it
        future = self.source.confluent_admin().elect_leaders(ElectionType.PREFERRED, partitions)
        answer = self.source.call(future, "elect preferred leaders")
        out: dict[Key, str | None] = {}
        for tp, error in (answer or {}).items():
            name = error.name() if error is not None else None
            out[(tp.topic, tp.partition)] = None if name in (None, "ELECTION_NOT_NEEDED") else name
        return out

    def _timeout_ms(self) -> int:
        return max(1000, int(self.source.timeout_s * 1000))


def _op_names(operations: Any) -> set[str] | None:
    if operations is None:
        return None
    return {getattr(op, "name", str(op)) for op in operations}


class KafkaSubmitter:
    """KIP-455 AlterPartitionReassignments."""

    name = "kafka"

    def __init__(self, cluster: KafkaCluster) -> None:
        self._cluster = cluster

    def submit(self, targets: Mapping[Key, Sequence[int]]) -> None:
        self._cluster.alter_reassignments(dict(targets))


REASSIGN_ZNODE = "/admin/reassign_partitions"


def reassign_znode_payload(targets: Mapping[Key, Sequence[int]]) -> bytes:
    """What the controller reads from /admin/reassign_partitions (version 1, sorted)."""
    partitions = [
        {"topic": topic, "partition": partition, "replicas": list(replicas)}
        for (topic, partition), replicas in sorted(targets.items())
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":")).encode()


class ZooKeeperSubmitter:
    """The legacy znode, create-only: a znode already there is a reassignment in flight."""

    name = "zookeeper"

    def __init__(self, zk_source: Any) -> None:
        self._source = zk_source  # kreplica.sources.zookeeper.ZooKeeperSource, connected

    def submit(self, targets: Mapping[Key, Sequence[int]]) -> None:
        from kazoo.exceptions import KazooException, NodeExistsError
        from kazoo.handlers.threading import KazooTimeoutError

        client = self._source.kazoo_client()
        where = f"ZooKeeper at {self._source.connect}"
        try:  # async + a timeout: kazoo's synchronous calls wait without limit
            client.create_async(REASSIGN_ZNODE, reassign_znode_payload(targets), makepath=True).get(
                timeout=self._source.timeout_s
            )
        except NodeExistsError:
            raise ReassignmentInProgress(
                f"{REASSIGN_ZNODE} exists in {where}: a reassignment is in flight; wait for it "
                "(kreplica verify) or apply with the default `via` kafka"
            ) from None
        except (KazooException, KazooTimeoutError) as exc:
            raise ExecutorError(f"{where} refused {REASSIGN_ZNODE}: {exc!r}") from None
