"""`--pace auto`: the replication throttle follows the cluster's health (pure: fed with samples).

The executor samples, once per pace interval, what a client can see (no agent on the brokers):

- a canary producer's p99 latency (small acks=all records to a kreplica-owned topic with a
  partition led by every broker) over the interval, and how long its oldest record still
  unanswered has waited, against a baseline: the median of several short p99s measured before
  the first wave (one noisy moment does not set it), later lowered to the median of the last
  healthy intervals (never above the first);
- how many partitions outside the plan are out of the ISR now, against how many were before;
- how fast the new replicas grow (DescribeLogDirs), per receiving broker.

`PaceController.observe` turns one sample into a decision. A p99 over the limit (baseline x
factor, baseline + slack, and never under an absolute floor: an idle cluster's p99 is tiny and a
busy host's wobbles) is a mild sign: two in a row back off. A severe one backs off at once: a
p99 over twice the limit, a canary record failed or unanswered past the limit (a broker that
stopped answering), a partition outside the plan leaving the ISR. Back-offs are multiplicative
(never below the floor). Raises go by a fixed step after `hold` calm samples in a row (never
above the ceiling), calm being a p99 in the lower part of the band (hysteresis: between calm and
the limit the rate holds, so a noisy host does not swing between the floor and one step). A
raise is skipped while the followers copy well below the throttle: the throttle is not what
limits them, so raising it would not help.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PaceSettings:
    floor: int  # bytes/s
    ceiling: int  # bytes/s
    steps: int = 8  # healthy raises from floor to ceiling
    backoff: float = 0.5  # multiplier on a degraded sample
    p99_factor: float = 2.0  # over the limit: p99 above baseline * factor ...
    p99_slack_ms: float = 25.0  # ... and above baseline + slack (an idle cluster's p99 is tiny)
    p99_min_limit_ms: float = 50.0  # ... and above this (a host's scheduling noise)
    severe_factor: float = 2.0  # a p99 over limit * this backs off at once, not after two
    confirm: int = 2  # mild samples (over the limit, not severe) in a row before a back-off
    calm_share: float = 0.5  # raise only with p99 <= baseline + this share of (limit - baseline)
    hold: int = 1  # calm samples in a row before a raise
    cooldown: int = 2  # healthy samples needed after a back-off before the next raise
    copy_use: float = 0.5  # raise only when a receiving broker copies >= this share of the rate
    baseline_window: int = 10  # the baseline follows these last healthy p99s' median ...

    @property
    def step(self) -> int:
        return max(1, math.ceil((self.ceiling - self.floor) / max(1, self.steps)))


@dataclass(frozen=True)
class Sample:
    canary_p99_ms: float | None  # None: no canary record acknowledged in the interval
    outside_out_of_isr: int  # partitions outside the plan out of the ISR now
    copy_bps: float | None = None  # fastest receiving broker's growth; None: nothing copying
    canary_failed: int = 0  # canary records that failed in the interval
    canary_waiting_ms: float | None = None  # the oldest canary record still unanswered


@dataclass(frozen=True)
class Decision:
    rate: int
    previous: int
    reason: str

    @property
    def direction(self) -> str:
        return "up" if self.rate > self.previous else "down"


def p99(latencies_ms: Sequence[float]) -> float | None:
    """The 99th percentile (nearest rank); None for no samples."""
    if not latencies_ms:
        return None
    ordered = sorted(latencies_ms)
    rank = max(1, math.ceil(0.99 * len(ordered)))
    return ordered[rank - 1]


def baseline_p99(chunks: Sequence[Sequence[float]]) -> float | None:
    """The baseline from the canary's latencies before the first wave, taken in short chunks:
    the median of the chunks' p99s, so one stall in one chunk does not set it."""
    figures = [f for f in (p99(c) for c in chunks) if f is not None]
    return statistics.median(figures) if figures else None


def _mb(rate: float) -> str:
    return f"{rate / 1e6:.1f} MB/s"


class PaceController:
    """The throttle rate for the next interval, from one health sample at a time."""

    def __init__(
        self, settings: PaceSettings, baseline_p99_ms: float | None, outside_before: int = 0
    ) -> None:
        if not 0 < settings.floor <= settings.ceiling:
            raise ValueError("the pace floor must be > 0 and not above the ceiling")
        self.settings = settings
        self.baseline = baseline_p99_ms
        self._first = baseline_p99_ms  # ... never above the one measured before the moves
        self.outside_before = outside_before
        self.rate = settings.floor
        self._calm = 0
        self._mild = 0  # mild samples in a row
        self._since_backoff = settings.cooldown  # no back-off yet: raising may start
        self._recent: deque[float] = deque(maxlen=max(1, settings.baseline_window))

    @property
    def p99_limit_ms(self) -> float | None:
        if self.baseline is None:
            return None
        s = self.settings
        return max(self.baseline * s.p99_factor, self.baseline + s.p99_slack_ms, s.p99_min_limit_ms)

    @property
    def p99_calm_ms(self) -> float | None:
        limit = self.p99_limit_ms
        if limit is None or self.baseline is None:
            return None
        return self.baseline + self.settings.calm_share * (limit - self.baseline)

    def _severe(self, sample: Sample) -> str | None:
        limit = self.p99_limit_ms
        if sample.canary_failed:
            return f"{sample.canary_failed} canary record(s) failed"
        waiting = sample.canary_waiting_ms
        if limit is not None and waiting is not None and waiting > limit:
            return f"a canary record unanswered for {waiting:.0f} ms (limit {limit:.0f} ms)"
        p99_ms = sample.canary_p99_ms
        if (
            limit is not None
            and p99_ms is not None
            and p99_ms > limit * self.settings.severe_factor
        ):
            return (
                f"canary p99 {p99_ms:.0f} ms over its limit {limit:.0f} ms "
                f"(baseline {self.baseline:.0f} ms)"
            )
        if sample.outside_out_of_isr > self.outside_before:
            return (
                f"{sample.outside_out_of_isr - self.outside_before} partition(s) outside the "
                "plan left the ISR"
            )
        return None

    def _mild_sign(self, sample: Sample) -> str | None:
        limit = self.p99_limit_ms
        p99_ms = sample.canary_p99_ms
        if limit is not None and p99_ms is not None and p99_ms > limit:
            return (
                f"canary p99 {p99_ms:.0f} ms over its limit {limit:.0f} ms "
                f"(baseline {self.baseline:.0f} ms)"
            )
        return None

    def _learn(self, p99_ms: float | None) -> None:
        """A healthy interval's p99 joins the recent ones; once there are enough, their median
        is the baseline, capped by the first one: a baseline taken during a burst does not hide
        a later degradation, a slow creep upwards is not taken as normal, and one quiet
        moment does not make the limit tight (a running minimum would drift to the quietest)."""
        if p99_ms is None:
            return
        self._recent.append(p99_ms)
        if self.baseline is None:
            self.baseline = self._first = p99_ms
        elif len(self._recent) == self._recent.maxlen:
            median = statistics.median(self._recent)
            self.baseline = median if self._first is None else min(self._first, median)

    def _back_off(self, why: str) -> Decision | None:
        self._calm = 0
        self._mild = 0
        self._since_backoff = 0
        lower = max(self.settings.floor, int(self.rate * self.settings.backoff))
        if lower == self.rate:
            return None  # at the floor already
        decision = Decision(lower, self.rate, f"back off: {why}")
        self.rate = lower
        return decision

    def observe(self, sample: Sample) -> Decision | None:
        """A change of rate with its reason, or None to keep the rate."""
        s = self.settings
        why = self._severe(sample)
        if why is not None:
            return self._back_off(why)
        mild = self._mild_sign(sample)
        if mild is not None:
            self._mild += 1
            self._calm = 0
            self._since_backoff += 1
            if self._mild >= s.confirm:
                return self._back_off(f"{mild}, {self._mild} intervals in a row")
            return None
        self._mild = 0
        self._since_backoff += 1
        self._learn(sample.canary_p99_ms)
        calm = self.p99_calm_ms
        p99_ms = sample.canary_p99_ms
        if calm is not None and (p99_ms is None or p99_ms > calm):
            # between calm and the limit, or a canary with nothing acknowledged: hold
            self._calm = 0
            return None
        self._calm += 1
        if self.rate >= s.ceiling or self._calm < s.hold or self._since_backoff < s.cooldown:
            return None
        if sample.copy_bps is not None and sample.copy_bps < s.copy_use * self.rate:
            return None  # the throttle is not the limit: raising it would not speed the copy
        higher = min(s.ceiling, self.rate + s.step)
        self._calm = 0
        health = (
            f"canary p99 {p99_ms:.0f} ms within {self.p99_limit_ms:.0f} ms"
            if p99_ms is not None and self.p99_limit_ms is not None
            else "no canary figure"
        )
        copy = f", copying at {_mb(sample.copy_bps)}" if sample.copy_bps is not None else ""
        decision = Decision(
            higher, self.rate, f"raise: {health}, no partition outside the plan left the ISR{copy}"
        )
        self.rate = higher
        return decision
