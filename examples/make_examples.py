"""Regenerate the example snapshots in this folder (deterministic: same bytes every run).

    .venv/bin/python examples/make_examples.py

The layouts are what a ZooKeeper-mode Kafka would have produced: topics created by
AdminUtils.assignReplicasToBrokers (rack-aware), one topic later grown with add-partitions
(AdminZkClient.createNewPartitionsAssignment), and one topic hand-assigned by an operator.
This is a small, separate implementation of those two algorithms (from Kafka's source as
described in reference/kafka-internals.md §1.5 and §1.7), so the examples do not depend on
the code they are used to test.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent


def rack_alternated(racks: dict[int, str]) -> list[int]:
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    queues = [by_rack[r] for r in sorted(by_rack)]
    out: list[int] = []
    i = 0
    while len(out) < len(racks):
        for queue in queues:
            if i < len(queue):
                out.append(queue[i])
        i += 1
    return out


def replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def assign_rack_aware(
    racks: dict[int, str], partitions: int, rf: int, start: int, shift: int, first_id: int = 0
) -> dict[int, list[int]]:
    brokers = rack_alternated(racks)
    n = len(brokers)
    rack_count = len(set(racks.values()))
    out: dict[int, list[int]] = {}
    p = first_id
    for _ in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = brokers[first]
        replicas = [leader]
        racks_used = {racks[leader]}
        k = 0
        for _follower in range(rf - 1):
            while True:
                b = brokers[replica_index(first, shift * rack_count, k, n)]
                k += 1
                if (racks[b] not in racks_used or len(racks_used) == rack_count) and (
                    b not in replicas
                ):
                    replicas.append(b)
                    racks_used.add(racks[b])
                    break
        out[p] = replicas
        p += 1
    return out


def add_partitions(
    racks: dict[int, str], existing: dict[int, list[int]], total: int
) -> dict[int, list[int]]:
    """ZK add-partitions: fixed start = index (in id order) of the first broker >= p0's leader,
    used as an index into the rack-alternated list, continuing from the existing count."""
    p0_leader = existing[0][0]
    by_id = sorted(racks)
    start = next((i for i, b in enumerate(by_id) if b >= p0_leader), 0)
    added = assign_rack_aware(
        racks, total - len(existing), len(existing[0]), start, start, first_id=len(existing)
    )
    return {**existing, **added}


def partitions_json(
    assignment: dict[int, list[int]],
    rng: random.Random,
    size_range: tuple[int, int],
    out_of_sync: dict[int, int] | None = None,
) -> list[dict[str, object]]:
    parts = []
    for pid in sorted(assignment):
        replicas = assignment[pid]
        isr = [b for b in replicas if (out_of_sync or {}).get(pid) != b]
        parts.append(
            {
                "partition": pid,
                "replicas": replicas,
                "leader": replicas[0],
                "isr": isr,
                "size_bytes": rng.randrange(*size_range),
                "adding_replicas": [],
                "removing_replicas": [],
            }
        )
    return parts


GIB = 1024**3
MIB = 1024**2


def cluster() -> dict[str, object]:
    racks = {1: "eu-west-1a", 2: "eu-west-1b", 3: "eu-west-1c"}
    racks |= {4: "eu-west-1a", 5: "eu-west-1b", 6: "eu-west-1c"}
    rng = random.Random(20261121)
    clicks = assign_rack_aware(racks, 16, 2, start=1, shift=3)
    clicks = add_partitions(racks, clicks, 24)
    payments = {  # placed by hand during an incident; partition 4 has two replicas in 1a
        0: [1, 2, 3],
        1: [2, 3, 1],
        2: [3, 1, 2],
        3: [4, 5, 6],
        4: [1, 4, 2],
        5: [6, 5, 4],
    }
    topics = [
        {
            "name": "__consumer_offsets",
            "configs": {"cleanup.policy": "compact", "min.insync.replicas": "2"},
            "partitions": partitions_json(
                assign_rack_aware(racks, 50, 3, start=1, shift=5), rng, (1 * MIB, 64 * MIB)
            ),
        },
        {
            "name": "audit-log",
            "configs": {"min.insync.replicas": "1", "retention.ms": "2592000000"},
            "partitions": partitions_json(
                assign_rack_aware(racks, 3, 2, start=4, shift=2),
                rng,
                (20 * GIB, 40 * GIB),
                out_of_sync={1: 2},  # broker 2 fell behind on partition 1
            ),
        },
        {
            "name": "clicks",
            "configs": {"min.insync.replicas": "1", "retention.ms": "86400000"},
            "partitions": partitions_json(clicks, rng, (200 * MIB, 900 * MIB)),
        },
        {
            "name": "orders",
            "configs": {"min.insync.replicas": "2", "retention.ms": "604800000"},
            "partitions": partitions_json(
                assign_rack_aware(racks, 12, 3, start=2, shift=4), rng, (GIB, 3 * GIB)
            ),
        },
        {
            "name": "payments",
            "configs": {"min.insync.replicas": "2"},
            "partitions": partitions_json(payments, rng, (400 * MIB, 800 * MIB)),
        },
    ]
    return {
        "kreplica_snapshot": 1,
        "cluster_id": "kR9pQ2vXT3aWm1bLc8dEfg",
        "source": "zookeeper",
        "captured_at": "2026-11-21T09:30:00Z",
        "brokers": [
            {"id": b, "rack": racks[b], "host": f"10.0.{b}.15", "port": 9092, "alive": True}
            for b in sorted(racks)
        ],
        "topics": topics,
    }


def degraded() -> dict[str, object]:
    """The same cluster during an incident: broker 6 crashed (its replicas left every ISR and
    its partitions elected another leader) while clicks-2 was being moved to a third broker."""
    data = cluster()
    data["captured_at"] = "2026-11-21T10:05:00Z"
    brokers = data["brokers"]
    assert isinstance(brokers, list)
    for broker in brokers:
        if broker["id"] == 6:
            broker["alive"] = False
    topics = data["topics"]
    assert isinstance(topics, list)
    for topic in topics:
        for part in topic["partitions"]:
            part["isr"] = [b for b in part["isr"] if b != 6]
            if part["leader"] == 6:
                part["leader"] = part["isr"][0] if part["isr"] else -1
            if topic["name"] == "clicks" and part["partition"] == 2:
                target = next(b for b in (1, 2, 3, 4, 5) if b not in part["replicas"])
                part["replicas"] = [*part["replicas"], target]
                part["adding_replicas"] = [target]
    return data


def write(name: str, data: dict[str, object]) -> None:
    (HERE / name).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write("cluster.json", cluster())
    write("degraded.json", degraded())
