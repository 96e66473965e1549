"""The planner: the smallest safe change for a requested topic shape (pure, standard library).

    make_plan(snapshot, [TopicRequest(...)], PlanOptions(...)) -> Plan
    explain_topic(snapshot, topic) -> dict
    check_reassignment(snapshot, parsed_json) -> [Finding]

Strategies (`PlanOptions.strategy`): "balanced" (default, least-loaded and rack-diverse),
"kafka" (continue the topic's Kafka layout), "append" (extend along the id-sorted ring).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kreplica.planner.options import STRATEGIES, PlanOptions, TopicRequest
from kreplica.planner.plan import make_plan

if TYPE_CHECKING:
    from kreplica.planner.check import check_reassignment
    from kreplica.planner.explain import explain_topic


def __getattr__(name: str) -> Any:
    """explain_topic and check_reassignment imported when first asked for (explain brings
    Kafka's layouts: a plan command never needs them)."""
    if name == "explain_topic":
        from kreplica.planner.explain import explain_topic

        return explain_topic
    if name == "check_reassignment":
        from kreplica.planner.check import check_reassignment

        return check_reassignment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "STRATEGIES",
    "PlanOptions",
    "TopicRequest",
    "check_reassignment",
    "explain_topic",
    "make_plan",
]
