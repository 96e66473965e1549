"""Client impact against a real cluster (the session's KRaft cluster, topics of its own):

- keyed records produced by confluent-kafka with the Java-compatible partitioner
  (``murmur2_random``) land on the partitions `kreplica partition-for` predicts, before and
  after the topic grows;
- a real consumer group (three confluent-kafka consumers, different subscriptions, range and
  roundrobin) is read with `kreplica consumers --group G`; the simulation of the same members
  equals what the coordinator handed out, and `--after PLAN.json` of an add-partitions plan
  predicts the assignment the consumers get once the partitions exist.

librdkafka's range and roundrobin assignors are compared here (they agree with Java's on
these groups); the Java classes themselves, sticky ones included, are compared in
tests/integration/test_impact_jvm.py.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from kreplica.impact.assignors import assign, assignment_json, parse_group_document
from kreplica.impact.partitioner import partition_for_key
from kreplica.sandbox import SandboxInfo
from kreplica.testing import wait_for_leaders
from tests.support.cli import run_kreplica

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]


def kreplica(*args: str) -> dict[str, Any]:
    proc = run_kreplica(*args, "--output", "json", cwd=REPO, isolated=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc["data"]


@pytest.fixture
def cluster(kraft_cluster: SandboxInfo) -> SandboxInfo:
    return kraft_cluster


def _create(bootstrap: str, topics: dict[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()]).values():
        future.result(30)


def _produce(bootstrap: str, topic: str, keys: list[bytes]) -> dict[bytes, int]:
    from confluent_kafka import Producer

    landed: dict[bytes, int] = {}

    def report(err: Any, msg: Any) -> None:
        assert err is None, err
        landed[msg.key()] = msg.partition()

    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key in keys:
        producer.produce(topic, key=key, value=b"v", on_delivery=report)
        producer.poll(0)
    remaining = producer.flush(30)
    producer.close()  # a producer left open logs to stderr once its cluster is gone
    assert remaining == 0
    return landed


def test_keyed_records_land_on_predicted_partitions(cluster: SandboxInfo) -> None:
    bootstrap = cluster.bootstrap_servers
    _create(bootstrap, {"impact-keys": 7})
    rnd = random.Random(7)
    keys = [f"user-{rnd.getrandbits(40)}".encode() for _ in range(400)]
    keys += [rnd.randbytes(rnd.randint(1, 16)) for _ in range(100)]
    landed = _produce(bootstrap, "impact-keys", keys)
    assert landed == {k: partition_for_key(k, 7) for k in keys}
    data = kreplica(
        "partition-for", "--bootstrap-server", bootstrap, "--topic", "impact-keys",
        "--key-hex", "--key", keys[-1].hex(),
    )  # fmt: skip
    assert data["partitions"] == 7 and data["partition"] == landed[keys[-1]]
    # grow the topic: the producer (after a metadata refresh) follows the new count
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions("impact-keys", 10)])["impact-keys"].result(30)
    wait_for_leaders(bootstrap, {"impact-keys": 10})  # a new producer then sees all 10
    landed = _produce(bootstrap, "impact-keys", keys)
    assert landed == {k: partition_for_key(k, 10) for k in keys}


def _consumers(bootstrap: str, group: str, strategy: str, subs: dict[str, list[str]]) -> list[Any]:
    from confluent_kafka import Consumer

    consumers = []
    for client_id, topics in subs.items():
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": client_id,
                "partition.assignment.strategy": strategy,
                "topic.metadata.refresh.interval.ms": 1000,
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe(topics)
        consumers.append(consumer)
    return consumers


def _wait_assigned(consumers: list[Any], total: int, timeout_s: float = 60) -> dict[str, list[str]]:
    """Poll until the consumers together own `total` partitions and it stays so for 3 s."""
    deadline = time.monotonic() + timeout_s
    stable_since: float | None = None
    last: dict[str, list[str]] = {}
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.05)
        now = {
            c.memberid(): sorted(f"{tp.topic}-{tp.partition}" for tp in c.assignment())
            for c in consumers
        }
        if sum(len(v) for v in now.values()) == total and now == last:
            stable_since = stable_since or time.monotonic()
            if time.monotonic() - stable_since > 3:
                return now
        else:
            stable_since = None
        last = now
    raise AssertionError(f"group not stable with {total} partitions: {last}")


def _sorted(assignment: dict[str, list[str]]) -> dict[str, list[str]]:
    return {m: sorted(v) for m, v in assignment.items()}


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_real_group_matches_simulation_now_and_after_a_plan(
    cluster: SandboxInfo, strategy: str, tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap_servers
    a, b = f"impact-{strategy}-a", f"impact-{strategy}-b"
    _create(bootstrap, {a: 5, b: 3})
    group = f"impact-group-{strategy}"
    subs = {"c0": [a, b], "c1": [a, b], "c2": [a]}
    consumers = _consumers(bootstrap, group, strategy, subs)
    try:
        coordinator = _wait_assigned(consumers, 8)
        data = kreplica("consumers", "--bootstrap-server", bootstrap, "--group", group)
        [entry] = data["groups"]
        assert entry["assignor"] == strategy and entry["members"] == 3
        assert _sorted(entry["now"]) == coordinator
        # the same members from scratch, through the simulation
        members = [{"id": m, "topics": subs[m.split("-")[0]]} for m in coordinator]
        doc = {"members": members, "topics": {a: 5, b: 3}}
        group_file = tmp_path / "group.json"
        group_file.write_text(json.dumps(doc))
        simulated = kreplica(
            "consumers", "simulate", "--assignor", strategy, "--group-file", str(group_file)
        )
        assert _sorted(simulated["assignment"]) == coordinator
        # an add-partitions plan, its predicted assignment, then the real one
        plan = tmp_path / "plan.json"
        planned = kreplica(
            "add-partitions", "--bootstrap-server", bootstrap, "--topic", a, "-p", "8",
            "--dry-run", "--out", str(plan),
        )  # fmt: skip
        impact = planned["impact"]
        assert impact["topics"][0]["keys"]["moving_fraction"] == "7/8"  # gcd(5, 8) / 8 stay
        [planned_group] = [g for g in impact["groups"] if g["group"] == group]
        predicted = kreplica(
            "consumers", "--bootstrap-server", bootstrap, "--group", group, "--after", str(plan)
        )["groups"][0]
        assert predicted["after"] == planned_group["after"]
        from confluent_kafka.admin import AdminClient, NewPartitions

        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_partitions([NewPartitions(a, 8)])[a].result(30)
        real_after = _wait_assigned(consumers, 11)
        assert _sorted(predicted["after"]) == real_after
        spec_after = assign(strategy, parse_group_document({**doc, "topics": {a: 8, b: 3}}))
        assert _sorted(assignment_json(spec_after)) == real_after
    finally:
        for c in consumers:
            c.close()


def test_add_partitions_measures_the_remapping_on_keys_sampled_from_the_topic(
    cluster: SandboxInfo,
) -> None:
    """--sample N reads N keys from the topic's newest records; the measured share is the one
    the same keys give offline, and keyless records are not counted."""
    from kreplica.impact.partitioner import measure_remap

    bootstrap = cluster.bootstrap_servers
    _create(bootstrap, {"impact-sample": 6})
    rnd = random.Random(11)
    keys = [f"order-{rnd.getrandbits(32)}".encode() for _ in range(300)]
    _produce(bootstrap, "impact-sample", keys)
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for _ in range(50):
        producer.produce("impact-sample", value=b"no key")
    remaining = producer.flush(30)
    producer.close()  # a producer left open logs to stderr once its cluster is gone
    assert remaining == 0
    data = kreplica(
        "add-partitions", "--bootstrap-server", bootstrap, "--topic", "impact-sample",
        "--partitions", "9", "--dry-run", "--sample", "1000",
    )  # fmt: skip
    [row] = [t for t in data["impact"]["topics"] if t["topic"] == "impact-sample"]
    measured = row["measured"]
    expected = measure_remap(keys, 6, 9)
    assert measured["keys"] == expected.keys == 300
    assert measured["moving"] == expected.moving
