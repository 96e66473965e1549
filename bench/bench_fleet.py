"""Fleet audit and plan on Spark beside plain Python (prints a table, no asserts).

.venv/bin/python bench/bench_fleet.py [--fleets 150/1,20000/10,1000000/100]
                                      [--master 'local[2]'] [--memory 4g] [--seed 0] [--json F]

Each fleet (PARTITIONS/CLUSTERS): a synthetic fleet (`kreplica fleet synth`) written to a
temporary folder, then, in one run and alternating which goes first from one fleet to the
next:

- `audit`: `fleet audit --rf 3 --min-insync 2` on the session (started once, its start-up
  reported apart), beside `2-proc`, the issue's baseline: the same checks in plain Python,
  the snapshots parsed by the project's reader and checked object by object in two worker
  processes (the two cores Spark has), the layout by `layout_verdict` (what `kreplica
  explain` says), one search per topic; and beside `table`: the same two processes judging
  layouts as the audit's tasks do (`records.topic_layouts`: the cluster's replica table,
  then a search that stops at the first layout reproducing every partition), so the figure
  shows what Spark itself costs. The findings per cluster and code are compared (`same`):
  the baselines are an independent re-implementation of the checks.
- `plan`: `fleet plan --rf 3` beside `serial`: the same clusters planned one after another in
  this process with the project's library (`plan_text`, what each Spark task runs per file:
  the CLI's snapshot reader and planner), the reassignments compared byte for byte with the
  files Spark's tasks wrote.

The first fleet is also audited by the CLI in a fresh process (`kreplica fleet audit`, the
session's start-up included: the fixed cost a user waits for). Each figure is printed with the
machine's 1-minute load average when it was taken (a load above the core count slows every
figure), and the CPU seconds each side used (this process and its children: the JVM, Spark's
Python workers, the pool's processes; a figure the load does not bend). Peak memory: the
driver's Python (max RSS) and the local JVM (VmHWM).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kreplica.fleet.adapter import cluster_key
from kreplica.fleet.job import build_session, cache_dir, load_fleet_policy, run_audit, run_plan
from kreplica.fleet.plantask import plan_text
from kreplica.fleet.policy import Policy, policy_from_dict
from kreplica.fleet.records import topic_layouts
from kreplica.fleet.report import safe_name
from kreplica.fleet.synth import write_fleet
from kreplica.planner.explain import layout_verdict
from kreplica.sources.snapshot import parse_snapshot_text, parse_snapshot_text_columnar

SKEW = 0.1


def _load() -> float:
    return os.getloadavg()[0]


def _check_file(args: tuple[str, dict[str, Any], bool]) -> tuple[str, dict[str, int]]:
    """The audit's checks on one snapshot, in plain Python: cluster key -> findings by code.
    `table`: layouts as the audit's tasks judge them (`topic_layouts`: the cluster's replica
    table first), else by `layout_verdict`, one search per topic (the issue's baseline)."""
    path, shipped, table = args
    policy = policy_from_dict(shipped)
    text = Path(path).read_text(encoding="utf-8")
    defaults: dict[str, bool | None] = {}
    if table:
        snapshot = parse_snapshot_text_columnar(text, origin=path)
        verdicts = topic_layouts(snapshot)  # before `topics` builds the objects
        names = [t.name for t in snapshot.topics]
        defaults = {n: d for n, (d, _) in zip(names, verdicts, strict=True)}
    else:
        snapshot = parse_snapshot_text(text, origin=path)
    key = cluster_key(snapshot, Path(path).stem)
    cluster = policy.cluster(key, snapshot.cluster_id)
    codes: Counter[str] = Counter()
    rack_of = {b.id: b.rack for b in snapshot.brokers if b.rack is not None}
    cluster_racks = len({b.rack for b in snapshot.brokers if b.alive and b.rack is not None})
    listed = {b.id: b for b in snapshot.brokers}
    replicas: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    capped: Counter[tuple[int, int]] = Counter()
    for topic in snapshot.topics:
        for p in topic.partitions:
            replicas.update(p.replicas)
            now = p.leader if p.leader is not None else (p.replicas[0] if p.replicas else None)
            if now is not None and now >= 0:
                leaders[now] += 1
        if cluster.is_exempt(topic.name):
            continue
        target = policy.target(topic.name)
        min_isr = topic.min_insync_replicas
        hits: set[str] = set()
        for p in topic.partitions:
            rf = len(p.replicas)
            if target.rf is not None and rf < target.rf:
                hits.add("rf-below-policy")
            if rf <= min_isr:
                hits.add("rf-at-or-below-min-insync")
            if cluster_racks and rf:
                want = target.racks if target.racks is not None else cluster_racks
                spanned = len({rack_of.get(b) for b in p.replicas} - {None})
                if spanned < min(rf, want, cluster_racks):
                    hits.add("rack-violation")
            if p.isr is not None and len(p.isr) < rf:
                hits.add("under-replicated")
            if p.leader == -1:
                hits.add("offline")
            if p.leader is not None and p.leader >= 0 and p.replicas and p.leader != p.replicas[0]:
                hits.add("leader-not-preferred")
            if target.max_partitions_per_broker is not None:
                for b in p.replicas:
                    capped[(b, target.max_partitions_per_broker)] += 1
        codes.update(hits)
        if target.min_insync is not None and min_isr < target.min_insync:
            codes["min-insync-below-policy"] += 1
        default = defaults[topic.name] if table else layout_verdict(snapshot, topic)[0]
        if not default:
            codes["layout-not-kafka-default"] += 1
    codes["max-partitions-per-broker"] += sum(1 for (_, cap), n in capped.items() if n > cap)
    for b in replicas:
        broker = listed.get(b)
        if broker is None or not broker.alive:
            codes["replicas-on-dead-broker"] += 1
        if broker is not None and b in cluster.drain:
            codes["replicas-on-drained-broker"] += 1
    live = [b.id for b in snapshot.brokers if b.alive and b.id not in cluster.drain]
    for what, counts in (("replica", replicas), ("leader", leaders)):
        values = [counts[b] for b in live]
        if values:
            spread = max(values) - min(values)
            if spread > 1 and spread > math.ceil(sum(values) / len(values) * SKEW):
                codes[f"{what}-skew"] += 1
    return key, {k: v for k, v in codes.items() if v}


def two_process_audit(
    folder: Path, policy: Policy, *, table: bool = False
) -> dict[str, dict[str, int]]:
    files = sorted(folder.glob("*.json"), key=lambda p: -p.stat().st_size)  # big ones first
    shipped = policy.to_dict()
    with multiprocessing.get_context("fork").Pool(2) as pool:
        found = pool.imap_unordered(_check_file, [(str(f), shipped, table) for f in files], 1)
        return dict(found)


def _serial_plans(folder: Path, policy: Policy) -> dict[str, str | None]:
    """Every cluster planned in turn in this process, each file read and planned by what each
    Spark task runs per file (`plan_text`: the CLI's reader and planner): cluster key ->
    reassignment JSON."""
    plans: dict[str, str | None] = {}
    for path in sorted(folder.glob("*.json")):
        row = plan_text(str(path), path.read_text(encoding="utf-8"), policy)
        plans[row["cluster_id"]] = row["reassignment"]
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


def _tree_cpu() -> float:
    """CPU seconds of this process and its descendants (the JVM, Spark's Python workers,
    the pool's processes), from /proc: on a shared machine a figure the load does not bend."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
        cpu[int(entry)] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    todo, total = [os.getpid()], 0.0
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


def _timed(fn: Any) -> tuple[Any, float, float, float]:
    load = _load()
    cpu = _tree_cpu()
    t = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t, load, _tree_cpu() - cpu


def _cold_cli(folder: Path, out: Path, master: str) -> tuple[float, float, int]:
    load = _load()
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "kreplica", "fleet", "audit", "--input", str(folder),
         "--out", str(out), "--rf", "3", "--min-insync", "2", "--master", master],
        capture_output=True, check=False,
    )  # fmt: skip
    return time.perf_counter() - t, load, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--fleets", default="150/1,20000/10,1000000/100")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory", default="4g", help="the local JVM's heap (driver memory)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    fleets = [
        tuple(int(x.replace("_", "")) for x in f.split("/")) for f in args.fleets.split(",") if f
    ]
    policy_audit = load_fleet_policy(None, rf=3, min_insync=2)
    policy_plan = load_fleet_policy(None, rf=3, min_insync=None)
    results: list[dict[str, Any]] = []
    cold: dict[str, Any] = {}
    if fleets:
        work = Path(tempfile.mkdtemp(prefix="kreplica-bench-cold-"))
        try:
            write_fleet(work / "snapshots", fleets[0][1], fleets[0][0], seed=args.seed)
            # a small fleet's first local run may write the JVM's class archive (once per
            # Java and Spark install, job.class_archive): the second run is what users wait
            archived = bool(list(cache_dir().glob("spark-classes-*.jsa")))
            first = _cold_cli(work / "snapshots", work / "out", args.master)
            cold_s, cold_load, code = _cold_cli(work / "snapshots", work / "out2", args.master)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        cold = {"partitions": fleets[0][0], "clusters": fleets[0][1], "cli_audit_s": cold_s,
                "loadavg_1m": cold_load, "exit": code, "first_run_s": first[0],
                "first_run_loadavg_1m": first[1], "class_archive_before": archived}  # fmt: skip
        print(
            f"kreplica fleet audit (a fresh process, Spark's start-up included) on "
            f"{fleets[0][0]} partitions / {fleets[0][1]} cluster(s): {cold_s:.1f} s "
            f"(exit {code}, load {cold_load:.1f}); the run before it {first[0]:.1f} s (load "
            f"{first[1]:.1f}; class archive {'there' if archived else 'written by it'})"
        )
    spark, startup, start_load, _ = _timed(
        lambda: build_session(
            args.master, app_name="kreplica-bench-fleet", conf={"spark.driver.memory": args.memory}
        )
    )
    print(f"Spark {spark.version} on {args.master}: session started in {startup:.1f} s")
    header = (
        f"{'partitions':>10} {'clusters':>8} {'audit s':>8} {'2-proc s':>8} {'ratio':>6} "
        f"{'table s':>8} {'ratio':>6} "
        f"{'same':>5} {'plan s':>8} {'serial s':>8} {'ratio':>6} {'same':>5} "
        f"{'py MiB':>7} {'jvm MiB':>7}  load (audit/2-proc/table/plan/serial)"
    )
    print(header)
    print("-" * len(header))
    for i, (size, clusters) in enumerate(fleets):
        work = Path(tempfile.mkdtemp(prefix=f"kreplica-bench-{size}-"))
        try:
            snaps = work / "snapshots"
            write_fleet(snaps, clusters, size, seed=args.seed, processes=2)
            fig: dict[str, tuple[Any, float, float, float]] = {}

            def spark_audit(out: Path = work / "audit", snaps: Path = snaps) -> Any:
                return run_audit(spark, str(snaps), str(out), policy_audit)

            def spark_plan(out: Path = work / "plan", snaps: Path = snaps) -> Any:
                return run_plan(spark, str(snaps), str(out), policy_plan)

            audits = [
                ("audit", spark_audit),
                ("base", lambda s=snaps: two_process_audit(s, policy_audit)),
                ("table", lambda s=snaps: two_process_audit(s, policy_audit, table=True)),
            ]
            plans = [
                ("plan", spark_plan),
                ("serial", lambda s=snaps: _serial_plans(s, policy_plan)),
            ]
            for name, fn in (audits if i % 2 == 0 else audits[::-1]) + (
                plans if i % 2 == 0 else plans[::-1]
            ):
                fig[name] = _timed(fn)
            audit_doc, base = fig["audit"][0], fig["base"][0]
            spark_codes = {c["cluster_id"]: dict(c["by_code"]) for c in audit_doc["clusters"]}
            same_findings = all(
                spark_codes == {k: other.get(k, {}) for k in spark_codes}
                and set(other) == set(spark_codes)
                for other in (base, fig["table"][0])
            )
            same_plans = _same_plans(fig["serial"][0], work / "plan")
        finally:
            shutil.rmtree(work, ignore_errors=True)
        a, b, t, p, s = (fig[k][1] for k in ("audit", "base", "table", "plan", "serial"))
        loads = [fig[k][2] for k in ("audit", "base", "table", "plan", "serial")]
        cpus = [fig[k][3] for k in ("audit", "base", "table", "plan", "serial")]
        row = {
            "partitions": size,
            "clusters": clusters,
            "master": args.master,
            "audit_s": round(a, 1),
            "two_process_s": round(b, 1),
            "audit_over_two_process": round(a / b, 2),
            "two_process_table_s": round(t, 1),
            "audit_over_two_process_table": round(a / t, 2),
            "findings_identical": same_findings,
            "findings": sum(sum(c.values()) for c in spark_codes.values()),
            "plan_s": round(p, 1),
            "serial_plan_s": round(s, 1),
            "plan_over_serial": round(p / s, 2),
            "plans_identical": same_plans,
            "loadavg_1m": [round(x, 1) for x in loads],
            "cpu_s": {
                k: round(x, 1)
                for k, x in zip(
                    ("audit", "two_process", "two_process_table", "plan", "serial_plan"),
                    cpus,
                    strict=True,
                )
            },
            "driver_python_peak_mib": round(_python_peak_mib()),
            "jvm_peak_mib": round(_jvm_peak_mib(spark) or 0),
        }
        results.append(row)
        print(
            f"{size:>10} {clusters:>8} {a:>8.1f} {b:>8.1f} {a / b:>6.2f} {t:>8.1f} {a / t:>6.2f} "
            f"{'yes' if same_findings else 'NO':>5} {p:>8.1f} {s:>8.1f} {p / s:>6.2f} "
            f"{'yes' if same_plans else 'NO':>5} {row['driver_python_peak_mib']:>7} "
            f"{row['jvm_peak_mib']:>7}  " + "/".join(f"{x:.1f}" for x in loads),
            flush=True,
        )
        print(
            "    CPU s (this process and its children: JVM, Python workers, pool) "
            + " / ".join(f"{k} {v}" for k, v in row["cpu_s"].items()),  # type: ignore[attr-defined]
            flush=True,
        )
    if args.json:
        doc = {"startup_s": round(startup, 1), "startup_loadavg_1m": round(start_load, 1),
               "cold_cli": cold, "runs": results}  # fmt: skip
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    spark.stop()
    sys.exit(0)


if __name__ == "__main__":
    main()
