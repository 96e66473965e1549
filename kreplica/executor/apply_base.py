"""The apply loop's ports and state: what it needs from a cluster and a submitter, what it
returns, its clock, and ApplierState, the state every room of the Applier shares
(kreplica.executor.apply: the run; apply_pace: windows, budget and pace; apply_wait:
waiting for moves; apply_dirs: moves between log dirs)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kreplica.errors import (
    ExitCode,
    KreplicaError,
)
from kreplica.executor.canary import Canary
from kreplica.executor.dirmoves import DirKey, ReplicaLog
from kreplica.executor.events import Emit
from kreplica.executor.journal import Journal
from kreplica.executor.moves import Move
from kreplica.executor.options import ApplyOptions
from kreplica.executor.pace import (
    PaceController,
)
from kreplica.executor.planfile import PlanFile
from kreplica.model import ClusterSnapshot

Key = tuple[str, int]
MISMATCH_GRACE_S = 5.0  # how long a finished move may show other replicas (metadata lag)
Resource = tuple[str, str]
CREATE_BATCH = 500  # KRaft refuses one huge CreatePartitions batch
# While moves run, a failed read of the cluster (a broker just killed is still in the metadata
# for a few seconds, so DescribeLogDirs to it fails) is retried this long before apply gives up
# (the moves go on; --resume picks them up).
READ_RETRY_S = 120.0
WINDOW_POLL_S = 30.0  # a wait for the window or the budget looks again this often
CANARY_EVERY_S = 0.1  # --pace auto: a canary record to every partition this often
BASELINE_CHUNKS = 5  # --pace auto: short p99s before the first wave, their median the baseline


class _Cancelled(Exception):
    """`kreplica cancel` asked this apply to stop."""


class ApplyCancelled(KreplicaError):
    """The apply stopped because `kreplica cancel` was run: the plan is not applied."""

    exit_code = ExitCode.VERIFY_FAILED
    code = "cancelled"


class Cluster(Protocol):
    """What apply needs from a cluster (kreplica.executor.kafka_cluster.KafkaCluster)."""

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot: ...
    def in_flight(self) -> Mapping[Key, Any]: ...
    def replica_bytes(
        self, topics: Sequence[str], brokers: Collection[int]
    ) -> dict[tuple[str, int, int], int]: ...
    def configs(self, kind: str, names: Sequence[str]) -> dict[str, dict[str, str]]: ...
    def alter_configs(self, kind: str, name: str, values: Mapping[str, str | None]) -> None: ...
    def alter_reassignments(self, targets: Mapping[Key, Sequence[int] | None]) -> None: ...
    def create_partitions(self, topic: str, total: int, new: Sequence[Sequence[int]]) -> None: ...
    def replica_logs(
        self, topics: Sequence[str], brokers: Collection[int]
    ) -> Mapping[DirKey, ReplicaLog]: ...
    def alter_replica_log_dirs(
        self, targets: Mapping[DirKey, str], *, missing_ok: bool = False
    ) -> None: ...


class Submitter(Protocol):
    name: str

    def submit(self, targets: Mapping[Key, Sequence[int]]) -> None: ...


@dataclass
class ApplyResult:
    moved: list[Key] = field(default_factory=list)
    created: list[Key] = field(default_factory=list)
    already_done: list[Key] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    waves: int = 0
    bytes_total: int | None = 0
    seconds: float = 0.0
    nothing_to_do: bool = False
    leaders_off: list[Key] = field(default_factory=list)  # leading off the preferred replica
    dir_moved: list[DirKey] = field(default_factory=list)  # replicas moved between log dirs
    # submitted by an earlier run, found done on resume (they finished while no kreplica ran)
    completed_meanwhile: list[Key] = field(default_factory=list)
    pace: dict[str, Any] | None = None  # --pace auto: rates, changes, canary figures
    election: Election | None = None  # the leader election after the moves, when asked for


@dataclass
class Election:
    """A preferred leader election after an apply: the partitions elected ("topic-p") and
    those that kept their leader, with why."""

    elected: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


@dataclass
class _Clock:
    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    wall: Callable[[], float] = time.time


def _round(ms: float | None) -> float | None:
    return None if ms is None else round(ms, 1)


def _key_text(key: Key) -> str:
    return f"{key[0]}-{key[1]}"


class ApplierState:
    """What one apply (or resume) of one plan on one cluster holds."""

    def __init__(
        self,
        cluster: Cluster,
        submitter: Submitter,
        plan: PlanFile,
        journal: Journal,
        options: ApplyOptions,
        emit: Emit = lambda event: None,
        clock: _Clock | None = None,
        source: Mapping[str, str] | None = None,
    ) -> None:
        self.cluster = cluster
        self.source = dict(source) if source else None  # journalled: what --resume reconnects to
        self.submitter = submitter
        self.plan = plan
        self.journal = journal
        self.options = options
        self.emit = emit
        self.clock = clock or _Clock()
        self._error_journalled = False
        self._started = False  # this run journalled its start (and may have set throttles)
        self._everything: ClusterSnapshot | None = None  # every topic, read before starting
        self._rate_brokers: list[str] = []  # brokers whose throttle rate kreplica set
        self._pace: PaceController | None = None
        self._canary: Canary | None = None
        self._pace_at = 0.0  # when the last pace sample was taken
        self._pace_sizes: dict[tuple[Key, int], int] = {}  # new replica -> bytes, last sample
        self._pace_log: dict[str, Any] = {}
        self._waves_started: list[tuple[float, int]] = []  # (wall time, bytes) for the budget

    def _bytes_total(self, moves: Sequence[Move]) -> int | None:
        total = 0
        for move in moves:
            copy = move.bytes_to_copy
            if copy is None:
                return None
            total += copy
        return total
