"""Preflight: every refusal before apply writes anything, with its exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

from kreplica.errors import ExitCode, KreplicaError
from kreplica.executor.planfile import PlanFile
from kreplica.executor.preflight import preflight
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic

Key = tuple[str, int]


def _snapshot(
    replicas: dict[int, tuple[int, ...]],
    *,
    isr: dict[int, tuple[int, ...]] | None = None,
    dead: tuple[int, ...] = (),
    min_isr: str = "1",
    cluster_id: str = "c1",
) -> ClusterSnapshot:
    parts = tuple(
        Partition("t", p, r, leader=r[0], isr=(isr or {}).get(p), size_bytes=100)
        for p, r in sorted(replicas.items())
    )
    return ClusterSnapshot(
        brokers=tuple(Broker(b, alive=b not in dead) for b in range(1, 6)),
        topics=(Topic("t", parts, {"min.insync.replicas": min_isr}),),
        cluster_id=cluster_id,
    )


def _plan(
    targets: dict[int, tuple[int, ...]],
    before: dict[int, tuple[int, ...]] | None = None,
    *,
    document: bool = True,
    new: dict[int, tuple[int, ...]] | None = None,
) -> PlanFile:
    return PlanFile(
        Path("plan.json"),
        {("t", p): r for p, r in targets.items()},
        {("t", p): r for p, r in (before or {}).items()},
        {("t", p): r for p, r in (new or {}).items()},
        {"kreplica_plan": 1, "cluster_id": "c1"} if document else None,
    )


def _refusal(code: ExitCode, *args: object, **kwargs: object) -> str:
    with pytest.raises(KreplicaError) as err:
        preflight(*args, **kwargs)  # type: ignore[arg-type]
    assert err.value.exit_code == code, err.value
    assert "\n" not in str(err.value)
    return str(err.value)


def test_a_plan_for_another_cluster_is_refused_with_5():
    snap = _snapshot({0: (1, 2)}, cluster_id="other")
    text = _refusal(ExitCode.STALE_PLAN, snap, _plan({0: (1, 2, 3)}, {0: (1, 2)}), set())
    assert "c1" in text and "other" in text


def test_drift_is_refused_with_5_or_skipped():
    snap = _snapshot({0: (1, 4), 1: (2, 3)})
    plan = _plan({0: (1, 2, 3), 1: (2, 3, 4)}, {0: (1, 2), 1: (2, 3)})
    text = _refusal(ExitCode.STALE_PLAN, snap, plan, set())
    assert "t-0 was [1, 2] and is now [1, 4]" in text and "`on_drift` skip" in text
    result = preflight(snap, plan, set(), on_drift="skip")
    assert [m.key for m in result.todo] == [("t", 1)] and len(result.skipped) == 1


def test_partitions_already_as_planned_are_done_not_drift():
    snap = _snapshot({0: (1, 2, 3), 1: (2, 3)})
    result = preflight(snap, _plan({0: (1, 2, 3), 1: (2, 3, 4)}, {0: (1, 2), 1: (2, 3)}), set())
    assert result.done == [("t", 0)] and [m.key for m in result.todo] == [("t", 1)]


def test_moves_in_flight_are_refused_with_6_unless_ours_or_additional():
    snap = _snapshot({0: (1, 2), 1: (2, 3)})
    plan = _plan({0: (1, 2, 3)}, {0: (1, 2)})
    text = _refusal(ExitCode.IN_PROGRESS, snap, plan, {("t", 0)})
    assert "t-0" in text
    assert preflight(snap, plan, {("t", 0)}, submitted={("t", 0)}).waiting == [("t", 0)]
    _refusal(ExitCode.IN_PROGRESS, snap, plan, {("t", 1)})
    assert [m.key for m in preflight(snap, plan, {("t", 1)}, additional=True).todo] == [("t", 0)]


def test_our_move_seen_mid_way_but_not_listed_in_flight_is_waited_for_not_drift():
    # a resume reads the replicas from a broker whose metadata still shows the move (target,
    # then the replica it removes), while the controller no longer lists it as in flight
    snap = _snapshot({0: (2, 1, 3), 1: (2, 1, 3)})
    plan = _plan({0: (2, 1), 1: (2, 1)}, {0: (1, 3), 1: (1, 3)})
    result = preflight(snap, plan, set(), submitted={("t", 0), ("t", 1)})
    assert result.waiting == [("t", 0), ("t", 1)]
    assert result.todo == [] and result.done == []
    # not submitted by this plan's apply: somebody else's change
    text = _refusal(ExitCode.STALE_PLAN, snap, plan, set(), submitted={("t", 0)})
    assert "t-1 was [1, 3] and is now [2, 1, 3]" in text and "t-0" not in text


def test_a_dead_target_broker_is_refused_with_4():
    snap = _snapshot({0: (1, 2)}, dead=(3,))
    text = _refusal(ExitCode.INFEASIBLE, snap, _plan({0: (1, 2, 3)}, {0: (1, 2)}), set())
    assert "3" in text


def test_unknown_broker_is_an_error_like_check():
    snap = _snapshot({0: (1, 2)})
    text = _refusal(ExitCode.VERIFY_FAILED, snap, _plan({0: (1, 2, 9)}, document=False), set())
    assert "9" in text and "kreplica check" in text


def test_under_min_isr_is_refused_with_4_unless_allowed():
    snap = _snapshot({0: (1, 2, 3)}, isr={0: (1,)}, min_isr="2")
    plan = _plan({0: (1, 2, 4)}, {0: (1, 2, 3)})
    text = _refusal(ExitCode.INFEASIBLE, snap, plan, set())
    assert "min.insync.replicas=2" in text and "`allow_under_min_isr`" in text
    assert preflight(snap, plan, set(), allow_under_min_isr=True).todo


def test_a_bare_kafka_json_is_applied_with_a_warning():
    snap = _snapshot({0: (1, 2)})
    result = preflight(snap, _plan({0: (1, 2, 3)}, document=False), set())
    assert [m.after for m in result.todo] == [(1, 2, 3)]
    assert "cannot check that it was made for this cluster" in result.warnings[0]


def test_new_partitions_are_created_once():
    snap = _snapshot({0: (1, 2)})
    plan = _plan({}, new={1: (2, 3)})
    assert preflight(snap, plan, set()).create == {("t", 1): (2, 3)}
    grown = _snapshot({0: (1, 2), 1: (2, 3)})
    assert preflight(grown, plan, set()).done == [("t", 1)]
