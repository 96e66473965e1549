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


def _placement(layout: Mapping[str, Any], *, detail: bool = True) -> str:
    """The placement a layout doc names (its closest), with its parameters when ``detail``."""
    if layout.get("closest_placement") == "kraft-striped":
        if not detail:
            return "KRaft striped"
        return f"KRaft striped, reshuffled every {layout.get('striped_cycle')} partitions"
    if not detail:
        return "ZooKeeper mode"
    return (
        "ZooKeeper mode"
        + (", rack-aware" if layout.get("rack_aware") else "")
        + f", start index {layout.get('start_index')}, replica shift {layout.get('replica_shift')}"
    )


def _other_full_fit(layout: Mapping[str, Any], partitions: Any) -> str | None:
    """The other placement, when it too explains every partition."""
    fits = layout.get("placement_fits") or {}
    closest = layout.get("closest_placement")
    for name, words in (("zookeeper", "ZooKeeper mode"), ("kraft-striped", "KRaft striped")):
        if name != closest and partitions and fits.get(name) == partitions:
            return words
    return None


def layout_line(layout: Mapping[str, Any], partitions: Any) -> str:
    """One line on how the topic is placed (shared by the text and markdown renderers)."""
    odd = list(layout.get("nonconforming_partitions") or [])
    if layout.get("placement") is not None:
        how = f"Kafka default placement ({_placement(layout)})"
        if odd:
            how += f" except {plural(len(odd), 'partition')}"
        else:
            other = _other_full_fit(layout, partitions)
            if other:
                how += f"; also fits {other}"
        return how
    how = "not Kafka's default placement (hand-assigned or rebalanced)"
    if layout.get("closest_placement") is not None:
        how += (
            f"; only {layout.get('fitting_partitions')} of {partitions} partitions fit "
            f"{_placement(layout, detail=False)}"
        )
    return how


def rf_words(r: Mapping[str, Any]) -> str:
    """RF as Kafka reports it, or each RF with its partition count when they differ."""
    rfs = r.get("replication_factors") or {}
    if not r.get("mixed_rf") or len(rfs) < 2:
        return f"RF {r.get('replication_factor')}"
    return "RF mixed (" + ", ".join(f"{rf} on {n}" for rf, n in rfs.items()) + ")"


def explain_view(results: Sequence[Mapping[str, Any]], snapshot: ClusterSnapshot) -> Group:
    parts: list[RenderableType] = []
    for i, r in enumerate(results):
        if i:
            parts.append(Text(""))
        layout = r.get("layout") or {}
        balance = r.get("balance") or {}
        racks = r.get("racks") or {}
        head = Text(str(r.get("topic")), style="title")
        head.append(f"  {r.get('partitions')} partitions · ", style="muted")
        head.append(rf_words(r), style="warning" if r.get("mixed_rf") else "muted")
        parts.append(head)
        parts.append(Text(f"  layout: {layout_line(layout, r.get('partitions'))}"))
        odd = list(layout.get("nonconforming_partitions") or [])
        added = list(layout.get("added_partitions") or [])
        if layout.get("placement") is not None and odd:
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
                f"; {plural(len(violations), 'partition')} "
                f"{'repeats' if len(violations) == 1 else 'repeat'} a rack: {ranges(violations)}",
                style="warning",
            )
        parts.append(rack_line)
        if r.get("summary"):
            parts.append(Text(f"  {r['summary']}", style="muted"))
    return Group(*parts)
