"""Hypothesis properties of make_plan over random clusters and layouts.

Clusters: 1-60 brokers, 0-6 racks (sometimes with rackless brokers mixed in), topics with
RF 1-5 and 1-300 partitions laid out by Kafka's own algorithm, at random by hand, or Kafka's
with some partitions edited. Requests: RF up or down, more partitions, rack repair.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kreplica.errors import PlanInfeasible
from kreplica.kafka import JavaRandom, assign_replicas
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from kreplica.planner import STRATEGIES, PlanOptions, TopicRequest, make_plan
from kreplica.planner.evaluate import (
    balance_bound,
    has_rack_violation,
    invariant_violations,
    rack_count,
    replicas_per_broker,
)
from kreplica.planner.report import full_assignment
from kreplica.planner.serialize import plan_document


@dataclass(frozen=True)
class Case:
    snapshot: ClusterSnapshot
    requests: tuple[TopicRequest, ...]
    options: PlanOptions


def _layout(rng: random.Random, kind: str, ids, racks, partitions: int, rf: int):
    if kind == "kafka":
        rack_of = racks if racks and all(racks.get(b) for b in ids) else None
        placed = assign_replicas(
            ids, partitions, rf, racks=rack_of, rng=JavaRandom(rng.randrange(1 << 30))
        )
        matrix = [placed[p] for p in range(partitions)]
    else:
        matrix = [rng.sample(ids, rf) for _ in range(partitions)]
    if kind == "edited":  # Kafka's layout with a few partitions changed by hand
        placed = assign_replicas(ids, partitions, rf, rng=JavaRandom(rng.randrange(1 << 30)))
        matrix = [placed[p] for p in range(partitions)]
        for p in rng.sample(range(partitions), max(1, partitions // 10)):
            matrix[p] = rng.sample(ids, rf)
    return matrix


def _isr(rng: random.Random, replicas) -> tuple[int, ...]:
    """The leader plus each follower with probability 3/4."""
    return (replicas[0], *(b for b in replicas[1:] if rng.random() < 0.75))


@st.composite
def cases(
    draw, *, max_partitions=300, exclusions=True, with_racks=True, ops=("rf", "partitions", "racks")
):
    rng = random.Random(draw(st.integers(0, 2**32)))
    n = draw(st.integers(1, 60))
    ids = sorted(rng.sample(range(max(n * 2, 8)), n))
    n_racks = draw(st.integers(0, 6)) if with_racks else 0
    racks = {b: f"r{rng.randrange(n_racks)}" for b in ids} if n_racks else {}
    if racks and draw(st.booleans()) and draw(st.booleans()):  # a few rackless brokers
        for b in rng.sample(ids, max(1, n // 5)):
            racks[b] = None
    sized = draw(st.booleans())
    lagging = draw(st.booleans())  # some followers out of sync
    topics = []
    requests = []
    for t in range(draw(st.integers(1, 3))):
        rf = draw(st.integers(1, min(5, n)))
        partitions = draw(st.integers(1, max_partitions))
        kind = draw(st.sampled_from(["kafka", "random", "edited"]))
        matrix = _layout(rng, kind, ids, racks, partitions, rf)
        name = f"topic-{t}"
        topics.append(
            Topic(
                name,
                tuple(
                    Partition(
                        name,
                        p,
                        tuple(reps),
                        size_bytes=rng.randrange(1, 10**9) if sized else None,
                        isr=_isr(rng, reps) if lagging else None,
                    )
                    for p, reps in enumerate(matrix)
                ),
            )
        )
        if draw(st.booleans()) or not requests:
            requests.append(
                TopicRequest(
                    name,
                    rf=draw(st.integers(1, 5)) if "rf" in ops else None,
                    partitions=(partitions + draw(st.integers(0, 20)))
                    if "partitions" in ops and draw(st.booleans())
                    else None,
                    fix_racks="racks" in ops and draw(st.booleans()),
                )
            )
    excluded = (
        frozenset(rng.sample(ids, draw(st.integers(0, min(3, n - 1)))))
        if exclusions
        else frozenset()
    )
    snapshot = ClusterSnapshot(
        brokers=tuple(Broker(b, rack=racks.get(b)) for b in ids),
        topics=tuple(topics),
        cluster_id="prop",
    )
    options = PlanOptions(
        strategy=draw(st.sampled_from(STRATEGIES)),
        exclude_brokers=excluded,
        seed=draw(st.none() | st.integers(0, 100)),
    )
    return Case(snapshot, tuple(requests), options)


def _plan(case: Case):
    try:
        return make_plan(case.snapshot, case.requests, case.options)
    except PlanInfeasible as exc:
        assert "eligible" in str(exc) or "min.insync" in str(exc)
        assume(False)
        raise


def _after(case: Case, plan):
    after = full_assignment(case.snapshot)
    for c in plan.changes:
        after[(c.topic, c.partition)] = c.after
    return after


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(cases())
def test_invariants_hold_for_every_strategy(case: Case):
    plan = _plan(case)
    before = full_assignment(case.snapshot)
    after = _after(case, plan)
    eligible = [b for b in case.snapshot.broker_ids() if b not in case.options.exclude_brokers]
    target_rf = {
        r.topic: r.rf if r.rf is not None else case.snapshot.topic(r.topic).replication_factor
        for r in case.requests
    }
    repaired = {r.topic for r in case.requests if r.fix_racks}
    # partitions of a topic whose RF is not changed may legitimately differ from partition 0's
    for r in case.requests:
        if r.rf is None:
            for p in case.snapshot.topic(r.topic).partitions:
                assume(len(p.replicas) == target_rf[r.topic])
    assert (
        invariant_violations(
            before, after, eligible=eligible, target_rf=target_rf, repaired=repaired
        )
        == []
    )
    changed = {(c.topic, c.partition) for c in plan.changes}
    assert all(before[k] != after[k] for k in changed if k in before)
    assert [(c.topic, c.partition) for c in plan.changes] == sorted(changed)
    _assert_out_of_sync_removed_first(case, plan)  # every strategy: no in-sync copy lost first
    r = plan.report
    assert r["replicas_added"] >= r["lower_bound_replicas_added"]
    assert r["replicas_removed"] >= r["lower_bound_replicas_removed"]
    assert set(r["broker_replicas_after"]) >= set(case.snapshot.broker_ids())


def _assert_out_of_sync_removed_first(case: Case, plan) -> None:
    fixed = {r.topic for r in case.requests if r.fix_racks}
    parts = {(t.name, p.partition): p for t in case.snapshot.topics for p in t.partitions}
    for c in plan.reassignments:
        if c.topic in fixed or len(c.after) >= len(c.before or ()):
            continue
        lagging = set(parts[(c.topic, c.partition)].out_of_sync)
        removed = set(c.removed)
        assert removed <= lagging or lagging <= removed, (c, lagging)


@SETTINGS
@given(cases(exclusions=False))
def test_rack_diversity_and_exact_lower_bound_when_every_broker_is_eligible(case: Case):
    plan = _plan(case)
    racks = case.snapshot.racks()
    before = full_assignment(case.snapshot)
    after = _after(case, plan)
    available = rack_count(racks, case.snapshot.broker_ids())
    lagging = {
        (t.name, p.partition): p.out_of_sync for t in case.snapshot.topics for p in t.partitions
    }
    requested = {r.topic: r for r in case.requests}
    for key, reps in after.items():
        req = requested.get(key[0])
        if req is None:
            continue
        old = before.get(key)
        was_ok = old is None or not has_rack_violation(racks, old, available)
        if old is not None and len(reps) < len(old) and lagging.get(key) and not req.fix_racks:
            continue  # lowering drops lagging replicas first, even at the cost of a rack
        if req.fix_racks or was_ok:
            assert not has_rack_violation(racks, reps, available), (key, old, reps)
    r = plan.report
    if case.options.strategy == "balanced" and not any(lagging.values()):
        assert r["replicas_added"] == r["lower_bound_replicas_added"]
        assert r["replicas_removed"] == r["lower_bound_replicas_removed"]


@SETTINGS
@given(cases(exclusions=False, with_racks=False, ops=("rf",)))
def test_balanced_raise_stays_within_the_documented_bound(case: Case):
    case = Case(
        case.snapshot, case.requests, PlanOptions(strategy="balanced", seed=case.options.seed)
    )
    plan = _plan(case)
    before = full_assignment(case.snapshot)
    after = _after(case, plan)
    n = len(case.snapshot.brokers)
    for req in case.requests:
        assert req.rf is not None
        old = replicas_per_broker(
            {k: v for k, v in before.items() if k[0] == req.topic}, case.snapshot.broker_ids()
        )
        new = replicas_per_broker(
            {k: v for k, v in after.items() if k[0] == req.topic}, case.snapshot.broker_ids()
        )
        if any(len(before[k]) > req.rf for k in before if k[0] == req.topic):
            continue  # lowering only ever removes from the most loaded
        assert max(new.values()) <= max(
            max(old.values()), balance_bound(sum(new.values()), n, req.rf)
        )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(max_partitions=80))
def test_plans_are_deterministic_to_the_byte(case: Case):
    first = _plan(case)
    second = make_plan(case.snapshot, case.requests, case.options)
    blob = lambda plan: json.dumps(plan_document(plan, case.snapshot), sort_keys=True)  # noqa: E731
    assert blob(first) == blob(second)
    assert first == second


@pytest.mark.slow
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(exclusions=False))
def test_a_plan_applied_twice_changes_nothing_more(case: Case):
    """Replanning the planned state for the same request is a no-op (the plan is stable)."""
    plan = _plan(case)
    after = _after(case, plan)
    topics = tuple(
        Topic(
            t.name,
            tuple(
                Partition(t.name, p, tuple(after[(t.name, p)]))
                for p in sorted(pid for (name, pid) in after if name == t.name)
            ),
        )
        for t in case.snapshot.topics
    )
    replanned = ClusterSnapshot(case.snapshot.brokers, topics, cluster_id="prop")
    assume(all(not r.fix_racks for r in case.requests))
    again = make_plan(replanned, case.requests, case.options)
    assert again.changes == ()
