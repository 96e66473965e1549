"""The dry-run diff as rich renderables: partition table, per-broker load, footer, warnings.

Colour is a second channel only: every mark also exists as text (`*` leader, `+` added,
`-` removed, `LEADER a→b`), so the diff reads the same in a no-colour log or pager.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from kreplica.model import ClusterSnapshot, Finding, Plan
from kreplica.render.disk import disk_view
from kreplica.render.text import (
    change_words,
    diff_legend,
    diff_rows,
    finding_text,
    format_bytes,
    optimality_line,
    per_broker,
    plural,
    replica_words,
    short_racks,
    totals_line,
)

LEVEL_STYLE = {"error": "error", "warning": "warning", "info": "info"}


def replicas_text(
    replicas: tuple[int, ...] | None,
    other: tuple[int, ...] | None,
    racks: Mapping[int, str | None],
    *,
    side: str,
    leader: int | None = None,
    down: Collection[int] = (),
) -> Text:
    """One replica list, leader first and starred. On the 'before' side brokers that go away are
    marked `-` (red); on the 'after' side brokers that arrive are marked `+` (green)."""
    if replicas is None:
        return Text("(new)", style="muted")
    text = Text()
    words = replica_words(replicas, other, racks, side=side, leader=leader, down=down)
    for i, (word, style) in enumerate(words):
        if i:
            text.append(" ")
        text.append(word, style=style)
    return text


def diff_table(plan: Plan, snapshot: ClusterSnapshot, *, limit: int = 0) -> Table:
    racks, _legend = short_racks(snapshot.racks())
    down = {b.id for b in snapshot.brokers if not b.alive}
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, caption_justify="left")
    table.add_column("Topic", no_wrap=True)
    table.add_column("Part", justify="right", no_wrap=True)
    table.add_column("Before")
    table.add_column("After")
    table.add_column("Change")
    last_topic = None
    for row in diff_rows(plan, snapshot, limit):
        if last_topic is not None and row.topic != last_topic and row.kind != "hidden":
            table.add_section()  # a rule between topics
        topic = row.topic if row.topic != last_topic else ""
        last_topic = row.topic
        if row.kind == "unchanged":
            unchanged = f"({plural(row.count, 'partition')} unchanged)"
            table.add_row(Text(topic), row.partitions, Text(unchanged, "muted"))
        elif row.kind == "hidden":
            table.caption = f"… {plural(row.count, 'more changed partition')} (--limit 0 shows all)"
        else:
            change = Text()
            words = change_words(row.before, row.after or (), racks, row.leader)
            for i, (word, style) in enumerate(words):
                change.append(("  " if i else "") + word, style=style)
            table.add_row(
                Text(topic),
                row.partitions,
                replicas_text(
                    row.before, row.after, racks, side="before", leader=row.leader, down=down
                ),
                replicas_text(row.after, row.before, racks, side="after", down=down),
                change,
            )
    return table


def broker_table(plan: Plan, snapshot: ClusterSnapshot) -> Table:
    """Per broker: replicas now / peak during the move / after, leaders now (the actual ones)
    and preferred after the move (first replicas, which Kafka elects; the change is against the
    preferred leaders now), bytes in / out.
    Two-line headers and short rack names keep it within 80 columns."""
    report = plan.report
    sizes_known = report.get("bytes_to_move") is not None
    racks, _legend = short_racks(snapshot.racks())
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    for header in ("Broker", "Rack", "Replicas\nnow", "\npeak", "\nafter"):
        table.add_column(header, justify="left" if header == "Rack" else "right", no_wrap=True)
    for header in ("Leaders\nnow", "\npreferred", "Bytes\nin", "\nout"):
        table.add_column(header, justify="right", no_wrap=True)
    # reports from before kreplica counted preferred leaders apart: they have no such key
    preferred_key = "broker_preferred_leaders_before"
    if preferred_key not in report:
        preferred_key = "broker_leaders_before"
    for broker in snapshot.brokers:
        now = per_broker(report, "broker_replicas_before", broker.id)
        peak = per_broker(report, "broker_replicas_peak", broker.id)
        after = per_broker(report, "broker_replicas_after", broker.id)
        lead_now = per_broker(report, "broker_leaders_before", broker.id)
        lead_after = per_broker(report, "broker_leaders_after", broker.id)
        preferred = per_broker(report, preferred_key, broker.id)
        bytes_in = per_broker(report, "broker_bytes_in", broker.id)
        bytes_out = per_broker(report, "broker_bytes_out", broker.id)
        table.add_row(
            str(broker.id) + ("" if broker.alive else " (down)"),
            Text(racks.get(broker.id) or "-"),
            str(now),
            str(peak),
            _delta(after, now),
            str(lead_now),
            _delta(lead_after, preferred),
            format_bytes(bytes_in) if sizes_known else "?",
            format_bytes(bytes_out) if sizes_known else "?",
        )
    # the spread (max - min) over the live brokers that stay, replicas and preferred leaders
    # before and after: what a drain or rebalance evens out. The brokers are the footer's
    # `replica spread`'s (kreplica.planner.report): eligible or holding replicas; an excluded
    # empty broker's 0 says nothing about the plan
    drained: Any = report.get("drained_brokers") or ()
    gone = {int(b) for b in drained}
    eligible = {int(b) for b in report.get("eligible_brokers") or ()}

    def counts(b: int) -> bool:
        if not eligible or b in eligible:  # a report without the key: every broker
            return True
        return bool(
            per_broker(report, "broker_replicas_before", b)
            or per_broker(report, "broker_replicas_after", b)
        )

    stay = [b.id for b in snapshot.brokers if b.alive and b.id not in gone and counts(b.id)]
    if stay:

        def spread_of(key: str) -> int:
            values = [per_broker(report, key, b) for b in stay]
            return max(values) - min(values)

        table.add_row(
            "spread",
            "",
            str(spread_of("broker_replicas_before")),
            "",
            str(spread_of("broker_replicas_after")),
            str(spread_of(preferred_key)),
            str(spread_of("broker_leaders_after")),
            "",
            "",
            end_section=False,
        )
    return table


def _delta(value: int, before: int) -> Text:
    if value == before:
        return Text(str(value))
    style = "added" if value > before else "removed"
    return Text(f"{value} ({value - before:+d})", style=style)


def findings_view(findings: Iterable[Finding]) -> Text:
    text = Text()
    for finding in findings:
        if text:
            text.append("\n")
        style = LEVEL_STYLE.get(finding.level, "")
        text.append(f"{finding.level}: {finding_text(finding)}", style=style)
    return text


def plan_view(
    plan: Plan,
    snapshot: ClusterSnapshot,
    *,
    title: str,
    source: str,
    limit: int = 0,
    impact: Mapping[str, object] | None = None,
) -> Group:
    """The whole dry-run screen: header, partition diff, broker table, footer, warnings."""
    report = plan.report
    parts: list[RenderableType] = [
        Text(title, style="title"),
        Text(
            f"cluster {plan.cluster_id or '(unknown id)'} · {source} · "
            f"strategy {report.get('strategy', plan.strategy)}",
            style="muted",
        ),
    ]
    if not plan.changes:
        parts.append(Text("\nNothing to change: the cluster already has this shape."))
    else:
        parts.append(Text(diff_legend(snapshot), style="muted"))
        rack_legend = short_racks(snapshot.racks())[1]
        if rack_legend:
            parts.append(Text(f"racks: {rack_legend}", style="muted"))
        parts.append(Text(""))
        parts += [diff_table(plan, snapshot, limit=limit), Text("")]
        parts += [broker_table(plan, snapshot), Text("")]
        parts.append(Text(optimality_line(report)))
        parts.append(Text(totals_line(report), style="muted"))
        parts += disk_view(report)
        engine = report.get("engine")
        if isinstance(engine, Mapping):
            parts.append(Text(f"engine: {engine.get('name')} ({engine.get('why')})", style="muted"))
        fallbacks = report.get("fallbacks") or []
        if isinstance(fallbacks, list) and fallbacks:
            used = f"{plural(len(fallbacks), 'partition')} used a fallback placement"
            parts.append(Text(used, "warning"))
    if impact is not None:  # keys and consumer groups of an add-partitions plan
        from kreplica.render.impact import impact_view

        parts += [Text(""), impact_view(impact)]
    if plan.findings:
        parts += [Text(""), findings_view(plan.findings)]
    return Group(*parts)
