"""Apply knows the write rate (issue 34 item 5): a move of a partition written at R B/s never
finishes under a throttle at or below R, so apply refuses such a plan before writing anything,
and its ETA counts the bytes written while the copy runs. Pure code against the in-memory
cluster (the real one: tests/integration/test_apply_write_rate.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import ExitCode, ThrottleBelowWriteRate, UsageError, flag_words
from kreplica.executor.apply import Applier
from kreplica.executor.copyrate import eta_rate, eta_s
from kreplica.executor.journal import Journal
from kreplica.executor.moves import Move
from kreplica.executor.options import ApplyOptions
from kreplica.executor.planfile import PlanFile, load_plan_file
from kreplica.executor.status import (
    PartitionFacts,
    ReplicaFacts,
    partition_status,
    plan_status,
)
from kreplica.executor.writerate import (
    broker_loads,
    copy_time_s,
    overloaded,
    pending_writes,
    refusal,
)
from kreplica.model import (
    Broker,
    ClusterSnapshot,
    Partition,
    PartitionChange,
    Plan,
    Topic,
    TrafficWindow,
)
from kreplica.planner.serialize import plan_files
from kreplica.render.console import make_console
from kreplica.render.progress import ProgressPrinter
from tests.unit.executor.fakes import FakeCluster
from tests.unit.executor.test_apply_loop import _applier as apply_with
from tests.unit.executor.test_apply_loop import dies_while_moving

Key = tuple[str, int]

# t-0 and t-1 both get a new replica on broker 3; t-2 one on broker 4
START = {("t", 0): (1,), ("t", 1): (2,), ("t", 2): (1,)}
TARGET = {("t", 0): (1, 3), ("t", 1): (2, 3), ("t", 2): (1, 4)}
TWO_TO_BROKER_3 = "broker 3 would receive 2 new replicas of partitions written at 1.1 KiB/s"


def _applier(
    tmp_path: Path, cluster: FakeCluster, rates: dict[Key, float] | None = None, **options: Any
) -> Applier:
    """An apply of TARGET from START whose plan document carries `rates`."""
    document = {"kreplica_plan": 1, "write_rates": {"measured_at": "T0", "window_s": 20}}
    plan = PlanFile(tmp_path / "plan.json", TARGET, START, {}, document, write_rates=rates or {})
    return apply_with(tmp_path, cluster, plan=plan, **options)


# -- the check, pure -------------------------------------------------------------------------


def test_a_receiving_broker_s_throttle_carries_the_writes_of_every_replica_it_builds() -> None:
    moves = [Move("t", p, START[("t", p)], TARGET[("t", p)], 100) for p in range(3)]
    rates = {("t", 0): 600.0, ("t", 1): 500.0, ("t", 2): 50.0}
    loads = broker_loads([moves], rates, {("t", 0): 1, ("t", 1): 2, ("t", 2): 1})
    by = {(load.broker, load.side): load for load in loads}
    assert by[(3, "follower")].writes == 1100.0  # t-0 and t-1 both copy to broker 3
    assert by[(1, "leader")].writes == 650.0  # broker 1 leads t-0 and t-2
    assert by[(3, "follower")].bytes == 200
    # each partition alone is under 1000 B/s; together through broker 3 they are not
    over = overloaded(loads, 1000)
    assert [(o.broker, o.side) for o in over] == [(3, "follower")]
    line = refusal(over, 1000, pace=False)
    assert TWO_TO_BROKER_3 in line
    assert "t-0 at 600 B/s, t-1 at 500 B/s" in line
    assert "follower throttle of 1000 B/s" in line
    assert "`max_per_broker`" in line and "`allow_under_write_rate`" in line
    # in two waves (max_per_broker 1) broker 3 carries one at a time: no refusal
    apart = broker_loads([moves[:1], moves[1:]], rates, {})
    assert overloaded(apart, 1000) == []


def test_the_leader_feeds_each_new_replica_of_the_partitions_it_leads() -> None:
    move = Move("t", 0, (1,), (1, 2, 3), 100)
    loads = broker_loads([[move]], {("t", 0): 400.0}, {("t", 0): 1})
    leader = next(load for load in loads if load.side == "leader")
    assert (leader.broker, leader.writes, leader.bytes) == (1, 800.0, 200)
    assert overloaded(loads, 800)[0].side == "leader"  # at the throttle: never gains
    assert overloaded(loads, 801) == []


def test_the_copy_time_counts_the_bytes_written_meanwhile() -> None:
    move = Move("t", 0, (1,), (1, 2), 9000)
    loads = broker_loads([[move]], {("t", 0): 100.0}, {})
    assert copy_time_s(loads, 1000) == pytest.approx(9000 / 900)  # not 9000 / 1000
    assert copy_time_s(loads, 100) is None  # never
    assert eta_s(9000, 1000.0, 100.0) == pytest.approx(10.0)
    assert eta_s(9000, 1000.0) == pytest.approx(9.0)
    assert eta_s(9000, 1000.0, 1000.0) is None
    assert eta_s(0, 1000.0, 2000.0) == 0.0


def test_pending_writes_count_each_new_replica_not_yet_in_sync() -> None:
    move = Move("t", 0, (1,), (1, 2, 3), 10)
    rates = {("t", 0): 50.0}
    assert pending_writes({("t", 0): (1, 2, 3)}, {("t", 0): move}, {}, rates) == 100.0
    assert pending_writes({("t", 0): (1, 2, 3)}, {("t", 0): move}, {("t", 0): (1, 2)}, rates) == 50


def test_status_eta_counts_the_writes() -> None:
    replica = ReplicaFacts(broker=2, alive=True, in_sync=False, size=1000, rate=200.0)
    facts = PartitionFacts(
        "t", 0, (1, 2), (1, 2), True, 1, True, 3000, (1,), (replica,), write_rate=50.0
    )
    assert partition_status(facts).eta_s == pytest.approx(2000 / 150)
    still = PartitionFacts("t", 0, (1, 2), (1, 2), True, 1, True, 3000, (1,), (replica,))
    assert partition_status(still).eta_s == pytest.approx(2000 / 200)


# -- apply ---------------------------------------------------------------------------------------


def test_apply_refuses_a_throttle_below_the_writes_and_writes_nothing(tmp_path: Path) -> None:
    cluster = FakeCluster(START)
    cluster.rates = {("t", 0): 600.0, ("t", 1): 500.0}
    applier = _applier(tmp_path, cluster, throttle=1000)
    with pytest.raises(ThrottleBelowWriteRate) as refused:
        applier.run()
    assert refused.value.exit_code == ExitCode.INFEASIBLE
    assert TWO_TO_BROKER_3 in refused.value.message
    assert cluster.measured == [sorted(TARGET)]  # the moving partitions only
    assert not cluster.submitted and not cluster.configs_set
    assert not (tmp_path / "plan.journal.jsonl").exists()


def test_apply_runs_with_a_throttle_above_the_writes_and_journals_them(tmp_path: Path) -> None:
    cluster = FakeCluster(START)
    cluster.rates = {("t", 0): 600.0, ("t", 1): 500.0}
    applier = _applier(tmp_path, cluster, throttle=2000)
    result = applier.run()
    assert all(cluster.assignment[k] == v for k, v in TARGET.items())
    assert result.write_rates is not None and result.write_rates["throttle"] == 2000
    journalled = Journal(tmp_path / "plan.journal.jsonl").read()
    rates = next(e for e in journalled if e["event"] == "write-rates")
    assert rates["source"] == "measured" and rates["throttle"] == 2000
    assert rates["busiest"] == {
        "broker": 3,
        "side": "follower",
        "wave": 1,
        "bytes_in_per_s": 1100.0,
    }
    assert rates["copy_s"] == pytest.approx(20 / 900, abs=0.1)
    assert [e["event"] for e in journalled].index("start") < journalled.index(rates)
    progress = [e for e in applier.events if e["event"] == "progress"]  # type: ignore[attr-defined]
    assert progress and all("write_bytes_per_s" in e for e in progress)


def test_spreading_the_moves_over_waves_lets_the_same_throttle_carry_them(tmp_path: Path) -> None:
    cluster = FakeCluster(START)
    cluster.rates = {("t", 0): 600.0, ("t", 1): 500.0}
    _applier(tmp_path, cluster, throttle=1000, max_per_broker=1).run()
    assert all(cluster.assignment[k] == v for k, v in TARGET.items())


def test_allow_under_write_rate_starts_with_a_warning(tmp_path: Path) -> None:
    cluster = FakeCluster(START)
    cluster.rates = {("t", 0): 600.0, ("t", 1): 500.0}
    applier = _applier(tmp_path, cluster, throttle=1000, allow_under_write_rate=True)
    applier.run()
    warnings = [e["message"] for e in applier.events if e["event"] == "warning"]  # type: ignore[attr-defined]
    assert any(
        w.startswith("`allow_under_write_rate`: starting although in wave 1") for w in warnings
    )


@pytest.mark.parametrize(("throttle", "warned"), [(1300, True), (2000, False)])
def test_writes_near_the_throttle_start_with_a_warning(
    tmp_path: Path, throttle: int, warned: bool
) -> None:
    """1100 B/s through broker 3: 85% of 1300 B/s passes the check but leaves the copy a thin
    margin (a warning naming it); 55% of 2000 B/s says nothing."""
    cluster = FakeCluster(START)
    cluster.rates = {("t", 0): 600.0, ("t", 1): 500.0}
    applier = _applier(tmp_path, cluster, throttle=throttle)
    applier.run()
    assert all(cluster.assignment[k] == v for k, v in TARGET.items())
    warnings = [e["message"] for e in applier.events if e["event"] == "warning"]  # type: ignore[attr-defined]
    near = [w for w in warnings if w.startswith("the writes take ")]
    if not warned:
        assert near == []
        return
    (line,) = near
    assert "85% of broker 3's follower throttle in wave 1" in line
    assert (
        "outruns them by only 200 B/s and may fall behind" in line and "a higher `throttle`" in line
    )


def test_the_plan_s_rates_are_used_and_only_the_others_measured(tmp_path: Path) -> None:
    cluster = FakeCluster(START)
    cluster.rates = {("t", 0): 0.0, ("t", 1): 0.0}  # what is measured now: idle
    applier = _applier(tmp_path, cluster, {("t", 0): 600.0, ("t", 1): 500.0}, throttle=1000)
    with pytest.raises(ThrottleBelowWriteRate):
        applier.run()
    assert cluster.measured == [[("t", 2)]]
    cluster = FakeCluster(START)
    all_known = {("t", 0): 6.0, ("t", 1): 5.0, ("t", 2): 1.0}
    applier = _applier(tmp_path / "x", cluster, all_known, throttle=1000)
    (tmp_path / "x").mkdir()
    applier.run()
    assert cluster.measured == []  # the plan knew them all: no wait
    shown = next(e for e in applier.events if e["event"] == "write-rates")  # type: ignore[attr-defined]
    assert shown["source"] == "plan" and shown["measured"] == "from the plan, measured T0 over 20 s"


def test_no_measurement_without_a_throttle_or_with_a_zero_window(tmp_path: Path) -> None:
    for options in ({}, {"throttle": 1000, "rate_window_s": 0}):
        cluster = FakeCluster(START)
        cluster.rates = {("t", 0): 1e9}
        folder = tmp_path / str(len(options))
        folder.mkdir()
        _applier(folder, cluster, **options).run()
        assert cluster.measured == [] and cluster.submitted


def test_a_rate_window_under_five_seconds_is_refused() -> None:
    with pytest.raises(UsageError, match=r"`rate_window_s` 3: give 0 \(no measurement\) or 5"):
        ApplyOptions(rate_window_s=3)


# -- the plan file ---------------------------------------------------------------------------------


def test_a_plan_from_measured_traffic_carries_the_moved_partitions_rates(tmp_path: Path) -> None:
    parts = (
        Partition("t", 0, (1,), leader=1, bytes_in_per_s=1234.56),
        Partition("t", 1, (2,), leader=2, bytes_in_per_s=None),  # not measurable
        Partition("t", 2, (1,), leader=1, bytes_in_per_s=99.0),  # not moved
    )
    snap = ClusterSnapshot(
        (Broker(1), Broker(2), Broker(3)),
        (Topic("t", parts),),
        cluster_id="c",
        traffic=TrafficWindow(20.012, "2026-11-28T00:36:01Z"),
    )
    plan = Plan(
        "c",
        snap.fingerprint(),
        "balanced",
        (
            PartitionChange("t", 0, (1,), (1, 3)),
            PartitionChange("t", 1, (2,), (2, 3)),
        ),
    )
    files = plan_files(plan, snap)
    assert files["plan_document"]["write_rates"] == {
        "window_s": 20.012,
        "measured_at": "2026-11-28T00:36:01Z",
        "partitions": [{"topic": "t", "partition": 0, "bytes_in_per_s": 1234.6}],
    }
    assert files["rollback_document"]["write_rates"] == files["plan_document"]["write_rates"]
    for kind in ("reassignment", "plan_document"):
        name = "p.json" if kind == "reassignment" else "p.kreplica.json"
        (tmp_path / name).write_text(json.dumps(files[kind]))
    loaded = load_plan_file(tmp_path / "p.json")
    assert loaded.write_rates == {("t", 0): 1234.6}
    assert loaded.rates_measured == "2026-11-28T00:36:01Z over 20.012 s"
    # a plan document without rates (older, or planned without traffic) reads as before
    document = dict(files["plan_document"])
    del document["write_rates"]
    (tmp_path / "p.kreplica.json").write_text(json.dumps(document))
    assert load_plan_file(tmp_path / "p.json").write_rates == {}
    no_traffic = plan_files(plan, ClusterSnapshot(snap.brokers, snap.topics, cluster_id="c"))
    assert "write_rates" not in no_traffic["plan_document"]


def test_a_throttle_bound_copy_counts_on_the_throttle_for_its_eta() -> None:
    # a follower fetches up to 1 MB at a time: at 244 KiB/s the rate read over 20 s swings
    # around the throttle; less 197 KiB/s of writes, the ETA would swing from 15 min to never
    cap, writes = 250_000.0, 200_000.0
    assert eta_rate(202_000.0, cap, writes) == cap
    assert eta_rate(150_000.0, cap, writes) == 150_000.0
    assert eta_rate(None, cap, writes) is None
    assert eta_rate(150_000.0, None, writes) == 150_000.0
    assert eta_rate(202_000.0, cap) == 202_000.0  # nothing to outrun: the rate shown


def test_status_says_what_the_copy_must_outrun() -> None:
    replica = ReplicaFacts(broker=2, alive=True, in_sync=False, size=1000, rate=100.0)
    slow = PartitionFacts(
        "t", 0, (1, 2), (1, 2), True, 1, True, 3000, (1,), (replica,), write_rate=2048.0
    )
    rows, summary = plan_status([slow], {})
    assert rows[0].eta_s is None and rows[0].detail.endswith("; written at 2.0 KiB/s")
    assert summary.writes == 2048.0
    assert summary.line().endswith("at 100 B/s, written at 2.0 KiB/s, ETA never at this rate")


def test_the_lines_say_the_rates_and_when_the_copy_cannot_catch_up() -> None:
    out = io.StringIO()
    printer = ProgressPrinter(make_console(out, width=300))
    printer(
        {
            "event": "write-rates",
            "source": "measured",
            "measured": "measured now over 10 s",
            "partitions": [
                {"topic": "t", "partition": 0, "bytes_in_per_s": 204800.0},
                {"topic": "t", "partition": 1, "bytes_in_per_s": 1024.0},
            ],
            "unknown": ["t-2"],
            "bytes_in_per_s": 205824.0,
            "throttle": 409600,
            "busiest": {"broker": 3, "side": "follower", "wave": 1, "bytes_in_per_s": 204800.0},
            "copy_s": 687.0,
        }
    )
    progress = {
        "event": "progress",
        "wave": 1,
        "done": 0,
        "total": 1,
        "bytes_copied": 1024,
        "bytes_total": 4096,
        "elapsed_s": 10.0,
        "rate_bytes_per_s": 102400.0,
        "eta_s": None,
        "write_bytes_per_s": 204800.0,
    }
    printer(progress)
    rates, line = out.getvalue().splitlines()
    assert rates == (
        "write rates (measured now over 10 s): 2 moving partitions written at 201.0 KiB/s in "
        "all, the busiest t-0 at 200.0 KiB/s; the writes take 50% of broker 3's follower "
        "throttle at most; at the throttle the copy takes about 11m27s; 1 without a rate, not "
        "checked (t-2)"
    )
    assert line.endswith("100.0 KiB/s, written at 200.0 KiB/s, ETA never at this rate")


def test_a_resume_counts_what_the_interrupted_run_measured(tmp_path: Path) -> None:
    cluster = FakeCluster(START, polls=1000)
    cluster.rates = {("t", 0): 600.0, ("t", 1): 500.0}
    dies_while_moving(_applier(tmp_path, cluster, throttle=2000, max_partitions=1))
    assert cluster.measured == [sorted(TARGET)]
    for state in cluster.moving.values():
        state[1] = 1  # the first wave finishes meanwhile
    cluster.rates = {}  # a second measurement would find them idle
    # resumed with a throttle under what broker 3 carries for t-1: refused, from the journal
    with pytest.raises(ThrottleBelowWriteRate, match="the new replica of t-1, written at 500"):
        _applier(tmp_path, cluster, resume=True, throttle=400, max_partitions=1).run()
    resumed = _applier(tmp_path, cluster, resume=True, throttle=2000, max_partitions=1)
    resumed.run()
    assert all(cluster.assignment[k] == v for k, v in TARGET.items())
    assert cluster.measured == [sorted(TARGET)]  # measured once, by the first run
    shown = next(e for e in resumed.events if e["event"] == "write-rates")  # type: ignore[attr-defined]
    assert shown["source"] == "journal"
    assert shown["measured"] == "as the interrupted apply measured them"


def test_under_pace_the_refusal_asks_for_a_higher_floor() -> None:
    move = Move("t", 0, (1,), (1, 2), 100)
    over = overloaded(broker_loads([[move]], {("t", 0): 5000.0}, {}), 1000)
    line = flag_words(refusal(over, 1000, pace=True), {"throttle": "--throttle-min"})
    assert "raise the --pace auto floor --throttle-min above 4.9 KiB/s" in line
