"""Maintenance windows and a byte budget for apply (pure: times and sizes in, waits out).

`--window HH:MM-HH:MM` (local time, or `--window-tz ZONE`): no wave starts outside it; a wave
in flight when it closes finishes (with `--window-floor` at the `--pace auto` floor). A window
may wrap past midnight (22:00-06:00); start == end is the whole day. Seconds may be given
(HH:MM:SS): a short gap is how a test closes a window mid-run without waiting minutes.
`--max-bytes-per-hour N`: no wave starts while the bytes of the waves started in the last hour
plus its own would pass N (a wave larger than N alone starts once nothing else counts).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from kreplica.errors import UsageError

_TIME = r"(\d{1,2}):(\d{2})(?::(\d{2}))?"
_WINDOW = re.compile(rf"\s*{_TIME}\s*-\s*{_TIME}\s*")


@dataclass(frozen=True)
class Window:
    start: int  # seconds after midnight
    end: int

    def text(self) -> str:
        return f"{_clock_text(self.start)}-{_clock_text(self.end)}"

    def is_open(self, moment: datetime) -> bool:
        second = moment.hour * 3600 + moment.minute * 60 + moment.second
        if self.start == self.end:
            return True
        if self.start < self.end:
            return self.start <= second < self.end
        return second >= self.start or second < self.end  # wraps past midnight

    def next_open(self, moment: datetime) -> datetime:
        """`moment` when open, else when the window opens next (same zone as `moment`)."""
        if self.is_open(moment):
            return moment
        opening = moment.replace(
            hour=self.start // 3600,
            minute=self.start // 60 % 60,
            second=self.start % 60,
            microsecond=0,
        )
        return opening if opening > moment else opening + timedelta(days=1)


def _clock_text(second: int) -> str:
    text = f"{second // 3600:02d}:{second // 60 % 60:02d}"
    return text + (f":{second % 60:02d}" if second % 60 else "")


def parse_window(text: str) -> Window:
    match = _WINDOW.fullmatch(text)
    if match is None:
        raise UsageError(f"`window` {text!r}: give HH:MM-HH:MM, e.g. 22:00-06:00")
    h1, m1, s1, h2, m2, s2 = (int(g or 0) for g in match.groups())
    if h1 > 23 or h2 > 23 or max(m1, m2, s1, s2) > 59:
        raise UsageError(
            f"`window` {text!r}: hours 00-23, minutes and seconds 00-59, e.g. 22:00-06:00"
        )
    return Window(h1 * 3600 + m1 * 60 + s1, h2 * 3600 + m2 * 60 + s2)


def parse_zone(name: str | None) -> tzinfo | None:
    """--window-tz: an IANA zone name (Europe/Paris, UTC); None: the machine's local time."""
    if name is None:
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(
            f"`window_tz` {name!r} is not a time zone; give an IANA name such as Europe/Paris "
            "or UTC"
        ) from None


def budget_wait(
    started: Sequence[tuple[float, int]], now: float, next_bytes: int, per_hour: int
) -> float:
    """Seconds to wait before a wave of `next_bytes` may start, given the waves started so far
    as (time, bytes); 0 when it may start now."""
    recent = sorted((t, b) for t, b in started if now - t < 3600.0)
    used = sum(b for _, b in recent)
    if not recent or used + next_bytes <= per_hour:
        return 0.0
    for t, b in recent:  # the oldest leave the hour first
        used -= b
        if not used or used + next_bytes <= per_hour:
            return max(0.0, t + 3600.0 - now)
    return 0.0  # pragma: no cover - the loop always returns once `used` reaches 0
