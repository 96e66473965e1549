"""The fleet issue's moonshot: 10M partitions / 1,000 clusters audited and planned on
`local[2]` in under 10 minutes, memory bounded (prints figures, no asserts).

PYTHONPATH=. .venv/bin/python bench/bench_fleet_moonshot.py [--partitions 10000000]
    [--clusters 1000] [--folder DIR] [--master 'local[2]'] [--seed 0]

Writes the synthetic fleet (`write_fleet`, two processes; its time is printed apart, it is
not part of the figure) unless DIR already holds its files, then runs `kreplica fleet audit
--rf 3 --min-insync 2` and `kreplica fleet plan --rf 3 --force --replace-dead` as cron would:
fresh processes, Spark's start-up included, the default heap (KREPLICA_SPARK_MEMORY, 2g).
For each: wall time, exit code, what it wrote (findings, plans), and the peak resident
memory of the JVM and of all Python processes together, sampled from /proc every half
second, with the load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kreplica.fleet.synth import write_fleet


def _rss_mib(pid: int) -> tuple[str, float]:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return cmd, int(line.split()[1]) / 1024
    except OSError:
        pass
    return "", 0.0


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def run(cmd: list[str]) -> dict[str, float | int]:
    """Runs `cmd`, sampling its process tree: wall seconds, exit code, peak MiB."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = {"jvm": 0.0, "python": 0.0}
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.5):
            now = {"jvm": 0.0, "python": 0.0}
            for pid in _tree(proc.pid):
                name, mib = _rss_mib(pid)
                now["jvm" if name.endswith("java") else "python"] += mib
            for k in peak:
                peak[k] = max(peak[k], now[k])

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode:
        sys.stderr.write(err.decode(errors="replace")[-2000:])
    return {
        "seconds": round(time.monotonic() - start, 1),
        "exit": proc.returncode,
        "jvm_peak_mib": round(peak["jvm"]),
        "python_peak_mib": round(peak["python"]),
        "loadavg_1m": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=10_000_000)
    ap.add_argument("--clusters", type=int, default=1000)
    ap.add_argument("--folder", type=Path)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="kreplica-moonshot-"))
    snaps = folder / "snapshots"
    if len(list(snaps.glob("*.json"))) != args.clusters:
        start = time.monotonic()
        write_fleet(snaps, args.clusters, args.partitions, seed=args.seed, processes=2)
        print(f"wrote the fleet in {time.monotonic() - start:.0f} s (not in the figures)")
    size = sum(f.stat().st_size for f in snaps.glob("*.json")) / 2**20
    print(f"{args.partitions} partitions / {args.clusters} clusters: {size:.0f} MiB of snapshots")
    kreplica = [sys.executable, "-m", "kreplica", "fleet"]
    common = ["--input", str(snaps), "--master", args.master]
    figures = {}
    total = 0.0
    for name, extra in (("audit", ["--min-insync", "2"]), ("plan", ["--force", "--replace-dead"])):
        out = folder / name
        shutil.rmtree(out, ignore_errors=True)
        fig = run([*kreplica, name, *common, "--out", str(out), "--rf", "3", *extra])
        summary = json.loads((out / f"{name}-summary.json").read_text())
        fig["clusters"] = summary["totals"]["clusters"]
        if name == "audit":
            fig["findings"] = sum(summary["totals"][k] for k in ("errors", "warnings", "infos"))
        else:
            fig["with_plans"] = sum(1 for c in summary["clusters"] if c.get("files"))
        figures[name] = fig
        total += float(fig["seconds"])
        print(f"fleet {name}: " + ", ".join(f"{k} {v}" for k, v in fig.items()), flush=True)
    print(f"audit + plan: {total:.0f} s (goal: under 600 s)")


if __name__ == "__main__":
    main()
