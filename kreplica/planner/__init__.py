"""The planner: the smallest safe change for a requested topic shape (pure, standard library).

    make_plan(snapshot, [TopicRequest(...)], PlanOptions(...)) -> Plan
    explain_topic(snapshot, topic) -> dict
    check_reassignment(snapshot, parsed_json) -> [Finding]

Strategies (`PlanOptions.strategy`): "balanced" (default, least-loaded and rack-diverse),
"kafka" (continue the topic's Kafka layout), "append" (extend along the id-sorted ring).
"""

from __future__ import annotations

from kreplica.planner.check import check_reassignment
from kreplica.planner.explain import explain_topic
from kreplica.planner.options import STRATEGIES, PlanOptions, TopicRequest
from kreplica.planner.plan import make_plan

__all__ = [
    "STRATEGIES",
    "PlanOptions",
    "TopicRequest",
    "check_reassignment",
    "explain_topic",
    "make_plan",
]
