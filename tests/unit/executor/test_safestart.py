"""Safe starts (pure): migration, a fresh controller and under-replication outside the plan
refuse an apply with exit 11; the real clusters are in tests/integration/test_pace.py."""

from __future__ import annotations

import pytest

from kreplica.errors import ClusterUnsettled, ExitCode
from kreplica.executor.safestart import (
    ControllerFacts,
    check_safe_start,
    flagged_for_migration,
    read_controller_znode,
    under_replicated_outside,
)
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic


def _snapshot(isr_of_b1: tuple[int, ...], down: frozenset[int] = frozenset()) -> ClusterSnapshot:
    return ClusterSnapshot(
        brokers=tuple(Broker(b, alive=b not in down) for b in (1, 2, 3)),
        topics=(
            Topic("a", (Partition("a", 0, (1, 2), leader=1, isr=(1,)),)),  # in the plan
            Topic(
                "b",
                (
                    Partition("b", 0, (1, 2, 3), leader=1, isr=(1, 2, 3)),
                    Partition("b", 1, (2, 3), leader=2, isr=isr_of_b1),
                ),
            ),
        ),
    )


PLAN = {("a", 0)}


def _check(facts: ControllerFacts, snap: ClusterSnapshot, **kw: object) -> object:
    options = {"settle_s": 60.0, "allow_under_replicated": False, **kw}
    return check_safe_start(facts, snap, PLAN, (), **options)  # type: ignore[arg-type]


def test_under_replicated_outside_the_plan_only() -> None:
    assert under_replicated_outside(_snapshot((2, 3)), PLAN, ()) == ([], [])
    assert under_replicated_outside(_snapshot((2,)), PLAN, ()) == ([("b", 1)], [])
    # broker 3 down (still listed in the ISR or not): nothing catches up, only noted
    assert under_replicated_outside(_snapshot((2, 3), frozenset({3})), PLAN, ()) == (
        [],
        [("b", 0), ("b", 1)],
    )
    # being reassigned (by someone else): its extra replicas are the move, not a repair
    assert under_replicated_outside(_snapshot((2,)), PLAN, {("b", 1)}) == ([], [])


def test_refusals_and_their_order() -> None:
    healthy = _snapshot((2, 3))
    with pytest.raises(ClusterUnsettled, match=r"mid-migration.*KAFKA-16120") as exc:
        _check(ControllerFacts(migration="ZooKeeper's /controller is held by KRaft"), healthy)
    assert exc.value.exit_code == ExitCode.UNSETTLED == 11
    with pytest.raises(ClusterUnsettled, match="no active controller"):
        _check(ControllerFacts(leaderless=True), healthy)
    fresh = ControllerFacts(controller="broker 2", controller_age_s=12.4)
    with pytest.raises(ClusterUnsettled, match=r"broker 2 became the active controller 12s ago"):
        _check(fresh, healthy)
    assert _check(fresh, healthy, settle_s=10.0)  # settled for 10 s
    assert _check(fresh, healthy, settle_s=0.0)  # check off
    with pytest.raises(ClusterUnsettled, match=r"1 partition\(s\) outside .* \(b-1\)"):
        _check(ControllerFacts(), _snapshot((2,)))


def test_allowed_under_replication_and_unknowns_are_reported() -> None:
    facts = ControllerFacts(unknown=("the controller's age: KRaft tells who, not since when",))
    result = _check(facts, _snapshot((2,)), allow_under_replicated=True)
    assert result.under_replicated == [("b", 1)]  # type: ignore[attr-defined]
    assert result.notes == [  # type: ignore[attr-defined]
        "not checked before starting: the controller's age: KRaft tells who, not since when"
    ]
    down = _check(ControllerFacts(), _snapshot((2, 3), frozenset({3})))  # not refused
    assert down.notes == [  # type: ignore[attr-defined]
        "2 partition(s) outside the plan are under-replicated only because a broker is down "
        "(b-0, b-1)"
    ]


def test_controller_znode_versions() -> None:
    """/controller as Kafka writes it (kafka-internals.md 5.6): v1, v2 with a ZooKeeper
    controller, v2 held by a KRaft controller during a migration (epoch 0 included)."""
    v1 = {"version": 1, "brokerid": 0, "timestamp": "1643692590537"}
    assert read_controller_znode(v1) == ("broker 0", None)
    zk = {"version": 2, "brokerid": 3, "timestamp": "1", "kraftControllerEpoch": -1}
    assert read_controller_znode(zk) == ("broker 3", None)
    for epoch in (0, 7):
        kraft = {"version": 2, "brokerid": 3000, "timestamp": "1", "kraftControllerEpoch": epoch}
        who, migration = read_controller_znode(kraft)
        assert who == "KRaft controller 3000"
        assert migration is not None and f"kraftControllerEpoch {epoch}" in migration


def test_the_migration_flag_of_live_brokers() -> None:
    """`zookeeper.metadata.migration.enable` as DescribeConfigs returns it for each live broker
    (None: not set; Kafka answers "false" for its default)."""
    assert flagged_for_migration({}) is None
    assert flagged_for_migration({1: None, 2: "false", 3: "FALSE"}) is None
    why = flagged_for_migration({3: "true", 1: "True", 2: "false"})
    assert why == "broker(s) 1, 3 run with zookeeper.metadata.migration.enable=true"
    with pytest.raises(ClusterUnsettled, match=r"mid-migration .*broker\(s\) 1, 3 run with"):
        _check(ControllerFacts(migration=why), _snapshot((2, 3)))


def _unled(snap: ClusterSnapshot) -> ClusterSnapshot:
    """`snap` with partition b-0 not led yet (leader -1, as Kafka records it)."""
    a, b = snap.topics
    first, second = b.partitions
    return ClusterSnapshot(
        brokers=snap.brokers,
        topics=(a, Topic("b", (Partition("b", 0, first.replicas, leader=-1, isr=()), second))),
    )


def test_a_first_start_is_not_a_failover() -> None:
    """The cluster's first controller (epoch 1) elected seconds ago, every partition led: a
    fresh cluster, settled; with a partition not led yet, refused until `settle_s`; a later
    controller (a failover) is refused as before."""
    healthy = _snapshot((2, 3))
    fresh = ControllerFacts(controller="broker 1", controller_age_s=3.0, first=True)
    assert _check(fresh, healthy).notes == []  # type: ignore[attr-defined]
    with pytest.raises(
        ClusterUnsettled,
        match=r"when the cluster started, and 1 partition\(s\) "
        r"have no leader yet \(b-0\)",
    ):
        _check(fresh, _unled(healthy))
    assert _check(fresh, _unled(healthy), settle_s=2.0, allow_under_replicated=True)
    failover = ControllerFacts(controller="broker 1", controller_age_s=3.0, first=False)
    with pytest.raises(ClusterUnsettled, match=r"broker 1 became the active controller 3s ago \("):
        _check(failover, healthy)
    # KRaft: no age; its quorum's first leader with every partition led needs no note
    kraft = ControllerFacts(unknown=("the controller's age: not since when",), first=True)
    assert _check(kraft, healthy).notes == []  # type: ignore[attr-defined]
    assert (
        _check(kraft, _unled(healthy), allow_under_replicated=True)
        .notes[0]
        .startswith(  # type: ignore[attr-defined]
            "not checked before starting: the controller's age"
        )
    )
