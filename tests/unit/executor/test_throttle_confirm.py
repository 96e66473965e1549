"""Waiting for the brokers to report the throttle kreplica set (pure code with a fake cluster: the
real brokers are asked in tests/integration/test_throttle_confirm.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import ExitCode, SourceError, ThrottleNotApplied
from kreplica.executor.apply_base import _Clock
from kreplica.executor.journal import Journal
from kreplica.executor.throttle_confirm import describe_missing, wait_applied
from kreplica.executor.throttles import FOLLOWER_RATE, LEADER_RATE
from tests.unit.executor.fakes import FakeCluster
from tests.unit.executor.test_apply_loop import START, _applier


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0
        self.sleeps: list[float] = []

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds


class Brokers:
    """Brokers that report a value only after being asked `lag` times; None: never."""

    def __init__(self, values: dict[str, dict[str, str]], lag: dict[str, int | None]) -> None:
        self.values = values
        self.lag = dict(lag)
        self.asked: list[list[str]] = []
        self.fail_first = 0

    def read(self, names: Sequence[str]) -> dict[str, dict[str, str]]:
        self.asked.append(list(names))
        if self.fail_first:
            self.fail_first -= 1
            raise SourceError("broker 1 did not answer")
        out = {}
        for name in names:
            left = self.lag.get(name, 0)
            if left is None or left > 0:
                self.lag[name] = None if left is None else left - 1
                out[name] = {LEADER_RATE: "1"}  # the old rate
            else:
                out[name] = dict(self.values[name])
        return out


WANTED = {b: {LEADER_RATE: "500", FOLLOWER_RATE: "500"} for b in ("1", "2", "3")}


def test_a_healthy_cluster_is_confirmed_in_one_round_without_sleeping() -> None:
    clock, brokers = FakeClock(), Brokers(WANTED, {})
    result = wait_applied(brokers.read, WANTED, timeout_s=30, now=clock.now, sleep=clock.sleep)
    assert result.confirmed and result.rounds == 1 and clock.sleeps == []


def test_only_the_brokers_not_confirmed_are_asked_again_with_a_growing_pause() -> None:
    clock, brokers = FakeClock(), Brokers(WANTED, {"2": 4})
    result = wait_applied(brokers.read, WANTED, timeout_s=30, now=clock.now, sleep=clock.sleep)
    assert result.confirmed and result.rounds == 5
    assert brokers.asked == [["1", "2", "3"], ["2"], ["2"], ["2"], ["2"]]
    assert clock.sleeps == [0.05, 0.1, 0.2, 0.4]


def test_a_broker_that_never_applies_it_is_named_once_the_wait_runs_out() -> None:
    clock, brokers = FakeClock(), Brokers(WANTED, {"3": None})
    result = wait_applied(brokers.read, WANTED, timeout_s=30, now=clock.now, sleep=clock.sleep)
    assert not result.confirmed and list(result.missing) == ["3"]
    assert result.missing["3"] == {LEADER_RATE: "1", FOLLOWER_RATE: None}
    assert clock.t == pytest.approx(30) and max(clock.sleeps) == 1.0  # bounded, pause capped
    text = describe_missing(result.missing, "500")
    assert "broker 3 reports" in text and "follower.replication.throttled.rate unset" in text


def test_a_failed_read_is_tried_again() -> None:
    clock, brokers = FakeClock(), Brokers(WANTED, {})
    brokers.fail_first = 2
    result = wait_applied(brokers.read, WANTED, timeout_s=30, now=clock.now, sleep=clock.sleep)
    assert result.confirmed and result.rounds == 3 and result.last_error is None


# -- in the apply loop ---------------------------------------------------------------------------


class LaggingCluster(FakeCluster):
    """Answers DescribeConfigs for a broker from what it has applied: a write is applied after
    the broker was asked `lag` times (None: never), as a ZooKeeper-mode broker applies a change
    notification a moment after the write returned."""

    def __init__(self, lag: int | None, brokers: Sequence[str] = ("2",)) -> None:
        super().__init__(START)
        self.lag, self.lagging = lag, set(brokers)
        self.applied: dict[str, dict[str, str]] = {}
        self.left: dict[str, int | None] = {}
        self.writes: list[tuple[str, str]] = []

    def alter_configs(self, kind: str, name: str, values: Mapping[str, str | None]) -> None:
        super().alter_configs(kind, name, values)
        self.writes.append((kind, name))
        if kind == "broker" and name in self.lagging:
            self.left[name] = self.lag

    def configs(self, kind: str, names: Sequence[str]) -> dict[str, dict[str, str]]:
        out = super().configs(kind, names)
        if kind != "broker":
            return out
        for name in names:
            if name not in self.lagging:
                continue
            left = self.left.get(name, 0)
            if left is None or left > 0:
                self.left[name] = None if left is None else left - 1
                out[name] = dict(self.applied.get(name, {}))
            else:
                self.applied[name] = dict(out[name])
        return out


def _run_on_clock(tmp_path: Path, cluster: LaggingCluster) -> Any:
    """An apply with --throttle 1000 run to its end on a fake clock."""
    clock = FakeClock()
    applier = _applier(tmp_path, cluster, throttle=1000)
    applier.clock = _Clock(now=clock.now, sleep=clock.sleep)
    applier.run()
    return applier


def _kinds(tmp_path: Path) -> list[str]:
    return [e["event"] for e in Journal(tmp_path / "plan.journal.jsonl").read()]


def test_the_first_wave_waits_until_every_broker_reports_the_rate(tmp_path: Path) -> None:
    cluster = LaggingCluster(lag=3)
    applier = _run_on_clock(tmp_path, cluster)
    kinds = _kinds(tmp_path)
    assert kinds.index("throttle-set") < kinds.index("throttle-confirmed") < kinds.index("submit")
    confirmed = next(
        e for e in Journal(tmp_path / "plan.journal.jsonl").read()
        if e["event"] == "throttle-confirmed"
    )  # fmt: skip
    assert confirmed["what"] == "moves" and confirmed["rounds"] == 4
    assert 2 in confirmed["brokers"]
    # the topic lists are written before any broker rate (a broker applies them in order)
    throttle_writes = cluster.writes[: kinds.count("throttle-set")]
    first_broker = [k for k, _ in throttle_writes].index("broker")
    assert all(k == "broker" for k, _ in throttle_writes[first_broker:])
    assert "topic" in [k for k, _ in throttle_writes[:first_broker]]
    shown = [e for e in applier.events if e["event"] == "throttle-confirmed"]  # type: ignore[attr-defined]
    assert len(shown) == 1


def test_a_broker_that_never_applies_the_throttle_stops_the_apply_before_any_submit(
    tmp_path: Path,
) -> None:
    cluster = LaggingCluster(lag=None)
    clock = FakeClock()
    applier = _applier(tmp_path, cluster, throttle=1000, throttle_confirm_s=5.0)
    applier.clock = _Clock(now=clock.now, sleep=clock.sleep)
    with pytest.raises(ThrottleNotApplied) as err:
        applier.run()
    message = str(err.value)
    assert err.value.exit_code == ExitCode.UNSETTLED and "\n" not in message
    assert message.startswith("broker 2 has not applied the throttle kreplica set after 5 s")
    assert cluster.submitted == []
    kinds = _kinds(tmp_path)
    assert "submit" not in kinds and "throttle-confirmed" not in kinds
    assert kinds[-2:] == ["error", "throttle-restored"]
    # nothing of kreplica's is left stored, the unapplied broker's rate included
    assert all(not values for values in cluster.configs_set.values())
    assert clock.t < 5.0 + 10.0  # the wait, then the restore's own short wait


def _paced(tmp_path: Path, cluster: LaggingCluster) -> tuple[Any, FakeClock]:
    clock = FakeClock()
    applier = _applier(tmp_path, cluster, throttle=1000, throttle_max=4000, pace=True)
    applier.clock = _Clock(now=clock.now, sleep=clock.sleep)
    applier._rate_brokers = ["1", "2"]
    applier.journal.append({"event": "start", "plan": "plan.json"})
    return applier, clock


def test_a_pace_change_is_confirmed_on_later_ticks_without_waiting(tmp_path: Path) -> None:
    cluster = LaggingCluster(lag=2)
    applier, clock = _paced(tmp_path, cluster)
    applier._set_rate(2000)
    assert clock.sleeps == []  # writing a new rate does not wait
    applier._check_rate()
    applier._check_rate()
    assert "throttle-confirmed" not in _kinds(tmp_path)
    applier._check_rate()
    confirmed = [
        e for e in Journal(applier.journal.path).read() if e["event"] == "throttle-confirmed"
    ]
    assert [(e["what"], e["brokers"], e["rounds"]) for e in confirmed] == [("pace", [1, 2], 3)]
    assert clock.sleeps == []
    applier._check_rate()  # nothing pending: no more reads
    assert (
        len([e for e in Journal(applier.journal.path).read() if e["event"] == "throttle-confirmed"])
        == 1
    )


def test_a_pace_change_not_applied_is_a_warning_once_and_the_moves_go_on(tmp_path: Path) -> None:
    cluster = LaggingCluster(lag=None)
    applier, clock = _paced(tmp_path, cluster)
    applier._set_rate(2000)
    applier._check_rate()
    clock.t += 31.0
    applier._check_rate()
    applier._check_rate()
    warnings = [e for e in applier.events if e["event"] == "warning"]
    assert len(warnings) == 1
    assert "the rate 2000 is not in effect after 31 s: broker 2" in warnings[0]["message"]
    assert clock.sleeps == []


def _stale(cluster: LaggingCluster, broker: str, rate: str, reads: int) -> None:
    """Broker `broker` still reports `rate` for `reads` more reads: the restore of a run
    before removed it, and the broker has not processed that change yet."""
    cluster.applied[broker] = {LEADER_RATE: rate, FOLLOWER_RATE: rate}
    cluster.left[broker] = reads


def test_a_broker_already_reporting_the_rate_gets_one_less_first_so_the_report_proves_it(
    tmp_path: Path,
) -> None:
    """The rate being removed reads as ours: taken as proof, the moves would start while
    the broker is about to apply the removal (unthrottled until it applies ours)."""
    cluster = LaggingCluster(lag=3)
    _stale(cluster, "2", "1000", reads=3)
    _run_on_clock(tmp_path, cluster)
    events = Journal(tmp_path / "plan.journal.jsonl").read()
    set_on_2 = [
        e["values"][LEADER_RATE]
        for e in events
        if e["event"] == "throttle-set" and e["kind"] == "broker" and e["name"] == "2"
    ]
    assert set_on_2 == ["999", "1000"]
    # the others did not report it: one write each
    others = [e for e in events if e["event"] == "throttle-set" and e["kind"] == "broker"]
    assert len(others) == len({e["name"] for e in others}) + 1
    kinds = [e["event"] for e in events]
    # ours is written only once 999 is reported, and the moves wait for it
    last_set = max(i for i, k in enumerate(kinds) if k == "throttle-set")
    assert last_set < kinds.index("throttle-confirmed") < kinds.index("submit")
    assert kinds.count("throttle-confirmed") == 1
    assert [w for w in cluster.writes if w == ("broker", "2")][:2] == [("broker", "2")] * 2


def test_a_restore_waits_until_the_brokers_report_it(tmp_path: Path) -> None:
    """So a command run right after does not read the rate being removed as the one there."""
    cluster = LaggingCluster(lag=3)
    applier = _run_on_clock(tmp_path, cluster)
    assert cluster.configs("broker", ["2"]) == {"2": {}}  # applied: the next read sees it
    assert cluster.applied["2"] == {}
    warned = [e for e in applier.events if e["event"] == "warning"]  # type: ignore[attr-defined]
    assert warned == []


def test_a_restore_a_broker_does_not_apply_is_a_warning_after_a_bounded_wait() -> None:
    from kreplica.executor.throttle_records import RESTORE_CONFIRM_S, restore_journal_throttles

    class Never(LaggingCluster):
        def alter_configs(self, kind: str, name: str, values: Mapping[str, str | None]) -> None:
            super().alter_configs(kind, name, values)
            if kind == "broker" and name == "2" and all(v is None for v in values.values()):
                self.left[name] = None  # the removal is never applied

    cluster = Never(lag=0)
    journal = Journal(Path("/nonexistent-kreplica-test") / "j.jsonl")
    events: list[dict[str, Any]] = [
        {
            "event": "throttle-set",
            "kind": "broker",
            "name": "2",
            "previous": {},
            "values": {LEADER_RATE: "1000"},
        }
    ]
    cluster.alter_configs("broker", "2", {LEADER_RATE: "1000"})
    cluster.configs("broker", ["2"])  # applied
    journal.read = lambda: events  # type: ignore[method-assign]
    journal.append = events.append  # type: ignore[method-assign]
    clock = FakeClock()
    emitted: list[dict[str, Any]] = []
    assert restore_journal_throttles(cluster, journal, emitted.append, clock.sleep) == 1
    [warning] = [e for e in emitted if e["event"] == "warning"]
    assert "not in effect yet after 10 s" in warning["message"]
    assert f"broker 2 reports {LEADER_RATE} 1000" in warning["message"]
    assert RESTORE_CONFIRM_S <= clock.t < RESTORE_CONFIRM_S + 2
