"""kreplica.planner.dirs: drain-dir and balance-dirs on JBOD brokers (pure planning)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.model import Broker, ClusterSnapshot, LogDir, Partition, Topic
from kreplica.planner import dirs as planner

GB = 10**9


def snapshot(
    disks: dict[int, list[LogDir]],
    parts: list[tuple[str, int, list[int], list[str], list[int]]],
) -> ClusterSnapshot:
    """parts: (topic, partition, replicas, replica dirs, replica sizes)."""
    by_topic: dict[str, list[Partition]] = {}
    for topic, pid, replicas, dirs, sizes in parts:
        by_topic.setdefault(topic, []).append(
            Partition(
                topic,
                pid,
                tuple(replicas),
                size_bytes=max(sizes),
                replica_dirs=tuple(dirs),
                replica_sizes=tuple(sizes),
            )
        )
    return ClusterSnapshot(
        brokers=tuple(Broker(b, disks=tuple(d)) for b, d in sorted(disks.items())),
        topics=tuple(
            Topic(name, tuple(sorted(ps, key=lambda p: p.partition)))
            for name, ps in sorted(by_topic.items())
        ),
        cluster_id="c1",
    )


def two_dirs(usable_a: int = 500 * GB, usable_b: int = 500 * GB) -> list[LogDir]:
    return [LogDir("/d/a", 1000 * GB, usable_a), LogDir("/d/b", 1000 * GB, usable_b)]


def test_drain_moves_every_replica_of_the_dir_once_and_nothing_else() -> None:
    snap = snapshot(
        {1: [*two_dirs(), LogDir("/d/c", 1000 * GB, 300 * GB)], 2: two_dirs()},
        [
            ("t", 0, [1, 2], ["/d/a", "/d/a"], [10 * GB, 10 * GB]),
            ("t", 1, [2, 1], ["/d/a", "/d/b"], [20 * GB, 20 * GB]),
            ("u", 0, [1], ["/d/a"], [5 * GB]),
        ],
    )
    plan = planner.drain_dir(snap, broker=1, path="/d/a")
    assert {(m.name, m.broker, m.source) for m in plan.moves} == {
        ("t-0", 1, "/d/a"),
        ("u-0", 1, "/d/a"),
    }
    assert plan.bytes_moved == plan.lower_bound_bytes == 15 * GB
    # most usable first: /d/b (500 GB) beats /d/c (300 GB) for both
    assert {m.target for m in plan.moves} == {"/d/b"}
    row = {(r.broker, r.path): r for r in plan.rows}
    assert row[(1, "/d/a")].bytes_after == 0 and row[(1, "/d/a")].replicas_after == 0
    assert row[(1, "/d/b")].incoming == 15 * GB


def test_drain_spreads_by_usable_after_earlier_placements() -> None:
    disks = {
        1: [
            LogDir("/d/a", 1000, 100),
            LogDir("/d/b", 1000, 800),
            LogDir("/d/c", 1000, 750),
        ]
    }
    parts = [("t", i, [1], ["/d/a"], [100]) for i in range(4)]
    plan = planner.drain_dir(snapshot(disks, parts), broker=1, path="/d/a", headroom=0.0)
    # 800 vs 750: b, then c (750 > 700), then b (700 > 650), then c
    assert [m.target for m in sorted(plan.moves, key=lambda m: m.partition)] == [
        "/d/b",
        "/d/c",
        "/d/b",
        "/d/c",
    ]


def test_reassignment_json_keeps_replicas_and_names_the_dirs() -> None:
    snap = snapshot(
        {1: two_dirs(), 2: two_dirs()},
        [("t", 0, [2, 1], ["/d/a", "/d/a"], [1, 1])],
    )
    plan = planner.drain_dir(snap, broker=1, path="/d/a")
    replicas = planner.replicas_of(snap)
    assert planner.reassignment_json(plan, replicas) == {
        "version": 1,
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [2, 1], "log_dirs": ["any", "/d/b"]}
        ],
    }
    assert planner.rollback_json(plan, replicas)["partitions"][0]["log_dirs"] == ["any", "/d/a"]
    doc = planner.plan_document(plan, replicas, cluster_id="c1")
    assert doc["before_dirs"] == [{"topic": "t", "partition": 0, "broker": 1, "log_dir": "/d/a"}]
    # the rollback's plan document: the replica in the dir the plan put it in, going back
    back = planner.plan_files(plan, replicas, cluster_id="c1")["rollback_document"]
    assert back["before_dirs"] == [{"topic": "t", "partition": 0, "broker": 1, "log_dir": "/d/b"}]
    assert back["reassignment"] == doc["rollback"] and back["cluster_id"] == "c1"


def test_drain_refuses_when_the_headroom_would_be_crossed() -> None:
    snap = snapshot(
        {1: [LogDir("/d/a", 1000, 900), LogDir("/d/b", 1000, 150)]},
        [("t", 0, [1], ["/d/a"], [60])],
    )
    with pytest.raises(PlanInfeasible) as err:
        planner.drain_dir(snap, broker=1, path="/d/a", headroom=0.10)
    text = str(err.value)
    assert "broker 1" in text and "/d/a" in text and "60 bytes" in text and "150" in text
    assert "\n" not in text
    # 150 - 50 = 100 = 10% of 1000: exactly the headroom fits
    ok = snapshot(
        {1: [LogDir("/d/a", 1000, 900), LogDir("/d/b", 1000, 150)]},
        [("t", 0, [1], ["/d/a"], [50])],
    )
    assert len(planner.drain_dir(ok, broker=1, path="/d/a", headroom=0.10).moves) == 1


def test_drain_bad_input_is_one_line() -> None:
    snap = snapshot({1: two_dirs()}, [("t", 0, [1], ["/d/a"], [1])])
    with pytest.raises(UsageError, match="no log dir '/d/x'"):
        planner.drain_dir(snap, broker=1, path="/d/x")
    with pytest.raises(UsageError, match="not in this cluster"):
        planner.drain_dir(snap, broker=7, path="/d/a")
    one = snapshot({1: [LogDir("/d/a", 10, 5)]}, [("t", 0, [1], ["/d/a"], [1])])
    with pytest.raises(PlanInfeasible, match="one log dir"):
        planner.drain_dir(one, broker=1, path="/d/a")
    no_disks = ClusterSnapshot(brokers=(Broker(1),), topics=())
    with pytest.raises(UsageError, match="no log dirs this source can see"):
        planner.drain_dir(no_disks, broker=1, path="/d/a")


def test_balance_moves_the_largest_fitting_replica_and_stops_at_the_target() -> None:
    parts = [
        ("t", 0, [1], ["/d/a"], [60]),
        ("t", 1, [1], ["/d/a"], [30]),
        ("t", 2, [1], ["/d/a"], [10]),
        ("t", 3, [1], ["/d/b"], [0]),
    ]
    plan = planner.balance_dirs(snapshot({1: two_dirs()}, parts), headroom=0.0)
    # 100 bytes in a, targets 50/50: 60 overshoots, 30 then 10 fit -> 60/40
    assert [(m.partition, m.target) for m in plan.moves] == [(1, "/d/b"), (2, "/d/b")]
    assert plan.bytes_moved == 40 <= plan.lower_bound_bytes == 50


def test_balance_already_even_moves_nothing_and_respects_brokers() -> None:
    parts = [
        ("t", 0, [1, 2], ["/d/a", "/d/a"], [10, 10]),
        ("t", 1, [1, 2], ["/d/b", "/d/a"], [10, 10]),
    ]
    snap = snapshot({1: two_dirs(), 2: two_dirs()}, parts)
    assert planner.balance_dirs(snap, brokers=[1]).moves == ()
    plan = planner.balance_dirs(snap)
    assert [(m.broker, m.source, m.target) for m in plan.moves] == [(2, "/d/a", "/d/b")]


def test_balance_weights_targets_by_total_bytes() -> None:
    disks = {1: [LogDir("/d/a", 1000, 900), LogDir("/d/b", 3000, 2900)]}
    parts = [("t", i, [1], ["/d/a"], [10]) for i in range(8)]
    plan = planner.balance_dirs(snapshot(disks, parts), headroom=0.0)
    # 80 bytes, shares 1:3 -> 20 / 60
    row = {r.path: r for r in plan.rows}
    assert (row["/d/a"].bytes_after, row["/d/b"].bytes_after) == (20, 60)


@st.composite
def jbod(draw: st.DrawFn) -> ClusterSnapshot:
    n_brokers = draw(st.integers(1, 3))
    disks: dict[int, list[LogDir]] = {}
    for b in range(1, n_brokers + 1):
        n_dirs = draw(st.integers(1, 4))
        disks[b] = [LogDir(f"/d/{k}", 10_000, draw(st.integers(0, 10_000))) for k in range(n_dirs)]
    parts = []
    for i in range(draw(st.integers(0, 25))):
        brokers = draw(
            st.lists(st.integers(1, n_brokers), min_size=1, max_size=n_brokers, unique=True)
        )
        dirs = [draw(st.sampled_from([d.path for d in disks[b]])) for b in brokers]
        sizes = [draw(st.integers(0, 900)) for _ in brokers]
        parts.append(("t", i, brokers, dirs, sizes))
    return snapshot(disks, parts)


def _usable(snap: ClusterSnapshot) -> dict[tuple[int, str], LogDir]:
    return {(b.id, d.path): d for b in snap.brokers for d in b.disks or ()}


@settings(deadline=None, max_examples=150)
@given(jbod(), st.sampled_from([0.0, 0.1, 0.3]))
def test_balance_invariants(snap: ClusterSnapshot, headroom: float) -> None:
    plan = planner.balance_dirs(snap, headroom=headroom)
    assert plan == planner.balance_dirs(snap, headroom=headroom)  # deterministic
    moved = Counter((m.topic, m.partition, m.broker) for m in plan.moves)
    assert all(n == 1 for n in moved.values())  # each replica at most once
    assert plan.bytes_moved <= plan.lower_bound_bytes
    disks = _usable(snap)
    for row in plan.rows:
        d = disks[(row.broker, row.path)]
        if row.incoming:
            assert d.usable_bytes is not None and d.total_bytes is not None
            assert d.usable_bytes - row.incoming >= headroom * d.total_bytes
        assert not (row.incoming and row.outgoing)  # a dir only gives or only takes
    # the spread never grows on any broker
    for b in plan.brokers:
        rows = [r for r in plan.rows if r.broker == b]
        before = max(r.bytes_before for r in rows) - min(r.bytes_before for r in rows)
        after = max(r.bytes_after for r in rows) - min(r.bytes_after for r in rows)
        assert after <= before


@settings(deadline=None, max_examples=150)
@given(jbod(), st.data())
def test_drain_invariants(snap: ClusterSnapshot, data: st.DataObject) -> None:
    broker = data.draw(st.sampled_from([b.id for b in snap.brokers]))
    disks = [d.path for b in snap.brokers if b.id == broker for d in b.disks or ()]
    path = data.draw(st.sampled_from(disks))
    in_dir = [r for r in planner.replica_dirs(snap) if r.broker == broker and r.path == path]
    try:
        plan = planner.drain_dir(snap, broker=broker, path=path)
    except PlanInfeasible:
        assert len(disks) == 1 or in_dir  # refused only for a lack of dirs or of room
        return
    assert sorted((m.topic, m.partition) for m in plan.moves) == sorted(
        (r.topic, r.partition) for r in in_dir
    )
    assert plan.bytes_moved == sum(r.size_bytes for r in in_dir)
    assert all(m.target != path and m.broker == broker for m in plan.moves)
    usable = _usable(snap)
    for row in plan.rows:
        if row.incoming:
            d = usable[(row.broker, row.path)]
            assert d.usable_bytes is not None and d.total_bytes is not None
            assert d.usable_bytes - row.incoming >= 0.1 * d.total_bytes
