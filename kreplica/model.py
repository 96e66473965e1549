"""The data kreplica works on: a cluster snapshot in, a plan out.

Pure and immutable (standard library only). Sources build these objects; the planner reads
snapshots and returns plans; render, executor and CLI consume plans. Replicas are always
tuples of broker ids with the preferred leader first, as Kafka stores them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from kreplica.errors import UnknownTopicError


def unknown_topics_error(known: Iterable[str], missing: Sequence[str]) -> UnknownTopicError:
    """The one message for topics a cluster does not have, whichever source or layer asks."""
    names = sorted(set(known))
    shown = ", ".join(names[:8]) or "none"
    more = ", ..." if len(names) > 8 else ""
    listed = ", ".join(repr(m) for m in missing)
    verb = "does" if len(missing) == 1 else "do"
    return UnknownTopicError(
        f"topic {listed} {verb} not exist in this cluster (topics: {shown}{more}); check the name"
    )


@dataclass(frozen=True, slots=True)
class LogDir:
    """One log dir of a broker (one disk in JBOD): its path and, when the source knows them
    (DescribeLogDirs v4, Kafka 3.3+, or a snapshot that recorded them), the bytes of its
    file system in total and still usable. None: not known."""

    path: str
    total_bytes: int | None = None
    usable_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Broker:
    id: int
    rack: str | None = None
    host: str | None = None
    port: int | None = None
    alive: bool = True
    log_dirs: tuple[str, ...] | None = None  # paths of its log dirs, when the source knows them
    # Its log dirs with their disk figures (None: the source read none, e.g. ZooKeeper). When
    # given without `log_dirs`, `log_dirs` is filled with their paths, so both agree.
    disks: tuple[LogDir, ...] | None = None

    def __post_init__(self) -> None:
        if self.disks is not None and self.log_dirs is None:
            object.__setattr__(self, "log_dirs", tuple(d.path for d in self.disks))


@dataclass(frozen=True, slots=True)
class Partition:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int | None = None  # None: unknown (snapshot without state); -1: offline
    isr: tuple[int, ...] | None = None  # None: unknown, treated as all replicas in sync
    size_bytes: int | None = None  # size of one replica's log, when known
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    # Per replica, in the order of `replicas` (None as a whole: unknown; None inside: unknown
    # for that replica): the log dir it lives in, and its own log size (`size_bytes` is the
    # largest of them).
    replica_dirs: tuple[str | None, ...] | None = None
    replica_sizes: tuple[int | None, ...] | None = None
    # Traffic measured over a window (kreplica.sources.traffic, or a snapshot taken with
    # `snapshot --traffic`): bytes written per second, and how many consumer groups read it
    # (None: not measured; fanout None also when a group reads it without committing).
    bytes_in_per_s: float | None = None
    fanout: int | None = None

    @property
    def in_sync(self) -> tuple[int, ...]:
        if self.isr is None:
            return self.replicas
        return tuple(r for r in self.replicas if r in self.isr)

    @property
    def out_of_sync(self) -> tuple[int, ...]:
        if self.isr is None:
            return ()
        return tuple(r for r in self.replicas if r not in self.isr)

    @property
    def current_leader(self) -> int | None:
        """The leader now: the recorded one, else the preferred one (first replica)."""
        if self.leader is not None and self.leader >= 0:
            return self.leader
        if self.leader is None and self.replicas:
            return self.replicas[0]
        return None

    @property
    def reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)


# Kafka's own default of min.insync.replicas (used when nothing else is known).
KAFKA_DEFAULT_MIN_ISR = 1

# Where a topic's effective min.insync.replicas comes from, when a source saw every layer:
# the topic's override, the dynamic cluster-wide broker default (`kafka-configs --entity-type
# brokers --entity-default`), a broker's own config (server.properties, or a dynamic per-broker
# value), or Kafka's built-in default. Any other text (e.g. "kafka default; static broker config
# not visible in ZooKeeper") means the value is assumed, not read.
MIN_ISR_SOURCES = ("topic", "cluster default", "broker config", "kafka default")
MIN_ISR_NOT_RECORDED = "kafka default; assumed, the snapshot has no min_insync_replicas"


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    partitions: tuple[Partition, ...]  # sorted by partition id
    configs: Mapping[str, str] = field(default_factory=dict)  # the topic's overrides only
    # The min.insync.replicas in force and where it comes from (MIN_ISR_SOURCES), as the source
    # reported it; None when it did not (a snapshot written before kreplica recorded it).
    effective_min_isr: int | None = None
    min_isr_source: str | None = None

    @property
    def replication_factor(self) -> int:
        """RF as Kafka reports it: the replica count of partition 0 (the lowest id; 0 if
        the topic has no partitions)."""
        if not self.partitions:
            return 0
        return len(self.partitions[0].replicas)

    @property
    def _min_isr_override(self) -> int | None:
        value = self.configs.get("min.insync.replicas")
        return int(value) if value is not None and str(value).isdigit() else None

    @property
    def min_insync_replicas(self) -> int:
        """The effective min.insync.replicas: the topic's override, else what the source
        reported (a cluster or broker default), else Kafka's default 1."""
        override = self._min_isr_override
        if override is not None:
            return override
        if self.effective_min_isr is not None:
            return self.effective_min_isr
        return KAFKA_DEFAULT_MIN_ISR

    @property
    def min_insync_replicas_source(self) -> str:
        """Where `min_insync_replicas` comes from ("topic", "cluster default", ...)."""
        if self._min_isr_override is not None:
            return "topic"
        if self.effective_min_isr is not None:
            return self.min_isr_source or "source not recorded"
        return MIN_ISR_NOT_RECORDED

    @property
    def min_insync_replicas_assumed(self) -> bool:
        """True when the value was not read from the cluster but assumed (Kafka's default,
        where the source cannot see every layer, or the snapshot did not record it)."""
        if self._min_isr_override is not None:
            return False
        if self.effective_min_isr is None:
            return True
        return self.min_isr_source is not None and self.min_isr_source not in MIN_ISR_SOURCES

    def min_insync_replicas_text(self) -> str:
        """`min.insync.replicas=2 (cluster default)`: the value and where it comes from."""
        return f"min.insync.replicas={self.min_insync_replicas} ({self.min_insync_replicas_source})"

    def assignment(self) -> dict[int, tuple[int, ...]]:
        return {p.partition: p.replicas for p in self.partitions}


@dataclass(frozen=True, slots=True)
class TrafficWindow:
    """When the partitions' traffic was measured: the window's length in seconds (as
    elapsed between the two reads) and the UTC time the window ended."""

    window_s: float
    measured_at: str
    # rates read from metrics (--traffic-from): each the highest of its rates over windows of
    # this many seconds within window_s (None: one measurement over the whole window)
    peak_of_s: float | None = None
    origin: str | None = None  # where they were read (prometheus://HOST:PORT); None: the brokers


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    brokers: tuple[Broker, ...]  # sorted by id
    topics: tuple[Topic, ...]  # sorted by name
    cluster_id: str | None = None
    source: str | None = None
    captured_at: str | None = None
    traffic: TrafficWindow | None = None  # None: the partitions carry no measured rates

    def broker_ids(self) -> list[int]:
        return [b.id for b in self.brokers]

    def racks(self) -> dict[int, str | None]:
        return {b.id: b.rack for b in self.brokers}

    def live_broker_ids(self) -> frozenset[int]:
        """Brokers that are up. A replica on any other broker (marked not alive, or not
        listed at all) is on a dead broker: Kafka rejects it in a reassignment."""
        return frozenset(b.id for b in self.brokers if b.alive)

    def partition_counts(self) -> dict[str, int]:
        """Partitions per topic name."""
        return {t.name: len(t.partitions) for t in self.topics}

    def topic(self, name: str) -> Topic:
        for t in self.topics:
            if t.name == name:
                return t
        raise unknown_topics_error([t.name for t in self.topics], [name])

    def fingerprint(self) -> str:
        """A stable hash of brokers and assignments (what a plan depends on)."""
        payload = {
            "brokers": [[b.id, b.rack] for b in self.brokers],
            "topics": [
                [t.name, [[p.partition, list(p.replicas)] for p in t.partitions]]
                for t in self.topics
            ],
        }
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """One partition before and after a plan. `before` is None for a partition to create."""

    topic: str
    partition: int
    before: tuple[int, ...] | None
    after: tuple[int, ...]
    size_bytes: int | None = None
    leader_now: int | None = None  # the leader when planned; None: unknown, offline or new
    # The log dir of each replica of `after`, in its order, as the reassignment JSON's
    # `log_dirs` carries it: a path, or "any" (the broker chooses; a replica that stays stays
    # where it is). None: "any" for every replica.
    log_dirs: tuple[str, ...] | None = None

    @property
    def is_new(self) -> bool:
        return self.before is None

    @property
    def added(self) -> tuple[int, ...]:
        old = self.before or ()
        return tuple(b for b in self.after if b not in old)

    @property
    def removed(self) -> tuple[int, ...]:
        return tuple(b for b in (self.before or ()) if b not in self.after)

    @property
    def leader_before(self) -> int | None:
        """The leader now when known, else the preferred leader (first replica) before."""
        if self.leader_now is not None:
            return self.leader_now
        return self.before[0] if self.before else None

    @property
    def leader_after(self) -> int | None:
        """The preferred leader after: the first replica, which Kafka elects."""
        return self.after[0] if self.after else None

    @property
    def leader_changed(self) -> bool:
        return not self.is_new and self.leader_before != self.leader_after

    @property
    def changed(self) -> bool:
        """Replicas change, or a replica is sent to a named log dir (an intra-broker move)."""
        return self.before != self.after or (
            self.log_dirs is not None and any(d != "any" for d in self.log_dirs)
        )


@dataclass(frozen=True, slots=True)
class Finding:
    """A warning or error about a plan or an assignment (used by reports and `check`)."""

    level: str  # "error" | "warning" | "info"
    code: str  # stable machine name, e.g. "rack-violation"
    message: str
    topic: str | None = None
    partition: int | None = None


class PlanReport(TypedDict, total=False):
    """The numbers a plan carries (kreplica.planner.report.build_report, the array planner's
    measure_report, and what the broker operations add), as the plan document and `--output
    json` hold them. Every key may be missing: a report read back from an older plan document
    lacks later ones."""

    strategy: str
    topics: list[str]
    eligible_brokers: list[int]
    # movement against the lower bound
    partitions_changed: int
    partitions_created: int
    replicas_added: int
    replicas_removed: int
    existing_replicas_moved: int
    lower_bound_replicas_added: int
    lower_bound_replicas_removed: int
    bytes_to_move: int | None  # None: the source has no partition sizes
    bytes_lower_bound: int | None
    cross_rack_bytes: int | None  # None: no sizes, or no racks
    leaders_changed: int
    rack_violations_before: int
    rack_violations_after: int
    # per broker
    broker_replicas_before: dict[int, int]
    broker_replicas_peak: dict[int, int]  # while every move of the plan is in flight
    broker_replicas_after: dict[int, int]
    broker_leaders_before: dict[int, int]  # the actual leaders
    broker_preferred_leaders_before: dict[int, int]
    broker_leaders_after: dict[int, int]  # preferred (first) replicas after
    broker_bytes_in: dict[int, int]
    broker_bytes_out: dict[int, int]
    # spreads (max - min replicas per broker)
    topic_spread_before: dict[str, int]
    topic_spread_after: dict[str, int]
    cluster_spread_before: int
    cluster_spread_after: int
    spread_scope: str  # drain: over the brokers that stay
    fallbacks: list[dict[str, object]]  # {topic, partition, reason}: a strategy gave way
    placement_from: dict[str, str]  # topic -> the layout its new replicas follow
    disk: dict[str, object]  # kreplica.planner.disk.disk_report
    sizes_read: bool  # False: planned with --no-sizes
    engine: dict[str, str]  # {name, why}: the planner make_plan chose (arrays or objects)
    # the broker operations (kreplica.planner.brokers)
    operation: str  # drain, add-brokers, replace, rebalance
    leader_spread_before: int
    leader_spread_after: int
    drained_brokers: list[int]
    keep_rack_share: bool
    replicas_left_on_drained: int
    partitions_led_by_drained: int
    preferred_leader_changes: dict[str, list[int]]  # "topic-p" -> [old, new] preferred leader
    new_brokers: list[int]
    by: str  # count or bytes
    share: int
    new_broker_deficit: dict[int, int]
    lower_bound_moves: int
    max_moves: int | None
    max_bytes: int | None
    leaders_reordered: int
    broker_bytes_before: dict[int, int]
    broker_bytes_after: dict[int, int]
    replaced_broker: int
    replacement_broker: int
    traffic: dict[str, object]  # rebalance --by traffic: bands, loads before and after, bound


@dataclass(frozen=True, slots=True)
class Plan:
    """What to change, computed from one snapshot. Only changed partitions are listed."""

    cluster_id: str | None
    snapshot_fingerprint: str
    strategy: str
    # A tuple, or from the array planner a lazy sequence over arrays (kreplica/columns.py)
    changes: Sequence[PartitionChange]
    report: PlanReport = field(default_factory=PlanReport)
    findings: tuple[Finding, ...] = ()

    @property
    def reassignments(self) -> Sequence[PartitionChange]:
        """Changes to existing partitions (what kafka-reassign-partitions executes)."""
        if getattr(self.changes, "columnar", False):
            return self.changes  # the array planner only changes existing partitions
        return tuple(c for c in self.changes if not c.is_new and c.changed)

    @property
    def new_partitions(self) -> Sequence[PartitionChange]:
        if getattr(self.changes, "columnar", False):
            return ()
        return tuple(c for c in self.changes if c.is_new)
