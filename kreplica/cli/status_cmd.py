"""status, once typer has parsed it: where each partition of a plan stands. Read-only: it never
writes to the cluster (nor clears pending throttles), so it is safe beside a running apply.
Imported lazily by kreplica.cli.app; the decisions are kreplica.executor.status."""

from __future__ import annotations

from pathlib import Path

from kreplica.cli import output
from kreplica.cli.applying import connect
from kreplica.cli.common import console
from kreplica.cli.config import SourceSpec
from kreplica.cli.options import Options, OutputFormat
from kreplica.errors import UsageError


def status(opts: Options, spec: SourceSpec, plan_path: Path, *, interval: float) -> None:
    from kreplica.executor import facade
    from kreplica.render.status import status_markdown, status_table

    if interval < 0:
        raise UsageError(f"--interval {interval:g}: give a number of seconds >= 0")
    plan = facade.load_plan(plan_path)
    with connect(spec) as connection:
        rows, summary = facade.status(connection, plan, interval_s=interval)
    if opts.output is OutputFormat.json:
        output.emit_envelope(
            {
                "plan": str(plan_path),
                "partitions": [
                    {
                        "partition": r.partition,
                        "state": r.state,
                        "copied_bytes": r.copied,
                        "total_bytes": r.total,
                        "rate_bytes_per_s": round(r.rate, 1) if r.rate is not None else None,
                        "eta_s": round(r.eta_s, 1) if r.eta_s is not None else None,
                        "reason": r.reason,
                        "detail": r.detail,
                    }
                    for r in rows
                ],
                "summary": {
                    "done": summary.done,
                    "moving": summary.moving,
                    "waiting": summary.waiting,
                    "copied_bytes": summary.copied,
                    "total_bytes": summary.total,
                    "rate_bytes_per_s": round(summary.rate, 1) if summary.rate else None,
                    "eta_s": round(summary.eta_s, 1) if summary.eta_s is not None else None,
                    "write_bytes_per_s": round(summary.writes, 1),
                    "line": summary.line(),
                },
            }
        )
        return
    out = console()
    if opts.output is OutputFormat.markdown:
        out.print(
            status_markdown(str(plan_path), rows, summary.line()), markup=False, soft_wrap=True
        )
        return
    out.print(status_table(rows))
    out.print(f"{plan_path}: {summary.line()}", markup=False)
