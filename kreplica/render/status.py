"""`kreplica status`: the per-partition table (or markdown) and the summary line. Rows are
kreplica.executor.status.PartitionStatus (read by attribute: render sits below the executor)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from kreplica.render.markdown import _cell
from kreplica.render.text import format_bytes as fmt_bytes
from kreplica.render.text import format_seconds as fmt_seconds

STYLE = {"done": "muted", "moving": "", "waiting": "warning"}


def _cells(row: Any) -> list[str]:
    return [
        row.partition,
        row.state,
        f"{fmt_bytes(row.copied)} / {fmt_bytes(row.total)}",
        f"{fmt_bytes(int(row.rate))}/s" if row.rate else "-",
        fmt_seconds(row.eta_s) if row.eta_s is not None else "-",
        row.reason or "-",
        row.detail or "",
    ]


HEADERS = ("Partition", "State", "Copied / total", "Rate", "ETA", "Reason", "Detail")


def status_table(rows: Sequence[Any]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    for header in HEADERS:
        right = header in ("Copied / total", "Rate", "ETA")
        table.add_column(
            header,
            justify="right" if right else "left",
            no_wrap=header != "Detail",
            ratio=1 if header == "Detail" else None,
        )
    for row in rows:
        cells = _cells(row)
        table.add_row(*cells[:1], Text(cells[1], style=STYLE[row.state]), *cells[2:])
    return table


def status_markdown(plan: str, rows: Sequence[Any], summary_line: str) -> str:
    lines = [
        f"### Status of `{plan}`",
        "",
        summary_line,
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "|".join("---" for _ in HEADERS) + "|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in _cells(row)) + " |" for row in rows]
    return "\n".join(lines)
