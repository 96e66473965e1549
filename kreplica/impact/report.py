"""What a partition-count change does to clients, as data: the keys that change partition and
each consumer group's assignment now and after the group rebalances."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kreplica.impact.assignors import (
    ASSIGNORS,
    Assignment,
    AssignorError,
    GroupSpec,
    assign,
    assignment_json,
    compare,
)
from kreplica.impact.partitioner import MeasuredRemap, remap_share

# cooperative-sticky gives partitions that change owner in a second rebalance; a few rounds
# reach the settled assignment
MAX_ROUNDS = 4


def settle(assignor: str, group: GroupSpec) -> tuple[Assignment, int]:
    """The assignment once the group is stable, and how many rebalances it takes."""
    result = assign(assignor, group)
    rounds = 1
    while assignor == "cooperative-sticky" and rounds < MAX_ROUNDS:
        following = assign(assignor, group.after(result))
        if {m: sorted(v) for m, v in following.items()} == {
            m: sorted(v) for m, v in result.items()
        }:
            break
        result, rounds = following, rounds + 1
    return result, rounds


def group_impact(
    group_id: str,
    assignor: str | None,
    group: GroupSpec,
    new_counts: Mapping[str, int],
    *,
    state: str = "",
) -> dict[str, Any]:
    """Now (what members own) against after (the assignor's answer once `new_counts` apply)."""
    now: Assignment = {m.id: list(m.owned or ()) for m in group.members}
    entry: dict[str, Any] = {
        "group": group_id,
        "state": state,
        "assignor": assignor,
        "members": len(group.members),
        "now": assignment_json(now),
    }
    if assignor not in ASSIGNORS:
        entry["note"] = (
            f"assignor {assignor or '(none)'} is not one kreplica models "
            f"({', '.join(ASSIGNORS)}); only its current assignment is shown"
        )
        return entry
    assert assignor is not None
    try:
        after, rounds = settle(assignor, group.with_partitions(new_counts))
    except AssignorError as exc:
        entry["note"] = str(exc)
        return entry
    entry["after"] = assignment_json(after)
    entry["rebalances"] = rounds
    entry.update(compare(now, after))
    return entry


def plan_impact(
    counts: Mapping[str, tuple[int, int]],
    *,
    groups: Sequence[dict[str, Any]] | None = None,
    groups_note: str | None = None,
    measured: Mapping[str, MeasuredRemap] | None = None,
) -> dict[str, Any]:
    """`counts`: topic -> (partitions now, partitions after). `groups`: group_impact entries
    (None: not known, with `groups_note` saying why)."""
    topics = []
    for topic, (old, new) in sorted(counts.items()):
        row: dict[str, Any] = {"topic": topic, "keys": remap_share(old, new).as_dict()}
        if measured and topic in measured:
            row["measured"] = measured[topic].as_dict()
        topics.append(row)
    return {"topics": topics, "groups": groups, "groups_note": groups_note}
