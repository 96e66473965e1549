"""Which run plans a broker operation: the column run (column_run.py) on a ColumnarSnapshot
it takes, else the object run (run.py). The plan's report names it and why (`engine`), as
make_plan's does for the topic shapes; numpy is loaded only when the snapshot is in columns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kreplica.model import ClusterSnapshot, PlanReport
from kreplica.planner.options import PlanOptions

if TYPE_CHECKING:
    from kreplica.planner.brokers.column_run import ColumnRun
    from kreplica.planner.brokers.run import Run

NOT_IN_COLUMNS = "the snapshot is not in columns"


def pick_engine(snapshot: ClusterSnapshot, options: PlanOptions, operation: str) -> tuple[str, str]:
    """("columns", why) or ("objects", why) for `operation` (its name, for the why)."""
    why: str | None = NOT_IN_COLUMNS
    if snapshot.traffic is not None:
        why = "the snapshot carries rates, which the columns do not hold"
    elif getattr(snapshot, "columns", None) is not None:
        from kreplica.planner.brokers.column_run import column_refusal

        why = column_refusal(snapshot, options)
    if why is None:
        return (
            "columns",
            f"the snapshot is in columns: planner/brokers/column_run.py plans {operation}",
        )
    return "objects", f"the column run refuses it: {why}"


def by_traffic_when_rated(run: Run | ColumnRun, operation: str, *, replace: bool) -> PlanReport:
    """The count plan's moves placed again by load (traffic_placement.py) when the snapshot
    carries rates (always on the object run: see pick_engine); {} and nothing changed
    otherwise. The plan report's entries."""
    if run.snapshot.traffic is None or not hasattr(run, "ctx"):
        return {}
    from kreplica.planner.brokers.run import Run
    from kreplica.planner.brokers.traffic_placement import by_traffic

    assert isinstance(run, Run)
    return by_traffic(run, operation, replace=replace)
