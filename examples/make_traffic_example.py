"""Write examples/traffic.json: a snapshot with measured rates (`kreplica snapshot --traffic`)
of a real 3-broker KRaft sandbox under known load. Needs Java 17+ and Maven (the sandbox);
takes about a minute. Not deterministic (a real measurement): the docs' samples are run
against the file it wrote.

    .venv/bin/python examples/make_traffic_example.py

The load, in bytes per second of record values (2,000-byte records):
- `orders` (6 partitions, RF 3): 200k, 100k, 50k, 20k, 10k and an idle partition; read by
  two groups that commit (`billing`, `audit`): fan-out 2.
- `clicks` (3 partitions, RF 2): 30k each; read by `dashboard`, which never commits: fan-out
  unknown.
- `profiles` (2 partitions, RF 2, compacted): 8k each; nobody reads it: fan-out 0.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from kreplica.testing import TopicSpec, create_topics, group_reader, paced_producer, running_cluster

HERE = Path(__file__).resolve().parent
WINDOW_S = "20"
ORDERS = (200_000, 100_000, 50_000, 20_000, 10_000)
TOPICS = (
    TopicSpec("orders", partitions=6, replication_factor=3),
    TopicSpec("clicks", partitions=3, replication_factor=2),
    TopicSpec(
        "profiles", partitions=2, replication_factor=2, configs={"cleanup.policy": "compact"}
    ),
)


RATES = {("orders", p): rate for p, rate in enumerate(ORDERS)}
RATES |= {("clicks", p): 30_000 for p in range(3)}
RATES |= {("profiles", p): 8_000 for p in range(2)}


def start_readers(stack: ExitStack, bootstrap: str) -> None:
    """The groups of the load: two committing on `orders`, one never committing on `clicks`."""
    for group in ("billing", "audit"):
        stack.enter_context(group_reader(bootstrap, group, "orders", commit=True))
    stack.enter_context(group_reader(bootstrap, "dashboard", "clicks", commit=False))


def main() -> None:
    with running_cluster(backend="sandbox", mode="kraft", name="traffic-example") as info:
        bootstrap = info.bootstrap_servers
        create_topics(bootstrap, TOPICS)
        with ExitStack() as stack:
            stack.enter_context(paced_producer(bootstrap, RATES))
            start_readers(stack, bootstrap)
            time.sleep(15)  # the groups join and commit before the window
            snapshot_with_traffic(bootstrap, HERE / "traffic.json", TOPICS)


def snapshot_with_traffic(bootstrap: str, out: Path, topics: Sequence[TopicSpec]) -> None:
    """`kreplica snapshot --traffic` of `topics` into `out`, over WINDOW_S seconds."""
    command = [sys.executable, "-m", "kreplica", "snapshot", "--bootstrap-server", bootstrap]
    command += ["--traffic", WINDOW_S, "-o", str(out)]
    for topic in topics:
        command += ["--topic", topic.name]
    subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
