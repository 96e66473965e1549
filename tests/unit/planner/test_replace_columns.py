"""replace on the column run against the object run (planner/brokers/replace.py): on random
clusters (dead brokers, racks, sizes unknown now and then) the same plan, report, findings
and refusals, and the column run is the one that planned."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from test_column_run import SETTINGS, cluster, columnar

from kreplica.errors import KreplicaError
from kreplica.model import ClusterSnapshot
from kreplica.planner.brokers import replace_plan
from kreplica.planner.options import PlanOptions


def _outcome(snap: ClusterSnapshot, old: int, new: int) -> object:
    try:
        plan = replace_plan(snap, old, new, options=PlanOptions())
    except KreplicaError as exc:
        return (type(exc).__name__, exc.message)
    report = {k: v for k, v in plan.report.items() if k != "engine"}
    return plan.changes, report, plan.findings, plan.report["engine"]["name"]


@SETTINGS
@example(seed=1, n=4, n_racks=2, pair=(0, 1))
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(2, 9),
    n_racks=st.integers(0, 4),
    pair=st.tuples(st.integers(0, 8), st.integers(0, 8)),
)
def test_replace_on_columns_is_the_object_runs(seed: int, n: int, n_racks: int, pair) -> None:
    old, new = pair[0] % n, pair[1] % n
    snap = cluster(seed, n=n, n_racks=n_racks)
    objects, columns = _outcome(snap, old, new), _outcome(columnar(snap), old, new)
    if isinstance(objects, tuple) and len(objects) == 2:  # refused: the same words
        assert columns == objects
        return
    assert isinstance(columns, tuple) and columns[-1] == "columns", columns
    assert objects[-1] == "objects"  # type: ignore[index]
    assert list(columns[0]) == list(objects[0])  # type: ignore[index]
    assert columns[1:3] == objects[1:3]  # type: ignore[index]


def test_a_clash_and_a_dead_replica_are_refused_in_the_object_runs_words() -> None:
    snap = cluster(7, n=5, n_racks=2)
    col = columnar(snap)
    topic = snap.topics[0]
    part = topic.partitions[0]
    if len(part.replicas) < 2:
        pytest.skip("a partition of one replica cannot clash")
    old, new = part.replicas[0], part.replicas[1]
    with pytest.raises(KreplicaError) as on_objects:
        replace_plan(snap, old, new)
    with pytest.raises(KreplicaError) as on_columns:
        replace_plan(col, old, new)
    assert on_columns.value.message == on_objects.value.message
    assert f"broker {new} already holds a replica of" in on_columns.value.message
