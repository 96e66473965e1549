"""Request checks the object planner (plan.py) and the array planner (arrays.py) share:
which brokers are eligible, and what min.insync.replicas says about the RF asked for."""

from __future__ import annotations

from collections.abc import Sequence

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.model import ClusterSnapshot, Finding, Topic
from kreplica.planner.options import PlanOptions, TopicRequest


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(map(str, ids))


def eligible_brokers(
    snapshot: ClusterSnapshot, options: PlanOptions
) -> tuple[list[int], dict[int, str]]:
    """The brokers new replicas may go to, and why each other known broker is not eligible."""
    known = set(snapshot.broker_ids())
    for flag, ids in (
        ("`brokers`", options.brokers),
        ("`exclude_brokers`", options.exclude_brokers),
    ):
        unknown = sorted(set(ids or ()) - known)
        if unknown:
            raise UsageError(
                f"{flag}: broker{'s' if len(unknown) > 1 else ''} {_ids(unknown)} "
                f"{'are' if len(unknown) > 1 else 'is'} not in this cluster "
                f"(brokers: {_ids(sorted(known))}); fix the list"
            )
    why_not: dict[int, str] = {}
    eligible: list[int] = []
    for broker in snapshot.brokers:
        if options.brokers is not None and broker.id not in options.brokers:
            why_not[broker.id] = "not in --brokers"
        elif broker.id in options.exclude_brokers:
            why_not[broker.id] = "excluded"
        elif not broker.alive:
            why_not[broker.id] = "not alive"
        else:
            eligible.append(broker.id)
    return sorted(eligible), why_not


def _min_isr_findings(
    topic: Topic, req: TopicRequest, options: PlanOptions, lowering: bool | None = None
) -> list[Finding]:
    """RF at or below the effective min.insync.replicas (topic override, cluster or broker
    default, else Kafka's 1): lowering there is refused unless forced. The text names the
    value used and where it comes from. `lowering`: whether some partition has more replicas
    than asked (None: read from topic.partitions)."""
    if req.rf is None:
        return []
    min_isr = topic.min_insync_replicas
    if lowering is None:
        lowering = any(len(p.replicas) > req.rf for p in topic.partitions)
    if req.rf > min_isr:
        if lowering and topic.min_insync_replicas_assumed:
            return [
                Finding(
                    "warning",
                    "min-isr-assumed",
                    f"topic {topic.name!r}: lowering RF to {req.rf} was checked against "
                    f"{topic.min_insync_replicas_text()}, which is assumed, not read; if the "
                    f"brokers set a higher value, RF {req.rf} may be at or below it (the "
                    "AdminClient reports the value in force)",
                    topic=topic.name,
                )
            ]
        return []
    text = (
        f"topic {topic.name!r}: RF {req.rf} <= {topic.min_insync_replicas_text()}, so "
        "producers with acks=all fail as soon as a replica is unavailable"
    )
    if lowering and not options.force:
        lower_first = "lower min.insync.replicas first, " if min_isr > 1 else ""
        raise PlanInfeasible(
            f"{text}; {lower_first}ask for RF {min_isr + 1} or more, or pass `force`"
        )
    return [Finding("warning", "rf-below-min-isr", text, topic=topic.name)]
