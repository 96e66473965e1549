"""The Applier's clock and rate: waves start inside the window and within the byte budget
(kreplica.executor.window); `--pace auto` moves the throttle between its floor and ceiling
from the canary's latency and the ISR (kreplica.executor.pace)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kreplica.errors import (
    KreplicaError,
)
from kreplica.executor import events as ev
from kreplica.executor.apply_base import (
    BASELINE_CHUNKS,
    CANARY_EVERY_S,
    WINDOW_POLL_S,
    ApplierState,
    CanaryCluster,
    Key,
    _Cancelled,
    _round,
)
from kreplica.executor.canary import Canary
from kreplica.executor.cancel import cancel_marker
from kreplica.executor.kafka_cluster import BrokerDown
from kreplica.executor.moves import Move
from kreplica.executor.pace import (
    Decision,
    PaceController,
    PaceSettings,
    Sample,
    baseline_p99,
    p99,
)
from kreplica.executor.preflight import Preflight
from kreplica.executor.throttle_confirm import check_once, describe_missing
from kreplica.executor.throttles import (
    FOLLOWER_RATE,
    LEADER_RATE,
)
from kreplica.executor.window import budget_wait
from kreplica.model import ClusterSnapshot


@dataclass
class _RateCheck:
    """A --pace auto rate written and not yet reported by every broker."""

    rate: int
    pending: dict[str, dict[str, str]]  # broker -> the rate configs it does not report yet
    down: list[int]
    since: float  # when it was written (the clock's now)
    brokers: list[str] = field(default_factory=list)
    rounds: int = 0
    warned: bool = False

    def __post_init__(self) -> None:
        self.brokers = list(self.pending)


class Pacing(ApplierState):
    """Windows, the byte budget and --pace auto."""

    _rate_check: _RateCheck | None = None

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
                reason = f"`max_bytes_per_hour` {budget}: {size} more bytes would pass it"
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

    def _start_pace(self, snapshot: ClusterSnapshot, check: Preflight) -> None:
        """Start the canary, measure its baseline p99 before the first wave, count the
        partitions outside the plan out of the ISR, and hand both to the controller."""
        if not self.options.pace or self.options.throttle is None:
            return
        ceiling = self.options.throttle_max or self.options.throttle
        settings = PaceSettings(floor=self.options.throttle, ceiling=ceiling)
        baseline: float | None = None
        if not isinstance(self.cluster, CanaryCluster):
            self.emit(
                {
                    "event": "note",
                    "message": f"`pace`: no canary ({type(self.cluster).__name__} cannot "
                    "produce records): the pace follows the ISR alone",
                }
            )
        else:
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
        exclude = {*self.plan.targets, *self.plan.new_partitions}
        if self._canary is not None:
            exclude |= {(self._canary.topic, p) for p in range(len(self._canary.brokers))}
        try:
            return self.cluster.out_of_isr(exclude)
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
        self._check_rate()
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
        written: dict[str, dict[str, str]] = {}
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
            else:
                written[name] = values
        live, down = self._live_split(written)
        # confirmed on the next ticks, without waiting here: the moves run on at the old rate
        # (a throttle all the same) until a broker applies the new one
        self._rate_check = _RateCheck(rate, {b: written[b] for b in live}, down, self.clock.now())

    def _check_rate(self) -> None:
        """One DescribeConfigs round for the brokers that have not reported the last pace rate
        yet: journalled once they all do; a warning (once) when one has not after
        `throttle_confirm_s`. Never waits."""
        check = self._rate_check
        if check is None:
            return
        check.rounds += 1
        missing, error = check_once(
            lambda names: self.cluster.configs("broker", names), check.pending
        )
        check.pending = {b: check.pending[b] for b in missing}
        waited = self.clock.now() - check.since
        if not check.pending:
            self._rate_check = None
            self._throttle_confirmed("pace", check.brokers, check.down, waited, check.rounds)
        elif waited >= self.options.throttle_confirm_s and not check.warned:
            check.warned = True
            failed = f"; reading it failed: {error}" if error else ""
            self.emit(
                {
                    "event": "warning",
                    "message": f"pace: the rate {check.rate} is not in effect after "
                    f"{waited:.0f} s: {describe_missing(missing, str(check.rate))}{failed}; "
                    "the moves go on at the rate the broker has",
                }
            )

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
