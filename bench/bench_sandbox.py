"""Start-up and shutdown time of the local sandbox clusters (prints, no asserts).

    .venv/bin/python bench/bench_sandbox.py [--runs 3] [--modes zk,kraft] [--brokers 3]

For each mode: `up` (JVMs started until all brokers are registered and metadata shows them),
creating the integration tests' standard topics, and `down` (SIGTERM, then SIGKILL after the
grace period). Jars must already be fetched (`python -m kreplica.sandbox fetch`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integration"))

from conftest import STANDARD_TOPICS

from kreplica import sandbox
from kreplica.testing import create_topics


def _summary(label: str, values: list[float]) -> str:
    return (
        f"{label:<22} median {statistics.median(values):6.2f}s  "
        f"min {min(values):6.2f}s  max {max(values):6.2f}s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", default="zk,kraft")
    parser.add_argument("--brokers", type=int, default=3)
    args = parser.parse_args()
    print(f"cpus {os.cpu_count()}, brokers {args.brokers}, racks a,b,c, runs {args.runs}")
    for mode in args.modes.split(","):
        ups, topics, downs = [], [], []
        version = sandbox.DEFAULT_ZK_VERSION if mode == "zk" else sandbox.DEFAULT_KRAFT_VERSION
        sandbox.fetch(version)
        for run in range(args.runs):
            name = f"bench-{mode}-{os.getpid()}-{run}"
            start = time.perf_counter()
            info = sandbox.up(mode=mode, brokers=args.brokers, name=name)
            ups.append(time.perf_counter() - start)
            try:
                start = time.perf_counter()
                create_topics(info.bootstrap_servers, STANDARD_TOPICS)
                topics.append(time.perf_counter() - start)
            finally:
                start = time.perf_counter()
                sandbox.down(name)
                downs.append(time.perf_counter() - start)
        print(f"{mode} (Kafka {version})")
        print("  " + _summary("up", ups))
        print("  " + _summary("standard topics", topics))
        print("  " + _summary("down", downs))
        totals = [a + b + c for a, b, c in zip(ups, topics, downs, strict=True)]
        print("  " + _summary("total", totals))


if __name__ == "__main__":
    main()
