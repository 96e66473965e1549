"""`balanced` reaches the lowest topic spread when a request only adds replicas (balance.py).

Two oracles:
- an exhaustive solver (dynamic programming over every valid placement of the new replicas:
  eligible brokers, none twice in a partition, the rack rule `balanced` follows, every
  existing replica fixed; new partitions' leaders included) on small clusters (<= 6 brokers,
  <= 3 racks, <= 8 partitions, RF <= 3): for an RF raise the plan's topic replica spread
  equals the lowest any placement reaches; with new partitions the leader spread equals the
  lowest any placement reaches and the replica spread the lowest any placement reaches
  with the leaders the plan chose;
- networkx max-flow on the same network balance.py searches implicitly: the spread
  balance_units reaches equals the lowest window networkx finds feasible.

Where the optimum is not reached: new partitions get their leaders first (pick_leader: the
lowest leader spread), then the followers are evened out. When the leaders the lowest leader
spread needs force a replica count up, the replica spread is higher than a placement that
gives up leader balance would reach. Example: brokers 4, 5, 8, 18 on one rack and 14 on
another, partitions [8, 5, 18], [14, 18, 4], [4, 5, 18], two partitions added at RF 3: leader
spread 0 needs broker 18 (3 replicas already) to lead one, so the replica spread is 2 where
[8, 14, 4], [5, 14, 8] would give 0 (with leader spread 2).
Also not claimed: a disk guard that turns moves down (TopicUnits.admits), and
requests that lower RF or repair racks (they keep the best of the balanced, kafka and append
placements, tests/unit/planner/test_degraded.py). Cluster spread is a tie-break (brokers with
fewer replicas in the cluster are preferred), not proven lowest.
"""

from __future__ import annotations

import random
from itertools import combinations

import networkx as nx
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from planner_helpers import after_matrix, cluster

from kreplica.errors import PlanInfeasible
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from kreplica.planner import PlanOptions, TopicRequest, make_plan
from kreplica.planner.balance import TopicUnits, balance_units, floor_of, spread_of
from kreplica.planner.evaluate import rack_key
from kreplica.planner.serialize import plan_document

# --- the exhaustive solver -------------------------------------------------------------------


def _unit_sets(fixed, k, eligible, rack):
    """Every set of k brokers a partition with `fixed` replicas may add, by the rack rule."""
    fixed_racks = {rack(b) for b in fixed}
    candidates = [b for b in eligible if b not in fixed]
    fresh = {rack(b) for b in candidates} - fixed_racks
    for chosen in combinations(candidates, k):
        racks = [rack(b) for b in chosen]
        if k <= len(fresh):
            if len(set(racks)) == k and set(racks) <= fresh:
                yield chosen
        elif fresh <= set(racks):
            yield chosen


def exhaustive(matrix, new_partitions, rf, eligible, scope, rack, leaders_of_new=None):
    """(lowest replica spread, lowest leader spread) over every valid placement; the two
    minima are taken separately. With `leaders_of_new`, the new partitions' leaders are
    those (only their followers are placed)."""
    index = {b: i for i, b in enumerate(scope)}
    base = [0] * len(scope)
    leaders = [0] * len(scope)
    for reps in matrix:
        for b in reps:
            if b in index:
                base[index[b]] += 1
        if reps and reps[0] in index:
            leaders[index[reps[0]]] += 1
    states = {(tuple(base), tuple(leaders))}
    options = []
    for reps in matrix:
        if len(reps) < rf:
            options.append([(s, None) for s in _unit_sets(reps, rf - len(reps), eligible, rack)])
    for i in range(new_partitions):
        if leaders_of_new is None:
            sets = list(_unit_sets((), rf, eligible, rack))
            options.append([(s, leader) for s in sets for leader in s])
        else:
            lead = leaders_of_new[i]
            sets = list(_unit_sets((lead,), rf - 1, eligible, rack))
            options.append([((lead, *s), lead) for s in sets])
    for choices in options:
        nxt = set()
        for counts, leads in states:
            for chosen, leader in choices:
                c = list(counts)
                for b in chosen:
                    c[index[b]] += 1
                ld = list(leads)
                if leader is not None:
                    ld[index[leader]] += 1
                nxt.add((tuple(c), tuple(ld)))
        states = nxt
    return (
        min(max(c) - min(c) for c, _ in states),
        min(max(ld) - min(ld) for _, ld in states),
    )


@st.composite
def small_cases(draw):
    rng = random.Random(draw(st.integers(0, 2**32)))
    n = draw(st.integers(2, 6))
    ids = sorted(rng.sample(range(20), n))
    n_racks = draw(st.integers(0, 3))
    racks = {b: f"r{rng.randrange(n_racks)}" for b in ids} if n_racks else {}
    rf_now = draw(st.integers(1, min(3, n)))
    partitions = draw(st.integers(1, 8))
    matrix = [rng.sample(ids, rf_now) for _ in range(partitions)]
    rf = draw(st.integers(rf_now, 3))
    more = draw(st.integers(0, 3)) if partitions + 3 <= 8 else 0
    excluded = frozenset(rng.sample(ids, 1)) if n > rf and draw(st.booleans()) else frozenset()
    return ids, racks, matrix, rf, more, excluded


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_cases())
def test_balanced_reaches_the_exhaustive_optimum(case):
    ids, racks, matrix, rf, more, excluded = case
    assume(rf > len(matrix[0]) or more)
    snap = cluster({"t": matrix}, brokers=ids, racks=racks)
    request = TopicRequest(
        "t", rf=rf if rf > len(matrix[0]) else None, partitions=len(matrix) + more or None
    )
    try:
        plan = make_plan(snap, [request], PlanOptions(exclude_brokers=excluded))
    except PlanInfeasible:
        assume(False)
        return
    eligible = [b for b in ids if b not in excluded]
    scope = sorted(set(eligible) | {b for reps in matrix for b in reps})
    best_spread, best_leaders = exhaustive(
        matrix, more, rf, eligible, scope, lambda b: rack_key(racks, b)
    )
    after = after_matrix(snap, plan, "t")
    counts = dict.fromkeys(scope, 0)
    leaders = dict.fromkeys(scope, 0)
    for reps in after:
        for b in reps:
            counts[b] += 1
        leaders[reps[0]] += 1
    assert plan.report["topic_spread_after"]["t"] == spread_of(counts)
    assert spread_of(leaders) == best_leaders, (after, best_leaders)
    if not more:
        assert spread_of(counts) == best_spread, (after, best_spread)
    else:  # the lowest replica spread with the new partitions' leaders the plan chose
        with_leaders = exhaustive(
            matrix,
            more,
            rf,
            eligible,
            scope,
            lambda b: rack_key(racks, b),
            [reps[0] for reps in after[len(matrix) :]],
        )
        assert spread_of(counts) == with_leaders[0], (after, with_leaders)
    assert plan.report["replicas_added"] == plan.report["lower_bound_replicas_added"]
    assert plan.report["existing_replicas_moved"] == 0


# --- networkx as the flow oracle -------------------------------------------------------------


def _nx_feasible(units: TopicUnits, lo, hi, total) -> bool:
    """The window as a max-flow problem: every unit placed, every broker within [lo, hi]
    (lower bounds: a broker's first lo units go straight to the sink, the rest through one
    node capped at total - sum(lo)); the rack rule as in balance.py."""
    g = nx.DiGraph()
    eligible = sorted(units.eligible)
    racks = sorted({units.rack(b) for b in eligible})
    for pid, reps in units.replicas.items():
        n_fixed = units.fixed[pid]
        k = len(reps) - n_fixed
        if k <= 0:
            continue
        fixed = reps[:n_fixed]
        fixed_racks = {units.rack(b) for b in fixed}
        fresh = [r for r in racks if r not in fixed_racks]
        if k <= len(fresh):
            g.add_edge("S", ("p", pid), capacity=k)
            for r in fresh:
                g.add_edge(("p", pid), ("r", pid, r), capacity=1)
        else:  # each fresh rack at least one: one source for those, one for the rest
            g.add_edge("S", ("pf", pid), capacity=len(fresh))
            g.add_edge("S", ("px", pid), capacity=k - len(fresh))
            for r in fresh:
                g.add_edge(("pf", pid), ("r", pid, r), capacity=1)
            for r in racks:
                g.add_edge(("px", pid), ("r", pid, r), capacity=k)
        for b in eligible:
            if b not in fixed:
                g.add_edge(("r", pid, units.rack(b)), ("b", b), capacity=1)
    for b in eligible:
        if lo[b]:
            g.add_edge(("b", b), "T", capacity=lo[b])
        if hi[b] > lo[b]:
            g.add_edge(("b", b), "X", capacity=hi[b] - lo[b])
    g.add_edge("X", "T", capacity=total - sum(lo.values()))
    if "S" not in g or "T" not in g:
        return total == 0
    return nx.maximum_flow_value(g, "S", "T") == total


def _nx_lowest_spread(units: TopicUnits) -> int:
    base = dict.fromkeys(units.scope, 0)
    for pid, reps in units.replicas.items():
        for b in reps[: units.fixed[pid]]:
            base[b] += 1
    total = sum(len(reps) - units.fixed[pid] for pid, reps in units.replicas.items())
    eligible = sorted(units.eligible)
    fixed_counts = [n for b, n in base.items() if b not in eligible]
    for s in range(floor_of(base, eligible, total), 64):
        for level in range(max(base.values()) + total + 1):
            if fixed_counts and (min(fixed_counts) < level or max(fixed_counts) > level + s):
                continue
            lo = {b: max(0, level - base[b]) for b in eligible}
            hi = {b: level + s - base[b] for b in eligible}
            if min(hi.values()) < 0 or not sum(lo.values()) <= total <= sum(hi.values()):
                continue
            if _nx_feasible(units, lo, hi, total):
                return s
    raise AssertionError("no window found")


@st.composite
def unit_cases(draw):
    """A topic whose new replicas were placed at random (as a bad greedy might), rack rule
    kept; up to 12 brokers, 4 racks, 12 partitions."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    n = draw(st.integers(2, 12))
    ids = list(range(n))
    n_racks = draw(st.integers(1, 4))
    rack_of = {b: f"r{rng.randrange(n_racks)}" for b in ids}
    eligible = sorted(rng.sample(ids, draw(st.integers(max(1, n - 3), n))))
    replicas: dict[int, list[int]] = {}
    fixed: dict[int, int] = {}
    for pid in range(draw(st.integers(1, 12))):
        have = draw(st.integers(0, min(3, n)))
        reps = rng.sample(ids, have)
        k = draw(st.integers(0, min(3, len([b for b in eligible if b not in reps]))))
        sets = list(_unit_sets(reps, k, eligible, rack_of.__getitem__)) if k else [()]
        chosen = list(rng.choice(sets)) if sets else []
        replicas[pid] = [*reps, *chosen]
        fixed[pid] = len(reps)
    return TopicUnits(
        replicas=replicas,
        fixed=fixed,
        eligible=eligible,
        rack=rack_of.__getitem__,
        scope=sorted(set(eligible) | {b for r in replicas.values() for b in r}),
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unit_cases())
def test_balance_units_matches_networkx_max_flow(units):
    start = {pid: list(reps) for pid, reps in units.replicas.items()}
    expected = _nx_lowest_spread(units)
    result = balance_units(units)
    counts = dict.fromkeys(units.scope, 0)
    for reps in units.replicas.values():
        for b in reps:
            counts[b] += 1
    assert result.optimal
    assert spread_of(counts) == result.spread_after == expected
    for pid, reps in units.replicas.items():  # fixed replicas stay, rack rule kept
        n_fixed = units.fixed[pid]
        assert reps[:n_fixed] == start[pid][:n_fixed]
        assert len(set(reps)) == len(reps) == len(start[pid])
        new = tuple(reps[n_fixed:])
        assert all(b in units.eligible for b in new)
        assert any(
            sorted(new) == sorted(s)
            for s in _unit_sets(reps[:n_fixed], len(new), sorted(units.eligible), units.rack)
        )


# --- examples --------------------------------------------------------------------------------


def test_the_issue_example_reaches_spread_0_by_itself():
    """Brokers 6, 8, 13, leaders 8, 13, 6, 8, 13, 6 at RF 1, raised to RF 2: the greedy
    picks leave 5/4/3; the repair evens them to 4/4/4 without another strategy's help."""
    parts = tuple(Partition("t", p, (b,)) for p, b in enumerate((8, 13, 6, 8, 13, 6)))
    snap = ClusterSnapshot(
        brokers=tuple(Broker(b) for b in (6, 8, 13)), topics=(Topic("t", parts),)
    )
    plan = make_plan(snap, [TopicRequest("t", rf=2)])
    assert plan.report["topic_spread_after"]["t"] == 0
    assert "placement_from" not in plan.report
    assert plan.report["broker_replicas_after"] == {6: 4, 8: 4, 13: 4}


def test_racks_can_forbid_spread_1_and_the_note_says_why():
    """Racks a (brokers 0, 1) and b (broker 2): RF 1 -> 2 puts every new replica on the
    other rack, so broker 2 takes one per partition on rack a and the spread stays 2."""
    snap = cluster({"t": [[0], [1], [0], [1]]}, brokers=3, racks={0: "a", 1: "a", 2: "b"})
    plan = make_plan(snap, [TopicRequest("t", rf=2)])
    assert plan.report["broker_replicas_after"] == {0: 2, 1: 2, 2: 4}
    note = next(f for f in plan.findings if f.code == "imbalance")
    assert "racks their partition lacks" in note.message


def test_same_input_same_plan_byte_for_byte():
    rng = random.Random(5)
    ids = list(range(9))
    matrix = [rng.sample(ids, 2) for _ in range(40)]
    snap = cluster({"a": matrix, "b": matrix[:17]}, brokers=ids, racks=3)
    requests = [TopicRequest("a", rf=3, partitions=50), TopicRequest("b", rf=3)]
    docs = {str(plan_document(make_plan(snap, requests), snap)) for _ in range(3)}
    assert len(docs) == 1


def test_leaders_first_can_cost_replica_balance_and_the_note_says_so():
    """The docstring's example: the lowest leader spread needs broker 18, which holds 3 of
    the topic's 9 replicas already, to lead a new partition."""
    racks = {4: "r1", 5: "r1", 8: "r1", 18: "r1", 14: "r2"}
    snap = cluster(
        {"t": [[8, 5, 18], [14, 18, 4], [4, 5, 18]]}, brokers=[4, 5, 8, 14, 18], racks=racks
    )
    plan = make_plan(snap, [TopicRequest("t", partitions=5)])
    after = after_matrix(snap, plan, "t")
    leaders = [reps[0] for reps in after]
    assert sorted(leaders) == [4, 5, 8, 14, 18]  # leader spread 0
    assert plan.report["topic_spread_after"]["t"] == 2
    note = next(f for f in plan.findings if f.code == "imbalance")
    assert "leaders the lowest spread first" in note.message
