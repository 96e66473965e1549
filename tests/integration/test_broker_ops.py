"""`kreplica drain` and `kreplica rebalance` applied to a real cluster, run as an operator runs
them (`--yes`: plan, apply through the executor, then the preferred leader election).

A private KRaft sandbox of 4 brokers on racks a, b, c, a. Topic `ledger` (8 partitions, RF 2,
keyed records) and `skewed` (a hand layout piled on brokers 1 and 2, keyed records):

1. drain broker 4: exit 0, `kreplica verify` exit 0, no replica left on broker 4, every leader
   on its preferred replica, moves = the replicas broker 4 held;
2. rebalance: exit 0, verify exit 0, replica spread <= 1 per topic and per broker, preferred
   leaders spread <= 1 and elected;
3. every record still readable, per partition in order.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.integration.conftest import private_cluster
from tests.integration.test_apply import (
    Kafka,
    Operator,
    _ok,
    _plan,
    consume_all,
    produce_keyed,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TOPICS = (
    TopicSpec("ledger", partitions=8, replication_factor=2),
    TopicSpec(
        "skewed",
        assignment={0: [1, 2], 1: [2, 1], 2: [1, 2], 3: [1, 3], 4: [2, 1], 5: [1, 4]},
    ),
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[SandboxInfo]:
    with private_cluster("brokerops", "kraft", brokers=4) as info:
        create_topics(info.bootstrap_servers, TOPICS)
        yield info


@pytest.fixture(scope="module")
def kafka(cluster: SandboxInfo) -> Iterator[Kafka]:
    client = Kafka(cluster)
    yield client
    client.close()


def _spread(values: list[int]) -> int:
    return max(values) - min(values)


def test_drain_then_rebalance_keeps_every_record(
    cluster: SandboxInfo, kafka: Kafka, tmp_path: Path
) -> None:
    op = Operator(cluster, tmp_path)
    produced = {t.name: produce_keyed(cluster.bootstrap_servers, t.name, 3000) for t in TOPICS}
    names = [t.name for t in TOPICS]
    before = {k: v for t in names for k, v in kafka.replicas(t).items()}
    on_4 = sum(1 for reps in before.values() if 4 in reps)
    assert on_4 > 0

    # 1. drain broker 4
    proc = _ok(op.run("drain", "--brokers", "4", "--yes", "--out", "drain.json", *op.source))
    doc = json.loads((tmp_path / "drain.kreplica.json").read_text())
    assert doc["report"]["replicas_added"] == doc["report"]["lower_bound_replicas_added"] == on_4
    # read from the brokers into columns, disks known: the column drain, its plan fits
    assert doc["report"]["engine"]["name"] == "columns", doc["report"]["engine"]
    _ok(op.run("verify", "drain.json", *op.source))
    now = {k: v for t in names for k, v in kafka.replicas(t).items()}
    assert not [k for k, reps in now.items() if 4 in reps]
    planned = _plan(tmp_path / "drain.json")
    assert {k: now[k] for k in planned} == planned
    assert {k: v for k, v in now.items() if k not in planned} == {
        k: v for k, v in before.items() if k not in planned
    }

    def off() -> list[tuple[str, int]]:
        return [
            (t, p)
            for t in names
            for p, (reps, leader, _) in kafka.partitions(t).items()
            if leader != reps[0]
        ]

    kafka.wait("preferred leaders after kreplica drain", lambda: not off())
    print(proc.stdout[-600:])

    # 2. rebalance (broker 4 is empty now: once undrained, it gets its share back; until
    # then later plans leave it out, as an applied drain is remembered)
    assert "broker 4 drained: later plans on cluster" in proc.stdout
    left_out = _ok(op.run("rebalance", "--dry-run", *op.source))
    assert "info: broker 4 left out: drained on " in left_out.stdout
    _ok(op.run("brokers", "undrain", "4"))
    proc = _ok(op.run("rebalance", "--yes", "--out", "rebalance.json", *op.source))
    _ok(op.run("verify", "rebalance.json", *op.source))
    kafka.wait("preferred leaders after kreplica rebalance", lambda: not off())
    brokers = [1, 2, 3, 4]
    per_broker: Counter[int] = Counter()
    leaders: Counter[int] = Counter()
    for t in names:
        per_topic: Counter[int] = Counter()
        for reps, leader, _ in kafka.partitions(t).values():
            per_topic.update(reps)
            leaders[leader] += 1
        per_broker.update(per_topic)
        assert _spread([per_topic[b] for b in brokers]) <= 1, (t, per_topic)
    assert _spread([per_broker[b] for b in brokers]) <= 1, per_broker
    assert _spread([leaders[b] for b in brokers]) <= 1, leaders
    print(proc.stdout[-600:])

    # 3. every record, in order
    for t in names:
        assert consume_all(cluster.bootstrap_servers, t) == produced[t]
    print("\n".join(op.log))
