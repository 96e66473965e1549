"""Polling instead of sleep-then-assert: ask until the answer is the expected one or a bound
passes, then let the test assert on the last answer (so a timeout fails with the test's own
message and values). The bound is a ceiling, never a measurement."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(
    probe: Callable[[], T],
    done: Callable[[T], bool],
    *,
    timeout_s: float = 10.0,
    interval_s: float = 0.1,
) -> T:
    """Call `probe` until `done(answer)` or `timeout_s` has passed; return the last answer."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = probe()
        if done(answer) or time.monotonic() >= deadline:
            return answer
        time.sleep(interval_s)
