"""Phases of `kreplica plan --snapshot F --topics '.*' --rf 3 --dry-run --output json`, arrays
against objects, one fresh process per path and size.

    PYTHONPATH=. .venv/bin/python bench/bench_columnar.py [--sizes 10k,100k,1M]
        [--paths arrays,objects] [--out] [--work-dir D]

Snapshots: bench_scale.py's (500 brokers on 6 racks, topics of 500 partitions at RF 2, laid
out by Kafka's placement), generated once into the same cache. Each child runs the steps the
CLI runs, in-process, and prints per phase the cpu seconds (process time: steadier than wall
on a shared machine) and the peak RSS so far (ru_maxrss):

- read: the file to a snapshot (arrays: kreplica.columns via load_snapshot_columnar;
  objects: load_snapshot, one Partition per partition)
- plan: make_plan with its report and fingerprint (arrays: planner/arrays.py; objects: the
  object planner, as main runs it)
- output: the --output json envelope written to a file (arrays: the partition lists written
  from the arrays a piece at a time; objects: lists of dicts); with --out also the three plan
  files
- total, with the wall time of the whole child and the report's check figures (replicas
  added against the lower bound, existing replicas moved, worst topic spread, cluster
  spread, rack violations after).

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_scale import DEFAULT_WORK_DIR, parse_size, size_name, snapshot_path  # noqa: E402


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(path: str, snapshot: str, with_out: bool) -> dict[str, Any]:
    wall0 = time.perf_counter()
    phases: list[tuple[str, float, float]] = []
    t0 = time.process_time()

    def mark(name: str) -> None:
        nonlocal t0
        now = time.process_time()
        phases.append((name, now - t0, rss_mib()))
        t0 = now

    from kreplica.cli import common, output, present
    from kreplica.planner import TopicRequest, make_plan
    from kreplica.sources.snapshot import load_snapshot, load_snapshot_columnar

    mark("imports")
    snap = load_snapshot_columnar(snapshot) if path == "arrays" else load_snapshot(snapshot)
    gc.freeze()
    mark("read")
    names = common.topic_list(snap)
    plan = make_plan(snap, [TopicRequest(topic=n, rf=3) for n in names])
    mark("plan")
    with tempfile.TemporaryDirectory() as tmp:
        data = present.plan_data(plan, snap, title="bench", source="snapshot", files=None)
        with (
            open(Path(tmp) / "out.json", "w", encoding="utf-8") as f,
            output.running(output.RunState(command="plan")),
        ):
            output.emit_envelope(data, file=f)
        if with_out:
            present.write_plan_files(plan, snap, Path(tmp) / "plan.json")
        mark("output")
    report = plan.report
    spreads = report["topic_spread_after"]
    return {
        "path": path,
        "phases": phases,
        "cpu_s": round(sum(p[1] for p in phases), 2),
        "wall_s": round(time.perf_counter() - wall0, 2),
        "peak_rss_mib": round(rss_mib()),
        "array_plan": bool(getattr(plan.changes, "columnar", False)),
        "added": report["replicas_added"],
        "lower_bound": report["lower_bound_replicas_added"],
        "moved": report["existing_replicas_moved"],
        "topic_spread_max": max(spreads.values(), default=0),
        "cluster_spread": report["cluster_spread_after"],
        "rack_violations_after": report["rack_violations_after"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="10k,100k,1M")
    parser.add_argument("--paths", default="arrays,objects")
    parser.add_argument("--out", action="store_true", help="also write the --out plan files")
    parser.add_argument("--work-dir", type=Path, default=DEFAULT_WORK_DIR)
    args = parser.parse_args()
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(child(spec["path"], spec["snapshot"], spec["out"])))
        return
    print(
        f"# python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
        f"load {os.getloadavg()[0]:.1f}; cpu s (peak RSS MiB) per phase",
        flush=True,
    )
    print(
        f"{'size':>5} {'path':>8} {'read':>12} {'plan':>12} {'output':>12} {'cpu s':>6} "
        f"{'wall s':>7} {'RSS MiB':>7}  added/LB moved tspread cspread rackviol"
    )
    for size in [parse_size(s) for s in args.sizes.split(",")]:
        snap = snapshot_path(args.work_dir, 500, 6, size)
        for path in args.paths.split(","):
            spec = {"path": path, "snapshot": str(snap), "out": args.out}
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
            if proc.returncode or not lines:
                print(f"{size_name(size):>5} {path:>8} error: {proc.stderr.strip()[-300:]}")
                continue
            row = json.loads(lines[-1])
            cells = {name: f"{cpu:.2f} ({rss:.0f})" for name, cpu, rss in row["phases"]}
            print(
                f"{size_name(size):>5} {path:>8} {cells['read']:>12} {cells['plan']:>12} "
                f"{cells['output']:>12} {row['cpu_s']:>6.2f} {row['wall_s']:>7.2f} "
                f"{row['peak_rss_mib']:>7}  {row['added']}/{row['lower_bound']} {row['moved']} "
                f"{row['topic_spread_max']} {row['cluster_spread']} "
                f"{row['rack_violations_after']}"
                + ("" if row["array_plan"] or path == "objects" else "  (object planner)"),
                flush=True,
            )


if __name__ == "__main__":
    main()
