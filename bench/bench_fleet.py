"""Fleet audit and plan on Spark: wall time, partitions/s and peak memory per fleet size
(prints a table, no asserts).

.venv/bin/python bench/bench_fleet.py [--sizes 100000,300000,1000000] [--clusters 100]
                                      [--master 'local[2]'] [--memory 4g] [--seed 0] [--json FILE]

Each size: a synthetic fleet (`kreplica fleet synth`) of that many partitions over --clusters
clusters is written to a temporary folder, then audited (--rf 3 --min-insync 2) and planned
(--rf 3) on one SparkSession (started once; its start-up is reported apart). Beside `fleet
plan`, the baseline the issue names: the same clusters planned one after another in this one
process with the project's own library (`plan_cluster`, what each Spark task runs), in the same
run, before Spark's plan (`serial s`, `plan/serial` below 1: Spark faster), and its
reassignments compared byte for byte with the files Spark's tasks wrote. Peak memory: the
driver's Python (getrusage max RSS) and the Spark JVM (VmHWM of the gateway's JVM, local mode:
driver and executors); the Python workers are forked per task and not counted.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kreplica.fleet.adapter import cluster_key, plan_cluster
from kreplica.fleet.job import build_session, load_fleet_policy, run_audit, run_plan
from kreplica.fleet.policy import Policy
from kreplica.fleet.report import safe_name
from kreplica.fleet.synth import write_fleet
from kreplica.sources.snapshot import parse_snapshot_text


def _serial_plans(folder: Path, policy: Policy) -> dict[str, str | None]:
    """Every cluster planned in turn in this process: cluster key -> reassignment JSON."""
    plans: dict[str, str | None] = {}
    for path in sorted(folder.glob("*.json")):
        snapshot = parse_snapshot_text(path.read_text(encoding="utf-8"), origin=str(path))
        key = cluster_key(snapshot, path.stem)
        plans[key] = plan_cluster(snapshot, policy, key=key, file=str(path))["reassignment"]
    return plans


def _same_plans(serial: dict[str, str | None], out: Path) -> bool:
    for key, text in serial.items():
        written = out / "plans" / safe_name(key) / "reassignment.json"
        if (written.read_text(encoding="utf-8") if written.exists() else None) != text:
            return False
    return True


def _python_peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _jvm_peak_mib(spark: Any) -> float | None:
    try:
        pid = spark.sparkContext._gateway.proc.pid
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except Exception:
        return None
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory", default="4g", help="the local JVM's heap (driver memory)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s]

    t0 = time.perf_counter()
    spark = build_session(
        args.master, app_name="kreplica-bench-fleet", conf={"spark.driver.memory": args.memory}
    )
    startup = time.perf_counter() - t0
    print(f"Spark {spark.version} on {args.master}: session started in {startup:.1f} s")
    policy_audit = load_fleet_policy(None, rf=3, min_insync=2)
    policy_plan = load_fleet_policy(None, rf=3, min_insync=None)
    results: list[dict[str, Any]] = []
    header = (
        f"{'partitions':>10} {'clusters':>8} {'synth s':>8} {'audit s':>8} {'audit p/s':>10} "
        f"{'plan s':>8} {'plan p/s':>10} {'serial s':>8} {'plan/serial':>11} {'same':>5} "
        f"{'py MiB':>8} {'jvm MiB':>8}"
    )
    print(header)
    print("-" * len(header))
    for size in sizes:
        work = Path(tempfile.mkdtemp(prefix=f"kreplica-bench-{size}-"))
        try:
            t = time.perf_counter()
            write_fleet(work / "snapshots", args.clusters, size, seed=args.seed)
            synth_s = time.perf_counter() - t
            t = time.perf_counter()
            audit = run_audit(spark, str(work / "snapshots"), str(work / "audit"), policy_audit)
            audit_s = time.perf_counter() - t
            t = time.perf_counter()
            serial = _serial_plans(work / "snapshots", policy_plan)
            serial_s = time.perf_counter() - t
            t = time.perf_counter()
            plan = run_plan(spark, str(work / "snapshots"), str(work / "plan"), policy_plan)
            plan_s = time.perf_counter() - t
            same = _same_plans(serial, work / "plan")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        row = {
            "partitions": size,
            "clusters": args.clusters,
            "master": args.master,
            "synth_s": round(synth_s, 1),
            "audit_s": round(audit_s, 1),
            "audit_partitions_per_s": round(size / audit_s),
            "plan_s": round(plan_s, 1),
            "plan_partitions_per_s": round(size / plan_s),
            "serial_plan_s": round(serial_s, 1),
            "plan_over_serial": round(plan_s / serial_s, 2),
            "plans_identical": same,
            "findings": audit["totals"]["errors"]
            + audit["totals"]["warnings"]
            + audit["totals"]["infos"],
            "replicas_added": plan["totals"]["replicas_added"],
            "clusters_refused": plan["totals"]["errors"],
            "driver_python_peak_mib": round(_python_peak_mib()),
            "jvm_peak_mib": round(_jvm_peak_mib(spark) or 0),
        }
        results.append(row)
        print(
            f"{size:>10} {args.clusters:>8} {synth_s:>8.1f} {audit_s:>8.1f} "
            f"{row['audit_partitions_per_s']:>10} {plan_s:>8.1f} "
            f"{row['plan_partitions_per_s']:>10} {serial_s:>8.1f} {plan_s / serial_s:>11.2f} "
            f"{'yes' if same else 'NO':>5} {row['driver_python_peak_mib']:>8} "
            f"{row['jvm_peak_mib']:>8}",
            flush=True,
        )
    if args.json:
        args.json.write_text(
            json.dumps({"startup_s": round(startup, 1), "runs": results}, indent=2) + "\n"
        )
    spark.stop()
    sys.exit(0)


if __name__ == "__main__":
    main()
