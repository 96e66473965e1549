"""Maintenance windows and the byte budget: the pure rules, and the apply loop against the
simulated cluster with a fake clock (a window that closes mid-run: no wave starts after it,
the next starts when it opens again)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import UsageError
from kreplica.executor.apply import Applier
from kreplica.executor.apply_base import _Clock
from kreplica.executor.journal import Journal
from kreplica.executor.options import ApplyOptions
from kreplica.executor.window import Window, budget_wait, parse_window, parse_zone
from tests.unit.executor.fakes import FakeCluster, FakeSubmitter
from tests.unit.executor.test_apply_loop import START, TARGET, _plan


def at(hh: int, mm: int, day: int = 1) -> datetime:
    return datetime(2026, 6, day, hh, mm, tzinfo=UTC)


def test_windows_plain_and_past_midnight() -> None:
    day = parse_window("09:30-17:00")
    assert day == Window(570 * 60, 1020 * 60) and day.text() == "09:30-17:00"
    assert day.is_open(at(9, 30)) and not day.is_open(at(17, 0)) and not day.is_open(at(3, 0))
    assert day.next_open(at(18, 0)) == at(9, 30, day=2)
    assert day.next_open(at(8, 0)) == at(9, 30)
    assert day.next_open(at(12, 0)) == at(12, 0)
    night = parse_window("22:00-06:00")
    assert night.is_open(at(23, 59)) and night.is_open(at(5, 59)) and not night.is_open(at(6, 0))
    assert night.next_open(at(12, 0)) == at(22, 0)
    assert parse_window("00:00-00:00").is_open(at(13, 13))  # the whole day
    short = parse_window("12:00:10-12:00:20")  # seconds: a test's window of ten
    assert short.text() == "12:00:10-12:00:20" and Window(43210, 43220) == short
    noon = datetime(2026, 6, 1, 12, 0, 9, 500000, tzinfo=UTC)
    assert not short.is_open(noon) and short.is_open(noon.replace(second=10))
    assert not short.is_open(noon.replace(second=20))
    assert short.next_open(noon) == noon.replace(second=10, microsecond=0)
    gap = parse_window("12:00:20-12:00:10")  # closed only from :10 to :20
    assert gap.is_open(noon) and not gap.is_open(noon.replace(second=15))
    assert gap.next_open(noon.replace(second=15)) == noon.replace(second=20, microsecond=0)
    for bad in ("9-17", "25:00-06:00", "22:60-06:00", "22:00", "22:00:60-06:00", "2:00:5-3:00"):
        with pytest.raises(UsageError, match="`window`"):
            parse_window(bad)
    with pytest.raises(UsageError, match="`window_tz` 'Mars/Base'"):
        parse_zone("Mars/Base")
    assert parse_zone("Europe/Paris") is not None and parse_zone(None) is None


def test_budget_wait() -> None:
    assert budget_wait([], 0.0, 500, 100) == 0.0  # alone and too big: starts anyway
    assert budget_wait([(0.0, 60)], 10.0, 40, 100) == 0.0
    assert budget_wait([(0.0, 60)], 10.0, 50, 100) == 3590.0  # once the 60 left the hour
    assert budget_wait([(0.0, 60), (100.0, 30)], 200.0, 30, 100) == 3400.0
    assert budget_wait([(0.0, 60)], 3700.0, 90, 100) == 0.0  # an hour ago: not counted


class FakeClock:
    def __init__(self, wall: float) -> None:
        self.t = wall
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += max(seconds, 0.001)


def _run(
    tmp_path: Path, clock: FakeClock, cluster: Any = None, **options: Any
) -> tuple[Any, list[dict[str, Any]]]:
    cluster = cluster or FakeCluster(START)
    events: list[dict[str, Any]] = []
    applier = Applier(
        cluster,
        FakeSubmitter(cluster),
        _plan(tmp_path, TARGET, START),
        Journal(tmp_path / "plan.journal.jsonl"),
        ApplyOptions(poll_interval_s=60.0, max_partitions=2, **options),
        events.append,
        _Clock(now=lambda: clock.t, sleep=clock.sleep, wall=lambda: clock.t),
    )
    result = applier.run()
    return result, Journal(tmp_path / "plan.journal.jsonl").read()


def test_a_window_that_closes_mid_run_holds_the_next_wave_until_it_opens(tmp_path: Path) -> None:
    # 16:58 UTC in a 09:00-17:00 window; each poll of the move takes 60 s (the fake clock),
    # so wave 1 ends after 17:00 and wave 2 waits for 09:00 the next day
    clock = FakeClock(at(16, 58).timestamp())
    result, journal = _run(tmp_path, clock, window=parse_window("09:00-17:00"), window_tz=UTC)
    assert result.waves == 2 and sorted(result.moved) == sorted(TARGET)
    kinds = [e["event"] for e in journal]
    assert kinds.index("wave-done") < kinds.index("window-wait") < kinds.index("window-open")
    wait = next(e for e in journal if e["event"] == "window-wait")
    assert wait["wave"] == 2 and wait["until"] == "2026-06-02T09:00:00+00:00"
    second = [i for i, e in enumerate(journal) if e["event"] == "submit" and e["wave"] == 2]
    assert len(second) == 2 and all(kinds.index("window-open") < i for i in second)
    assert clock.t >= at(9, 0, day=2).timestamp()  # the fake clock waited into the window


def test_outside_the_window_from_the_start_waits_before_the_first_wave(tmp_path: Path) -> None:
    clock = FakeClock(at(20, 0).timestamp())
    _, journal = _run(
        tmp_path, clock, window=parse_window("22:00-06:00"), window_tz=UTC, throttle=1000
    )
    kinds = [e["event"] for e in journal]
    # no throttle is set while nothing moves: the wait comes first
    assert kinds.index("window-wait") < kinds.index("throttle-set") < kinds.index("submit")
    assert kinds.count("window-wait") == 1
    assert next(e for e in journal if e["event"] == "window-wait")["seconds"] == 7200.0


def test_the_byte_budget_spaces_the_waves(tmp_path: Path) -> None:
    # each partition copies 10 bytes (the simulated size): a wave of 2 is 20 bytes
    clock = FakeClock(at(12, 0).timestamp())
    _, journal = _run(tmp_path, clock, max_bytes_per_hour=30)
    waits = [e for e in journal if e["event"] == "window-wait"]
    assert len(waits) == 1 and waits[0]["wave"] == 2
    assert "`max_bytes_per_hour` 30" in waits[0]["reason"]


class Interrupted(Exception):
    """Ctrl-C while apply waits for the window."""


def test_stopped_while_waiting_then_resumed_in_the_next_window(tmp_path: Path) -> None:
    """The first run is stopped during its wait for the window (wave 1 done, wave 2 not
    submitted); `--resume` the next morning, inside the window, submits wave 2 only."""
    window = parse_window("09:00-17:00")

    class Stopping(FakeClock):
        def sleep(self, seconds: float) -> None:
            journal = Journal(tmp_path / "plan.journal.jsonl").read()
            if any(e["event"] == "window-wait" for e in journal):
                raise Interrupted
            super().sleep(seconds)

    cluster = FakeCluster(START)  # the same cluster for both runs
    with pytest.raises(Interrupted):
        _run(tmp_path, Stopping(at(16, 58).timestamp()), cluster, window=window, window_tz=UTC)
    first = Journal(tmp_path / "plan.journal.jsonl").read()
    assert [e["wave"] for e in first if e["event"] == "submit"] == [1, 1]
    morning = FakeClock(at(9, 30, day=2).timestamp())
    result, journal = _run(tmp_path, morning, cluster, window=window, window_tz=UTC, resume=True)
    again = journal[len(first) :]
    assert sorted([*result.already_done, *result.moved]) == sorted(TARGET)
    assert len(result.moved) == 2  # wave 2's; wave 1's were done before the stop
    submitted = [e for e in again if e["event"] == "submit"]
    assert len(submitted) == 2 and not [e for e in again if e["event"] == "window-wait"]
    assert {(e["topic"], e["partition"]) for e in submitted}.isdisjoint(
        {(e["topic"], e["partition"]) for e in first if e["event"] == "submit"}
    )
