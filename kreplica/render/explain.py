"""`kreplica explain`: one block per topic describing how its replicas are laid out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from kreplica.model import ClusterSnapshot
from kreplica.render.text import plural, ranges


def _counts(values: Any) -> str:
    if not isinstance(values, Mapping) or not values:
        return "-"
    return "  ".join(f"{k}:{values[k]}" for k in sorted(values, key=lambda k: int(k)))


def explain_view(results: Sequence[Mapping[str, Any]], snapshot: ClusterSnapshot) -> Group:
    parts: list[RenderableType] = []
    for i, r in enumerate(results):
        if i:
            parts.append(Text(""))
        layout = r.get("layout") or {}
        balance = r.get("balance") or {}
        racks = r.get("racks") or {}
        head = Text(str(r.get("topic")), style="title")
        head.append(
            f"  {r.get('partitions')} partitions · RF {r.get('replication_factor')}", style="muted"
        )
        parts.append(head)
        if layout.get("kafka_default"):
            how = "Kafka default placement" + (" (rack-aware)" if layout.get("rack_aware") else "")
            how += f", start index {layout.get('start_index')}"
            how += f", replica shift {layout.get('replica_shift')}"
        else:
            how = "not Kafka's default placement (hand-assigned or rebalanced)"
        parts.append(Text(f"  layout: {how}"))
        odd = list(layout.get("nonconforming_partitions") or [])
        added = list(layout.get("added_partitions") or [])
        if layout.get("kafka_default") and odd:
            parts.append(Text(f"  partitions off the pattern: {ranges(odd)}", style="warning"))
        if added:
            parts.append(Text(f"  added later with add-partitions: {ranges(added)}"))
        parts.append(
            Text(
                f"  replicas per broker: {_counts(balance.get('replicas_per_broker'))}"
                f"  (spread {balance.get('spread')})"
            )
        )
        parts.append(Text(f"  leaders per broker:  {_counts(balance.get('leaders_per_broker'))}"))
        violations = list(racks.get("violations") or [])
        rack_line = Text(f"  racks: at least {racks.get('racks_per_partition_min')} per partition")
        if violations:
            rack_line.append(
                f"; {plural(len(violations), 'partition')} repeat a rack: {ranges(violations)}",
                style="warning",
            )
        parts.append(rack_line)
        if r.get("summary"):
            parts.append(Text(f"  {r['summary']}", style="muted"))
    return Group(*parts)
