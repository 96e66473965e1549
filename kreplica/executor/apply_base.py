"""The apply loop's ports and state: what it needs from a cluster and a submitter, what it
returns, its clock, and ApplierState, the state every room of the Applier shares
(kreplica.executor.apply: the run; apply_pace: windows, budget and pace; apply_wait:
waiting for moves; apply_dirs: moves between log dirs)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from kreplica.errors import (
    ExitCode,
    KreplicaError,
    ThrottleNotApplied,
)
from kreplica.executor import events as ev
from kreplica.executor.authz import Need
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
from kreplica.executor.safestart import ControllerFacts
from kreplica.executor.throttle_confirm import broker_order, describe_missing, wait_applied
from kreplica.executor.throttle_records import journal_throttles
from kreplica.executor.throttles import one_less
from kreplica.executor.writerate import BrokerLoad
from kreplica.model import ClusterSnapshot, TrafficWindow

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


@runtime_checkable
class Cluster(Protocol):
    """Everything apply, resume and cancel ask of a cluster (kreplica.executor.kafka_cluster.
    KafkaCluster; the unit tests' in-memory one is tests/unit/executor/fakes.py). Checked when
    an apply starts: a cluster lacking one of these is refused, never quietly left unchecked."""

    last_path: str | None  # how the last alter_configs reached its broker ("the Admin API")

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot: ...
    def in_flight(self) -> Mapping[Key, Any]: ...
    def live_broker_ids(self) -> set[int]: ...
    def controller_facts(self) -> ControllerFacts: ...
    # refuses (NotAuthorized) before any write when this principal lacks one of `needs`
    def require(self, needs: Sequence[Need]) -> None: ...
    def out_of_isr(self, exclude: Collection[Key] = ()) -> int: ...
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
    # bytes/s written to each of `keys` over `window_s` (None: not measurable), and the window
    # as measured; `progress` told (seconds waited, seconds to wait) while it waits
    def write_rates(
        self,
        keys: Collection[Key],
        window_s: float,
        progress: Callable[[float, float], None] | None = None,
    ) -> tuple[dict[Key, float | None], TrafficWindow]: ...


@runtime_checkable
class CanaryCluster(Protocol):
    """What `pace`'s canary needs beyond Cluster: a cluster it can produce records to
    (KafkaCluster). Without it (an in-memory cluster) the pace follows the ISR alone, and the
    apply says so."""

    source: Any  # its client settings make the canary's producer

    def require_canary(
        self, topic: str, assignment: Sequence[Sequence[int]], delete: bool
    ) -> None: ...
    def create_topic_if_missing(self, topic: str, assignment: Sequence[Sequence[int]]) -> bool: ...
    def delete_topic(self, topic: str) -> None: ...


def require_port(cluster: object) -> None:
    """TypeError unless `cluster` implements the whole Cluster port."""
    if not isinstance(cluster, Cluster):
        raise TypeError(
            f"{type(cluster).__name__} does not implement kreplica.executor.apply_base.Cluster "
            "(every method apply uses)"
        )


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
    # the moving partitions' write rates and what they take of the throttle (the journal's
    # `write-rates` without its kind; None: no rate known)
    write_rates: dict[str, Any] | None = None
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
        require_port(cluster)
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
        # the moving partitions' write rates (apply_rates), counted in the ETA, and the broker
        # throttles they overload (kreplica.executor.writerate), let pass by
        # `allow_under_write_rate`
        self._rates: dict[Key, float] = {}
        self._over: list[BrokerLoad] = []

    def _bytes_total(self, moves: Sequence[Move]) -> int | None:
        total = 0
        for move in moves:
            copy = move.bytes_to_copy
            if copy is None:
                return None
            total += copy
        return total

    def _live_split(self, brokers: Iterable[str]) -> tuple[list[str], list[int]]:
        """(the live ones, the down ones): a down broker cannot be asked, and reads its
        configs when it starts. When the live brokers cannot be read, all count as live."""
        names = sorted(brokers, key=broker_order)
        try:
            live = {str(b) for b in self.cluster.live_broker_ids()}
        except KreplicaError:
            return names, []
        return [b for b in names if b in live], sorted(int(b) for b in names if b not in live)

    def _set_rates(
        self,
        rates: Mapping[str, Mapping[str, str]],
        existing: Mapping[str, Mapping[str, str]],
        keys: Collection[str],
        what: Literal["moves", "dirs"],
    ) -> None:
        """Write each broker's rate configs (the journal first, with what was there before:
        its `keys` of `existing`), then wait until every live one reports them.

        A broker that reports one of them already proves nothing by reporting it: a change
        written before may not be applied yet (the restore of the run before, say), and would
        unthrottle the moves once it is. It gets the rates one byte/s lower first (never
        faster than asked), and ours once it reports those: it has then applied every change
        written before."""
        _, already_ours = journal_throttles(self.journal.read())
        stepped = [
            name
            for name, values in rates.items()
            if any(existing.get(name, {}).get(k) == v for k, v in values.items())
        ]
        first = {name: one_less(v) if name in stepped else dict(v) for name, v in rates.items()}
        for name in sorted(first, key=broker_order):
            previous = {k: v for k, v in existing.get(name, {}).items() if k in keys}
            if ("broker", name) in already_ours:  # resumed: the journal has what was first
                previous = {}
            self._write_rate(name, previous, first[name])
        if stepped:
            self._confirm_throttles(first, what, announce=False)
            for name in sorted(stepped, key=broker_order):
                self._write_rate(name, {}, dict(rates[name]))
        self._confirm_throttles(rates, what)

    def _write_rate(
        self, name: str, previous: Mapping[str, str], values: Mapping[str, str]
    ) -> None:
        # journal first: if we die right after the write, the restore still knows
        self.journal.append(
            {
                "event": "throttle-set",
                "kind": "broker",
                "name": name,
                "previous": dict(previous),
                "values": dict(values),
            }
        )
        self.cluster.alter_configs("broker", name, values)

    def _confirm_throttles(
        self,
        wanted: Mapping[str, Mapping[str, str]],
        what: Literal["moves", "dirs"],
        *,
        announce: bool = True,
    ) -> None:
        """Before submitting: wait until every live broker in `wanted` (broker id -> the rate
        configs kreplica just wrote) reports them, so no move starts unthrottled; refuse
        (ThrottleNotApplied, exit 11) when one does not within `throttle_confirm_s`. One
        DescribeConfigs round on a healthy cluster."""
        if not wanted:
            return
        live, down = self._live_split(wanted)
        result = wait_applied(
            lambda names: self.cluster.configs("broker", names),
            {b: wanted[b] for b in live},
            timeout_s=self.options.throttle_confirm_s,
            now=self.clock.now,
            sleep=self.clock.sleep,
        )
        if not result.confirmed:
            self._put_back_unapplied(result.missing, wanted)
            first = min(result.missing, key=broker_order)
            rate = next(iter(wanted[first].values()), "?")
            failed = f"; reading it failed: {result.last_error}" if result.last_error else ""
            raise ThrottleNotApplied(
                f"broker {first} has not applied the throttle kreplica set after "
                f"{self.options.throttle_confirm_s:g} s ({describe_missing(result.missing, rate)}"
                f"{failed}): nothing more was submitted, and the throttles kreplica set are "
                "restored unless moves of this plan are running; look at the broker (its log; "
                "in ZooKeeper mode its ZooKeeper session), then apply again with `resume`"
            )
        if announce:
            self._throttle_confirmed(what, live, down, result.seconds, result.rounds)

    def _throttle_confirmed(
        self,
        what: Literal["moves", "dirs", "pace"],
        brokers: Iterable[str],
        down: list[int],
        seconds: float,
        rounds: int,
    ) -> None:
        """Journal and show that every live broker reports the rate kreplica set."""
        event: ev.ThrottleConfirmed = {
            "event": "throttle-confirmed",
            "what": what,
            "brokers": [int(b) for b in sorted(brokers, key=broker_order)],
            "seconds": round(seconds, 3),
            "rounds": rounds,
        }
        if down:
            event["down"] = down
        self.journal.append(event)
        self.emit(event)

    def _put_back_unapplied(
        self, missing: Iterable[str], wanted: Mapping[str, Mapping[str, str]]
    ) -> None:
        """A broker that never applied kreplica's rate still reports what was there before, so
        the restore (which compares with what brokers report) would leave kreplica's value
        stored for the broker to apply later: write what was there before explicitly (it
        applies the two in order). Best effort: what cannot be written is journalled."""
        previous, _ = journal_throttles(self.journal.read())
        for broker in missing:
            before = previous.get(("broker", broker), {})
            try:
                self.cluster.alter_configs(
                    "broker", broker, {key: before.get(key) for key in wanted[broker]}
                )
            except KreplicaError as exc:
                self.emit(
                    {
                        "event": "warning",
                        "message": f"broker {broker}: the rate kreplica set could not be taken "
                        f"back ({exc}); `kreplica throttles --clear` restores it",
                    }
                )
