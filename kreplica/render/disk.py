"""The disk part of a plan's diff (issue 17): whether the disk guard ran, and per broker and
log dir the bytes usable now, arriving and free after, flagged when under the headroom.

Reads only `plan.report["disk"]` (planner/disk.py's disk_report); plans without it (made
before kreplica checked disks) show nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from kreplica.render.text import format_bytes

UNDER = "UNDER HEADROOM"


def disk_lines(report: Mapping[str, object]) -> list[str]:
    """One line saying whether disks were checked (and why not), plus the tiered-storage note."""
    disk = report.get("disk")
    if not isinstance(disk, Mapping):
        return []
    lines = []
    if not disk.get("checked"):
        lines.append(f"disk: unchecked ({disk.get('unchecked') or 'no disk sizes'})")
    else:
        line = (
            f"disk: checked, each log dir keeps {disk.get('headroom')} free; "
            f"log dirs: {disk.get('log_dirs')}"
        )
        unchecked = disk.get("unchecked_brokers")
        if isinstance(unchecked, Mapping) and unchecked:
            ids = ", ".join(str(b) for b in unchecked)
            line += f"; unchecked on broker(s) {ids} (no disk sizes)"
        lines.append(line)
    remote = disk.get("remote_storage_topics")
    if isinstance(remote, list) and remote:
        lines.append(
            f"tiered storage: {', '.join(map(str, remote))} (remote.storage.enable=true): bytes "
            "moved are the local log only; remote segments are not copied"
        )
    return lines


def _rows(disk: Mapping[str, Any]) -> list[tuple[str, str, str, str, str, bool]]:
    rows: list[tuple[str, str, str, str, str, bool]] = []
    brokers = disk.get("brokers")
    if not isinstance(brokers, Mapping):
        return rows
    named = disk.get("log_dirs") == "balanced"
    for broker, info in brokers.items():
        dirs = info.get("dirs") or []
        flagged = info.get("under_headroom") or any(d.get("under_headroom") for d in dirs)
        if not info.get("incoming_bytes") and not flagged:
            continue  # nothing arrives and nothing is short: not worth a row
        rows.append(
            (
                str(broker),
                "(all dirs)" if len(dirs) > 1 else str(dirs[0]["path"]) if dirs else "-",
                format_bytes(info["usable_bytes"]),
                format_bytes(info["incoming_bytes"]),
                format_bytes(info["free_after_bytes"]),
                bool(info.get("under_headroom")),
            )
        )
        if len(dirs) > 1:
            for d in dirs:
                incoming = d.get("incoming_bytes")
                rows.append(
                    (
                        "",
                        str(d["path"]),
                        format_bytes(d["usable_bytes"]),
                        format_bytes(incoming) if named and incoming is not None else "(any)",
                        format_bytes(d["free_after_bytes"]),
                        bool(d.get("under_headroom")),
                    )
                )
    return rows


def disk_table(report: Mapping[str, object]) -> Table | None:
    """Per broker receiving bytes (and per dir): usable now, incoming, free after. With
    `--log-dirs any` the broker picks each replica's dir, so a dir's incoming is "(any)"."""
    disk = report.get("disk")
    if not isinstance(disk, Mapping) or not disk.get("checked"):
        return None
    rows = _rows(disk)
    if not rows:
        return None
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    table.add_column("Broker", justify="right", no_wrap=True)
    table.add_column("Log dir", no_wrap=True)
    for header in ("Usable\nnow", "\nincoming", "Free\nafter"):
        table.add_column(header, justify="right", no_wrap=True)
    table.add_column("", no_wrap=True)
    for broker, path, usable, incoming, free, under in rows:
        table.add_row(
            broker,
            path,
            usable,
            incoming,
            free,
            Text(UNDER, style="warning") if under else Text(""),
        )
    return table


def disk_view(report: Mapping[str, object]) -> list[RenderableType]:
    """The disk lines, then the per-dir table when something arrives or is short."""
    parts: list[RenderableType] = []
    for line in disk_lines(report):
        unchecked = line.startswith("disk: unchecked")
        parts.append(Text(line, style="warning" if unchecked else "muted"))
    table = disk_table(report)
    if table is not None:
        parts += [Text(""), table]
    return parts


def disk_markdown(report: Mapping[str, object], *, table: bool) -> list[str]:
    """The same as Markdown: the disk lines as list items (table=False), or the per-dir
    table with its heading when there are rows (table=True)."""
    if not table:
        return [f"- {line}" for line in disk_lines(report)]
    out: list[str] = []
    disk = report.get("disk")
    if isinstance(disk, Mapping) and disk.get("checked"):
        rows = _rows(disk)
        if rows:
            out += [
                "### Disks",
                "",
                "| Broker | Log dir | Usable now | Incoming | Free after | |",
                "|---:|---|---:|---:|---:|---|",
            ]
            out += [
                f"| {b} | `{p}` | {u} | {i} | {f} | {UNDER if under else ''} |"
                for b, p, u, i, f, under in rows
            ]
            out.append("")
    return out
