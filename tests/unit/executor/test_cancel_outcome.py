"""What a cancel says stays, on the simulated cluster of test_apply_loop (the real clusters:
tests/integration/test_stale_plans.py): the moves stopped, the ones that had finished (what
the rollback returns), new partitions; and `roll_back_finished` refused before anything is
cancelled where it does not apply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kreplica.cli.apply_cmd import cancel_line
from kreplica.errors import UsageError
from kreplica.executor import facade
from kreplica.executor.journal import Journal, fold
from kreplica.executor.options import ApplyOptions
from kreplica.executor.planfile import PlanFile
from kreplica.executor.throttle_records import journal_rate
from tests.unit.executor.fakes import FakeCluster

Key = tuple[str, int]
BEFORE = {("t", 0): (1,), ("t", 1): (2,), ("t", 2): (3,)}
TARGET = {("t", 0): (1, 2), ("t", 1): (2, 3), ("t", 2): (3, 4)}


def _half_done(tmp_path: Path, target: dict[Key, tuple[int, ...]]) -> tuple[Any, PlanFile]:
    """t-0 moved already, t-1 moving, t-2 not submitted yet."""
    cluster = FakeCluster({**BEFORE, ("t", 0): target[("t", 0)]}, polls=1000)
    cluster.alter_reassignments({("t", 1): target[("t", 1)]})
    plan = PlanFile(tmp_path / "plan.json", target, BEFORE, {}, {"kreplica_plan": 1})
    return facade.Connection(cluster), plan


def test_cancel_counts_what_returned_and_what_had_finished(tmp_path: Path) -> None:
    connection, plan = _half_done(tmp_path, TARGET)
    outcome = facade.cancel(connection, plan)
    assert outcome.cancelled == [("t", 1)] and not outcome.running
    assert outcome.finished == [("t", 0)] and outcome.finished_rf == 2
    assert connection.cluster.assignment[("t", 1)] == (2,)  # back on its old replicas
    assert cancel_line(outcome) == (
        "1 returned to their old replicas; 1 had finished and stay at RF 2: "
        f"{tmp_path / 'plan.rollback.json'} returns them; kreplica's throttles restored"
    )


def test_moves_of_the_same_rf_stay_on_their_new_replicas(tmp_path: Path) -> None:
    same_rf = {("t", 0): (2,), ("t", 1): (3,), ("t", 2): (4,)}
    connection, plan = _half_done(tmp_path, same_rf)
    outcome = facade.cancel(connection, plan)
    assert outcome.finished == [("t", 0)] and outcome.finished_rf is None
    assert "1 had finished and stay on their new replicas" in cancel_line(outcome)
    # a drain's rollback would move data back onto the brokers being emptied: not at once
    with pytest.raises(UsageError, match="changes no replication factor"):
        facade.cancel(connection, plan, roll_back_finished=ApplyOptions())


def test_roll_back_finished_without_a_rollback_file_cancels_nothing(tmp_path: Path) -> None:
    connection, plan = _half_done(tmp_path, TARGET)
    with pytest.raises(UsageError, match=r"plan\.rollback\.json is missing"):
        facade.cancel(connection, plan, roll_back_finished=ApplyOptions())
    assert ("t", 1) in connection.cluster.moving  # nothing was cancelled
    assert not Journal(tmp_path / "plan.journal.jsonl").exists()


def test_the_journal_dates_the_finish_and_the_cancel(tmp_path: Path) -> None:
    events: list[dict[str, Any]] = [
        {"seq": 1, "ts": "2026-11-27T10:00:00.000Z", "event": "start"},
        {"seq": 2, "ts": "2026-11-27T10:05:00.000Z", "event": "finish"},
    ]
    state = fold(events)
    assert state.finished_at == "2026-11-27T10:05:00.000Z" and state.cancelled_at is None
    events += [
        {"seq": 3, "ts": "2026-11-28T09:00:00.000Z", "event": "start"},
        {"seq": 4, "ts": "2026-11-28T09:01:00.000Z", "event": "cancel", "partitions": ["t-1"]},
    ]
    state = fold(events)
    assert state.finished_at is None and state.cancelled_at == "2026-11-28T09:01:00.000Z"
    path = tmp_path / "plan.journal.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert facade.journal_cancelled_on(tmp_path / "plan.json") == "2026-11-28T09:01:00.000Z"


def test_the_rollback_copies_at_the_highest_rate_the_plan_set() -> None:
    rate = "leader.replication.throttled.rate"
    events: list[dict[str, Any]] = [
        {"event": "throttle-set", "kind": "topic", "name": "t", "values": {"x": "1,2"}},
        {"event": "throttle-set", "kind": "broker", "name": "1", "values": {rate: "29999"}},
        {"event": "throttle-set", "kind": "broker", "name": "1", "values": {rate: "30000"}},
        {"event": "throttle-restored"},
    ]
    assert journal_rate(events) == 30000
    assert journal_rate(events[:1]) is None
