"""Client impact as text: keys that change partition, consumer groups before and after."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text


def _pct(share: float) -> str:
    return f"{share * 100:.1f}%"


def key_lines(impact: Mapping[str, Any]) -> list[str]:
    lines = []
    for row in impact.get("topics") or []:
        keys = row["keys"]
        line = (
            f"{row['topic']}: {keys['old_partitions']} → {keys['new_partitions']} partitions; "
            f"keyed records: {_pct(keys['moving_share'])} of keys ({keys['moving_fraction']}) "
            "map to another partition (Java default partitioner / librdkafka murmur2); "
            "per-key order breaks across the switch"
        )
        lines.append(line)
        measured = row.get("measured")
        if measured:
            examples = ", ".join(
                f"{e['key']} {e['from']}→{e['to']}" for e in measured["examples"][:3]
            )
            lines.append(
                f"  measured on {measured['keys']} keys: {measured['moving']} move "
                f"({_pct(measured['moving_share'])})" + (f", e.g. {examples}" if examples else "")
            )
    return lines


def group_lines(entry: Mapping[str, Any]) -> list[str]:
    head = (
        f"group {entry['group']} ({entry.get('assignor') or 'no assignor'}, "
        f"{entry['members']} members{', ' + entry['state'] if entry.get('state') else ''})"
    )
    if "after" not in entry:
        return [f"{head}: {entry.get('note', '')}"]
    moved = entry["changed_owner"]
    above = entry["above_share"]
    text = (
        f"{head}: {len(moved)} existing partition(s) change owner, "
        f"{len(entry['newly_assigned'])} partition(s) owned by nobody before"
    )
    if entry.get("rebalances", 1) > 1:
        text += f", settles after {entry['rebalances']} rebalances"
    text += "; " + (
        "above their share of "
        + str(entry["fair_share"])
        + ": "
        + ", ".join(f"{m} ({n})" for m, n in sorted(above.items()))
        if above
        else "nobody above their share"
    )
    return [text]


def assignment_table(entry: Mapping[str, Any]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("Member", no_wrap=True)
    table.add_column("Now")
    has_after = "after" in entry
    if has_after:
        table.add_column("After")
    moved = set(entry.get("changed_owner") or ())
    new = set(entry.get("newly_assigned") or ())
    members = sorted(set(entry["now"]) | set(entry.get("after") or {}))
    for member in members:
        now = Text(" ".join(entry["now"].get(member, [])) or "-")
        cells: list[RenderableType] = [Text(member), now]
        if has_after:
            after = Text()
            for i, tp in enumerate(entry["after"].get(member, [])):
                if i:
                    after.append(" ")
                style = "added" if tp in new else "leader.changed" if tp in moved else ""
                after.append(tp + ("+" if tp in new else "*" if tp in moved else ""), style=style)
            cells.append(after if after else Text("-"))
        table.add_row(*cells)
    return table


def impact_view(impact: Mapping[str, Any], *, tables: bool = False) -> Group:
    """The impact section of an add-partitions diff (and of `kreplica consumers`)."""
    parts: list[RenderableType] = [Text("Impact on producers and consumers", style="title")]
    parts += [Text(line) for line in key_lines(impact)]
    groups: Sequence[Mapping[str, Any]] | None = impact.get("groups")
    if groups is None:
        if impact.get("groups_note"):
            parts.append(Text(str(impact["groups_note"]), style="muted"))
    elif not groups:
        parts.append(Text("no consumer group reads these topics", style="muted"))
    for entry in groups or []:
        parts += [Text(line) for line in group_lines(entry)]
        if tables:
            parts.append(assignment_table(entry))
    if tables and groups:
        parts.append(Text("+ owned by nobody before, * changes owner", style="muted"))
    return Group(*parts)


def impact_markdown(impact: Mapping[str, Any]) -> list[str]:
    lines = ["### Impact on producers and consumers", ""]
    lines += [f"- {line.strip()}" for line in key_lines(impact)]
    groups = impact.get("groups")
    if groups is None:
        if impact.get("groups_note"):
            lines.append(f"- {impact['groups_note']}")
    elif not groups:
        lines.append("- no consumer group reads these topics")
    for entry in groups or []:
        lines += [f"- {line}" for line in group_lines(entry)]
    return [*lines, ""]
