"""How fast a move copies, counted one way for apply's progress lines and `kreplica status`:
never above what the replication throttle lets the receiving brokers take (Kafka's first fetch
of a new replica bursts before the throttle's quota window fills, so bytes over a short time
overstate the pace), and, for apply, bytes copied over a sliding window rather than since the
start. The ETA follows from that rate, less the rate the partitions being copied are written
at (kreplica.executor.writerate). Pure: the caller brings the clock's readings."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

WINDOW_S = 20.0  # long enough to hold several polls, short enough to follow a pace change
# A copy at this share of its throttle or more is throttle-bound: the throttle is an average
# over Kafka's quota window, and a follower fetches up to 1 MB at a time, so the measured rate
# hovers around it
THROTTLE_SHARE = 0.8


class CopyRate:
    """Bytes copied, sampled over time; the rate over the last `window_s` seconds."""

    def __init__(self, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, at: float, copied: int) -> None:
        self._samples.append((at, copied))
        # keep one sample at or before the window's start, so the rate spans the whole window
        while len(self._samples) > 2 and self._samples[1][0] <= at - self.window_s:
            self._samples.popleft()

    def rate(self) -> float | None:
        """Bytes/s between the oldest sample kept and the newest (None: no time between)."""
        if len(self._samples) < 2:
            return None
        (t0, c0), (t1, c1) = self._samples[0], self._samples[-1]
        if t1 <= t0:
            return None
        return max(0, c1 - c0) / (t1 - t0)


def throttle_cap(limits: Iterable[int | float | None]) -> float | None:
    """What the receiving brokers may take together: the sum of their follower throttles,
    one per receiving broker (None: no broker, or one of them not throttled)."""
    total = 0.0
    any_broker = False
    for limit in limits:
        if not limit:
            return None
        total += limit
        any_broker = True
    return total if any_broker else None


def capped(rate: float | None, cap: float | None) -> float | None:
    """The measured rate, never above the cap (None stays None: nothing measured yet)."""
    if rate is None or cap is None:
        return rate
    return min(rate, cap)


def eta_rate(rate: float | None, cap: float | None, writes: float = 0.0) -> float | None:
    """The rate an ETA counts on: with writes to outrun, the cap (the receiving brokers'
    throttles) when the copy is throttle-bound, since less the writes a rate read a little
    under the throttle would swing the ETA widely; else the rate measured (the one shown)."""
    if writes > 0 and rate is not None and cap and rate >= THROTTLE_SHARE * cap:
        return cap
    return rate


def eta_s(left: int, rate: float | None, writes: float = 0.0) -> float | None:
    """Seconds until `left` bytes are copied at `rate` while the partitions being copied are
    written at `writes` bytes/s (once per new replica: the copy gains on the leader at
    rate - writes). 0 with nothing left; None: no rate yet, or one that never catches up."""
    if left <= 0:
        return 0.0
    if not rate or rate <= writes:
        return None
    return left / (rate - writes)
