"""traffic, once typer has parsed it: measure each partition's write rate and fan-out (or read
them from a snapshot taken with `snapshot --traffic`), and the network load per broker.
Read-only. Imported lazily by kreplica.cli.app; the model is kreplica.planner.traffic."""

from __future__ import annotations

from pathlib import Path

from kreplica.cli import output
from kreplica.cli.common import (
    console,
    measure_traffic,
    metrics_traffic,
    read_capacity,
    source_spec,
    wants_metrics,
)
from kreplica.cli.options import Options, OutputFormat
from kreplica.errors import UsageError
from kreplica.model import ClusterSnapshot


def traffic(
    opts: Options, *, window_s: float, capacity: Path | None, topics: list[str], limit: int
) -> None:
    from kreplica.planner.traffic import (
        broker_traffic,
        check_window,
        require_rates,
        stored_traffic,
    )
    from kreplica.render.traffic import traffic_data, traffic_markdown, traffic_table
    from kreplica.sources import SnapshotFileSource

    check_window(window_s)
    if limit < 1:
        raise UsageError(f"--limit {limit}: give a number of rows >= 1")
    spec = source_spec(opts)
    capacity_of = read_capacity(capacity, spec.capacity)
    capacities: dict[int, dict[str, float]] | None = None

    def check(snap: ClusterSnapshot) -> None:  # before the window: a typo costs no wait
        nonlocal capacities
        capacities = capacity_of(snap)

    if wants_metrics(opts):  # any source's topology, Prometheus's rates
        snap, measured = metrics_traffic(opts, spec, topics, check)
    elif spec.kind == "snapshot":
        assert spec.snapshot is not None
        snap = SnapshotFileSource(spec.snapshot).snapshot(topics or None)
        require_rates(snap, spec.snapshot)
        check(snap)
        measured = stored_traffic(snap)
    else:
        snap, measured = measure_traffic(spec, window_s, topics, check)
    data = traffic_data(snap, measured, broker_traffic(snap, capacities))
    if opts.output is OutputFormat.json:
        output.emit_envelope(data)
    elif opts.output is OutputFormat.markdown:
        console().print(traffic_markdown(data, limit), markup=False, soft_wrap=True)
    else:
        console().print(traffic_table(data, limit))
