"""How long `kreplica --help` takes to start, next to a bare `python -c pass`.

    .venv/bin/python bench/bench_startup.py [--runs 20]

Prints the median and best wall time of each command over N runs (fresh processes), the
overhead over bare Python, and the slowest imports (python -X importtime). Subcommands cost
more than `--help`: typer (>= 0.2x) imports pydantic to convert option values. In typer 0.29
every parameter's value goes through typer._adapters (a pydantic TypeAdapter) the first time
it is processed, the group's own `--help` included when a subcommand is given (its value is
None, not a bool), so `kreplica SUB --help` pays the import too; only patching typer's private
_TyperParameter would avoid it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = str(REPO / "examples" / "cluster.json")
KREPLICA = [sys.executable, "-m", "kreplica"]

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import kreplica.cli'": [sys.executable, "-c", "import kreplica.cli"],
    "kreplica --help": [*KREPLICA, "--help"],
    "kreplica expand --help": [*KREPLICA, "expand", "--help"],
    "kreplica expand ... --dry-run (demo)": [
        *KREPLICA,
        "expand",
        "--snapshot",
        EXAMPLE,
        "--topic",
        "orders",
        "--rf",
        "4",
        "--dry-run",
    ],
}


def time_once(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    return time.perf_counter() - start


def slowest_imports(argv: list[str], top: int) -> list[tuple[int, str]]:
    proc = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, cwd=REPO
    )
    rows: list[tuple[int, str]] = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2].rstrip()
            depth = (len(name) - len(name.lstrip())) // 2
            if depth <= 1:  # top-level imports and what they pull in directly
                rows.append((int(parts[1]), name.strip()))
    return sorted(rows, reverse=True)[:top]


def measure(runs: int, names: list[str] | None = None) -> dict[str, list[float]]:
    """Wall seconds of `runs` fresh processes per command (after one untimed warming run);
    bench/compare_kafka.py's compare_startup uses this too. The commands take turns, run by
    run, so a busy spell on a shared machine slows all of them rather than one."""
    chosen = names or list(COMMANDS)
    for name in chosen:
        time_once(COMMANDS[name])  # warm the page cache and .pyc files
    results: dict[str, list[float]] = {name: [] for name in chosen}
    for _ in range(runs):
        for name in chosen:
            results[name].append(time_once(COMMANDS[name]))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]} · {args.runs} runs each · {sys.executable}")
    results = measure(args.runs)
    base = statistics.median(results["python -c pass"])
    print(f"{'command':40} {'median ms':>10} {'best ms':>9} {'over bare python':>18}")
    for name, samples in results.items():
        median = statistics.median(samples)
        print(
            f"{name:40} {median * 1000:10.1f} {min(samples) * 1000:9.1f} "
            f"{(median - base) * 1000:+17.1f}ms"
        )
    for name in ("kreplica --help", "kreplica expand --help"):
        print(f"\nslowest imports of `{name}` (cumulative µs, top level and one below):")
        for micros, module in slowest_imports(COMMANDS[name], 6):
            print(f"  {micros:8d}  {module}")


if __name__ == "__main__":
    main()
