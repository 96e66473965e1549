"""One cluster's plan from its snapshot file's text (pure, stdlib; numpy when the snapshot is
read into columns): what each `fleet plan` task runs per file, and what bench_fleet's serial
baseline runs per file too. The file is read once, as `kreplica plan --snapshot` reads it
(partitions in columns, for the array planner when it takes the request), then planned by
`adapter.plan_cluster`."""

from __future__ import annotations

import hashlib
from typing import Any

from kreplica.fleet.adapter import PlanSettings, cluster_key, plan_cluster
from kreplica.fleet.policy import Policy
from kreplica.fleet.records import file_stem, parse_record, row_name
from kreplica.gcpause import gc_paused

# Where a task writes a cluster's plan files under --out before the driver, knowing every
# file's cluster, moves them to plans/<cluster>/ (a second file for a cluster is skipped, and
# its task must not have written over the first one's plan).
STAGING = ".kreplica-staging"


def staged_folder(file: str) -> str:
    """A file's plan folder under STAGING (the same in every task and the driver; for a
    Hadoop --out, Spark computes the same name: `pipeline._write_plans`)."""
    return f"{STAGING}/{hashlib.sha1(file.encode('utf-8')).hexdigest()[:24]}"


def plan_text(
    file: str, text: str, policy: Policy, settings: PlanSettings = PlanSettings()
) -> dict[str, Any]:
    """`plan_cluster`'s row for the snapshot in `text`, with `skip`: the one-line reason a
    file that is not a snapshot is skipped (then nothing else is set but the file)."""
    with gc_paused():  # a snapshot and a plan are trees of acyclic objects (gcpause.py)
        snapshot, error = parse_record(file, text, columnar=True)
        origin = row_name(file)
        if snapshot is None:
            return {"cluster_id": None, "file": origin, "skip": error}
        key = cluster_key(snapshot, file_stem(origin))
        row = plan_cluster(snapshot, policy, key=key, file=origin, settings=settings)
    row["skip"] = None
    return row
