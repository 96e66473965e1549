"""Fleet reports as files: audit and plan summaries (JSON and markdown) and per-broker charts.
Plain Python over collected rows (a few per cluster); matplotlib only for the charts (Agg)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

AUDIT_FORMAT = 1
_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]")


def safe_name(cluster_id: str) -> str:
    """A cluster id as a folder or file name (ids are base64url, but a file stem may not be)."""
    name = _UNSAFE.sub("_", cluster_id)
    return "_" + name if name in ("", ".", "..") else name


def human_bytes(n: int | None) -> str:
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def _md_cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _skipped_md(skipped: Sequence[Mapping[str, Any]]) -> list[str]:
    if not skipped:
        return []
    lines = ["", f"### Skipped ({len(skipped)})", ""]
    lines += [f"- {_md_cell(s['error'])}" for s in skipped]
    return lines


def audit_markdown(doc: Mapping[str, Any], *, limit: int = 20) -> str:
    clusters = doc["clusters"]
    t = doc["totals"]
    lines = [
        "## kreplica fleet audit",
        "",
        f"{t['clusters']} clusters, {t['brokers']} brokers, {t['topics']} topics, "
        f"{t['partitions']} partitions; {t['errors']} errors, {t['warnings']} warnings, "
        f"{t['infos']} notes; {t['skipped']} snapshot(s) skipped",
        "",
        "| Cluster | Brokers | Topics | Partitions | Errors | Partitions in error | Warnings "
        "| Notes | Findings |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in clusters[:limit]:
        codes = ", ".join(f"{k} {v}" for k, v in sorted((c.get("by_code") or {}).items()))
        down = f" ({c['brokers_down']} down)" if c["brokers_down"] else ""
        lines.append(
            f"| {c['cluster_id']} | {c['brokers']}{down} | {c['topics']} | {c['partitions']} "
            f"| {c['errors']} | {c['partitions_in_error']} | {c['warnings']} | {c['infos']} "
            f"| {codes or '-'} |"
        )
    if len(clusters) > limit:
        lines.append(
            f"| … {len(clusters) - limit} more clusters (audit-summary.json) | | | | | | | | |"
        )
    for c in clusters:
        if not c.get("top_findings"):
            continue
        lines += ["", f"### {c['cluster_id']}", ""]
        if c.get("chart"):
            lines += [f"![{c['cluster_id']}]({c['chart']})", ""]
        lines += [
            f"- {f['level']} `{f['code']}`: {_md_cell(f['message'])}" for f in c["top_findings"]
        ]
    lines += _skipped_md(doc["skipped"])
    return "\n".join(lines) + "\n"


def _versus(value: int | None, bound: int | None) -> str:
    """How a total compares with its lower bound: "= lower bound 5", "> lower bound 5 (+2)"."""
    if value is None or bound is None:
        return "(no lower bound)"
    if value == bound:
        return f"= lower bound {bound}"
    sign = ">" if value > bound else "<"
    return f"{sign} lower bound {bound} ({value - bound:+d})"


def plan_markdown(doc: Mapping[str, Any], *, limit: int = 50) -> str:
    rows = doc["clusters"]
    t = doc["totals"]
    lines = [
        "## kreplica fleet plan",
        "",
        f"{t['clusters']} clusters planned ({t['with_changes']} with changes, {t['errors']} "
        f"refused); adds {t['replicas_added']} replicas "
        f"{_versus(t['replicas_added'], t['lower_bound_replicas_added'])}; removes "
        f"{t['replicas_removed']} "
        f"{_versus(t['replicas_removed'], t['lower_bound_replicas_removed'])}; "
        f"{t['existing_replicas_moved']} existing replicas "
        f"moved; {human_bytes(t['bytes_to_move'])} to copy (lower bound "
        f"{human_bytes(t.get('bytes_lower_bound'))}); {t['skipped']} snapshot(s) skipped",
        "",
        "| Cluster | Status | Reassigned | Created | Added (bound) | Removed (bound) | Moved "
        "| Bytes to copy (bound) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows[:limit]:
        if r["status"] != "ok":
            reason = r["error"] or r["status"]
            lines.append(f"| {r['cluster_id']} | {_md_cell(reason)} | | | | | | |")
            continue
        lines.append(
            f"| {r['cluster_id']} | ok | {r['partitions_changed']} | {r['partitions_created']} "
            f"| {r['replicas_added']} ({r['lower_bound_replicas_added']}) "
            f"| {r['replicas_removed']} ({r['lower_bound_replicas_removed']}) "
            f"| {r['existing_replicas_moved']} "
            f"| {human_bytes(r['bytes_to_move'])} ({human_bytes(r['bytes_lower_bound'])}) |"
        )
    if len(rows) > limit:
        lines.append(f"| … {len(rows) - limit} more clusters (plan-summary.json) | | | | | | | |")
    lines += _skipped_md(doc["skipped"])
    return "\n".join(lines) + "\n"


def json_text(doc: Any) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def warm_charts() -> None:
    """Import matplotlib ahead (half a second), in a thread while Spark works: the driver's
    Python has nothing else to do then."""
    threading.Thread(target=_pyplot, name="kreplica-warm-charts", daemon=True).start()


def broker_chart(cluster_id: str, brokers: Sequence[Mapping[str, Any]]) -> bytes:
    """Replicas and leaders per broker of one cluster, as PNG bytes (matplotlib, Agg)."""
    import io

    plt = _pyplot()

    rows = sorted(brokers, key=lambda b: b["broker"])
    labels = [
        f"{b['broker']}{'' if b['alive'] else ' (down)'}{' (drain)' if b['draining'] else ''}"
        + (f"\n{b['rack']}" if b.get("rack") else "")
        for b in rows
    ]
    xs = list(range(len(rows)))
    width = 0.4
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(rows) + 2), 4.0), dpi=100)
    ax.bar([x - width / 2 for x in xs], [b["replicas"] for b in rows], width, label="replicas")
    ax.bar([x + width / 2 for x in xs], [b["leaders"] for b in rows], width, label="leaders")
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_xlabel("broker")
    ax.set_ylabel("count")
    ax.set_title(f"{cluster_id}: replicas and leaders per broker")
    ax.legend()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()
