"""kreplica.executor.facade: what the CLI and the library call. The after-apply election
(moved here from the CLI's drain / rebalance): the partitions led off their first replica are
elected, a refused one is retried until it is elected or the time is up, and one already led
by its preferred replica is left alone. A cluster fake stands in (pure logic only)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pytest

from kreplica.errors import SourceError
from kreplica.executor import facade
from kreplica.executor.apply_base import _Clock
from kreplica.executor.journal import Journal
from kreplica.executor.options import ApplyOptions
from kreplica.executor.planfile import PlanFile
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from tests.unit.executor.fakes import FakeCluster
from tests.unit.executor.test_apply_loop import START, TARGET, _applier
from tests.unit.executor.test_apply_loop import _plan as _plan_file

Key = tuple[str, int]


class ElectingCluster:
    """Three partitions of `t`: 0 and 1 led off their preferred replica, 2 led by it. The
    election of t-1 is refused `refusals` times (its replica not yet in sync)."""

    def __init__(self, refusals: int) -> None:
        self.leaders = {0: 2, 1: 3, 2: 1}
        self.replicas = {0: (1, 2), 1: (2, 3), 2: (1, 3)}
        self.refusals = refusals
        self.asked: list[list[Key]] = []

    def snapshot(self, topics: Sequence[str] | None = None) -> ClusterSnapshot:
        parts = tuple(
            Partition("t", p, self.replicas[p], leader=self.leaders[p])
            for p in sorted(self.leaders)
        )
        return ClusterSnapshot(
            brokers=tuple(Broker(b) for b in (1, 2, 3)), topics=(Topic("t", parts),)
        )

    def elect_preferred(self, keys: Sequence[Key]) -> dict[Key, str | None]:
        self.asked.append(list(keys))
        results: dict[Key, str | None] = {}
        for topic, p in keys:
            if p == 1 and self.refusals > 0:
                self.refusals -= 1
                results[(topic, p)] = "PREFERRED_LEADER_NOT_AVAILABLE"
                continue
            self.leaders[p] = self.replicas[p][0]
            results[(topic, p)] = None
        return results


def _plan(tmp_path: Path) -> PlanFile:
    path = tmp_path / "plan.json"
    partitions = [{"topic": "t", "partition": p, "replicas": [1, 2]} for p in (0, 1, 2)]
    path.write_text(json.dumps({"version": 1, "partitions": partitions}))
    return facade.load_plan(path)


def test_the_election_after_an_apply_retries_what_was_refused(tmp_path: Path) -> None:
    cluster = ElectingCluster(refusals=2)
    slept: list[float] = []
    elected, failed = facade.elect_after_apply(
        facade.Connection(cluster), _plan(tmp_path), retry_s=30, sleep=slept.append
    )
    assert sorted(elected) == ["t-0", "t-1"] and failed == {}
    # the first round asks for both partitions led off their first replica, then only t-1
    assert cluster.asked == [[("t", 0), ("t", 1)], [("t", 1)], [("t", 1)]]
    assert slept == [1, 1]


def test_the_election_after_an_apply_gives_up_when_the_time_is_up(tmp_path: Path) -> None:
    cluster = ElectingCluster(refusals=1_000)
    elected, failed = facade.elect_after_apply(
        facade.Connection(cluster), _plan(tmp_path), retry_s=-1, sleep=lambda s: None
    )
    assert elected == ["t-0"]
    assert failed == {"t-1": "PREFERRED_LEADER_NOT_AVAILABLE"}


class SilentOnceCluster(ElectingCluster):
    """The first election request gets no answer in time (a busy controller)."""

    def __init__(self, silences: int) -> None:
        super().__init__(refusals=0)
        self.silences = silences

    def elect_preferred(self, keys: Sequence[Key]) -> dict[Key, str | None]:
        if self.silences > 0:
            self.silences -= 1
            self.asked.append(list(keys))
            raise SourceError("Kafka did not answer (elect preferred leaders) within 15s")
        return super().elect_preferred(keys)


def test_an_election_without_an_answer_is_asked_again_until_the_time_is_up(
    tmp_path: Path,
) -> None:
    cluster = SilentOnceCluster(silences=1)
    elected, failed = facade.elect_after_apply(
        facade.Connection(cluster), _plan(tmp_path), retry_s=30, sleep=lambda s: None
    )
    assert sorted(elected) == ["t-0", "t-1"] and failed == {}
    assert len(cluster.asked) == 2
    with pytest.raises(SourceError, match="did not answer"):
        facade.elect_after_apply(
            facade.Connection(SilentOnceCluster(silences=1_000)),
            _plan(tmp_path),
            retry_s=-1,
            sleep=lambda s: None,
        )


def test_off_preferred_lists_partitions_led_off_their_first_replica() -> None:
    snap = ElectingCluster(refusals=0).snapshot()
    assert facade.off_preferred(snap, [("t", 2), ("t", 1), ("t", 0), ("t", 1), ("u", 0)]) == [
        ("t", 1),
        ("t", 0),
    ]


class LeaderlessCluster(FakeCluster):
    """The simulated cluster whose partitions are led by their last replica until elected."""

    def __init__(self, assignment: dict[Key, tuple[int, ...]], polls: int) -> None:
        super().__init__(assignment, polls)
        self.elected: list[Key] = []

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot:
        snap = super().snapshot(topics)
        topics_led = tuple(
            dataclasses.replace(
                t,
                partitions=tuple(
                    dataclasses.replace(
                        p,
                        leader=p.replicas[0]
                        if (t.name, p.partition) in self.elected
                        else p.replicas[-1],
                    )
                    for p in t.partitions
                ),
            )
            for t in snap.topics
        )
        return dataclasses.replace(snap, topics=topics_led)

    def elect_preferred(self, keys: Sequence[Key]) -> dict[Key, str | None]:
        self.elected += keys
        return dict.fromkeys(keys)


def test_a_resumed_apply_runs_the_election_its_first_run_asked_for(tmp_path: Path) -> None:
    """An apply asked for an election after its moves (a drain) and was interrupted in its
    first wave. The resume, not asked for one, finishes the moves, runs the election and
    journals it."""
    cluster = LeaderlessCluster(START, polls=1000)
    applier = _applier(tmp_path, cluster, max_partitions=2, elect_leaders=True)
    applier.clock = _Clock(sleep=_interrupt_on(2))
    with pytest.raises(KeyboardInterrupt):
        applier.run()
    journal = Journal(tmp_path / "plan.journal.jsonl")
    assert journal.state().elect_leaders
    assert not any(e["event"] == "elect" for e in journal.read())
    plan = _plan_file(tmp_path, TARGET, START)
    result = facade.resume(facade.Connection(cluster), plan, ApplyOptions(poll_interval_s=0))
    assert sorted(result.moved) == sorted(TARGET)  # waited for the first wave, then the rest
    planned = sorted({*plan.targets, *plan.new_partitions})  # t-4 is created
    assert result.election is not None
    assert sorted(result.election.elected) == sorted(f"{t}-{p}" for t, p in planned)
    assert sorted(cluster.elected) == planned
    elect = [e for e in journal.read() if e["event"] == "elect"]
    assert [(sorted(e["elected"]), e["failed"]) for e in elect] == [
        (sorted(result.election.elected), {})
    ]


def test_an_apply_not_asked_for_an_election_runs_none(tmp_path: Path) -> None:
    cluster = LeaderlessCluster(START, polls=1)
    plan = _plan_file(tmp_path, TARGET, START)
    result = facade.apply(facade.Connection(cluster), plan, ApplyOptions(poll_interval_s=0))
    assert result.election is None and cluster.elected == []
    # left for `kreplica elect` (t-4 is created)
    assert sorted(result.leaders_off) == sorted({*plan.targets, *plan.new_partitions})


def _interrupt_on(call: int) -> Callable[[float], None]:
    calls = {"n": 0}

    def sleep(seconds: float) -> None:
        calls["n"] += 1
        if calls["n"] == call:
            raise KeyboardInterrupt

    return sleep
