"""An RF request on a partition that is being reassigned: while a move runs, Kafka lists the
target replicas plus the ones being removed, so the replica list's length is not the RF the
partition will have. Found on the degraded sandbox (tests/integration/test_degraded_plans.py):
`expand --rf 5` with an RF-4 partition mid-move ([5,3,4,1] -> [5,3,4,2], listed as
[5,3,4,2,1]) exited 0 and left that partition out of the plan, at RF 4."""

from __future__ import annotations

import pytest

from kreplica.errors import ExitCode, ReassignmentInProgress
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from kreplica.planner import PlanOptions, TopicRequest, make_plan


def _snapshot() -> ClusterSnapshot:
    moving = Partition(
        "events", 0, (1, 2, 4, 3), leader=1, adding_replicas=(4,), removing_replicas=(3,)
    )  # [1, 2, 3] -> [1, 2, 4]: RF 3 before and after
    still = Partition("events", 1, (2, 3, 4), leader=2)
    return ClusterSnapshot(
        brokers=tuple(Broker(b, rack="abcab"[b - 1]) for b in range(1, 6)),
        topics=(Topic("events", (moving, still), {"min.insync.replicas": "1"}),),
        cluster_id="in-flight",
    )


def test_an_rf_request_is_refused_on_a_move_whose_listed_replicas_match_the_rf() -> None:
    with pytest.raises(ReassignmentInProgress) as err:
        make_plan(_snapshot(), [TopicRequest("events", rf=4)])
    assert err.value.exit_code == ExitCode.IN_PROGRESS
    assert "events: 0" in str(err.value)


def test_skip_in_flight_leaves_it_out_and_says_so() -> None:
    plan = make_plan(_snapshot(), [TopicRequest("events", rf=4)], PlanOptions(skip_in_flight=True))
    assert [c.partition for c in plan.changes] == [1]
    assert any(f.code == "skipped-in-flight" and "events-0" in f.message for f in plan.findings)
