"""`--pace auto`: the replication throttle follows the cluster's health (pure: fed with samples).

The executor samples, once per pace interval, what a client can see (no agent on the brokers):

- a canary producer's p99 latency (small acks=all records to a kreplica-owned topic with a
  partition led by every broker) over the interval, against its baseline: measured before the
  first wave, then lowered to any interval's p99 below it;
- how many partitions outside the plan are out of the ISR now, against how many were before;
- how fast the new replicas grow (DescribeLogDirs), per receiving broker.

`PaceController.observe` turns one sample into a decision: back off multiplicatively when a
signal degrades (never below the floor), raise by a fixed step after `hold` healthy samples in a
row (never above the ceiling), or keep the rate. A raise is skipped while the followers copy
well below the throttle: the throttle is not what limits them, so raising it would not help.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PaceSettings:
    floor: int  # bytes/s
    ceiling: int  # bytes/s
    steps: int = 8  # healthy raises from floor to ceiling
    backoff: float = 0.5  # multiplier on a degraded sample
    p99_factor: float = 2.0  # degraded: p99 above baseline * factor ...
    p99_slack_ms: float = 25.0  # ... and above baseline + slack (an idle cluster's p99 is tiny)
    hold: int = 1  # healthy samples in a row before a raise
    cooldown: int = 2  # healthy samples needed after a back-off before the next raise
    copy_use: float = 0.5  # raise only when a receiving broker copies >= this share of the rate

    @property
    def step(self) -> int:
        return max(1, math.ceil((self.ceiling - self.floor) / max(1, self.steps)))


@dataclass(frozen=True)
class Sample:
    canary_p99_ms: float | None  # None: no canary record acknowledged in the interval
    outside_out_of_isr: int  # partitions outside the plan out of the ISR now
    copy_bps: float | None = None  # fastest receiving broker's growth; None: nothing copying
    canary_failed: int = 0  # canary records that failed in the interval


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
        self.outside_before = outside_before
        self.rate = settings.floor
        self._healthy = 0
        self._since_backoff = settings.cooldown  # no back-off yet: raising may start

    @property
    def p99_limit_ms(self) -> float | None:
        if self.baseline is None:
            return None
        s = self.settings
        return max(self.baseline * s.p99_factor, self.baseline + s.p99_slack_ms)

    def _degraded(self, sample: Sample) -> str | None:
        limit = self.p99_limit_ms
        if sample.canary_failed:
            return f"{sample.canary_failed} canary record(s) failed"
        p99_ms = sample.canary_p99_ms
        if limit is not None and p99_ms is not None and p99_ms > limit:
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

    def observe(self, sample: Sample) -> Decision | None:
        """A change of rate with its reason, or None to keep the rate."""
        s = self.settings
        why = self._degraded(sample)
        p99_ms = sample.canary_p99_ms
        if why is None and p99_ms is not None and (self.baseline is None or p99_ms < self.baseline):
            # the lowest p99 seen is the baseline: one taken during a burst does not hide a
            # later degradation
            self.baseline = p99_ms
        if why is not None:
            self._healthy = 0
            self._since_backoff = 0
            lower = max(s.floor, int(self.rate * s.backoff))
            if lower == self.rate:
                return None  # at the floor already
            decision = Decision(lower, self.rate, f"back off: {why}")
            self.rate = lower
            return decision
        self._healthy += 1
        self._since_backoff += 1
        if self.rate >= s.ceiling or self._healthy < s.hold or self._since_backoff < s.cooldown:
            return None
        if sample.copy_bps is not None and sample.copy_bps < s.copy_use * self.rate:
            return None  # the throttle is not the limit: raising it would not speed the copy
        higher = min(s.ceiling, self.rate + s.step)
        self._healthy = 0
        health = (
            f"canary p99 {sample.canary_p99_ms:.0f} ms within {self.p99_limit_ms:.0f} ms"
            if sample.canary_p99_ms is not None and self.p99_limit_ms is not None
            else "no canary figure"
        )
        copy = f", copying at {_mb(sample.copy_bps)}" if sample.copy_bps is not None else ""
        decision = Decision(
            higher, self.rate, f"raise: {health}, no partition outside the plan left the ISR{copy}"
        )
        self.rate = higher
        return decision
