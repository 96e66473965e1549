"""Moves between the log dirs of one broker (a plan's `log_dirs`): what is left to move,
their throttle, AlterReplicaLogDirs, and waiting for the future logs to catch up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kreplica.errors import (
    KreplicaError,
    SourceError,
    StalePlan,
    VerificationFailed,
)
from kreplica.executor.apply_base import (
    MISMATCH_GRACE_S,
    READ_RETRY_S,
    ApplierState,
    ApplyResult,
    _Cancelled,
)
from kreplica.executor.cancel import cancel_marker
from kreplica.executor.dirmoves import DirKey, ReplicaLog, is_done
from kreplica.executor.dirmoves import copied as dir_copied
from kreplica.executor.moves import Move
from kreplica.executor.throttles import (
    ALTER_DIRS_RATE,
)
from kreplica.model import ClusterSnapshot


class DirMoves(ApplierState):
    """Intra-broker moves, after the moves between brokers."""

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
                    f"{more}; make a new plan from the current state; `on_drift` skip leaves "
                    "out the moves that changed and applies only the others"
                )
            result.skipped += drifted
        return todo

    def _set_dir_throttle(self, brokers: Sequence[int]) -> None:
        rate = self._dir_rate()
        if rate is None or not brokers:
            return
        names = [str(b) for b in sorted(brokers)]
        existing = self.cluster.configs("broker", names)
        self.emit({"event": "dir-throttle-set", "rate": rate, "brokers": len(names)})
        rates = {name: {ALTER_DIRS_RATE: str(rate)} for name in names}
        self._set_rates(rates, existing, (ALTER_DIRS_RATE,), "dirs")

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
                        "hint": "check the dir throttle (`resume` with a higher `throttle` raises "
                        "it), the brokers' logs and disks, or stop it with kreplica cancel",
                    }
                )
                last_progress = now
            if pending:
                self.clock.sleep(self.options.poll_interval_s)

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
