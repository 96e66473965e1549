"""kreplica status's table and markdown (kreplica.render.status) from PartitionStatus rows."""

from __future__ import annotations

import io

from rich.console import Console

from kreplica.executor.status import PartitionStatus, StatusSummary
from kreplica.render.status import status_markdown, status_table

ROWS = [
    PartitionStatus("t-0", "moving", 1024, 4096, 512.0, 6.0, "throttle-bound", "broker 2 | x"),
    PartitionStatus("t-1", "done", 4096, 4096, None, None, None, ""),
]


def test_table_has_one_row_per_partition_with_reason_and_eta() -> None:
    out = io.StringIO()
    Console(file=out, width=100, no_color=True).print(status_table(ROWS))
    lines = out.getvalue().splitlines()
    moving = next(line for line in lines if line.startswith("t-0"))
    assert "1.0 KiB / 4.0 KiB" in moving and "512 B/s" in moving and "6s" in moving
    assert "throttle-bound" in moving
    done = next(line for line in lines if line.startswith("t-1"))
    assert "done" in done and "throttle-bound" not in done


def test_markdown_escapes_pipes_and_carries_the_summary() -> None:
    summary = StatusSummary(1, 1, 0, 5120, 8192, 512.0, 6.0)
    text = status_markdown("p.json", ROWS, summary.line())
    assert "1/2 done, 1 moving, 0 waiting; 5.0 KiB of 8.0 KiB copied at 512 B/s, ETA 6s" in text
    assert "broker 2 \\| x" in text
    assert text.count("\n| t-") == 2
