"""How long after IncrementalAlterConfigs returns a broker reports a new throttle rate, and what
DescribeConfigs answers from (kreplica.executor.throttle_confirm relies on it).

Per mode, a 3-broker sandbox: `--trials` times, set leader.replication.throttled.rate on broker 2
and ask broker 2 for its configs until it shows the value: the answers before it did, and the
milliseconds. ZooKeeper mode also writes `/config/brokers/2` and `/config/topics/<t>` directly,
with no change notification: DescribeConfigs of the broker still shows the old value (answered
from what the broker applied), of the topic the new one (answered from ZooKeeper).

    .venv/bin/python bench/bench_throttle_lag.py [--modes zk,kraft] [--trials 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

RATE = "leader.replication.throttled.rate"
FOLLOWERS = "follower.replication.throttled.replicas"


def _describe(admin: Any, kind: str, name: str, key: str) -> str | None:
    from confluent_kafka.admin import ConfigResource, ResourceType  # type: ignore[attr-defined]

    rtype = ResourceType.TOPIC if kind == "topic" else ResourceType.BROKER
    resource = ConfigResource(rtype, name)
    entries = admin.describe_configs([resource], request_timeout=15)[resource].result(timeout=20)
    entry = entries.get(key)
    return None if entry is None else entry.value


def _alter(admin: Any, name: str, value: str) -> None:
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    entry = ConfigEntry(RATE, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.BROKER, name, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource], request_timeout=15).values():
        future.result(timeout=20)


def run(mode: str, trials: int) -> None:
    from confluent_kafka.admin import AdminClient

    from kreplica.testing import TopicSpec, create_topics, running_cluster

    with running_cluster(backend="sandbox", mode=mode, brokers=3, name=f"bench-lag-{mode}") as info:
        topic = TopicSpec("lag", partitions=1, replication_factor=2)
        create_topics(info.bootstrap_servers, [topic])
        admin = AdminClient({"bootstrap.servers": info.bootstrap_servers})
        lags: list[float] = []
        stale: list[int] = []
        for trial in range(trials):
            value = str(1_000_000 + trial)
            _alter(admin, "2", value)
            written = time.monotonic()
            answers = 0
            while _describe(admin, "broker", "2", RATE) != value:
                answers += 1
                if time.monotonic() - written > 30:
                    break
            lags.append((time.monotonic() - written) * 1000)
            stale.append(answers)
        print(
            f"{mode}: after the write returned, broker 2 showed the new rate after "
            f"median {statistics.median(lags):.0f} ms (max {max(lags):.0f} ms); answers still "
            f"showing the old rate per trial: {stale}"
        )
        if not info.zookeeper:
            return
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=info.zookeeper)
        zk.start()
        try:
            for path, key, value, kind, name in (
                ("/config/brokers/2", RATE, "777", "broker", "2"),
                ("/config/topics/lag", FOLLOWERS, "0:3", "topic", "lag"),
            ):
                data = json.loads(zk.get(path)[0])
                data.setdefault("config", {})[key] = value
                zk.set(path, json.dumps(data).encode())
                time.sleep(2)
                print(
                    f"{mode}: {path} holds {key}={value}, written with no change notification; "
                    f"DescribeConfigs({kind} {name}) answers {_describe(admin, kind, name, key)}"
                )
        finally:
            zk.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="zk,kraft")
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    for mode in args.modes.split(","):
        run(mode.strip(), args.trials)


if __name__ == "__main__":
    main()
