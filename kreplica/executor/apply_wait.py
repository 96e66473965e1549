"""Waiting for a wave: poll until every partition has its target replicas and nothing of it
is in flight, journal each completion, show progress (bytes copied, rate, and the ETA less
the writes the copy must outrun), and report a stall: a new replica whose log has stopped
growing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kreplica.errors import (
    ReassignmentInProgress,
    SourceError,
    UnknownTopicError,
)
from kreplica.executor import events as ev
from kreplica.executor.apply_base import (
    MISMATCH_GRACE_S,
    READ_RETRY_S,
    Key,
    _Cancelled,
    _key_text,
)
from kreplica.executor.apply_pace import Pacing
from kreplica.executor.cancel import cancel_marker
from kreplica.executor.copyrate import CopyRate, capped, eta_rate, eta_s, throttle_cap
from kreplica.executor.moves import Move
from kreplica.executor.writerate import pending_writes
from kreplica.model import ClusterSnapshot


class Waiting(Pacing):
    """The poll loop of a wave of moves between brokers."""

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
        window = CopyRate()
        cap: float | None = None  # kept once nobody receives: in sync counts as all copied
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
            window.add(now, copied)
            cap = self._receiving_cap(pending, moves, parts) or cap
            rate = capped(window.rate(), cap)
            synced = {k: parts[k].in_sync for k in pending if k in parts}
            writes = pending_writes(pending, moves, synced, self._rates)
            eta = eta_s(total - copied, eta_rate(rate, cap, writes), writes)
            progress: ev.Progress = {
                "event": "progress",
                "wave": wave,
                "done": done,
                "total": len(targets),
                "bytes_copied": copied,
                "bytes_total": total,
                "elapsed_s": round(now - started, 3),
                "rate_bytes_per_s": None if rate is None else round(rate, 1),
                "eta_s": None if eta is None else round(eta, 1),
            }
            if self._rates:
                progress["write_bytes_per_s"] = round(writes, 1)
            self.emit(progress)
            if pending and not sizes and now - last_progress >= self.options.stall_timeout_s:
                stall = self._stall_event(pending, snapshot, now - last_progress)
                if stalled_reported != stall["down"]:  # new, or its cause changed: say so
                    stalled_reported = stall["down"]
                    self.emit(stall)
            if pending:
                self.clock.sleep(self.options.poll_interval_s)

    def _receiving_cap(
        self,
        pending: Mapping[Key, Sequence[int]],
        moves: Mapping[Key, Move | None],
        parts: Mapping[Key, Any],
    ) -> float | None:
        """The most the brokers still receiving new replicas may take together at the
        throttle in effect (the pace's current rate, else `throttle`; None: no throttle)."""
        limit = self._pace.rate if self._pace is not None else self.options.throttle
        receiving: set[int] = set()
        for key, target in pending.items():
            move = moves.get(key)
            before = set(move.before) if move is not None else set()
            part = parts.get(key)
            in_sync = set(part.in_sync) if part is not None else set()
            receiving.update(b for b in target if b not in before and b not in in_sync)
        return throttle_cap([limit] * len(receiving)) if limit else None

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
            else ": check the throttle (`resume` with a higher `throttle` raises it), those "
            "brokers' logs and disks, or stop it with kreplica cancel"
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
            else "check the throttle (`resume` with a higher `throttle` raises it), the brokers' "
            "logs and disk, or stop it with kreplica cancel"
        )
        return {
            "event": "stall",
            "seconds": round(seconds, 1),
            "partitions": [_key_text(k) for k in sorted(pending)],
            "brokers": sorted(brokers),
            "down": down,
            "hint": hint,
        }


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
