"""The pacing decision (pure): start at the floor, raise while healthy, back off on a degraded
signal, never outside [floor, ceiling]. The real clusters: tests/integration/test_pace.py."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kreplica.executor.pace import PaceController, PaceSettings, Sample, p99

MB = 1_000_000
SETTINGS = PaceSettings(floor=10 * MB, ceiling=90 * MB, steps=8, hold=1, cooldown=2)


def healthy(copy: float | None = None) -> Sample:
    return Sample(canary_p99_ms=5.0, outside_out_of_isr=0, copy_bps=copy)


def test_p99_nearest_rank() -> None:
    assert p99([]) is None
    assert p99([3.0]) == 3.0
    assert p99([float(i) for i in range(1, 101)]) == 99.0
    assert p99([1.0] * 98 + [50.0, 70.0]) == 50.0


def test_rises_from_the_floor_to_the_ceiling_while_healthy() -> None:
    pace = PaceController(SETTINGS, baseline_p99_ms=4.0)
    assert pace.rate == 10 * MB
    rates = []
    for _ in range(12):
        decision = pace.observe(healthy())
        if decision is not None:
            assert decision.direction == "up" and "raise: canary p99 5 ms within 29 ms" in (
                decision.reason
            )
            rates.append(decision.rate)
    assert rates == [20 * MB, 30 * MB, 40 * MB, 50 * MB, 60 * MB, 70 * MB, 80 * MB, 90 * MB]
    assert pace.observe(healthy()) is None  # at the ceiling


def test_backs_off_multiplicatively_and_waits_before_raising_again() -> None:
    pace = PaceController(SETTINGS, baseline_p99_ms=4.0)
    for _ in range(4):
        pace.observe(healthy())
    assert pace.rate == 50 * MB
    slow = pace.observe(Sample(canary_p99_ms=40.0, outside_out_of_isr=0))
    assert slow is not None and slow.rate == 25 * MB and slow.direction == "down"
    assert "canary p99 40 ms over its limit 29 ms (baseline 4 ms)" in slow.reason
    isr = pace.observe(Sample(canary_p99_ms=5.0, outside_out_of_isr=2))
    assert isr is not None and isr.rate == 12_500_000
    assert "2 partition(s) outside the plan left the ISR" in isr.reason
    failed = pace.observe(Sample(canary_p99_ms=None, outside_out_of_isr=0, canary_failed=3))
    assert failed is not None and failed.rate == 10 * MB  # floored
    assert pace.observe(Sample(canary_p99_ms=99.0, outside_out_of_isr=0)) is None  # at floor
    assert pace.observe(healthy()) is None  # cooldown: 2 healthy samples first
    raised = pace.observe(healthy())
    assert raised is not None and raised.rate == 20 * MB


def test_out_of_isr_counts_against_what_was_out_before() -> None:
    pace = PaceController(SETTINGS, baseline_p99_ms=None, outside_before=3)
    assert pace.observe(Sample(canary_p99_ms=None, outside_out_of_isr=3)) is not None  # raise
    down = pace.observe(Sample(canary_p99_ms=None, outside_out_of_isr=4))
    assert down is not None and "1 partition(s) outside the plan left the ISR" in down.reason


def test_no_raise_while_the_followers_copy_below_the_throttle() -> None:
    pace = PaceController(SETTINGS, baseline_p99_ms=4.0)
    assert pace.observe(healthy(copy=2 * MB)) is None  # 2 MB/s of 10: not the limit
    up = pace.observe(healthy(copy=9.5 * MB))
    assert up is not None and "copying at 9.5 MB/s" in up.reason


@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.floats(0, 500)),
            st.integers(0, 5),
            st.one_of(st.none(), st.floats(0, 2e8)),
        ),
        max_size=60,
    )
)
def test_rate_stays_within_floor_and_ceiling(samples: list[tuple]) -> None:  # type: ignore[type-arg]
    pace = PaceController(SETTINGS, baseline_p99_ms=4.0)
    for p, isr, copy in samples:
        before = pace.rate
        decision = pace.observe(Sample(p, isr, copy))
        assert SETTINGS.floor <= pace.rate <= SETTINGS.ceiling
        if decision is None:
            assert pace.rate == before
        else:
            assert decision.previous == before and decision.rate == pace.rate != before


def test_the_baseline_falls_to_the_lowest_p99_seen() -> None:
    """A baseline measured during a burst (400 ms) falls to a quiet interval's 20 ms, so a
    later 300 ms interval is a degradation."""
    pace = PaceController(SETTINGS, baseline_p99_ms=400.0)
    assert pace.observe(Sample(canary_p99_ms=20.0, outside_out_of_isr=0)) is not None  # raise
    assert pace.baseline == 20.0 and pace.p99_limit_ms == 45.0
    down = pace.observe(Sample(canary_p99_ms=300.0, outside_out_of_isr=0))
    assert down is not None and "baseline 20 ms" in down.reason
    assert pace.baseline == 20.0  # a degraded sample never moves it
