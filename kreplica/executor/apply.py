"""Apply a plan safely: preflight, throttles, waves, progress, journal, and the way back.

    snapshot, in flight, journal  ->  preflight (refuse with nothing written)
    write rates of the moving partitions (the plan's, else measured now): a throttle below
               what it would carry in a wave is refused, nothing written (apply_rates)
    journal "start", then the rates ("write-rates")
    throttles: Kafka's lists for the moving partitions, merged with what is set; the previous
               values go to the journal first ("throttle-set"), so they can always be restored;
               then every broker must report the rate kreplica set ("throttle-confirmed") or
               the apply stops before the first wave (kreplica.executor.throttle_confirm; one
               that reported it already gets it one byte/s lower first: apply_base._set_rates)
    for each wave (plan_waves; with replica_at_a_time, one replica per partition per round):
        journal "submit", then submit; poll until every partition has its target replicas and
        nothing of it is in flight; journal "complete" per partition and "wave-done"
        (progress events on the way; a stall is reported, and waiting goes on)
    create new partitions with their planned replicas (batches), journal each
    restore the throttles (journal "throttle-restored"), journal "finish"

Interrupted (Ctrl-C, a crash, kill -9): whatever was submitted keeps moving in the cluster, so
the throttles stay (removing them would unthrottle a running move) and `--resume` picks up from
the journal without submitting anything twice. `cancel` stops the moves and restores throttles.

The Applier's rooms: apply_base (its ports, result and state), apply_rates (the moving
partitions' write rates against the throttle), apply_pace (windows, the byte budget, --pace
auto), apply_wait (waiting for a wave, progress, stalls), apply_dirs (moves between log dirs),
cancel (cancel and its marker); this module runs them in order.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Literal

from kreplica.errors import (
    InputError,
    KreplicaError,
    ReassignmentInProgress,
    SourceError,
    UnknownTopicError,
    UsageError,
)
from kreplica.executor import events as ev
from kreplica.executor.apply_base import (
    CREATE_BATCH,
    ApplyCancelled,
    ApplyResult,
    CanaryCluster,
    Key,
    Resource,
    _Cancelled,
    _key_text,
)
from kreplica.executor.apply_dirs import DirMoves
from kreplica.executor.apply_rates import RateCheck
from kreplica.executor.apply_wait import Waiting
from kreplica.executor.authz import CLUSTER, Need, apply_needs, throttle_needs
from kreplica.executor.canary import CANARY_TOPIC, canary_assignment
from kreplica.executor.cancel import _marker_forced, cancel_dir_moves, cancel_marker
from kreplica.executor.dirmoves import DirKey
from kreplica.executor.journal import fold
from kreplica.executor.moves import Move
from kreplica.executor.planfile import PlanFile
from kreplica.executor.preflight import Preflight, preflight
from kreplica.executor.safestart import check_controller, check_safe_start
from kreplica.executor.throttle_records import (
    journal_throttles,
    list_throttles,
    restore_journal_throttles,
)
from kreplica.executor.throttles import (
    BROKER_KEYS,
    MAX_CONFIG_VALUE,
    TOPIC_KEYS,
    InFlight,
    fit_to_limit,
    throttle_plan,
)
from kreplica.executor.waves import expand_steps, plan_waves
from kreplica.model import ClusterSnapshot


class Applier(Waiting, DirMoves, RateCheck):
    """One apply (or resume) of one plan on one cluster."""

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
        state = fold(events)
        if events and not self.options.resume and not (state.finished or state.cancelled):
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
            finished_on=state.finished_at if state.finished else None,
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
                if not check.skipped:  # what was left out is not applied: no finish
                    self.journal.append({"event": "finish", "already_done": len(check.done)})
            self.emit({"event": "nothing-to-do", "done": len(check.done)})
            return result
        self._safe_start(in_flight)  # refused: nothing written, no journal
        self._require_permissions(check, dir_todo)  # refused: nothing written, no journal
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
        waves = plan_waves(
            self._steps(check.todo),
            max_partitions=self.options.max_partitions,
            max_per_broker=self.options.max_per_broker,
            order=self.options.order,
        )
        # refused when a throttle is below the writes it carries: nothing written, no journal
        rates = self._check_write_rates(snapshot, waiting, waves)
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
        self._journal_write_rates(rates)
        if rates is not None:
            result.write_rates = {k: v for k, v in rates.items() if k != "event"}
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
        for wave in waves:
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
        set_here = journal_throttles(self.journal.read())[1]
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

    def _report_leftovers(
        self, when: Literal["start", "end"], set_here: Mapping[Resource, Mapping[str, str]]
    ) -> None:
        """Replication throttles on the cluster that this apply did not set (left by earlier
        runs, or someone else's): journalled and shown, never changed. At the end, a value this
        run set and just restored may still read as set for a moment (ZooKeeper mode applies
        configs through a notification): `set_here` is not reported."""
        if self._everything is None:
            return
        _, ours = journal_throttles(self.journal.read())
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
        try:
            facts = self.cluster.controller_facts()
        except KreplicaError:
            return  # the original error says more
        check_controller(facts, settle_s=0.0)

    def _safe_start(self, in_flight: Collection[Key]) -> None:
        """Refuse (ClusterUnsettled) mid-migration, right after a controller change, or with
        partitions outside the plan under-replicated; say what could not be checked."""
        facts = self.cluster.controller_facts()
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
                    "message": f"`allow_under_replicated`: starting although "
                    f"{len(checked.under_replicated)} partition(s) outside the plan are "
                    f"under-replicated ({names}{f' and {more} more' if more > 0 else ''})",
                }
            )
        for note in checked.notes:
            self.emit({"event": "note", "message": note})

    def _require_permissions(self, check: Preflight, dir_todo: Mapping[DirKey, str]) -> None:
        """Refuse before any write when this principal may not do what the plan needs."""
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
        self.cluster.require(needs)
        if self.options.pace and isinstance(self.cluster, CanaryCluster):
            brokers = self._everything.live_broker_ids() if self._everything is not None else ()
            self.cluster.require_canary(
                CANARY_TOPIC, canary_assignment(sorted(brokers)), not self.options.keep_canary
            )

    # -- throttles, waves, errors ---------------------------------------------------------------

    def _steps(self, todo: Sequence[Move]) -> list[Move]:
        """The moves to submit; with replica_at_a_time each becomes its chain of one-replica
        steps (plan_waves keeps a partition's steps in order, one per wave)."""
        return expand_steps(todo) if self.options.replica_at_a_time else list(todo)

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
        _, already_ours = journal_throttles(self.journal.read())
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
        # the topic lists first, the broker rates last: a broker applies config changes in the
        # order they were written, so one that reports the new rate has the lists too
        # (kreplica.executor.throttle_confirm)
        for resource, values in sorted(fitted.items()):
            kind, name = resource
            if kind != "topic":
                continue
            previous = {k: v for k, v in existing.get(resource, {}).items() if k in TOPIC_KEYS}
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
        rates = {name: v for (kind, name), v in plan.configs().items() if kind == "broker"}
        reported = {name: v for (kind, name), v in existing.items() if kind == "broker"}
        self._set_rates(rates, reported, BROKER_KEYS, "moves")

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

    def _stopped_on_error(self, exc: KreplicaError) -> None:
        """Any error once the journal exists: on the record, and the throttles this apply set
        come off when nothing of the plan moves any more (best effort: what cannot be
        restored now stays in the journal, set or pending, for resume, cancel or
        `throttles --clear`). Moves still running keep their throttle."""
        if self._error_journalled or not self._started:
            return  # a refusal before this run's start: nothing was written, nothing to undo
        self.journal.append({"event": "error", "message": str(exc), "code": exc.code})
        if not journal_throttles(self.journal.read())[1]:
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


def require_moves(plan: PlanFile) -> None:
    """An empty plan is refused: applying it would report success and hide a broken plan
    generator."""
    if not plan.targets and not plan.new_partitions and not plan.dirs:
        raise InputError(
            f"{plan.path} lists no partition to move or create: the plan is empty; check "
            "what wrote it (nothing was applied)"
        )
