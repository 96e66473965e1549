"""Which run plans a broker operation: the column run (column_run.py) on a ColumnarSnapshot
it takes, else the object run (run.py). The plan's report names it and why (`engine`), as
make_plan's does for the topic shapes; numpy is loaded only when the snapshot is in columns."""

from __future__ import annotations

from kreplica.model import ClusterSnapshot
from kreplica.planner.options import PlanOptions

NOT_IN_COLUMNS = "the snapshot is not in columns"


def pick_engine(snapshot: ClusterSnapshot, options: PlanOptions, operation: str) -> tuple[str, str]:
    """("columns", why) or ("objects", why) for `operation` (its name, for the why)."""
    why: str | None = NOT_IN_COLUMNS
    if getattr(snapshot, "columns", None) is not None:
        from kreplica.planner.brokers.column_run import column_refusal

        why = column_refusal(snapshot, options)
    if why is None:
        return (
            "columns",
            f"the snapshot is in columns: planner/brokers/column_run.py plans {operation}",
        )
    return "objects", f"the column run refuses it: {why}"
