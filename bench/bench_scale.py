"""Planner and I/O at scale: snapshot file -> written plan, one fresh process per case.

    .venv/bin/python bench/bench_scale.py [--quick | --full] [--sizes 10k,100k,1M]
        [--brokers 6,50,500] [--racks 0,3,6] [--strategies kafka,append,balanced]
        [--ops rf+1,rf-1,partitions+50%,rack-repair] [--json-out PATH] [--with-kafka]

Each case runs, in a fresh Python process, what
`kreplica plan --snapshot F --topics '.*' --rf 3 --dry-run --output json` does (the CLI entry
point in-process, stdout to a file), and reports:

- wall / cpu: seconds from importing kreplica.cli to the JSON written (interpreter start-up
  excluded; cpu is the process's user+system time, steadier than wall on a shared machine)
- rss: peak resident memory of that process (ru_maxrss), MiB
- added / removed: replicas the plan adds / removes, with the lower bound for the request
- moved: existing replicas moved (min(added, removed) per changed partition)
- tspread / cspread: worst topic replica spread and the cluster spread after the plan
- rackviol: partitions on fewer racks than min(RF, racks) after the plan

Snapshots: topics of 500 partitions at RF 2, laid out by Kafka's placement (the first topic
and every 50th after it laid out as if there were no racks, so rack repair has work), with
leader, ISR and sizes; generated once into --work-dir and reused. Operations: rf+1 (RF 2 ->
3), rf-1 (2 -> 1, with --force: RF 1 is not above min.insync.replicas), partitions+50% (500
-> 750 per topic), rack-repair (--fix-racks; skipped without racks).

Default matrix: sizes 10k, 100k, 1M at 500 brokers on 6 racks, every strategy and
operation (36 runs). --quick: 10k and 100k only. --full: sizes x brokers {6, 50, 500} x
racks {0, 3, 6} x strategies x operations. --with-kafka appends bench/compare_kafka.py's rows
(AdminUtils against kreplica.kafka, `kafka-reassign-partitions --generate` end to end,
start-up). Figures are printed, never asserted.
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
RF = 2
PER_TOPIC = 500
OPS = ("rf+1", "rf-1", "partitions+50%", "rack-repair")
STRATEGIES = ("kafka", "append", "balanced")
DEFAULT_WORK_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / (
    "kreplica/bench-scale"
)


def parse_size(text: str) -> int:
    text = text.strip().lower().replace("_", "")
    for suffix, factor in (("k", 1_000), ("m", 1_000_000)):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * factor)
    return int(text)


def size_name(n: int) -> str:
    if n >= 1_000_000 and n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n >= 1_000 and n % 1_000 == 0:
        return f"{n // 1_000}k"
    return str(n)


def op_args(op: str) -> list[str]:
    if op == "rf+1":
        return ["--rf", str(RF + 1)]
    if op == "rf-1":
        return ["--rf", str(RF - 1), "--force"]  # RF 1 <= min.insync.replicas needs --force
    if op == "partitions+50%":
        return ["--partitions", str(PER_TOPIC * 3 // 2)]
    if op == "rack-repair":
        return ["--fix-racks"]
    raise ValueError(op)


def snapshot_path(work: Path, brokers: int, racks: int, partitions: int) -> Path:
    path = work / f"snap-b{brokers}-r{racks}-p{partitions}-rf{RF}.json"
    if not path.exists():
        sys.path.insert(0, str(HERE))
        from planner_clusters import write_scale_snapshot

        work.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        tmp = path.with_suffix(".tmp")
        write_scale_snapshot(str(tmp), brokers=brokers, racks=racks, partitions=partitions, rf=RF)
        tmp.replace(path)
        print(
            f"# generated {path.name} in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    return path


# --- one case, in a fresh process ---------------------------------------------------------


def run_cli(argv: list[str], out_path: str) -> Any:
    """The CLI entry point in this process, stdout to `out_path`; its exit code."""
    real_stdout = sys.stdout
    code: Any = 0
    with open(out_path, "w", encoding="utf-8") as out:
        sys.stdout = out
        sys.argv = argv
        try:
            from kreplica.cli import main

            main()
        except SystemExit as exc:
            code = exc.code
        finally:
            sys.stdout = real_stdout
    return code


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    """Runs in the child: the CLI in-process, timed, then the figures from its output."""
    argv = [
        "kreplica",
        "plan",
        "--snapshot",
        spec["snapshot"],
        "--topics",
        ".*",
        *op_args(spec["op"]),
        "--strategy",
        spec["strategy"],
        "--dry-run",
        "--output",
        "json",
    ]
    out_path = spec["out"]
    started, cpu0 = time.perf_counter(), time.process_time()
    code = run_cli(argv, out_path)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    row: dict[str, Any] = {
        "exit": code if isinstance(code, int) else 1,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "peak_rss_mib": round(rss, 1),
        "output_bytes": os.path.getsize(out_path),
    }
    import orjson

    with open(out_path, "rb") as f:
        doc = orjson.loads(f.read())
    os.unlink(out_path)
    if doc.get("errors"):
        row["error"] = doc["errors"][0].get("message")
        return row
    data = doc["data"]
    report = data["report"]
    spreads = report.get("topic_spread_after") or {}
    row.update(
        {
            "partitions_reassigned": len(data["reassignment"]["partitions"]),
            "partitions_created": len(data["new_partitions"]),
            "replicas_added": report["replicas_added"],
            "lower_bound_added": report["lower_bound_replicas_added"],
            "replicas_removed": report["replicas_removed"],
            "lower_bound_removed": report["lower_bound_replicas_removed"],
            "existing_replicas_moved": report["existing_replicas_moved"],
            "topic_spread_after_max": max(spreads.values(), default=0),
            "topics_spread_over_1": sum(1 for v in spreads.values() if v > 1),
            "cluster_spread_after": report["cluster_spread_after"],
            "rack_violations_after": report["rack_violations_after"],
            "rack_violations_before": report["rack_violations_before"],
        }
    )
    return row


def run_case(
    case: dict[str, Any], work: Path, timeout: float, script: str = __file__, prefix: str = "out"
) -> dict[str, Any]:
    """One case in a fresh process (`script --child SPEC`): its JSON row, or the exit code and
    last stderr line, or `timeout` (bench_ops.py runs its cases through here too)."""
    spec = {**case, "out": str(work / f"{prefix}-{os.getpid()}.json")}
    cmd = [sys.executable, str(Path(script).resolve()), "--child", json.dumps(spec)]
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        Path(spec["out"]).unlink(missing_ok=True)
        return {
            **case,
            "exit": None,
            "timeout": timeout,
            "error": f"timed out after {timeout:.0f} s",
        }
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {**case, "exit": proc.returncode, "error": tail}
    return {**case, **json.loads(lines[-1])}


# --- the table -----------------------------------------------------------------------------

COLUMNS = (
    ("size", 5),
    ("brokers", 7),
    ("racks", 5),
    ("strategy", 8),
    ("op", 14),
    ("wall s", 7),
    ("cpu s", 7),
    ("RSS MiB", 7),
    ("added/LB", 17),
    ("removed/LB", 17),
    ("moved", 6),
    ("tspread", 7),
    ("cspread", 7),
    ("rackviol", 8),
)


def header(columns: tuple[tuple[str, int], ...] = COLUMNS) -> str:
    return "  ".join(f"{name:>{width}}" for name, width in columns)


def line(row: dict[str, Any]) -> str:
    def pair(a: str, b: str) -> str:
        return f"{row[a]}/{row[b]}" if a in row else "-"

    case = [size_name(row["partitions"]), row["brokers"], row["racks"], row["strategy"], row["op"]]
    if "error" in row and "replicas_added" not in row:
        head = "  ".join(f"{c!s:>{w}}" for c, (_, w) in zip(case, COLUMNS, strict=False))
        return f"{head}  error: {row['error']}"
    cells = [
        *case,
        f"{row['wall_s']:.2f}",
        f"{row['cpu_s']:.2f}",
        f"{row['peak_rss_mib']:.0f}",
        pair("replicas_added", "lower_bound_added"),
        pair("replicas_removed", "lower_bound_removed"),
        row.get("existing_replicas_moved", "-"),
        row.get("topic_spread_after_max", "-"),
        row.get("cluster_spread_after", "-"),
        row.get("rack_violations_after", "-"),
    ]
    return "  ".join(f"{c!s:>{w}}" for c, (_, w) in zip(cells, COLUMNS, strict=True))


def cases(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.full:
        sizes, brokers, racks = [10_000, 100_000, 1_000_000], [6, 50, 500], [0, 3, 6]
    elif args.quick:
        sizes, brokers, racks = [10_000, 100_000], [500], [6]
    else:
        sizes, brokers, racks = [10_000, 100_000, 1_000_000], [500], [6]
    if args.sizes:
        sizes = [parse_size(s) for s in args.sizes.split(",")]
    if args.brokers:
        brokers = [int(b) for b in args.brokers.split(",")]
    if args.racks:
        racks = [int(r) for r in args.racks.split(",")]
    strategies = args.strategies.split(",") if args.strategies else list(STRATEGIES)
    ops = args.ops.split(",") if args.ops else list(OPS)
    out = []
    for size in sizes:
        for b in brokers:
            for r in racks:
                if r > b:
                    continue
                for strategy in strategies:
                    for op in ops:
                        if op == "rack-repair" and r == 0:
                            continue
                        out.append(
                            {"partitions": size, "brokers": b, "racks": r, "strategy": strategy}
                            | {"op": op}
                        )
    return out


def kafka_rows(args: argparse.Namespace, sizes: list[int]) -> list[dict[str, Any]]:
    """bench/compare_kafka.py's rows (another engineer's module), when it is there."""
    if not (HERE / "compare_kafka.py").exists():
        print("# --with-kafka: bench/compare_kafka.py is missing; skipped", file=sys.stderr)
        return []
    sys.path.insert(0, str(HERE))
    import compare_kafka

    rows: list[dict[str, Any]] = []
    for name, call in (
        ("assign", lambda: compare_kafka.compare_assign(partitions=sizes, verbose=True)),
        ("generate", lambda: compare_kafka.compare_generate(verbose=True)),
        ("startup", lambda: compare_kafka.compare_startup(verbose=True)),
    ):
        try:
            got = call()
        except Exception as exc:  # one comparison failing must not lose the others
            print(f"# --with-kafka {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            got = [{"error": f"{type(exc).__name__}: {exc}"}]
        rows += [{"comparison": name, **row} for row in got]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="10k and 100k partitions only")
    parser.add_argument("--full", action="store_true", help="the whole matrix (long)")
    parser.add_argument("--sizes", help="partition counts, e.g. 10k,100k,1M")
    parser.add_argument("--brokers", help="broker counts, e.g. 6,50,500")
    parser.add_argument("--racks", help="rack counts, e.g. 0,3,6")
    parser.add_argument("--strategies", help="kafka,append,balanced (default: all)")
    parser.add_argument("--ops", help=f"{','.join(OPS)} (default: all)")
    parser.add_argument("--json-out", type=Path, help="write every row as JSON here")
    parser.add_argument("--work-dir", type=Path, default=DEFAULT_WORK_DIR)
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per case")
    parser.add_argument("--with-kafka", action="store_true", help="append compare_kafka rows")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_child(json.loads(args.child))))
        return

    todo = cases(args)
    print(
        f"# {len(todo)} cases; python {platform.python_version()}, {os.cpu_count()} cpus, "
        f"load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    print(header(), flush=True)
    rows = []
    for case in todo:
        snap = snapshot_path(args.work_dir, case["brokers"], case["racks"], case["partitions"])
        row = run_case({**case, "snapshot": str(snap)}, args.work_dir, args.timeout)
        row.pop("snapshot", None)
        rows.append(row)
        print(line(row), flush=True)
    extra = kafka_rows(args, sorted({c["partitions"] for c in todo})) if args.with_kafka else []
    for row in extra:
        print(json.dumps(row, sort_keys=True))
    if args.json_out:
        doc = {
            "benchmark": "bench/bench_scale.py",
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "rows": rows,
            "kafka_rows": extra,
        }
        args.json_out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        print(f"# wrote {args.json_out}")


if __name__ == "__main__":
    main()
