"""`kreplica traffic`: per-partition rates and the per-broker network model, as the JSON
envelope's data, a table or markdown. Takes what kreplica.planner.traffic computed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from kreplica.model import ClusterSnapshot, Partition
from kreplica.planner.traffic import (
    NOTE_TEXT,
    BrokerTraffic,
    PartitionTraffic,
    bytes_out_per_s,
    duration_text,
)
from kreplica.render.markdown import _cell
from kreplica.render.text import format_bytes


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _rate(value: float | None) -> str:
    return "?" if value is None else f"{format_bytes(round(value))}/s"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _partitions(snapshot: ClusterSnapshot) -> dict[tuple[str, int], Partition]:
    return {(p.topic, p.partition): p for t in snapshot.topics for p in t.partitions}


def traffic_data(
    snapshot: ClusterSnapshot,
    measured: Sequence[PartitionTraffic],
    brokers: Sequence[BrokerTraffic],
) -> dict[str, Any]:
    """The JSON envelope's `data`: every partition, every broker, bytes per second."""
    parts = _partitions(snapshot)
    window = snapshot.traffic
    return {
        "cluster_id": snapshot.cluster_id,
        "window_s": window.window_s if window else None,
        "measured_at": window.measured_at if window else None,
        "peak_of_s": window.peak_of_s if window else None,
        "traffic_from": window.origin if window else None,
        "partitions": [
            {
                "topic": m.topic,
                "partition": m.partition,
                "leader": parts[(m.topic, m.partition)].current_leader,
                "replicas": list(parts[(m.topic, m.partition)].replicas),
                "bytes_in_per_s": _round(m.bytes_in_per_s),
                "fanout": m.fanout,
                "bytes_out_per_s": _round(bytes_out_per_s(parts[(m.topic, m.partition)])),
                "notes": list(m.notes),
            }
            for m in measured
        ],
        "brokers": [
            {
                "id": b.id,
                "rack": b.rack,
                "nw_in": _round(b.nw_in),
                "nw_out": _round(b.nw_out),
                "leader_bytes_in": _round(b.leader_bytes_in),
                "disk_bytes": b.disk_bytes,
                "replicas": b.replicas,
                "leaders": b.leaders,
                "fanout_unknown": b.fanout_unknown,
                "nw_in_util": None if b.nw_in_util is None else round(b.nw_in_util, 4),
                "nw_out_util": None if b.nw_out_util is None else round(b.nw_out_util, 4),
            }
            for b in brokers
        ],
        "notes": dict(sorted(Counter(n for m in measured for n in m.notes).items())),
    }


PARTITION_HEADERS = ("Partition", "Leader", "In", "Fan-out", "Out", "Note")
BROKER_HEADERS = ("Broker", "Rack", "Net in", "Net out", "Leader in", "Disk", "Util in/out")


def _partition_rows(data: dict[str, Any], limit: int) -> list[list[str]]:
    rows = sorted(data["partitions"], key=lambda r: -(r["bytes_in_per_s"] or 0.0))[:limit]
    return [
        [
            f"{r['topic']}-{r['partition']}",
            str(r["leader"]) if r["leader"] is not None else "-",
            _rate(r["bytes_in_per_s"]),
            "?" if r["fanout"] is None else str(r["fanout"]),
            _rate(r["bytes_out_per_s"]),
            ", ".join(r["notes"]),
        ]
        for r in rows
    ]


def _broker_rows(data: dict[str, Any]) -> list[list[str]]:
    return [
        [
            str(b["id"]),
            b["rack"] or "-",
            _rate(b["nw_in"]),
            _rate(b["nw_out"]) + (" +?" if b["fanout_unknown"] else ""),
            _rate(b["leader_bytes_in"]),
            format_bytes(b["disk_bytes"]),
            f"{_share(b['nw_in_util'])} / {_share(b['nw_out_util'])}",
        ]
        for b in data["brokers"]
    ]


def _when(data: dict[str, Any]) -> str:
    at = data["measured_at"] or "an unknown time"
    if data.get("traffic_from"):  # peaks of windows over a range, read from metrics
        return (
            f"peak of {duration_text(data['peak_of_s'])} rates over the "
            f"{duration_text(data['window_s'])} before {at}, "
            f"from {data['traffic_from']}"
        )
    window = f" over {data['window_s']:g}s" if data["window_s"] is not None else ""
    return f"measured{window} at {at}"


def summary_lines(data: dict[str, Any], limit: int) -> list[str]:
    """What the tables leave out, and what was not measurable and why."""
    lines = []
    total = len(data["partitions"])
    if total > limit:
        lines.append(f"{limit} busiest of {total} partitions shown; --output json lists all")
    lines.append(_when(data))
    for note, count in data["notes"].items():
        lines.append(f"{count} partition(s): {NOTE_TEXT[note]}")
    if any(b["fanout_unknown"] for b in data["brokers"]):
        lines.append("+?: network out leaves out consumers of partitions with unknown fan-out")
    return lines


def _table(headers: Sequence[str], rows: list[list[str]], left: int) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0))
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i < left else "right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def traffic_table(data: dict[str, Any], limit: int) -> Group:
    partitions = _table(PARTITION_HEADERS, _partition_rows(data, limit), 1)
    partitions.columns[-1].justify = "left"
    partitions.columns[-1].no_wrap = False
    brokers = _table(BROKER_HEADERS, _broker_rows(data), 2)
    notes = [Text(line, style="muted") for line in summary_lines(data, limit)]
    return Group(partitions, Text(""), brokers, Text(""), *notes)


def traffic_markdown(data: dict[str, Any], limit: int) -> str:
    def block(headers: Sequence[str], rows: list[list[str]]) -> list[str]:
        return [
            "| " + " | ".join(headers) + " |",
            "|" + "|".join("---" for _ in headers) + "|",
            *("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows),
        ]

    lines = ["### Traffic", ""]
    lines += block(PARTITION_HEADERS, _partition_rows(data, limit))
    lines += ["", *block(BROKER_HEADERS, _broker_rows(data)), ""]
    lines += [f"- {line}" for line in summary_lines(data, limit)]
    return "\n".join(lines) + "\n"
