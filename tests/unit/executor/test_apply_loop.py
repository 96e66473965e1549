"""The apply loop against a simulated cluster (pure code: the real one is tested on the
sandboxes in tests/integration/test_apply.py): waves, journal, resume, cancel, throttles."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import KreplicaError, UsageError
from kreplica.executor.apply import Applier
from kreplica.executor.apply_base import _Clock
from kreplica.executor.cancel import cancel_marker, cancel_plan
from kreplica.executor.journal import Journal
from kreplica.executor.options import ApplyOptions
from kreplica.executor.planfile import PlanFile
from tests.unit.executor.fakes import FakeCluster, FakeSubmitter

Key = tuple[str, int]


def _plan(
    tmp_path: Path, targets: dict[Key, tuple[int, ...]], before: dict[Key, tuple[int, ...]]
) -> PlanFile:
    return PlanFile(
        tmp_path / "plan.json", targets, before, {("t", 4): (1, 2)}, {"kreplica_plan": 1}
    )


START = {("t", p): (p % 5 + 1,) for p in range(4)}
TARGET = {k: (v[0], v[0] % 5 + 1) for k, v in START.items()}


def _applier(
    tmp_path: Path, cluster: FakeCluster, *, plan: PlanFile | None = None, **options: Any
) -> Applier:
    """An apply of `plan` (default: TARGET from START, and t-4 created) on `cluster`, polling
    without sleeping; the events it shows kept in `.events`."""
    events: list[dict[str, Any]] = []
    applier = Applier(
        cluster,
        FakeSubmitter(cluster),
        plan or _plan(tmp_path, TARGET, START),
        Journal(tmp_path / "plan.journal.jsonl"),
        ApplyOptions(poll_interval_s=0, **options),
        events.append,
        _Clock(sleep=lambda s: None),
    )
    applier.events = events  # type: ignore[attr-defined]
    return applier


def dies_while_moving(applier: Applier) -> None:
    """Run `applier` until its process dies (Ctrl-C) at its second poll: while the first wave
    moves."""
    calls = {"n": 0}

    def crash(seconds: float) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt

    applier.clock = _Clock(sleep=crash)
    with pytest.raises(KeyboardInterrupt):
        applier.run()


def test_waves_journal_throttles_and_new_partitions(tmp_path: Path) -> None:
    cluster = FakeCluster(START)
    applier = _applier(tmp_path, cluster, throttle=1000, max_partitions=2)
    result = applier.run()
    assert result.waves == 2 and sorted(result.moved) == sorted(TARGET)
    assert all(cluster.assignment[k] == v for k, v in TARGET.items())
    assert cluster.created == [("t", 4)]
    assert all(not values for values in cluster.configs_set.values())  # all restored
    kinds = [e["event"] for e in Journal(tmp_path / "plan.journal.jsonl").read()]
    assert kinds[0] == "start" and kinds[-1] == "finish"
    assert kinds.count("submit") == 4 and kinds.count("complete") == 4
    assert kinds.index("throttle-set") < kinds.index("submit") < kinds.index("throttle-restored")
    again = _applier(tmp_path, cluster).run()
    assert again.nothing_to_do


def test_resume_waits_for_what_was_submitted_and_never_submits_it_twice(tmp_path: Path) -> None:
    cluster = FakeCluster(START, polls=1000)
    dies_while_moving(_applier(tmp_path, cluster, throttle=1000, max_partitions=2))
    assert len(cluster.submitted) == 2 and cluster.configs_set  # throttles stay while moving
    with pytest.raises(UsageError, match="`resume`"):
        _applier(tmp_path, cluster).run()
    cluster.polls = 1
    for state in cluster.moving.values():
        state[1] = 1
    result = _applier(tmp_path, cluster, resume=True, throttle=5000).run()
    assert sorted(result.moved + result.already_done) == sorted(TARGET)
    assert len(cluster.submitted) == 4 and len(set(cluster.submitted)) == 4
    assert all(not values for values in cluster.configs_set.values())


def test_cancel_while_an_apply_runs_stops_it_and_restores_throttles(tmp_path: Path) -> None:
    cluster = FakeCluster(START, polls=1000)
    applier = _applier(tmp_path, cluster, throttle=1000)
    journal = Journal(tmp_path / "plan.journal.jsonl")

    def cancel_from_elsewhere(seconds: float) -> None:
        cancel_marker(journal).write_text("cancel\n")
        cluster.alter_reassignments(dict.fromkeys(list(cluster.moving)))

    applier.clock = _Clock(sleep=cancel_from_elsewhere)
    with pytest.raises(KreplicaError, match="cancelled by kreplica cancel") as err:
        applier.run()
    assert err.value.exit_code == 7
    assert cluster.assignment == START  # back on the old replicas
    assert all(not values for values in cluster.configs_set.values())
    assert not cancel_marker(journal).exists()
    cancelled, running = cancel_plan(cluster, applier.plan, journal)  # nothing left to stop
    assert cancelled == [] and running is False


def test_a_stall_is_reported_again_when_a_broker_goes_down(tmp_path: Path) -> None:
    cluster = FakeCluster(START, polls=8)
    applier = _applier(tmp_path, cluster, stall_timeout_s=1.0)
    clock = {"t": 0.0}

    def tick(seconds: float) -> None:
        clock["t"] += 1.0
        if clock["t"] == 4.0:
            cluster.down = {2}  # a receiving broker dies while the move is stalled

    applier.clock = _Clock(now=lambda: clock["t"], sleep=tick)
    applier.run()
    stalls = [e for e in applier.events if e["event"] == "stall"]  # type: ignore[attr-defined]
    assert [s["down"] for s in stalls] == [[], [2]]
    assert "broker(s) 2 are down" in stalls[1]["hint"]


def test_an_empty_plan_is_refused_and_leaves_no_lock_file(tmp_path: Path) -> None:
    from kreplica.errors import InputError

    cluster = FakeCluster(START)
    applier = _applier(tmp_path, cluster)
    applier.plan = PlanFile(tmp_path / "plan.json", {}, {}, {}, {"kreplica_plan": 1})
    with pytest.raises(InputError, match="the plan is empty") as err:
        applier.run()
    assert err.value.exit_code == 2 and "\n" not in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no journal, no lock


def test_a_refused_apply_leaves_no_lock_file(tmp_path: Path) -> None:
    cluster = FakeCluster(START, polls=1000)
    cluster.moving[("t", 0)] = [(9,), 1000, START[("t", 0)]]  # someone else moves it
    with pytest.raises(KreplicaError):
        _applier(tmp_path, cluster).run()
    assert not list(tmp_path.glob("*.lock"))


def test_resume_journals_what_finished_while_kreplica_was_down(tmp_path: Path) -> None:
    cluster = FakeCluster(START, polls=1000)
    dies_while_moving(_applier(tmp_path, cluster, max_partitions=2))
    first_wave = sorted(cluster.moving)
    for state in cluster.moving.values():  # they finish while no kreplica runs
        state[1] = 0
    cluster.snapshot()
    assert not cluster.moving
    result = _applier(tmp_path, cluster, resume=True).run()
    assert sorted(result.completed_meanwhile) == first_wave
    state = Journal(tmp_path / "plan.journal.jsonl").state()
    assert state.pending == [] and sorted(state.completed) == sorted(TARGET)
    assert not list(tmp_path.glob("*.lock"))


def test_cancel_that_would_leave_too_few_in_sync_replicas_is_refused_unless_forced(
    tmp_path: Path,
) -> None:
    from kreplica.errors import ExitCode, UnsafeCancel

    cluster = FakeCluster(START, polls=1000)
    applier = _applier(tmp_path, cluster, throttle=1000)
    applier.clock = _Clock(sleep=lambda s: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        applier.run()
    moving = dict(cluster.moving)
    assert moving
    cluster.down = {START[k][0] for k in moving}  # every original replica's broker is down
    journal = Journal(tmp_path / "plan.journal.jsonl")
    before = journal.read()
    with pytest.raises(UnsafeCancel) as err:
        cancel_plan(cluster, applier.plan, journal)
    assert err.value.exit_code == ExitCode.UNSAFE_CANCEL
    assert cluster.moving == moving and journal.read() == before  # nothing changed
    assert cluster.configs_set and any(cluster.configs_set.values())
    cancelled, _ = cancel_plan(cluster, applier.plan, journal, force=True)
    assert sorted(cancelled) == sorted(moving) and not cluster.moving
    (event,) = [e for e in journal.read() if e["event"] == "cancel"]
    assert sorted(f["partition"] for f in event["forced"]) == sorted(f"{t}-{p}" for t, p in moving)


def ticking(applier: Applier, step: float, each: Callable[[], None] | None = None) -> None:
    """The applier's clock: `step` seconds pass at each of its sleeps (then `each` runs)."""
    clock = {"t": 0.0}

    def tick(seconds: float) -> None:
        clock["t"] += step
        if each is not None:
            each()

    applier.clock = _Clock(now=lambda: clock["t"], sleep=tick)


class GrowingCluster(FakeCluster):
    """New replicas grow by 100 bytes a poll, except those on `stuck` brokers."""

    def __init__(self, stuck: set[int]) -> None:
        super().__init__(START, polls=10)
        self.stuck = stuck
        self.sizes: dict[tuple[str, int, int], int] = {}

    def replica_bytes(
        self, topics: Sequence[str], brokers: Collection[int]
    ) -> dict[tuple[str, int, int], int]:
        for key, state in self.moving.items():
            for broker in state[0]:
                if broker not in self.stuck:
                    where = (key[0], key[1], broker)
                    self.sizes[where] = self.sizes.get(where, 0) + 100
        return {k: v for k, v in self.sizes.items() if k[2] in brokers}


def test_a_stall_names_the_replica_that_stopped_growing_while_others_copy(
    tmp_path: Path,
) -> None:
    cluster = GrowingCluster(stuck={3})  # t-1 moves (2,) -> (2, 3)
    applier = _applier(tmp_path, cluster, stall_timeout_s=3.0)
    ticking(applier, 1.0)
    applier.run()
    stalls = [e for e in applier.events if e["event"] == "stall"]  # type: ignore[attr-defined]
    assert stalls, "no stall reported although broker 3's replica never grew"
    assert stalls[0]["partitions"] == ["t-1"] and stalls[0]["brokers"] == [3]
    assert stalls[0]["down"] == [] and "stopped growing" in stalls[0]["hint"]
    assert len(stalls) == 1  # said once, not every poll


def test_a_stall_says_the_receiving_broker_is_down(tmp_path: Path) -> None:
    cluster = GrowingCluster(stuck=set())
    applier = _applier(tmp_path, cluster, stall_timeout_s=3.0)

    def broker_4_dies() -> None:  # t-2 moves (3,) -> (3, 4)
        cluster.down = cluster.stuck = {4}

    ticking(applier, 1.0, each=broker_4_dies)
    applier.run()
    stalls = [e for e in applier.events if e["event"] == "stall"]  # type: ignore[attr-defined]
    assert [(s["partitions"], s["down"]) for s in stalls] == [(["t-2"], [4])]
    assert "broker(s) 4 are down" in stalls[0]["hint"]
