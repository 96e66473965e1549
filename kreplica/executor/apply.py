"""Apply a plan safely: preflight, throttles, waves, progress, journal, and the way back.

    snapshot, in flight, journal  ->  preflight (refuse with nothing written)
    journal "start"
    throttles: Kafka's lists for the moving partitions, merged with what is set; the previous
               values go to the journal first ("throttle-set"), so they can always be restored
    for each wave (plan_waves; with replica_at_a_time, one replica per partition per round):
        journal "submit", then submit; poll until every partition has its target replicas and
        nothing of it is in flight; journal "complete" per partition and "wave-done"
        (progress events on the way; a stall is reported, and waiting goes on)
    create new partitions with their planned replicas (batches), journal each
    restore the throttles (journal "throttle-restored"), journal "finish"

Interrupted (Ctrl-C, a crash, kill -9): whatever was submitted keeps moving in the cluster, so
the throttles stay (removing them would unthrottle a running move) and `--resume` picks up from
the journal without submitting anything twice. `cancel` stops the moves and restores throttles.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from kreplica.errors import (
    ExitCode,
    InputError,
    KreplicaError,
    ReassignmentInProgress,
    SourceError,
    StalePlan,
    UnknownTopicError,
    UnsafeCancel,
    UsageError,
    VerificationFailed,
)
from kreplica.executor import events as ev
from kreplica.executor import throttle_records
from kreplica.executor.authz import CLUSTER, Need, apply_needs, throttle_needs
from kreplica.executor.canary import CANARY_TOPIC, Canary, canary_assignment
from kreplica.executor.cancelguard import cancel_risks, refusal_text
from kreplica.executor.dirmoves import DirKey, ReplicaLog, is_done
from kreplica.executor.dirmoves import copied as dir_copied
from kreplica.executor.events import Emit
from kreplica.executor.journal import Journal, fold
from kreplica.executor.kafka_cluster import BrokerDown
from kreplica.executor.moves import Move
from kreplica.executor.options import ApplyOptions
from kreplica.executor.pace import (
    Decision,
    PaceController,
    PaceSettings,
    Sample,
    baseline_p99,
    p99,
)
from kreplica.executor.planfile import PlanFile
from kreplica.executor.preflight import Preflight, preflight
from kreplica.executor.safestart import ControllerFacts, check_controller, check_safe_start
from kreplica.executor.throttles import (
    ALTER_DIRS_RATE,
    BROKER_KEYS,
    FOLLOWER_RATE,
    LEADER_RATE,
    MAX_CONFIG_VALUE,
    TOPIC_KEYS,
    InFlight,
    fit_to_limit,
    throttle_plan,
)
from kreplica.executor.waves import expand_steps, plan_waves
from kreplica.executor.window import budget_wait
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


# kept in throttle_records (what journals say of throttles); the apply loop's names
_journal_throttles = throttle_records.journal_throttles
list_throttles = throttle_records.list_throttles
restore_journal_throttles = throttle_records.restore_journal_throttles


class Applier:
    """One apply (or resume) of one plan on one cluster."""

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

    # -- the whole run -----------------------------------------------------------------------

    def run(self) -> ApplyResult:
        require_moves(self.plan)
        with self.journal.lock():  # one apply, resume or cancel of a plan at a time
            cancel_marker(self.journal).unlink(missing_ok=True)  # an old request is not ours
            try:
                return self._run()
            except KreplicaError as exc:
                self._stopped_on_error(exc)
                raise
            except _Cancelled:
                in_flight = self.cluster.in_flight()
                event: ev.Cancel = {"event": "cancel", "partitions": []}
                forced = _marker_forced(cancel_marker(self.journal))
                if forced:  # `cancel --force` overrode the guard: on the record
                    event["forced"] = forced
                self.journal.append(event)
                still = sorted(k for k in self.plan.targets if k in in_flight)
                if still:  # submitted after the cancel looked: cancel those too
                    self.cluster.alter_reassignments(dict.fromkeys(still))
                cancel_dir_moves(self.cluster, self.plan)
                self.restore_throttles()
                cancel_marker(self.journal).unlink(missing_ok=True)
                raise ApplyCancelled(
                    f"cancelled by kreplica cancel: the moves in flight returned to their old "
                    f"replicas and the throttles are restored; {self.plan.path} is not applied "
                    "(kreplica verify shows what was done)"
                ) from None
            finally:
                self._stop_pace()  # the canary stops whatever happened

    def _run(self) -> ApplyResult:
        started = self.clock.now()
        events = self.journal.read()
        if events and not self.options.resume:
            state = self.journal.state()
            if not (state.finished or state.cancelled):
                raise UsageError(
                    f"{self.journal.path} shows an apply of this plan that did not finish; "
                    "continue it with `resume`, or stop it with kreplica cancel"
                )
        if self.options.resume and not events:
            raise UsageError(
                f"`resume`: no journal at {self.journal.path}, so nothing to resume; "
                "apply without `resume`"
            )
        submits = {
            (str(e["topic"]), int(e["partition"])): e for e in events if e.get("event") == "submit"
        }
        submitted = set(submits)
        try:
            snapshot = self.cluster.snapshot(self.plan.topics)
            in_flight = set(self.cluster.in_flight())
        except UnknownTopicError:
            raise
        except SourceError:
            self._unsettled_controller()  # no controller answers: mid-migration, an election?
            raise
        check = preflight(
            snapshot,
            self.plan,
            in_flight,
            submitted=submitted,
            additional=self.options.additional,
            on_drift=self.options.on_drift,
            allow_under_min_isr=self.options.allow_under_min_isr,
        )
        result = ApplyResult(
            already_done=list(check.done), skipped=list(check.skipped), warnings=check.warnings
        )
        for warning in check.warnings:
            self.emit({"event": "warning", "message": warning})
        dir_todo = self._dir_todo(snapshot, result)
        # submitted by an apply that died, finished while no kreplica watched: journal them
        meanwhile = [k for k in check.done if k in set(fold(events).pending)]
        result.completed_meanwhile = meanwhile
        if not check.todo and not check.waiting and not check.create and not dir_todo:
            result.nothing_to_do = True
            self._journal_complete(meanwhile)
            if events and not any(e.get("event") == "finish" for e in events):
                self.restore_throttles()
                self.journal.append({"event": "finish", "already_done": len(check.done)})
            self.emit({"event": "nothing-to-do", "done": len(check.done)})
            return result
        self._safe_start(in_flight)  # refused: nothing written, no journal
        self._require_permissions(check, dir_todo)  # refused: nothing written, no journal
        start: ev.Start = {
            "event": "start",
            "plan": str(self.plan.path),
            "cluster_id": snapshot.cluster_id,
            "resume": self.options.resume,
            "todo": len(check.todo),
            "waiting": len(check.waiting),
            "create": len(check.create),
            "dir_moves": len(dir_todo),
            "via": self.submitter.name,
        }
        if self.source:
            start["source"] = self.source
        if self.options.elect_leaders:
            start["elect_leaders"] = True
        self.journal.append(start)
        self._started = True
        self._journal_complete(meanwhile)
        sizes = {(t.name, p.partition): p.size_bytes for t in snapshot.topics for p in t.partitions}
        waiting = [  # what the journal says was submitted, as it was submitted
            Move(
                k[0],
                k[1],
                tuple(submits[k].get("before") or ()),
                tuple(submits[k]["after"]),
                sizes.get(k),
            )
            for k in check.waiting
        ]
        result.bytes_total = self._bytes_total([*waiting, *check.todo])
        self._report_leftovers("start", {})
        if check.todo and not waiting:  # nothing of ours moves yet: no throttle while waiting
            self._wait_for_window(1, [])
        self._set_throttles([*waiting, *check.todo], snapshot)  # a new rate applies to both
        self._start_pace(snapshot, check)
        if waiting:
            self.emit({"event": "resume-wait", "partitions": [m.name for m in waiting]})
            self._wait({m.key: m.after for m in waiting}, {m.key: m for m in waiting}, wave=0)
            result.moved += check.waiting
        wave_number = 0
        for wave in plan_waves(
            self._steps(check.todo),
            max_partitions=self.options.max_partitions,
            max_per_broker=self.options.max_per_broker,
            order=self.options.order,
        ):
            wave_number += 1
            self._wait_for_window(wave_number, wave)
            self._waves_started.append((self.clock.wall(), self._bytes_total(wave) or 0))
            self._run_wave(wave_number, wave)
        result.moved += [m.key for m in check.todo]
        result.waves = wave_number
        result.created = self._create(check, snapshot)
        if dir_todo:
            wave_number += 1
            result.dir_moved = self._move_dirs(wave_number, dir_todo)
            result.waves = wave_number
        set_here = _journal_throttles(self.journal.read())[1]
        self.restore_throttles()
        self._report_leftovers("end", set_here)
        after = self.cluster.snapshot(self.plan.topics)
        changed = set(result.moved) | set(result.created)
        result.leaders_off = sorted(
            (t.name, p.partition)
            for t in after.topics
            for p in t.partitions
            if (t.name, p.partition) in changed
            and p.leader is not None
            and p.replicas
            and p.leader >= 0
            and p.leader != p.replicas[0]
        )
        result.seconds = self.clock.now() - started
        result.pace = self._pace_summary()
        self.journal.append(
            {
                "event": "finish",
                "moved": len(result.moved),
                "created": len(result.created),
                "seconds": round(result.seconds, 3),
            }
        )
        self.emit({"event": "finish", "moved": len(result.moved), "created": len(result.created)})
        return result

    # -- pieces ------------------------------------------------------------------------------

    def _journal_complete(self, keys: Sequence[Key]) -> None:
        for key in keys:
            self.journal.append(
                {"event": "complete", "topic": key[0], "partition": key[1], "while_down": True}
            )
            self.emit({"event": "partition-done", "partition": _key_text(key)})

    # -- windows and the byte budget -----------------------------------------------------------

    def _moment(self) -> datetime:
        return datetime.fromtimestamp(self.clock.wall(), tz=self.options.window_tz)

    def _window_closed(self) -> bool:
        window = self.options.window
        return window is not None and not window.is_open(self._moment())

    def _wait_for_window(self, number: int, wave: Sequence[Move]) -> None:
        """Before a wave: wait (journalled, shown) while outside the window or over the byte
        budget; a cancel still stops the wait."""
        waited = False
        while True:
            window, budget = self.options.window, self.options.max_bytes_per_hour
            seconds, reason = 0.0, ""
            if window is not None and not window.is_open(self._moment()):
                moment = self._moment()
                seconds = (window.next_open(moment) - moment).total_seconds()
                reason = f"outside the window {window.text()}"
            elif budget is not None:
                size = self._bytes_total(wave) or 0
                seconds = budget_wait(self._waves_started, self.clock.wall(), size, budget)
                reason = f"--max-bytes-per-hour {budget}: {size} more bytes would pass it"
            if seconds <= 0:
                break
            if not waited:
                until = datetime.fromtimestamp(self.clock.wall() + seconds, tz=UTC)
                event: ev.WindowWait = {
                    "event": "window-wait",
                    "wave": number,
                    "reason": reason,
                    "seconds": round(seconds, 1),
                    "until": until.isoformat(timespec="seconds"),
                }
                self.journal.append(event)
                self.emit(event)
                waited = True
            if cancel_marker(self.journal).exists():
                raise _Cancelled()
            self.clock.sleep(min(seconds, WINDOW_POLL_S))
        if waited:
            self.journal.append({"event": "window-open", "wave": number})
            self.emit({"event": "window-open", "wave": number})

    # -- --pace auto ---------------------------------------------------------------------------

    def _start_pace(self, snapshot: ClusterSnapshot, check: Preflight) -> None:
        """Start the canary, measure its baseline p99 before the first wave, count the
        partitions outside the plan out of the ISR, and hand both to the controller."""
        if not self.options.pace or self.options.throttle is None:
            return
        ceiling = self.options.throttle_max or self.options.throttle
        settings = PaceSettings(floor=self.options.throttle, ceiling=ceiling)
        baseline: float | None = None
        if hasattr(self.cluster, "create_topic_if_missing"):  # a real cluster (not a test's)
            self._canary = Canary(
                self.cluster, sorted(snapshot.live_broker_ids()), every_s=CANARY_EVERY_S
            )
            self._canary.start()
            self.clock.sleep(1.0)  # connections and metadata: not the cluster's latency
            self._canary.take()
            # several short p99s, their median the baseline: one stall does not set it
            chunk = min(1.0, max(0.5, self.options.pace_interval_s))  # ~30 records each
            chunks = []
            for _ in range(BASELINE_CHUNKS):
                self.clock.sleep(chunk)
                chunks.append(self._canary.take()[0])
            baseline = baseline_p99(chunks)
            self._pace_log["baseline_samples"] = sum(len(c) for c in chunks)
        before = self._out_of_isr()
        self._pace = PaceController(settings, baseline, before or 0)
        self._pace_at = self.clock.now()
        self._pace_log.update(
            {
                "floor": settings.floor,
                "ceiling": settings.ceiling,
                "baseline_p99_ms": None if baseline is None else round(baseline, 2),
                "changes": 0,
                "latencies": [],
            }
        )
        event: ev.PaceStart = {
            "event": "pace-start",
            "rate": settings.floor,
            "ceiling": settings.ceiling,
            "baseline_p99_ms": self._pace_log["baseline_p99_ms"],
            "p99_limit_ms": _round(self._pace.p99_limit_ms),
            "out_of_isr": before,
            "canary": self._canary.topic if self._canary is not None else None,
        }
        self.journal.append(event)
        self.emit(event)

    def _out_of_isr(self) -> int | None:
        count = getattr(self.cluster, "out_of_isr", None)
        if count is None:
            return 0
        exclude = {*self.plan.targets, *self.plan.new_partitions}
        if self._canary is not None:
            exclude |= {(self._canary.topic, p) for p in range(len(self._canary.brokers))}
        try:
            return int(count(exclude))
        except KreplicaError:
            return None  # unknown this time: not a degradation

    def _pace_tick(
        self,
        pending: Mapping[Key, Sequence[int]],
        moves: Mapping[Key, Move | None],
        sizes: Mapping[tuple[str, int, int], int],
    ) -> None:
        """Once per pace interval: one health sample to the controller; a change of rate is
        written to the brokers, journalled and shown with its reason."""
        if self._pace is None:
            return
        now = self.clock.now()
        elapsed = now - self._pace_at
        if elapsed < self.options.pace_interval_s:
            return
        self._pace_at = now
        latencies, failed, waiting = (
            self._canary.take() if self._canary is not None else ([], 0, None)
        )
        self._pace_log["latencies"] += latencies
        grown: dict[int, int] = {}
        current: dict[tuple[Key, int], int] = {}
        for key, target in pending.items():
            move = moves.get(key)
            before = set(move.before) if move is not None else set()
            for broker in target:
                if broker in before:
                    continue
                size = sizes.get((key[0], key[1], broker))
                if size is None:
                    continue
                current[(key, broker)] = size
                last = self._pace_sizes.get((key, broker))
                if last is not None:
                    grown[broker] = grown.get(broker, 0) + max(0, size - last)
        self._pace_sizes = current
        out = self._out_of_isr()
        sample = Sample(
            canary_p99_ms=p99(latencies),
            outside_out_of_isr=out if out is not None else self._pace.outside_before,
            copy_bps=max(grown.values()) / elapsed if grown else None,
            canary_failed=failed,
            canary_waiting_ms=waiting,
        )
        decision = self._pace.observe(sample)
        if self.options.window_floor and self._window_closed():
            floor = self._pace.settings.floor
            decision = None
            if self._pace.rate != floor:  # the moves in flight finish at the floor
                decision = Decision(floor, self._pace.rate, "window closed: at the floor")
                self._pace.rate = floor
        if decision is None:
            return
        self._set_rate(decision.rate)
        self._pace_log["changes"] += 1
        event: ev.Pace = {
            "event": "pace",
            "rate": decision.rate,
            "previous": decision.previous,
            "reason": decision.reason,
            "canary_p99_ms": None
            if sample.canary_p99_ms is None
            else round(sample.canary_p99_ms, 2),
            "canary_waiting_ms": None if waiting is None else round(waiting, 1),
            "p99_limit_ms": _round(self._pace.p99_limit_ms),
            "out_of_isr": sample.outside_out_of_isr,
            "copy_bps": None if sample.copy_bps is None else int(sample.copy_bps),
        }
        self.journal.append(event)
        self.emit(event)

    def _set_rate(self, rate: int) -> None:
        """The leader and follower rates on every broker kreplica throttles (the journal keeps
        what was there before the first one, for the restore)."""
        values = {LEADER_RATE: str(rate), FOLLOWER_RATE: str(rate)}
        for name in self._rate_brokers:
            self.journal.append(
                {
                    "event": "throttle-set",
                    "kind": "broker",
                    "name": name,
                    "previous": {},
                    "values": values,
                }
            )
            try:
                self.cluster.alter_configs("broker", name, values)
            except BrokerDown as exc:  # its rate stays; the restore still covers it
                self.emit({"event": "warning", "message": f"pace: {exc}"})

    def _stop_pace(self) -> None:
        if self._canary is None:
            return
        canary, self._canary = self._canary, None
        failed = canary.stop(delete=not self.options.keep_canary)
        if failed:
            self.emit(
                {
                    "event": "warning",
                    "message": f"the canary topic {canary.topic} stays: {failed}; delete it "
                    "with kafka-topics --delete",
                }
            )

    def _pace_summary(self) -> dict[str, Any] | None:
        if self._pace is None:
            return None
        latencies = self._pace_log.pop("latencies", [])
        return {
            **self._pace_log,
            "final_rate": self._pace.rate,
            "canary_p99_ms": None if not latencies else round(p99(latencies) or 0.0, 2),
            "canary_records": len(latencies),
        }

    def _report_leftovers(
        self, when: Literal["start", "end"], set_here: Mapping[Resource, Mapping[str, str]]
    ) -> None:
        """Replication throttles on the cluster that this apply did not set (left by earlier
        runs, or someone else's): journalled and shown, never changed. At the end, a value this
        run set and just restored may still read as set for a moment (ZooKeeper mode applies
        configs through a notification): `set_here` is not reported."""
        if self._everything is None:
            return
        _, ours = _journal_throttles(self.journal.read())
        try:
            rows, _ = list_throttles(
                self.cluster,
                [t.name for t in self._everything.topics],
                self._everything.live_broker_ids(),
            )
        except KreplicaError as exc:
            self.emit({"event": "warning", "message": f"cannot list leftover throttles: {exc}"})
            return
        left = [
            row
            for row in rows
            if row["config"] not in ours.get((row["kind"], row["name"]), {})
            and set_here.get((row["kind"], row["name"]), {}).get(row["config"]) != row["value"]
        ]
        if left:
            self.journal.append({"event": "leftover-throttles", "when": when, "configs": left})
            self.emit({"event": "leftover-throttles", "when": when, "configs": left})

    def _unsettled_controller(self) -> None:
        """ClusterUnsettled (exit 11) when what a client can tell of the controller explains
        why it does not answer (a KRaft controller holding ZooKeeper's /controller mid-
        migration, an election under way); nothing when it does not."""
        facts_of = getattr(self.cluster, "controller_facts", None)
        if facts_of is None:
            return
        try:
            facts = facts_of()
        except KreplicaError:
            return  # the original error says more
        check_controller(facts, settle_s=0.0)

    def _safe_start(self, in_flight: Collection[Key]) -> None:
        """Refuse (ClusterUnsettled) mid-migration, right after a controller change, or with
        partitions outside the plan under-replicated; say what could not be checked."""
        facts_of = getattr(self.cluster, "controller_facts", None)
        facts = facts_of() if facts_of is not None else ControllerFacts()
        everything = self.cluster.snapshot(None)
        self._everything = everything  # the leftover-throttle checks read every topic
        plan_keys = {*self.plan.targets, *self.plan.new_partitions}
        checked = check_safe_start(
            facts,
            everything,
            plan_keys,
            in_flight,
            settle_s=self.options.controller_settle_s,
            allow_under_replicated=self.options.allow_under_replicated,
        )
        if checked.under_replicated:
            names = ", ".join(_key_text(k) for k in checked.under_replicated[:5])
            more = len(checked.under_replicated) - 5
            self.emit(
                {
                    "event": "warning",
                    "message": f"--allow-under-replicated: starting although "
                    f"{len(checked.under_replicated)} partition(s) outside the plan are "
                    f"under-replicated ({names}{f' and {more} more' if more > 0 else ''})",
                }
            )
        for note in checked.notes:
            self.emit({"event": "note", "message": note})

    def _require_permissions(self, check: Preflight, dir_todo: Mapping[DirKey, str]) -> None:
        """Refuse before any write when this principal may not do what the plan needs (a
        cluster without `require`, like the tests' simulated one, is not asked)."""
        require = getattr(self.cluster, "require", None)
        if require is None:
            return
        needs = apply_needs(
            moved_topics=[m.topic for m in check.todo] + [k[0] for k in check.waiting],
            created_topics=[k[0] for k in check.create],
            throttled=self.options.throttle is not None,
            via_kafka=self.submitter.name == "kafka",
        )
        if dir_todo:
            needs.append(Need("cluster", CLUSTER, "ALTER", "move replicas between log dirs"))
            if self._dir_rate() is not None:
                needs += throttle_needs([("broker", "*")], "throttle copies between log dirs")
        require(needs)
        canary = getattr(self.cluster, "require_canary", None)
        if self.options.pace and self.options.throttle is not None and canary is not None:
            brokers = self._everything.live_broker_ids() if self._everything is not None else ()
            canary(CANARY_TOPIC, canary_assignment(sorted(brokers)), not self.options.keep_canary)

    # -- intra-broker moves (log_dirs) ---------------------------------------------------------

    def _dir_rate(self) -> int | None:
        return self.options.dir_throttle or self.options.throttle

    def _dir_todo(self, snapshot: ClusterSnapshot, result: ApplyResult) -> dict[DirKey, str]:
        """The replicas the plan sends to a named log dir that are not there yet. A dir the
        broker does not have is refused (VerificationFailed); a replica whose dir changed since
        the plan to neither its old nor its planned dir is drift (StalePlan, or left out with
        --on-drift skip)."""
        if not self.plan.dirs:
            return {}
        brokers = {b.id: b for b in snapshot.brokers}
        for (topic, partition, broker), path in sorted(self.plan.dirs.items()):
            known = brokers[broker].log_dirs if broker in brokers else None
            if known is not None and path not in known:
                raise VerificationFailed(
                    f"the plan puts {topic}-{partition} in log dir {path} of broker {broker}, "
                    f"which has no such dir (its dirs: {', '.join(known)}); make a new plan"
                )
        live = snapshot.live_broker_ids()
        logs = self.cluster.replica_logs(
            self.plan.dir_topics, sorted({b for _, _, b in self.plan.dirs if b in live})
        )
        todo: dict[DirKey, str] = {}
        drifted: list[str] = []
        for key, path in sorted(self.plan.dirs.items()):
            log = logs.get(key)
            if is_done(log, path):
                continue
            was = self.plan.before_dirs.get(key)
            if log is not None and was is not None and log.path not in (was, path):
                drifted.append(
                    f"{key[0]}-{key[1]} on broker {key[2]} was in {was} and is now in {log.path}"
                )
                continue
            todo[key] = path
        if drifted:
            if self.options.on_drift != "skip":
                more = f" (and {len(drifted) - 3} more)" if len(drifted) > 3 else ""
                raise StalePlan(
                    f"the cluster changed since this plan was made: {'; '.join(drifted[:3])}"
                    f"{more}; make a new plan, or pass `on_drift` skip to apply the rest"
                )
            result.skipped += drifted
        return todo

    def _set_dir_throttle(self, brokers: Sequence[int]) -> None:
        rate = self._dir_rate()
        if rate is None or not brokers:
            return
        names = [str(b) for b in sorted(brokers)]
        existing = self.cluster.configs("broker", names)
        _, already_ours = _journal_throttles(self.journal.read())
        for name in names:
            before = existing.get(name, {})
            if before.get(ALTER_DIRS_RATE) == str(rate):
                continue
            previous = {k: v for k, v in before.items() if k == ALTER_DIRS_RATE}
            if ("broker", name) in already_ours:  # resumed: the journal has what was there first
                previous = {}
            values = {ALTER_DIRS_RATE: str(rate)}
            self.journal.append(
                {
                    "event": "throttle-set",
                    "kind": "broker",
                    "name": name,
                    "previous": previous,
                    "values": values,
                }
            )
            self.cluster.alter_configs("broker", name, values)
        self.emit({"event": "dir-throttle-set", "rate": rate, "brokers": len(names)})

    def _move_dirs(self, wave: int, todo: Mapping[DirKey, str]) -> list[DirKey]:
        """AlterReplicaLogDirs for every replica still to move, with the broker throttle for
        copies between dirs; wait until no future log is left and each is in its dir."""
        self._set_dir_throttle(sorted({b for _, _, b in todo}))
        for (topic, partition, broker), path in sorted(todo.items()):
            self.journal.append(
                {
                    "event": "dir-submit",
                    "wave": wave,
                    "topic": topic,
                    "partition": partition,
                    "broker": broker,
                    "to": path,
                }
            )
        names = [f"{t}-{p}@{b}" for t, p, b in sorted(todo)]
        self.emit({"event": "wave-start", "wave": wave, "partitions": names})
        self._wait_dirs(dict(todo), wave)
        self.journal.append({"event": "wave-done", "wave": wave, "partitions": len(todo)})
        self.emit({"event": "wave-done", "wave": wave, "partitions": len(todo)})
        return sorted(todo)

    def _wait_dirs(self, targets: dict[DirKey, str], wave: int) -> None:
        pending = dict(targets)
        topics = sorted({t for t, _, _ in targets})
        brokers = sorted({b for _, _, b in targets})
        started = last_progress = self.clock.now()
        last_copied = -1
        sent_at: dict[DirKey, float] = {}
        failing_since: float | None = None
        total = 0
        while pending:
            if cancel_marker(self.journal).exists():
                raise _Cancelled()
            try:
                logs: Mapping[DirKey, ReplicaLog] = self.cluster.replica_logs(topics, brokers)
            except SourceError as exc:
                now = self.clock.now()
                if failing_since is None:
                    failing_since = now
                    self.emit(
                        {"event": "warning", "message": f"cannot read log dirs ({exc}); retrying"}
                    )
                elif now - failing_since > READ_RETRY_S:
                    raise
                self.clock.sleep(self.options.poll_interval_s)
                continue
            failing_since = None
            now = self.clock.now()
            # (Re)send the replicas with no future log in their planned dir: first time, a
            # broker that lost the request (restarted), or a replica that did not exist yet.
            send = {
                k: path
                for k, path in pending.items()
                if k in logs
                and not is_done(logs[k], path)
                and logs[k].future_path != path
                and now - sent_at.get(k, -1e18) >= MISMATCH_GRACE_S
            }
            if send:
                self.cluster.alter_replica_log_dirs(send)
                sent_at.update(dict.fromkeys(send, now))
            for key in list(pending):
                if is_done(logs.get(key), pending[key]):
                    self.journal.append(
                        {
                            "event": "dir-complete",
                            "topic": key[0],
                            "partition": key[1],
                            "broker": key[2],
                        }
                    )
                    del pending[key]
            done_bytes, total = dir_copied(targets, logs)
            if done_bytes > last_copied:
                last_copied, last_progress = done_bytes, now
            self.emit(
                {
                    "event": "progress",
                    "wave": wave,
                    "done": len(targets) - len(pending),
                    "total": len(targets),
                    "bytes_copied": done_bytes,
                    "bytes_total": total,
                    "elapsed_s": round(now - started, 3),
                }
            )
            if pending and now - last_progress >= self.options.stall_timeout_s:
                self.emit(
                    {
                        "event": "stall",
                        "seconds": round(now - last_progress, 1),
                        "partitions": [f"{t}-{p}@{b}" for t, p, b in sorted(pending)],
                        "brokers": sorted({b for _, _, b in pending}),
                        "down": [],
                        "hint": "check the dir throttle (--resume --throttle RATE raises it), "
                        "the brokers' logs and disks, or stop it with kreplica cancel",
                    }
                )
                last_progress = now
            if pending:
                self.clock.sleep(self.options.poll_interval_s)

    def _steps(self, todo: Sequence[Move]) -> list[Move]:
        """The moves to submit; with replica_at_a_time each becomes its chain of one-replica
        steps (plan_waves keeps a partition's steps in order, one per wave)."""
        return expand_steps(todo) if self.options.replica_at_a_time else list(todo)

    def _bytes_total(self, moves: Sequence[Move]) -> int | None:
        total = 0
        for move in moves:
            copy = move.bytes_to_copy
            if copy is None:
                return None
            total += copy
        return total

    def _set_throttles(self, moves: Sequence[Move], snapshot: ClusterSnapshot) -> None:
        if self.options.throttle is None or not moves:
            return
        # as Kafka's tool does, moves already in flight are throttled too
        in_flight = [
            InFlight(
                topic, partition, tuple(state.replicas), tuple(state.adding), tuple(state.removing)
            )
            for (topic, partition), state in sorted(self.cluster.in_flight().items())
        ]
        plan = throttle_plan(moves, self.options.throttle, in_flight)
        topics = sorted(plan.topics)
        brokers = [str(b) for b in sorted(plan.brokers)]
        self._rate_brokers = brokers
        existing: dict[Resource, dict[str, str]] = {}
        for name, values in self.cluster.configs("topic", topics).items():
            existing[("topic", name)] = values
        for name, values in self.cluster.configs("broker", brokers).items():
            existing[("broker", name)] = values
        _, already_ours = _journal_throttles(self.journal.read())
        fitted, widened = fit_to_limit(plan.merged_with(existing))
        if widened:
            self.emit(
                {
                    "event": "warning",
                    "message": f"the throttled-replica lists of {len(widened)} topic(s) "
                    f"({', '.join(widened[:3])}{' and more' if len(widened) > 3 else ''}) "
                    f"would exceed Kafka's {MAX_CONFIG_VALUE}-byte config value limit "
                    "(KAFKA-17993): every replica of those topics is throttled ('*') on the "
                    "throttled brokers instead",
                }
            )
        for resource, values in sorted(fitted.items()):
            kind, name = resource
            previous = {
                k: v
                for k, v in existing.get(resource, {}).items()
                if k in (TOPIC_KEYS if kind == "topic" else BROKER_KEYS)
            }
            if resource in already_ours:  # resumed: what was there first is in the journal
                previous = {}
            # journal first: if we die right after the write, the restore still knows
            self.journal.append(
                {
                    "event": "throttle-set",
                    "kind": kind,
                    "name": name,
                    "previous": previous,
                    "values": dict(values),
                }
            )
            self.cluster.alter_configs(kind, name, values)
        self.emit(
            {
                "event": "throttle-set",
                "rate": self.options.throttle,
                "topics": len(topics),
                "brokers": len(brokers),
            }
        )

    def restore_throttles(self) -> None:
        restore_journal_throttles(self.cluster, self.journal, self.emit, self.clock.sleep)

    def _run_wave(self, number: int, wave: Sequence[Move]) -> None:
        targets = {m.key: m.after for m in wave}
        for move in wave:
            self.journal.append(
                {
                    "event": "submit",
                    "wave": number,
                    "topic": move.topic,
                    "partition": move.partition,
                    "before": list(move.before),
                    "after": list(move.after),
                }
            )
        self.emit({"event": "wave-start", "wave": number, "partitions": [m.name for m in wave]})
        self._prefer_dirs(wave)
        try:
            self.submitter.submit(targets)
        except KreplicaError as exc:
            self._submit_refused(exc)
            raise
        self._wait(targets, {m.key: m for m in wave}, wave=number)
        self.journal.append({"event": "wave-done", "wave": number, "partitions": len(wave)})
        self.emit({"event": "wave-done", "wave": number, "partitions": len(wave)})

    def _prefer_dirs(self, wave: Sequence[Move]) -> None:
        """Before a wave, tell each receiving broker the dir the plan names for its new replica
        (AlterReplicaLogDirs for a replica it does not have yet: the broker records the dir and
        creates the replica there), as Kafka's tool does, so it is not copied twice. Best
        effort: what does not land there is moved after the waves."""
        wanted = {
            (m.topic, m.partition, b): self.plan.dirs[(m.topic, m.partition, b)]
            for m in wave
            for b in m.added
            if (m.topic, m.partition, b) in self.plan.dirs
        }
        if not wanted:
            return
        try:
            self.cluster.alter_replica_log_dirs(wanted, missing_ok=True)
        except KreplicaError as exc:
            self.emit(
                {
                    "event": "warning",
                    "message": f"naming the log dirs of new replicas before the move failed "
                    f"({exc}); they are moved into their dirs after it",
                }
            )

    def _stopped_on_error(self, exc: KreplicaError) -> None:
        """Any error once the journal exists: on the record, and the throttles this apply set
        come off when nothing of the plan moves any more (best effort: what cannot be
        restored now stays in the journal, set or pending, for resume, cancel or
        `throttles --clear`). Moves still running keep their throttle."""
        if self._error_journalled or not self._started:
            return  # a refusal before this run's start: nothing was written, nothing to undo
        self.journal.append({"event": "error", "message": str(exc), "code": exc.code})
        if not _journal_throttles(self.journal.read())[1]:
            return
        try:
            in_flight = self.cluster.in_flight()
            if not any(key in in_flight for key in self.plan.targets):
                self.restore_throttles()
        except KreplicaError as again:
            self.emit(
                {
                    "event": "warning",
                    "message": f"the throttles this apply set stay for now ({again}); "
                    "they are in the journal: kreplica throttles --clear restores them",
                }
            )

    def _submit_refused(self, exc: KreplicaError) -> None:
        """The cluster refused a submission (e.g. the znode exists: exit 6). When nothing of
        this plan is moving, the throttles this apply set serve no move: restore them."""
        self.journal.append({"event": "error", "message": str(exc), "code": exc.code})
        self._error_journalled = True
        if isinstance(exc, ReassignmentInProgress):
            # refused as a whole (the znode exists): nothing of this wave was submitted, and
            # earlier waves are done, so nothing of this apply moves
            self.restore_throttles()
            return
        for attempt in range(3):  # a busy cluster may not answer at once
            try:
                in_flight = self.cluster.in_flight()
            except KreplicaError:
                if attempt == 2:
                    return  # cannot tell: keep them (kreplica cancel or throttles --clear)
                self.clock.sleep(1.0)
            else:
                break
        if not any(key in in_flight for key in self.plan.targets):
            self.restore_throttles()

    def _wait(
        self, targets: Mapping[Key, Sequence[int]], moves: Mapping[Key, Move | None], *, wave: int
    ) -> None:
        """Poll until every target partition has its replicas and is out of flight."""
        pending = dict(targets)
        topics = sorted({t for t, _ in pending})
        last_progress = self.clock.now()
        last_copied = -1
        stalled_reported: list[int] | None = None  # the down brokers the last stall line named
        started = self.clock.now()
        failing_since: float | None = None
        mismatched: dict[Key, tuple[tuple[int, ...], float]] = {}  # replicas, first seen
        growth: dict[tuple[Key, int], tuple[int, float]] = {}  # new replica: size, grew at
        stall_told: Any = None  # the stalled replicas and down brokers the last line named
        while pending:
            if cancel_marker(self.journal).exists():
                raise _Cancelled()
            try:
                in_flight = self.cluster.in_flight()
                snapshot = self.cluster.snapshot(topics)
            except UnknownTopicError:
                raise
            except SourceError as exc:
                now = self.clock.now()
                if failing_since is None:
                    failing_since = now
                    self.emit(
                        {
                            "event": "warning",
                            "message": f"cannot read the cluster ({exc}); the moves go on, "
                            "retrying",
                        }
                    )
                elif now - failing_since > READ_RETRY_S:
                    raise
                self.clock.sleep(self.options.poll_interval_s)
                continue
            failing_since = None
            parts = {(t.name, p.partition): p for t in snapshot.topics for p in t.partitions}
            for key in list(pending):
                part = parts.get(key)
                if (
                    key not in in_flight
                    and part is not None
                    and part.replicas == tuple(pending[key])
                ):
                    self.journal.append({"event": "complete", "topic": key[0], "partition": key[1]})
                    self.emit({"event": "partition-done", "partition": _key_text(key)})
                    del pending[key]
                elif key not in in_flight and part is not None:
                    # A broker's metadata can lag the controller: the move is done but the
                    # replica being removed is still listed for a moment. Only an unplanned
                    # list that stays for MISMATCH_GRACE_S is someone else's change.
                    seen = mismatched.get(key)
                    if seen is None or seen[0] != part.replicas:
                        mismatched[key] = (part.replicas, self.clock.now())
                        continue
                    if self.clock.now() - seen[1] < MISMATCH_GRACE_S:
                        continue
                    raise ReassignmentInProgress(
                        f"{_key_text(key)} is no longer being reassigned but has "
                        f"{list(part.replicas)}, not the planned {list(pending[key])}: someone "
                        "cancelled or changed it; kreplica verify shows the state, make a new plan"
                    )
            # Live brokers only: a stopped broker would hold the whole read up until it
            # times out, and a stall could not be reported while it is down.
            sizes = self.cluster.replica_bytes(topics, snapshot.live_broker_ids())
            copied, total = self._copied(targets, moves, snapshot, sizes)
            self._pace_tick(pending, moves, sizes)
            now = self.clock.now()
            done = len(targets) - len(pending)
            if copied > last_copied:
                last_copied, last_progress, stalled_reported = copied, now, None
            if sizes:  # per new replica: a stall is a replica that stopped growing
                stuck = _stuck_replicas(pending, moves, parts, sizes, growth, now)
                late = {k: v for k, v in stuck.items() if v >= self.options.stall_timeout_s}
                told = (
                    sorted(late),
                    sorted(b for _, b in late if b not in snapshot.live_broker_ids()),
                )
                if late and told != stall_told:
                    stall_told = told
                    self.emit(self._replica_stall_event(late, snapshot))
                elif not late:
                    stall_told = None
            self.emit(
                {
                    "event": "progress",
                    "wave": wave,
                    "done": done,
                    "total": len(targets),
                    "bytes_copied": copied,
                    "bytes_total": total,
                    "elapsed_s": round(now - started, 3),
                }
            )
            if pending and not sizes and now - last_progress >= self.options.stall_timeout_s:
                stall = self._stall_event(pending, snapshot, now - last_progress)
                if stalled_reported != stall["down"]:  # new, or its cause changed: say so
                    stalled_reported = stall["down"]
                    self.emit(stall)
            if pending:
                self.clock.sleep(self.options.poll_interval_s)

    def _copied(
        self,
        targets: Mapping[Key, Sequence[int]],
        moves: Mapping[Key, Move | None],
        snapshot: ClusterSnapshot,
        sizes: Mapping[tuple[str, int, int], int],
    ) -> tuple[int, int]:
        """Bytes copied so far and in all, over the new replicas of these partitions (log sizes
        on their brokers; an in-sync new replica counts as fully copied)."""
        parts = {(t.name, p.partition): p for t in snapshot.topics for p in t.partitions}
        copied = total = 0
        for key, target in targets.items():
            move = moves.get(key)
            before = move.before if move is not None else ()
            part = parts.get(key)
            size = (part.size_bytes if part is not None else None) or 0
            for broker in target:
                if broker in before:
                    continue
                total += size
                if part is not None and part.isr is not None and broker in part.isr:
                    copied += size
                else:
                    copied += min(size, sizes.get((key[0], key[1], broker), 0))
        return copied, total

    def _replica_stall_event(
        self, late: Mapping[tuple[Key, int], float], snapshot: ClusterSnapshot
    ) -> ev.Stall:
        """A stall line for new replicas that stopped growing: the partitions, the receiving
        brokers and why (down, or alive and not copying)."""
        live = snapshot.live_broker_ids()
        brokers = sorted({b for _, b in late})
        down = [b for b in brokers if b not in live]
        slow = [b for b in brokers if b in live]
        reasons = [f"broker(s) {', '.join(map(str, down))} are down" for _ in down[:1]] + [
            f"broker(s) {', '.join(map(str, slow))} are up but their new replicas stopped growing"
            for _ in slow[:1]
        ]
        hint = "; ".join(reasons) + (
            ": bring them back (the move then completes) or stop it with kreplica cancel"
            if down
            else ": check the throttle (--resume --throttle RATE raises it), those brokers' "
            "logs and disks, or stop it with kreplica cancel"
        )
        return {
            "event": "stall",
            "seconds": round(min(late.values()), 1),
            "partitions": sorted({_key_text(k) for k, _ in late}),
            "brokers": brokers,
            "down": down,
            "hint": hint,
        }

    def _stall_event(
        self, pending: Mapping[Key, Sequence[int]], snapshot: ClusterSnapshot, seconds: float
    ) -> ev.Stall:
        live = snapshot.live_broker_ids()
        parts = {(t.name, p.partition): p for t in snapshot.topics for p in t.partitions}
        brokers: set[int] = set()
        for key, target in pending.items():
            part = parts.get(key)
            in_sync = set(part.in_sync) if part is not None else set()
            brokers.update(b for b in target if b not in in_sync)
        down = sorted(b for b in brokers if b not in live)
        hint = (
            f"broker(s) {', '.join(map(str, down))} are down: bring them back (the move then "
            "completes) or stop it with kreplica cancel"
            if down
            else "check the throttle (--resume --throttle RATE raises it), the brokers' logs "
            "and disk, or stop it with kreplica cancel"
        )
        return {
            "event": "stall",
            "seconds": round(seconds, 1),
            "partitions": [_key_text(k) for k in sorted(pending)],
            "brokers": sorted(brokers),
            "down": down,
            "hint": hint,
        }

    def _create(self, check: Preflight, snapshot: ClusterSnapshot) -> list[Key]:
        """New partitions, per topic, in the planned order; Kafka takes the new total."""
        created: list[Key] = []
        counts = {t.name: len(t.partitions) for t in snapshot.topics}
        by_topic: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
        for (topic, pid), replicas in sorted(check.create.items()):
            by_topic.setdefault(topic, []).append((pid, replicas))
        for topic, rows in by_topic.items():
            have = counts.get(topic, 0)
            for start in range(0, len(rows), CREATE_BATCH):
                batch = rows[start : start + CREATE_BATCH]
                pids = [pid for pid, _ in batch]
                if pids != list(range(have, have + len(batch))):
                    raise UsageError(
                        f"topic {topic!r} has {have} partitions, so the next new one is "
                        f"{have}, but the plan creates {pids[:3]}...; make a new plan"
                    )
                self.journal.append({"event": "create", "topic": topic, "partitions": pids})
                self.cluster.create_partitions(topic, have + len(batch), [r for _, r in batch])
                have += len(batch)
                created += [(topic, pid) for pid in pids]
                self.emit({"event": "created", "topic": topic, "partitions": len(batch)})
        return created


def _stuck_replicas(
    pending: Mapping[Key, Sequence[int]],
    moves: Mapping[Key, Move | None],
    parts: Mapping[Key, Any],
    sizes: Mapping[tuple[str, int, int], int],
    growth: dict[tuple[Key, int], tuple[int, float]],
    now: float,
) -> dict[tuple[Key, int], float]:
    """Each new replica still being built (not in sync) -> seconds since its log last grew
    (DescribeLogDirs; a broker that is down reports nothing, so its replicas never grow).
    Producers writing to the partition grow the leader, not a replica that stopped copying,
    so live traffic does not hide a stall. `growth` carries sizes from poll to poll."""
    out: dict[tuple[Key, int], float] = {}
    for key, target in pending.items():
        move = moves.get(key)
        before = set(move.before) if move is not None else set()
        part = parts.get(key)
        in_sync = set(part.in_sync) if part is not None else set()
        for broker in target:
            if broker in before or broker in in_sync:
                continue
            size = sizes.get((key[0], key[1], broker), -1)
            seen = growth.get((key, broker))
            if seen is None or size > seen[0]:
                growth[(key, broker)] = (size, now)
                out[(key, broker)] = 0.0
            else:
                out[(key, broker)] = now - seen[1]
    return out


def require_moves(plan: PlanFile) -> None:
    """An empty plan is refused: applying it would report success and hide a broken plan
    generator."""
    if not plan.targets and not plan.new_partitions and not plan.dirs:
        raise InputError(
            f"{plan.path} lists no partition to move or create: the plan is empty; check "
            "what wrote it (nothing was applied)"
        )


def cancel_marker(journal: Journal) -> Path:
    """The file `cancel` leaves for an apply of the same plan that is running elsewhere."""
    return journal.path.with_name(journal.path.name + ".cancel")


def _marker_forced(marker: Path) -> list[Any]:
    """The partitions a `cancel --force` put at risk, as its marker file names them."""
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    forced = data.get("forced") if isinstance(data, dict) else None
    return list(forced) if isinstance(forced, list) else []


def cancel_dir_moves(cluster: Cluster, plan: PlanFile) -> list[DirKey]:
    """Stop the plan's moves between log dirs still running: AlterReplicaLogDirs back to the
    dir each replica is in (the broker drops the future log), as Kafka's tool cancels them."""
    if not plan.dirs:
        return []
    logs: Mapping[DirKey, ReplicaLog] = cluster.replica_logs(
        plan.dir_topics, sorted({b for _, _, b in plan.dirs})
    )
    back = {
        k: logs[k].path
        for k, path in plan.dirs.items()
        if k in logs and logs[k].future_path is not None
    }
    cluster.alter_replica_log_dirs(back)
    return sorted(back)


def cancel_plan(
    cluster: Cluster,
    plan: PlanFile,
    journal: Journal,
    emit: Emit = lambda e: None,
    *,
    force: bool = False,
) -> tuple[list[Key], bool]:
    """Stop the plan's moves still in flight (KIP-455 cancel: they return to their old
    replicas) and restore the throttles kreplica set. When an apply of this plan is running
    (it holds the journal's lock), it is asked to stop and restores the throttles itself.

    Refused (UnsafeCancel, nothing changed) when a partition would keep fewer live in-sync
    replicas than its min.insync.replicas (`cancel_risks`); `force` cancels anyway and the
    journal records the partitions it put at risk.
    Returns the partitions cancelled and whether a running apply was asked to stop."""
    in_flight = cluster.in_flight()
    ours = sorted(k for k in plan.targets if k in in_flight)
    risks = (
        cancel_risks(cluster.snapshot(plan.topics), in_flight, ours, plan.before) if ours else []
    )
    if risks and not force:
        raise UnsafeCancel(refusal_text(risks))
    forced = [r.as_dict() for r in risks]
    for risk in risks:
        emit(
            {
                "event": "warning",
                "message": f"--force: {risk.name} returns to {list(risk.original)} with "
                f"{len(risk.kept)} live in-sync replica(s), under min.insync.replicas "
                f"{risk.needed}",
            }
        )
    require = getattr(cluster, "require", None)
    if require is not None:  # refused before anything is cancelled or restored
        _, set_by_us = _journal_throttles(journal.read())
        needs = throttle_needs(set_by_us, "restore the throttles kreplica set")
        needs.append(Need("cluster", CLUSTER, "ALTER", "cancel partition reassignments"))
        require(needs)
    try:
        with journal.lock():
            if ours:
                event: ev.Cancel = {
                    "event": "cancel",
                    "partitions": [_key_text(k) for k in ours],
                }
                if forced:
                    event["forced"] = forced
                journal.append(event)
                cluster.alter_reassignments(dict.fromkeys(ours))
            dirs_back = cancel_dir_moves(cluster, plan)
            if dirs_back:
                journal.append(
                    {"event": "cancel", "partitions": [f"{t}-{p}@{b}" for t, p, b in dirs_back]}
                )
            restore_journal_throttles(cluster, journal, emit)
            cancel_marker(journal).unlink(missing_ok=True)
            moved_dirs = sorted({(t, p) for t, p, _ in dirs_back} - set(ours))
            return ours + moved_dirs, False
    except ReassignmentInProgress:  # an apply holds the lock: it writes the journal
        cancel_marker(journal).write_text(json.dumps({"forced": forced}) + "\n", encoding="utf-8")
        if ours:
            cluster.alter_reassignments(dict.fromkeys(ours))
        dirs_back = cancel_dir_moves(cluster, plan)  # the apply sends them back too: harmless
        return ours + sorted({(t, p) for t, p, _ in dirs_back} - set(ours)), True
