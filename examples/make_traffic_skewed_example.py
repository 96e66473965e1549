"""Write examples/traffic-skewed.json: a snapshot with measured rates (`kreplica snapshot
--traffic`) of a real 6-broker KRaft sandbox (racks a, b, c: brokers 1-6 in turn) whose traffic
is skewed: the sample `rebalance --by traffic` plans from in docs/traffic.md. Measured over
make_traffic_example.py's window (20 s), the way it measures. Needs Java 17+
and Maven (the sandbox); takes about two minutes. Not deterministic (a real measurement): the
docs' samples are run against the file it wrote.

    .venv/bin/python examples/make_traffic_skewed_example.py

The load, in bytes per second of record values (2,000-byte records):
- `events`, 12 partitions, RF 2, every one led by broker 1 with its follower on broker 2 or 3,
  written at 40k, 30k, 20k, 20k, 10k (four) and 5k (four), read by one committing group
  (`billing`): broker 1 takes every byte of it in and sends every byte out;
- `audit`, 6 partitions, RF 2, placed by Kafka, 2k each, read by nobody.
"""

from __future__ import annotations

import time
from pathlib import Path

from make_traffic_example import snapshot_with_traffic  # beside this script

from kreplica.testing import TopicSpec, create_topics, group_reader, paced_producer, running_cluster

HERE = Path(__file__).resolve().parent
RATES = (40_000, 30_000, 20_000, 20_000, *(10_000,) * 4, *(5_000,) * 4)
TOPICS = (
    TopicSpec("events", assignment={p: [1, 2 + p % 2] for p in range(len(RATES))}),
    TopicSpec("audit", partitions=6, replication_factor=2),
)


def main() -> None:
    with running_cluster(
        backend="sandbox", mode="kraft", brokers=6, name="traffic-skewed-example"
    ) as info:
        bootstrap = info.bootstrap_servers
        create_topics(bootstrap, TOPICS)
        rates = {("events", p): rate for p, rate in enumerate(RATES)}
        rates |= {("audit", p): 2_000 for p in range(6)}
        with (
            paced_producer(bootstrap, rates),
            group_reader(bootstrap, "billing", "events", commit=True),
        ):
            time.sleep(15)  # the group joins and commits before the window
            snapshot_with_traffic(bootstrap, HERE / "traffic-skewed.json", TOPICS)


if __name__ == "__main__":
    main()
