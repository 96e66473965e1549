"""The pacing decision (pure): start at the floor, raise while calm, back off on a degraded
signal (at once when severe, after two intervals in a row when mild), hold in between, never
outside [floor, ceiling]. The real clusters: tests/integration/test_pace.py."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from kreplica.executor.pace import PaceController, PaceSettings, Sample, baseline_p99, p99

MB = 1_000_000
SETTINGS = PaceSettings(floor=10 * MB, ceiling=90 * MB, steps=8, hold=1, cooldown=2)


def at(p99_ms: float | None, copy: float | None = None, **kw: float) -> Sample:
    return Sample(canary_p99_ms=p99_ms, outside_out_of_isr=0, copy_bps=copy, **kw)  # type: ignore[arg-type]


def healthy(copy: float | None = None) -> Sample:
    return at(5.0, copy)


def test_p99_nearest_rank() -> None:
    assert p99([]) is None
    assert p99([3.0]) == 3.0
    assert p99([float(i) for i in range(1, 101)]) == 99.0
    assert p99([1.0] * 98 + [50.0, 70.0]) == 50.0


def test_the_baseline_is_the_median_of_short_p99s() -> None:
    quiet = [4.0, 5.0, 6.0]
    stalled = [4.0, 3000.0]  # one chunk with a stall: its p99 is 3 s
    assert baseline_p99([quiet, stalled, quiet, [], quiet]) == 6.0
    assert baseline_p99([[], []]) is None


def test_limits_have_an_absolute_floor_and_a_calm_band() -> None:
    pace = PaceController(SETTINGS, baseline_p99_ms=4.0)
    assert pace.p99_limit_ms == 50.0  # not 8 (x2) nor 29 (+25): a host's noise is more
    assert pace.p99_calm_ms == 27.0  # half way from the baseline to the limit
    busy = PaceController(SETTINGS, baseline_p99_ms=200.0)
    assert busy.p99_limit_ms == 400.0 and busy.p99_calm_ms == 300.0


def test_rises_from_the_floor_to_the_ceiling_while_calm() -> None:
    pace = PaceController(SETTINGS, baseline_p99_ms=4.0)
    assert pace.rate == 10 * MB
    rates = []
    for _ in range(12):
        decision = pace.observe(healthy())
        if decision is not None:
            assert decision.direction == "up" and "raise: canary p99 5 ms within 50 ms" in (
                decision.reason
            )
            rates.append(decision.rate)
    assert rates == [20 * MB, 30 * MB, 40 * MB, 50 * MB, 60 * MB, 70 * MB, 80 * MB, 90 * MB]
    assert pace.observe(healthy()) is None  # at the ceiling


def test_between_calm_and_the_limit_the_rate_holds() -> None:
    pace = PaceController(SETTINGS, baseline_p99_ms=4.0)
    for _ in range(5):
        assert pace.observe(at(40.0)) is None  # over calm (27), under the limit (50)
    assert pace.rate == 10 * MB
    assert pace.observe(at(20.0)) is not None  # calm again: a raise


def test_a_severe_sign_backs_off_at_once_a_mild_one_after_two_in_a_row() -> None:
    pace = PaceController(SETTINGS, baseline_p99_ms=4.0)
    for _ in range(4):
        pace.observe(healthy())
    assert pace.rate == 50 * MB
    assert pace.observe(at(70.0)) is None  # mild (over 50, under 100): one is noise
    calm = pace.observe(healthy())  # the run of mild samples is broken: calm, a raise
    assert calm is not None and calm.rate == 60 * MB
    assert pace.observe(at(70.0)) is None
    mild = pace.observe(at(80.0))
    assert mild is not None and mild.rate == 30 * MB and mild.direction == "down"
    assert "canary p99 80 ms over its limit 50 ms (baseline 4 ms), 2 intervals in a row" in (
        mild.reason
    )
    severe = pace.observe(at(400.0))
    assert severe is not None and severe.rate == 15 * MB
    isr = pace.observe(Sample(canary_p99_ms=5.0, outside_out_of_isr=2))
    assert isr is not None and "2 partition(s) outside the plan left the ISR" in isr.reason
    assert isr.rate == 10 * MB  # floored
    assert pace.observe(at(None, canary_failed=3)) is None  # at the floor already
    assert pace.observe(healthy()) is None  # cooldown: 2 healthy samples first
    raised = pace.observe(healthy())
    assert raised is not None and raised.rate == 20 * MB


def test_a_canary_record_left_unanswered_backs_off_before_any_latency_is_known() -> None:
    """A paused broker: no record of the interval is acknowledged (no p99 at all), but the
    oldest one has waited past the limit."""
    pace = PaceController(SETTINGS, baseline_p99_ms=4.0)
    pace.observe(healthy())
    assert pace.rate == 20 * MB
    assert pace.observe(at(None, canary_waiting_ms=30.0)) is None  # waiting, not for long
    down = pace.observe(at(None, canary_waiting_ms=1500.0))
    assert down is not None and down.rate == 10 * MB
    assert "a canary record unanswered for 1500 ms (limit 50 ms)" in down.reason


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


def test_a_noisy_host_does_not_swing_between_the_floor_and_a_step() -> None:
    """A loaded 2-core host: the canary's p99 wanders around its baseline with a lone spike
    now and then (never two over the limit in a row). The rate climbs and never backs off;
    the old rule (one sample over baseline x 2 backs off) backed off on every spike."""
    draw = random.Random(26)
    pace = PaceController(SETTINGS, baseline_p99_ms=120.0)
    limit = pace.p99_limit_ms
    assert limit == 240.0
    spiked = False
    for _ in range(200):
        spike = not spiked and draw.random() < 0.15
        figure = draw.uniform(limit * 1.05, limit * 1.9) if spike else draw.uniform(70, 180)
        spiked = spike
        decision = pace.observe(at(figure))
        assert decision is None or decision.direction == "up", decision
    assert pace.rate == SETTINGS.ceiling


def test_a_load_step_backs_off_at_the_first_interval_that_shows_it() -> None:
    """Steady at 40 ms, then a second producer (or a paused broker) sends it to seconds."""
    pace = PaceController(SETTINGS, baseline_p99_ms=40.0)
    for _ in range(6):
        pace.observe(at(42.0))
    assert pace.rate > SETTINGS.floor
    before = pace.rate
    down = pace.observe(at(900.0))
    assert down is not None and down.rate == before // 2
    again = pace.observe(at(900.0))
    assert again is not None and again.rate == max(SETTINGS.floor, before // 4)


def test_the_baseline_follows_the_median_of_recent_healthy_intervals_below_the_first() -> None:
    """A baseline measured during a burst (400 ms) falls once ten quiet intervals (~20 ms) are
    seen, so a later 300 ms interval is a degradation; fewer do not move it, degraded ones never
    count, and it goes back up with the host's noise but never above the first."""
    pace = PaceController(SETTINGS, baseline_p99_ms=400.0)
    for figure in (20.0, 22.0, 18.0, 25.0, 19.0, 23.0, 21.0, 20.0, 24.0):
        pace.observe(at(figure))
        assert pace.baseline == 400.0
    pace.observe(at(21.0))
    assert pace.baseline == 21.0 and pace.p99_limit_ms == 50.0
    assert pace.observe(at(300.0)) is not None  # over twice the limit: at once
    assert pace.baseline == 21.0
    for _ in range(10):
        pace.observe(at(45.0))  # calmer than the limit, noisier than before
    assert pace.baseline == 45.0
    first = PaceController(SETTINGS, baseline_p99_ms=10.0)
    for _ in range(20):
        first.observe(at(18.0))  # under its limit (50), above the first baseline
    assert first.baseline == 10.0


def test_without_a_baseline_the_first_healthy_p99_is_it() -> None:
    pace = PaceController(SETTINGS, baseline_p99_ms=None)
    pace.observe(at(30.0))
    assert pace.baseline == 30.0 and pace.p99_limit_ms == 60.0


@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.floats(0, 500)),
            st.integers(0, 5),
            st.one_of(st.none(), st.floats(0, 2e8)),
            st.one_of(st.none(), st.floats(0, 20000)),
        ),
        max_size=60,
    )
)
def test_rate_stays_within_floor_and_ceiling(samples: list[tuple]) -> None:  # type: ignore[type-arg]
    pace = PaceController(SETTINGS, baseline_p99_ms=4.0)
    for p, isr, copy, waiting in samples:
        before = pace.rate
        decision = pace.observe(Sample(p, isr, copy, canary_waiting_ms=waiting))
        assert SETTINGS.floor <= pace.rate <= SETTINGS.ceiling
        if decision is None:
            assert pace.rate == before
        else:
            assert decision.previous == before and decision.rate == pace.rate != before


@given(st.lists(st.floats(0, 99), min_size=1, max_size=80), st.integers(0, 79))
def test_no_back_off_without_two_mild_samples_in_a_row(quiet: list[float], at_: int) -> None:
    """Any run of samples under the limit (50 ms here) with a single one between the limit and
    twice it never backs off."""
    pace = PaceController(SETTINGS, baseline_p99_ms=4.0)
    figures = [min(f, 49.0) for f in quiet]
    figures[at_ % len(figures)] = max(51.0, min(99.0, quiet[at_ % len(quiet)] + 51.0))
    for figure in figures:
        decision = pace.observe(at(figure))
        assert decision is None or decision.direction == "up"
