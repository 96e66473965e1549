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


def test_a_topic_whose_rf_changes_is_refused_or_left_out_whole_never_half():
    # RF 2 -> 3 of t; t-0 changed since: applying t-1 alone would leave t at two RFs
    snap = _snapshot({0: (1, 4), 1: (2, 3)})
    plan = _plan({0: (1, 2, 3), 1: (2, 3, 4)}, {0: (1, 2), 1: (2, 3)})
    text = _refusal(ExitCode.STALE_PLAN, snap, plan, set())
    assert "t-0 was [1, 2] and is now [1, 4]" in text and "make a new plan" in text
    # every topic of the plan changed: no way on but a new plan
    assert "`on_drift`" not in text and "the rest" not in text
    result = preflight(snap, plan, set(), on_drift="skip")
    assert result.todo == [] and result.create == {}
    assert len(result.skipped) == 1 and result.skipped[0].startswith("topic t whole (t-0 was")
    assert "1 other partition(s)" in result.skipped[0]


def test_new_partitions_of_a_topic_that_changed_are_left_out_with_it():
    snap = _snapshot({0: (1, 4), 1: (2, 3)})
    plan = _plan({1: (2, 4)}, {1: (3, 4)}, new={2: (3, 4)})  # t-1 changed since
    result = preflight(snap, plan, set(), on_drift="skip")
    assert result.todo == [] and result.create == {}
    assert result.skipped[0].startswith("topic t whole (t-1 was [3, 4] and is now [2, 3]")


def test_partition_moves_of_the_same_rf_are_left_out_one_by_one():
    # a drain's moves keep RF: leaving one out leaves no topic half-changed
    snap = _snapshot({0: (1, 4), 1: (2, 3)})
    plan = _plan({0: (1, 3), 1: (2, 4)}, {0: (1, 2), 1: (2, 3)})
    text = _refusal(ExitCode.STALE_PLAN, snap, plan, set())
    assert text.endswith(
        "; `on_drift` skip leaves out what changed and applies only the 1 partition(s) that "
        "did not change, of t"
    )
    assert "the rest" not in text
    result = preflight(snap, plan, set(), on_drift="skip")
    assert [m.key for m in result.todo] == [("t", 1)]
    assert result.skipped == ["t-0 was [1, 2] and is now [1, 4]"]


def test_skip_leaves_out_the_resized_topic_that_changed_and_applies_the_others():
    parts = {
        "t": (Partition("t", 0, (1, 4), leader=1), Partition("t", 1, (2, 3), leader=2)),
        "u": (Partition("u", 0, (1, 2), leader=1),),
    }
    snap = ClusterSnapshot(
        brokers=tuple(Broker(b) for b in range(1, 6)),
        topics=tuple(Topic(name, ps) for name, ps in parts.items()),
        cluster_id="c1",
    )
    targets = {("t", 0): (1, 2, 3), ("t", 1): (2, 3, 4), ("u", 0): (1, 2, 5)}
    before = {("t", 0): (1, 2), ("t", 1): (2, 3), ("u", 0): (1, 2)}
    plan = PlanFile(Path("plan.json"), targets, before, {}, {"kreplica_plan": 1})
    text = _refusal(ExitCode.STALE_PLAN, snap, plan, set())
    assert text.endswith(
        "; `on_drift` skip leaves out what changed (and all of t: a change of RF or partition "
        "count applies whole) and applies only the 1 partition(s) that did not change, of u"
    )
    result = preflight(snap, plan, set(), on_drift="skip")
    assert [m.key for m in result.todo] == [("u", 0)]
    assert [line.split(" (")[0] for line in result.skipped] == ["topic t whole"]


def test_a_plan_the_journal_says_was_applied_is_refused_once_the_cluster_changed():
    plan = _plan({0: (1, 2, 3), 1: (2, 3, 4)}, {0: (1, 2), 1: (2, 3)})
    # as applied: nothing to do, no refusal
    done = preflight(_snapshot({0: (1, 2, 3), 1: (2, 3, 4)}), plan, set(), finished_on="x")
    assert sorted(done.done) == [("t", 0), ("t", 1)] and done.todo == []
    # RF lowered again since, t-1 back as the plan found it: still refused, skip or not
    changed = _snapshot({0: (1, 3), 1: (2, 3)})
    for on_drift in ("fail", "skip"):
        text = _refusal(
            ExitCode.STALE_PLAN,
            changed,
            plan,
            set(),
            on_drift=on_drift,
            finished_on="2026-11-27T23:10:00.000Z",
        )
        assert text.startswith("plan.json was applied on 2026-11-27; the cluster changed since")
        assert "t-0 is now [1, 3]; t-1 is now [2, 3]" in text
        assert "make a new plan" in text and "skip" not in text


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
