"""Markdown for change tickets and runbooks: summary, diff table, and the exact commands."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from kreplica.model import ClusterSnapshot, Finding, Plan
from kreplica.render.disk import disk_markdown
from kreplica.render.text import (
    change_words,
    diff_legend,
    diff_rows,
    finding_text,
    format_bytes,
    optimality_line,
    per_broker,
    ranges,
    replica_words,
    short_racks,
    totals_line,
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _replicas(
    replicas: tuple[int, ...] | None,
    other: tuple[int, ...] | None,
    racks: Mapping[int, str | None],
    side: str,
    leader: int | None = None,
    down: Collection[int] = (),
) -> str:
    if replicas is None:
        return "(new)"
    words = replica_words(replicas, other, racks, side=side, leader=leader, down=down)
    return "`" + " ".join(word for word, _style in words) + "`"


def plan_markdown(
    plan: Plan,
    snapshot: ClusterSnapshot,
    *,
    title: str,
    source: str,
    runbook: Sequence[tuple[str, str]],
    limit: int = 0,
    impact: Mapping[str, Any] | None = None,
) -> str:
    report = plan.report
    racks, legend = short_racks(snapshot.racks())
    down = {b.id for b in snapshot.brokers if not b.alive}
    lines = [
        f"## kreplica: {title}",
        "",
        f"- Cluster: `{plan.cluster_id or 'unknown'}` ({source}), "
        f"snapshot fingerprint `{plan.snapshot_fingerprint}`",
        f"- Strategy: {report.get('strategy', plan.strategy)}",
        f"- Movement: {optimality_line(report)}",
        f"- Totals: {totals_line(report)}",
        *disk_markdown(report, table=False),
        "",
    ]
    if not plan.changes:
        lines += ["Nothing to change: the cluster already has this shape.", ""]
    else:
        lines += [
            f"### Changes ({diff_legend(snapshot, code=True)}"
            + (f"; racks: {legend})" if legend else ")"),
            "",
            "| Topic | Partition | Before | After | Change |",
            "|---|---:|---|---|---|",
        ]
        for row in diff_rows(plan, snapshot, limit):
            if row.kind == "unchanged":
                lines.append(
                    f"| {_cell(row.topic)} | {row.partitions} | ({row.count} unchanged) | | |"
                )
            elif row.kind == "hidden":
                lines.append(f"| … | | {row.count} more changed partitions | | |")
            else:
                words = change_words(row.before, row.after or (), racks, row.leader)
                change = ", ".join(w for w, _ in words)
                before = _replicas(row.before, row.after, racks, "before", row.leader, down)
                after = _replicas(row.after, row.before, racks, "after", down=down)
                lines.append(
                    f"| {_cell(row.topic)} | {row.partitions} | {before} | {after} | {change} |"
                )
        sizes_known = report.get("bytes_to_move") is not None
        lines += [
            "",
            "### Per broker",
            "",
            "| Broker | Rack | Replicas now | peak | after "
            "| Leaders now | preferred now | preferred after | Bytes in | Bytes out |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for b in snapshot.brokers:
            cells = [
                per_broker(report, key, b.id)
                for key in (
                    "broker_replicas_before",
                    "broker_replicas_peak",
                    "broker_replicas_after",
                    "broker_leaders_before",
                    "broker_preferred_leaders_before"
                    if "broker_preferred_leaders_before" in report
                    else "broker_leaders_before",
                    "broker_leaders_after",
                )
            ]
            moved = [
                format_bytes(per_broker(report, key, b.id)) if sizes_known else "?"
                for key in ("broker_bytes_in", "broker_bytes_out")
            ]
            lines.append(
                f"| {b.id} | {b.rack or '-'} | "
                + " | ".join(map(str, cells))
                + f" | {moved[0]} | {moved[1]} |"
            )
        lines.append("")
        lines += disk_markdown(report, table=True)
    if impact is not None:
        from kreplica.render.impact import impact_markdown

        lines += impact_markdown(impact)
    if plan.findings:
        lines += ["### Warnings", ""] + [f"- {_finding(f)}" for f in plan.findings] + [""]
    if runbook:
        lines += ["### Apply, verify, roll back", ""]
        number = 0
        for label, command in runbook:
            if not label and number:  # a further command of the step above, same block
                lines[-2:-2] = [f"   {command}"]
                continue
            number += 1
            lines += [f"{number}. {label}:", "", "   ```sh", f"   {command}", "   ```", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _finding(f: Finding) -> str:
    return f"**{f.level}** {finding_text(f)} ({f.code})"


def findings_markdown(findings: Sequence[Finding], *, title: str) -> str:
    lines = [f"## {title}", ""]
    lines += [f"- {_finding(f)}" for f in findings] or ["No problems found."]
    return "\n".join(lines) + "\n"


def explain_markdown(results: Sequence[Mapping[str, Any]], snapshot: ClusterSnapshot) -> str:
    from kreplica.render.explain import layout_line, rf_words

    lines = [
        "## Topic layouts",
        "",
        "| Topic | Partitions | RF | Layout | Added later | Replica spread | Rack violations |",
        "|---|---:|---|---|---|---:|---|",
    ]
    for r in results:
        layout = r.get("layout") or {}
        how = layout_line(layout, r.get("partitions"))
        added = ranges(list(layout.get("added_partitions") or [])) or "-"
        violations = ranges(list((r.get("racks") or {}).get("violations") or [])) or "none"
        spread = (r.get("balance") or {}).get("spread")
        rf = rf_words(r).removeprefix("RF ")
        lines.append(
            f"| {_cell(str(r.get('topic')))} | {r.get('partitions')} | {_cell(rf)} | "
            f"{_cell(how)} | {added} | {spread} | {violations} |"
        )
    lines.append("")
    lines += [f"- **{r.get('topic')}**: {r.get('summary', '')}" for r in results]
    return "\n".join(lines) + "\n"


__all__ = ["explain_markdown", "findings_markdown", "format_bytes", "plan_markdown"]
