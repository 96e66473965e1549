"""The load-ordered pickers choose exactly what a scan of every eligible broker chooses.

The scans below are the pickers as they were before the load orders (kreplica/planner/
loadindex.py); hypothesis drives random clusters through random placements, removals and
topic switches and compares every pick with them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kreplica.errors import PlanInfeasible
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from kreplica.planner.context import PlanContext
from kreplica.planner.pickers import pick_leader, pick_new_replica


def reference_new_replica(
    ctx: PlanContext, topic: str, replicas: Sequence[int], size_bytes: int | None = None
) -> int:
    """pick_new_replica as one scan of every eligible broker (the original implementation)."""
    used = set(replicas)
    used_racks = {ctx.rack(b) for b in replicas}
    topic_load = ctx.topic_replicas[topic]
    cluster_load = ctx.cluster_replicas
    cluster_bytes = ctx.cluster_bytes if ctx.use_bytes else None
    positions = ctx.tiebreak
    ring = len(positions)
    last_position = positions.get(replicas[-1]) if replicas else None
    best: int | None = None
    best_key: tuple[bool, int, int, int, int] | None = None
    disk = ctx.disk
    full: int | None = None
    for b in ctx.eligible:
        if b in used:
            continue
        if disk is not None and not disk.fits(b, size_bytes):
            full = b if full is None else full
            continue
        position = positions[b]
        key = (
            ctx.rack_keys[b] in used_racks,
            topic_load[b],
            cluster_load[b],
            cluster_bytes[b] if cluster_bytes is not None else 0,
            (position - last_position) % ring if last_position is not None else position,
        )
        if best_key is None or key < best_key:
            best, best_key = b, key
    if best is None and disk is not None and full is not None:
        raise PlanInfeasible(disk.refusal(full, size_bytes))
    if best is None:
        raise PlanInfeasible(
            f"topic {topic!r}: no eligible broker left for another replica of {list(replicas)}; "
            "add brokers with `brokers` or lower the RF"
        )
    return best


def reference_leader(ctx: PlanContext, topic: str) -> int:
    return min(
        ctx.eligible,
        key=lambda b: (
            ctx.topic_leaders[topic][b],
            ctx.topic_rack_leaders[topic][ctx.rack(b)],
            ctx.topic_replicas[topic][b],
            ctx.cluster_leaders[b],
            *ctx.load_key(topic, b)[1:],
        ),
    )


@dataclass
class FakeDisk:
    """Room per broker in bytes (the interface of PlanContext.disk)."""

    room: dict[int, int]
    taken: dict[int, int] = field(default_factory=dict)

    def fits(self, broker: int, size_bytes: int | None) -> bool:
        room = self.room.get(broker)
        return room is None or (size_bytes or 0) <= room - self.taken.get(broker, 0)

    def take(self, broker: int, size_bytes: int | None) -> None:
        self.taken[broker] = self.taken.get(broker, 0) + (size_bytes or 0)

    def refusal(self, broker: int, size_bytes: int | None) -> str:
        return f"no room on {broker} for {size_bytes}"


@st.composite
def clusters(draw: st.DrawFn) -> tuple[ClusterSnapshot, tuple[int, ...], int | None]:
    n = draw(st.integers(1, 9))
    ids = sorted(draw(st.sets(st.integers(0, 30), min_size=n, max_size=n)))
    rack_count = draw(st.sampled_from([0, 1, 2, 3, 4]))
    mixed = draw(st.booleans())  # some brokers without a rack
    brokers = tuple(
        Broker(
            b,
            rack=None
            if rack_count == 0 or (mixed and i % 3 == 0)
            else f"r{draw(st.integers(0, rack_count - 1))}",
        )
        for i, b in enumerate(ids)
    )
    sized = draw(st.booleans())
    topics = []
    for t in range(draw(st.integers(1, 3))):
        parts = []
        for p in range(draw(st.integers(0, 6))):
            rf = draw(st.integers(0, min(3, n)))
            # replicas may sit on brokers the snapshot does not list (ids 40+)
            pool = [*ids, 40, 41]
            reps = tuple(draw(st.permutations(pool))[:rf])
            size = draw(st.integers(0, 50)) if sized else None
            parts.append(Partition(f"t{t}", p, reps, size_bytes=size))
        topics.append(Topic(f"t{t}", tuple(parts)))
    snap = ClusterSnapshot(brokers=brokers, topics=tuple(topics))
    eligible = tuple(draw(st.lists(st.sampled_from([*ids, 35]), min_size=1, unique=True)))
    seed = draw(st.one_of(st.none(), st.integers(0, 5)))
    return snap, eligible, seed


def _both(fast_ctx: PlanContext, ref_ctx: PlanContext, fast, ref, *args):  # type: ignore[no-untyped-def]
    try:
        want: object = ref(ref_ctx, *args)
    except (PlanInfeasible, ValueError) as exc:
        want = (type(exc), str(exc))
    try:
        got: object = fast(fast_ctx, *args)
    except (PlanInfeasible, ValueError) as exc:
        got = (type(exc), str(exc))
    return got, want


@settings(deadline=None, max_examples=300)
@given(cluster=clusters(), data=st.data(), with_disk=st.booleans())
def test_fast_pickers_choose_what_the_scans_choose(
    cluster: tuple[ClusterSnapshot, tuple[int, ...], int | None],
    data: st.DataObject,
    with_disk: bool,
) -> None:
    snap, eligible, seed = cluster
    fast = PlanContext.build(snap, eligible, seed)
    ref = PlanContext.build(snap, eligible, seed)
    if with_disk:
        room = {b: data.draw(st.integers(0, 120)) for b in fast.eligible}
        fast.disk = FakeDisk(dict(room))
        ref.disk = FakeDisk(dict(room))
    work = {(t.name, p.partition): list(p.replicas) for t in snap.topics for p in t.partitions}
    names = [t.name for t in snap.topics]
    for _ in range(data.draw(st.integers(1, 25))):
        topic = data.draw(st.sampled_from(names))
        action = data.draw(st.sampled_from(["grow", "grow", "leader", "shrink", "new"]))
        keys = [k for k in work if k[0] == topic]
        if action == "leader":
            got, want = _both(fast, ref, pick_leader, reference_leader, topic)
            assert got == want
            if isinstance(got, int):
                key = (topic, 1000 + len(work))
                work[key] = [got]
                fast.replace(topic, [], [got], 0)
                ref.replace(topic, [], [got], 0)
            continue
        if action == "new" or not keys:
            key = (topic, 1000 + len(work))
            work[key] = []
        else:
            key = data.draw(st.sampled_from(keys))
        replicas = work[key]
        size = data.draw(st.one_of(st.none(), st.integers(0, 40)))
        if action == "shrink" and replicas:
            drop = data.draw(st.sampled_from(replicas))
            after = [b for b in replicas if b != drop]
            fast.replace(topic, replicas, after, size)
            ref.replace(topic, replicas, after, size)
            work[key] = after
            continue
        got, want = _both(fast, ref, pick_new_replica, reference_new_replica, topic, replicas, size)
        assert got == want, (topic, replicas)
        if isinstance(got, int):
            if with_disk:
                ref.disk.take(got, size)  # the fast picker takes the room itself
                assert fast.disk.taken == ref.disk.taken
            after = [*replicas, got]
            fast.replace(topic, replicas, after, size)
            ref.replace(topic, replicas, after, size)
            work[key] = after


def test_a_partition_on_every_rack_takes_the_least_loaded_broker() -> None:
    """With no fresh rack left the pick is the least loaded broker, by ring after the last."""
    brokers = tuple(Broker(b, rack=f"r{b % 2}") for b in range(4))
    snap = ClusterSnapshot(brokers=brokers, topics=(Topic("t", (Partition("t", 0, (0, 1)),)),))
    ctx = PlanContext.build(snap, [0, 1, 2, 3], None)
    assert pick_new_replica(ctx, "t", [0, 1]) == 2  # 2 and 3 tie; 2 is next after 1
    assert reference_new_replica(ctx, "t", [0, 1]) == 2


def test_no_eligible_broker_left_is_refused() -> None:
    snap = ClusterSnapshot(brokers=(Broker(0), Broker(1)), topics=())
    ctx = PlanContext.build(snap, [0, 1], None)
    with pytest.raises(PlanInfeasible, match="no eligible broker left"):
        pick_new_replica(ctx, "t", [0, 1])


@settings(deadline=None, max_examples=200)
@given(cluster=clusters())
def test_counting_the_snapshot_a_topic_at_a_time_is_counting_every_partition(
    cluster: tuple[ClusterSnapshot, tuple[int, ...], int | None],
) -> None:
    snap, eligible, seed = cluster
    fast = PlanContext.build(snap, eligible, seed)
    ref = PlanContext.build(ClusterSnapshot(brokers=snap.brokers, topics=()), eligible, seed)
    ref.snapshot = snap
    for topic in snap.topics:
        for p in topic.partitions:
            ref.account(topic.name, p.replicas, p.size_bytes or 0, +1)
    for name in (
        "topic_replicas",
        "topic_leaders",
        "topic_rack_leaders",
        "cluster_replicas",
        "cluster_leaders",
        "cluster_bytes",
    ):
        got, want = getattr(fast, name), getattr(ref, name)
        assert {k: dict(v) if isinstance(v, dict) else v for k, v in got.items()} == {
            k: dict(v) if isinstance(v, dict) else v for k, v in want.items()
        }, name
