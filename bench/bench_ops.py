"""Every operation at scale: wall and peak memory, one fresh process per case.

    .venv/bin/python bench/bench_ops.py [--sizes 10k,100k,1M] [--ops raise,shrink,...]
        [--timeout 120] [--json-out PATH] [--profile OP [--size 100k]]

Issue 32's shape: topics of 500 partitions at RF 3 laid out by Kafka's placement on 500
brokers (ids 0..499) on 6 racks, plus 20 empty brokers (500..519, on the same racks), sizes,
leaders and ISR set (bench/planner_clusters.py, then the 20 brokers appended). For the raise
with a dead broker, broker 7 is marked not alive, out of every ISR, and leadership of its
partitions passed to the next replica, as Kafka does. Snapshots are generated once into
--work-dir and reused.

Operations, each `kreplica ... --snapshot F --dry-run --output json` run through the CLI entry
point in a fresh process (stdout to a file):

    raise        plan --topics '.*' --rf 4
    shrink       plan --topics '.*' --rf 2
    raise-dead   plan --topics '.*' --rf 4 --replace-dead   (broker 7 dead)
    partitions   plan --topics '.*' --partitions 750        (500 -> 750 per topic)
    fix-racks    plan --topics '.*' --fix-racks
    drain        drain --brokers 1,2
    add-brokers  add-brokers --brokers 500,...,519
    replace      replace --broker 1 --with 500                (an empty broker takes 1's)
    rebalance    rebalance --max-moves 20000
    explain      explain                                    (all topics)

Each row: wall (import of kreplica.cli to the JSON written; interpreter start-up excluded),
cpu, peak RSS (ru_maxrss of the child), the exit code, and for plans the engine the report
names, the replicas added / removed and the reassigned partitions. A case past --timeout
prints "timeout" and the run goes on. `--profile OP` runs one case (--size, default 100k)
under cProfile in a fresh process and prints the functions by cumulative and by own time.

Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_scale import (  # noqa: E402
    DEFAULT_WORK_DIR,
    header,
    parse_size,
    run_cli,
    size_name,
)
from bench_scale import run_case as scale_run_case  # noqa: E402

RF = 3
BROKERS = 500
EMPTY = 20
RACKS = 6
DEAD = 7
PER_TOPIC = 500

OPS: dict[str, list[str]] = {
    "raise": ["plan", "--topics", ".*", "--rf", str(RF + 1)],
    "shrink": ["plan", "--topics", ".*", "--rf", str(RF - 1)],
    "raise-dead": ["plan", "--topics", ".*", "--rf", str(RF + 1), "--replace-dead"],
    "partitions": ["plan", "--topics", ".*", "--partitions", str(PER_TOPIC * 3 // 2)],
    "fix-racks": ["plan", "--topics", ".*", "--fix-racks"],
    "drain": ["drain", "--brokers", "1,2"],
    "add-brokers": [
        "add-brokers",
        "--brokers",
        ",".join(str(b) for b in range(BROKERS, BROKERS + EMPTY)),
    ],
    "replace": ["replace", "--broker", "1", "--with", str(BROKERS)],
    "rebalance": ["rebalance", "--max-moves", "20000"],
    "explain": ["explain"],
}


def snapshot_path(work: Path, partitions: int, dead: bool) -> Path:
    """The case's snapshot file, generated on first use."""
    name = f"ops-b{BROKERS}+{EMPTY}-r{RACKS}-p{partitions}-rf{RF}{'-dead' if dead else ''}.json"
    path = work / name
    if path.exists():
        return path
    import orjson

    work.mkdir(parents=True, exist_ok=True)
    healthy = work / name.replace("-dead", "")
    if not healthy.exists():
        from planner_clusters import write_scale_snapshot

        started = time.perf_counter()
        tmp = healthy.with_suffix(".tmp")
        write_scale_snapshot(str(tmp), brokers=BROKERS, racks=RACKS, partitions=partitions, rf=RF)
        doc = orjson.loads(tmp.read_bytes())
        for b in range(BROKERS, BROKERS + EMPTY):  # the empty brokers, on the same racks
            doc["brokers"].append(
                {"id": b, "rack": f"rack-{b % RACKS}", "host": f"10.0.{b // 250}.{b % 250}"}
            )
        doc["cluster_id"] = f"ops-{partitions}"
        tmp.write_bytes(orjson.dumps(doc))
        tmp.replace(healthy)
        print(
            f"# generated {healthy.name} in {time.perf_counter() - started:.1f} s", file=sys.stderr
        )
    if not dead:
        return path
    doc = orjson.loads(healthy.read_bytes())
    for b in doc["brokers"]:
        if b["id"] == DEAD:
            b["alive"] = False
    for t in doc["topics"]:
        for p in t["partitions"]:
            if DEAD in p["replicas"]:
                p["isr"] = [b for b in p["replicas"] if b != DEAD]
                p["leader"] = p["isr"][0]
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(orjson.dumps(doc))
    tmp.replace(path)
    return path


def argv_of(op: str, snapshot: str) -> list[str]:
    return ["kreplica", *OPS[op], "--snapshot", snapshot, "--output", "json"] + (
        [] if op == "explain" else ["--dry-run"]
    )


# --- one case, in a fresh process ---------------------------------------------------------


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs in the child: the CLI in-process, timed, then the figures from its output."""
    argv = argv_of(spec["op"], spec["snapshot"])
    out_path = spec["out"]
    started, cpu0 = time.perf_counter(), time.process_time()
    code = run_cli(argv, out_path)
    row: dict[str, Any] = {
        "exit": code if isinstance(code, int) else 1,
        "wall_s": round(time.perf_counter() - started, 3),
        "cpu_s": round(time.process_time() - cpu0, 3),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    import orjson

    with open(out_path, "rb") as f:
        doc = orjson.loads(f.read())
    os.unlink(out_path)
    if doc.get("errors"):
        row["error"] = doc["errors"][0].get("message")
    data = doc.get("data") or {}
    report = data.get("report")
    if isinstance(report, dict):
        row["engine"] = (report.get("engine") or {}).get("name", "-")
        row["added"] = report.get("replicas_added")
        row["removed"] = report.get("replicas_removed")
        row["reassigned"] = len((data.get("reassignment") or {}).get("partitions", []))
    elif spec["op"] == "explain":
        row["topics"] = len(data.get("topics", []))
    return row


def run_case(case: dict[str, Any], work: Path, timeout: float) -> dict[str, Any]:
    return scale_run_case(case, work, timeout, script=__file__, prefix="ops-out")


def profile_child(spec: dict[str, Any]) -> None:
    """Runs in the child: one case under cProfile, then the top functions."""
    import cProfile
    import pstats

    argv = argv_of(spec["op"], spec["snapshot"])
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    run_cli(argv, spec["out"])
    profiler.disable()
    wall = time.perf_counter() - started
    os.unlink(spec["out"])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"# {spec['op']} at {size_name(spec['partitions'])}: {wall:.2f} s under cProfile, "
        f"peak RSS {rss:.0f} MiB"
    )
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(35)
    stats.sort_stats("tottime").print_stats(20)


# --- the table -----------------------------------------------------------------------------

COLUMNS = (
    ("size", 5),
    ("op", 11),
    ("wall s", 7),
    ("cpu s", 7),
    ("RSS MiB", 7),
    ("exit", 4),
    ("engine", 7),
    ("added", 9),
    ("removed", 9),
    ("reassigned", 10),
)


def line(row: dict[str, Any]) -> str:
    head = [size_name(row["partitions"]), row["op"]]
    if "timeout" in row:
        cells = [*head, "timeout", f"(>{row['timeout']:.0f} s)"]
        return "  ".join(f"{c!s:>{w}}" for c, (_, w) in zip(cells, COLUMNS, strict=False))
    if "wall_s" not in row:
        cells = [*head]
        text = "  ".join(f"{c!s:>{w}}" for c, (_, w) in zip(cells, COLUMNS, strict=False))
        return f"{text}  error: {row.get('error')}"
    cells = [
        *head,
        f"{row['wall_s']:.2f}",
        f"{row['cpu_s']:.2f}",
        f"{row['peak_rss_mib']:.0f}",
        row["exit"],
        row.get("engine", "-"),
        row.get("added", "-"),
        row.get("removed", "-"),
        row.get("reassigned", row.get("topics", "-")),
    ]
    text = "  ".join(f"{c!s:>{w}}" for c, (_, w) in zip(cells, COLUMNS, strict=True))
    return f"{text}  {row['error']}" if row.get("error") else text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--profile-child", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="10k,100k,1M", help="partition counts")
    parser.add_argument("--ops", default=",".join(OPS), help="operations (default: all)")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per case")
    parser.add_argument("--json-out", type=Path, help="write every row as JSON here")
    parser.add_argument("--work-dir", type=Path, default=DEFAULT_WORK_DIR)
    parser.add_argument("--profile", metavar="OP", help="profile one operation instead")
    parser.add_argument("--size", default="100k", help="the size --profile runs")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_child(json.loads(args.child))))
        return
    if args.profile_child:
        profile_child(json.loads(args.profile_child))
        return
    if args.profile:
        if args.profile not in OPS:
            parser.error(f"--profile: unknown operation {args.profile!r}; one of {', '.join(OPS)}")
        partitions = parse_size(args.size)
        snap = snapshot_path(args.work_dir, partitions, args.profile == "raise-dead")
        spec = {
            "op": args.profile,
            "partitions": partitions,
            "snapshot": str(snap),
            "out": str(args.work_dir / f"ops-out-{os.getpid()}.json"),
        }
        cmd = [sys.executable, str(Path(__file__).resolve()), "--profile-child", json.dumps(spec)]
        subprocess.run(cmd, cwd=ROOT, check=False)
        return

    ops = args.ops.split(",")
    unknown = [op for op in ops if op not in OPS]
    if unknown:
        parser.error(f"--ops: unknown {', '.join(unknown)}; use {', '.join(OPS)}")
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    print(
        f"# {len(sizes) * len(ops)} cases; python {platform.python_version()}, "
        f"{os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    print(header(COLUMNS), flush=True)
    rows = []
    for size in sizes:
        for op in ops:
            snap = snapshot_path(args.work_dir, size, op == "raise-dead")
            case = {"partitions": size, "op": op}
            row = run_case({**case, "snapshot": str(snap)}, args.work_dir, args.timeout)
            row.pop("snapshot", None)
            rows.append(row)
            print(line(row), flush=True)
    if args.json_out:
        doc = {"benchmark": "bench/bench_ops.py", "cpus": os.cpu_count(), "rows": rows}
        args.json_out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        print(f"# wrote {args.json_out}")


if __name__ == "__main__":
    main()
