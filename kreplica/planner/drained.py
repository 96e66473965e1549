"""Brokers a plan should not fill: the ones drained earlier (remembered per cluster by the
caller, which passes them in) and empty ones nobody asked to fill. Pure: the findings that say
so, and which drained brokers a plan leaves out.

A drained broker is left out of every later plan on its cluster unless the request names it
(`brokers`, add-brokers' ids, replace's new broker): naming it is asking for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Set

from kreplica.model import ClusterSnapshot, Finding, Plan


def drained_to_leave_out(
    snapshot: ClusterSnapshot, drained: Mapping[int, str], named: Set[int] = frozenset()
) -> dict[int, str]:
    """The drained brokers (id -> when they were drained) that are in the cluster and that the
    request does not name."""
    present = set(snapshot.broker_ids())
    return {b: since for b, since in sorted(drained.items()) if b in present and b not in named}


def left_out_finding(left_out: Mapping[int, str]) -> Finding:
    """One line: which drained brokers the plan leaves out, since when, and how to undo it."""
    ids = ",".join(map(str, sorted(left_out)))
    days: dict[str, list[int]] = {}
    for b, when in sorted(left_out.items()):
        days.setdefault(when[:10] or "an unknown day", []).append(b)
    if len(days) == 1:
        since = f"on {next(iter(days))}"
    else:
        since = "; ".join(f"{','.join(map(str, bs))} on {day}" for day, bs in days.items())
    them = "it" if len(left_out) == 1 else "them"
    return Finding(
        "info",
        "drained-left-out",
        f"{broker_words(left_out)} left out: drained {since}; `kreplica brokers undrain "
        f"{ids}` places replicas on {them} again",
    )


def broker_words(ids: Iterable[int]) -> str:
    """'broker 4' or 'brokers 4,5'."""
    listed = sorted(set(ids))
    return ("broker " if len(listed) == 1 else "brokers ") + ",".join(map(str, listed))


def empty_broker_findings(plan: Plan, asked: Set[int] = frozenset()) -> list[Finding]:
    """A warning per broker the plan puts replicas on although it held none before, unless
    the request asked for it (add-brokers, replace): data going to a host that was emptied
    (or never filled) is worth a second look."""
    before = plan.report.get("broker_replicas_before") or {}
    after = plan.report.get("broker_replicas_after") or {}
    filled = sorted(
        int(b) for b, n in after.items() if n > 0 and not before.get(b, 0) and int(b) not in asked
    )
    return [
        Finding(
            "warning",
            "empty-broker-filled",
            f"broker {b} holds no replica now and gets {after.get(b)}: was it drained? "
            f"--exclude-brokers {b} leaves it out; add-brokers fills a new broker on purpose",
        )
        for b in filled
    ]


def with_findings(plan: Plan, findings: list[Finding]) -> Plan:
    """The plan with `findings` first (the caller's context before the planner's own)."""
    if not findings:
        return plan
    return dataclasses.replace(plan, findings=(*findings, *plan.findings))
