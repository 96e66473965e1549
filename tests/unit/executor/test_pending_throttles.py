"""Throttles on a broker that is down (pure bookkeeping, against a simulated cluster): recorded
as pending in the journal, cleared once the broker is back; an apply that fails with nothing
moving restores what it set."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from kreplica.errors import SourceError
from kreplica.executor.journal import Journal
from kreplica.executor.kafka_cluster import BrokerDown
from kreplica.executor.throttle_records import clear_pending_throttles, restore_journal_throttles
from tests.unit.executor.fakes import FakeCluster
from tests.unit.executor.test_apply_loop import START, _applier

RATE = "leader.replication.throttled.rate"


class DownCluster(FakeCluster):
    """Broker configs of brokers in `unwritable` cannot be read or written (no ZooKeeper, no
    controller path); `via` names the way other down brokers were written."""

    def __init__(self) -> None:
        super().__init__(START)
        self.unwritable: set[int] = set()

    def configs(self, kind: str, names: Sequence[str]) -> dict[str, dict[str, str]]:
        out = super().configs(kind, names)
        return {n: v for n, v in out.items() if not (kind == "broker" and int(n) in self.down)}

    def alter_configs(self, kind: str, name: str, values: Mapping[str, str | None]) -> None:
        if kind == "broker" and int(name) in self.unwritable & self.down:
            raise BrokerDown(int(name), f"broker {name} is down")
        super().alter_configs(kind, name, values)
        if kind == "broker" and int(name) in self.down:
            self.last_path = f"ZooKeeper /config/brokers/{name}"


def _journal_with_throttle(tmp_path: Path, cluster: DownCluster) -> Journal:
    journal = Journal(tmp_path / "plan.journal.jsonl")
    for broker in ("2", "3"):
        journal.append(
            {
                "event": "throttle-set",
                "kind": "broker",
                "name": broker,
                "previous": {},
                "values": {RATE: "1000"},
            }
        )
        cluster.alter_configs("broker", broker, {RATE: "1000"})
    return journal


def test_a_broker_that_cannot_be_written_is_pending_then_cleared_once_back(
    tmp_path: Path,
) -> None:
    cluster = DownCluster()
    journal = _journal_with_throttle(tmp_path, cluster)
    cluster.down = {3}
    cluster.unwritable = {3}
    events: list[dict[str, object]] = []
    assert restore_journal_throttles(cluster, journal, events.append) == 1
    assert cluster.configs_set[("broker", "2")] == {}
    assert cluster.configs_set[("broker", "3")] == {RATE: "1000"}  # still there
    state = journal.state()
    assert list(state.throttles_pending) == [("broker", "3")]
    assert state.throttles_set == {("broker", "3"): {RATE: "1000"}}
    assert events[-1]["pending"] == {"broker 3": "broker 3 is down"}

    # still down: nothing to do, nothing written
    assert clear_pending_throttles(cluster, [journal], events.append) == 0
    assert journal.state().throttles_pending
    cluster.down = set()  # back
    assert clear_pending_throttles(cluster, [journal], events.append) == 1
    assert cluster.configs_set[("broker", "3")] == {}
    state = journal.state()
    assert not state.throttles_pending and not state.has_throttles


def test_a_down_broker_written_another_way_is_restored_and_the_way_recorded(
    tmp_path: Path,
) -> None:
    cluster = DownCluster()
    journal = _journal_with_throttle(tmp_path, cluster)
    cluster.down = {3}  # unreadable, but writable through ZooKeeper
    assert restore_journal_throttles(cluster, journal, lambda e: None) == 2
    assert cluster.configs_set[("broker", "3")] == {}  # read as ours, so put back
    (restored,) = [e for e in journal.read() if e["event"] == "throttle-restored"]
    assert restored["via"] == {"3": "ZooKeeper /config/brokers/3"}
    assert not journal.state().has_throttles


def test_pending_of_a_journal_with_other_throttles_set_is_left_to_its_apply(
    tmp_path: Path,
) -> None:
    cluster = DownCluster()
    journal = _journal_with_throttle(tmp_path, cluster)
    cluster.down = cluster.unwritable = {3}
    restore_journal_throttles(cluster, journal, lambda e: None)
    journal.append(  # a resume set throttles again, then died
        {"event": "throttle-set", "kind": "broker", "name": "2", "values": {RATE: "5"}}
    )
    cluster.down = set()
    assert clear_pending_throttles(cluster, [journal], lambda e: None) == 0


def test_an_apply_that_fails_with_nothing_moving_restores_its_throttles(tmp_path: Path) -> None:
    cluster = FakeCluster(START, polls=1000)
    applier = _applier(tmp_path, cluster, throttle=1000)

    def fail_reads(topics: object = None) -> object:
        raise SourceError("the cluster went away")

    calls = {"n": 0}

    def sleep(seconds: float) -> None:
        calls["n"] += 1
        if calls["n"] == 1:  # the moves end (cancelled by someone), then reads fail for good
            cluster.moving.clear()
            cluster.snapshot = fail_reads  # type: ignore[method-assign]

    applier.clock.sleep = sleep
    ticks = iter(range(0, 10_000, 60))
    applier.clock.now = lambda: float(next(ticks))
    with pytest.raises(SourceError):
        applier.run()
    events = [e["event"] for e in Journal(tmp_path / "plan.journal.jsonl").read()]
    assert events[-2:] == ["error", "throttle-restored"]
    assert all(not values for values in cluster.configs_set.values())


def test_a_paced_rate_the_broker_has_not_applied_yet_is_still_restored(tmp_path: Path) -> None:
    """--pace auto sets a rate several times; in ZooKeeper mode a broker applies each a moment
    later, so at the restore it may still show an earlier one. That value is kreplica's, not
    someone else's: it is restored, while a value nobody in the journal set stays."""
    cluster = DownCluster()
    journal = _journal_with_throttle(tmp_path, cluster)
    for rate in ("2000", "3000"):  # two pace changes on broker 2; the broker shows the first
        journal.append(
            {
                "event": "throttle-set",
                "kind": "broker",
                "name": "2",
                "previous": {},
                "values": {RATE: rate},
            }
        )
    cluster.alter_configs("broker", "2", {RATE: "2000"})
    cluster.alter_configs("broker", "3", {RATE: "7777"})  # an operator's own value
    slept: list[float] = []
    assert restore_journal_throttles(cluster, journal, lambda e: None, slept.append) == 1
    assert cluster.configs_set[("broker", "2")] == {}
    assert cluster.configs_set[("broker", "3")] == {RATE: "7777"}
    assert slept  # it waited for the last value to show before deciding
