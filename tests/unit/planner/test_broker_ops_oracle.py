"""add-brokers and rebalance against their frozen full-scan versions (reference_add.py,
reference_rebalance.py, the code at 6f36dc9): the indexed searches pick the same move at every
step, so on random clusters the plans, reports and findings are identical, on the object run
and on the column run (a snapshot in columns) alike; only the report's `engine` (which run,
and why) is new."""

from __future__ import annotations

import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_add import add_brokers_plan as reference_add_brokers_plan
from reference_rebalance import rebalance_plan as reference_rebalance_plan

from kreplica.model import Broker, ClusterSnapshot, Partition, Plan, Topic
from kreplica.planner.brokers import add_brokers_plan, rebalance_plan
from kreplica.sources.snapshot import parse_snapshot_columnar, snapshot_to_dict

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _cluster(seed: int, *, n: int, n_new: int, n_racks: int, misplaced: bool) -> ClusterSnapshot:
    """Topics of RF 1-3 over the first n - n_new brokers, placed at random (`misplaced`: some
    partitions on one rack, so moves that repair racks exist), sizes with repeats (ties),
    now and then a dead broker (its partitions are left alone)."""
    rng = random.Random(seed)
    holders = list(range(n - n_new))
    racks = {b: f"r{rng.randrange(n_racks)}" for b in range(n)} if n_racks else {}
    topics = []
    for t in range(rng.randint(1, 5)):
        rf = rng.randint(1, min(3, len(holders)))
        parts = []
        for p in range(rng.randint(1, 40)):
            reps = tuple(rng.sample(holders, rf))
            if misplaced and racks and rng.random() < 0.2:
                same = [b for b in holders if racks[b] == racks[reps[0]]]
                if len(same) >= rf:
                    reps = tuple(rng.sample(same, rf))
            size = rng.choice([1, 2, 3, 10, rng.randint(1, 10**6)])
            isr = reps if rng.random() < 0.8 else reps[:1]
            parts.append(Partition(f"t{t}", p, reps, leader=reps[0], isr=isr, size_bytes=size))
        topics.append(Topic(f"t{t}", tuple(parts)))
    dead = rng.choice(holders) if len(holders) > 2 and rng.random() < 0.3 else None
    return ClusterSnapshot(
        brokers=tuple(Broker(b, rack=racks.get(b), alive=b != dead) for b in range(n)),
        topics=tuple(topics),
        cluster_id="oracle",
    )


def columnar(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    out = parse_snapshot_columnar(json.loads(json.dumps(snapshot_to_dict(snapshot))))
    assert out is not None and getattr(out, "columns", None) is not None
    return out


def planned(plan: Plan, engine: str) -> tuple[object, ...]:
    """The plan as the reference makes it, once its `engine` is checked and dropped."""
    assert plan.report["engine"]["name"] == engine
    report = {k: v for k, v in plan.report.items() if k != "engine"}
    return (plan.cluster_id, plan.snapshot_fingerprint, list(plan.changes), report, plan.findings)


def reference(plan: Plan) -> tuple[object, ...]:
    return (
        plan.cluster_id,
        plan.snapshot_fingerprint,
        list(plan.changes),
        plan.report,
        plan.findings,
    )


@SETTINGS
@given(
    st.integers(0, 2**32),
    st.integers(2, 14),
    st.integers(1, 4),
    st.integers(0, 4),
    st.booleans(),
    st.sampled_from(["count", "bytes"]),
)
def test_add_brokers_matches_full_scan(
    seed: int, n_old: int, n_new: int, n_racks: int, misplaced: bool, by: str
) -> None:
    snap = _cluster(seed, n=n_old + n_new, n_new=n_new, n_racks=n_racks, misplaced=misplaced)
    new = range(n_old, n_old + n_new)
    want = reference(reference_add_brokers_plan(snap, new, by=by))
    assert planned(add_brokers_plan(snap, new, by=by), "objects") == want
    assert planned(add_brokers_plan(columnar(snap), new, by=by), "columns") == want


@SETTINGS
@given(
    st.integers(0, 2**32),
    st.integers(2, 14),
    st.integers(0, 3),
    st.integers(0, 4),
    st.booleans(),
    st.sampled_from(["count", "bytes"]),
    st.one_of(st.none(), st.integers(0, 30)),
    st.one_of(st.none(), st.integers(0, 3 * 10**6)),
)
def test_rebalance_matches_full_scan(
    seed: int,
    n: int,
    n_new: int,
    n_racks: int,
    misplaced: bool,
    by: str,
    max_moves: int | None,
    max_bytes: int | None,
) -> None:
    n_new = min(n_new, n - 1)
    snap = _cluster(seed, n=n, n_new=n_new, n_racks=n_racks, misplaced=misplaced)
    args = {"by": by, "max_moves": max_moves, "max_bytes": max_bytes}
    want = reference(reference_rebalance_plan(snap, **args))
    assert planned(rebalance_plan(snap, **args), "objects") == want
    assert planned(rebalance_plan(columnar(snap), **args), "columns") == want
