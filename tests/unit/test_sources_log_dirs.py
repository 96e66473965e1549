"""kreplica.sources.admin.with_log_dirs (pure): what a DescribeLogDirs answer adds to a
snapshot, each partition built once."""

from __future__ import annotations

from kreplica.model import Broker, ClusterSnapshot, LogDir, Partition, Topic
from kreplica.sources.admin import with_log_dirs


def _answer() -> list[dict[str, object]]:
    def part(index: int, size: int, future: bool = False) -> dict[str, object]:
        return {"partition_index": index, "partition_size": size, "is_future_key": future}

    return [
        {
            "broker": 1,
            "log_dirs": [
                {
                    "log_dir": "/d1",
                    "error_code": 0,
                    "total_bytes": 1000,
                    "usable_bytes": 600,
                    "topics": [{"name": "t", "partitions": [part(0, 50), part(1, 10, True)]}],
                },
                {"log_dir": "/d0", "error_code": 58, "topics": []},  # offline
            ],
        },
        {
            "broker": 2,
            "log_dirs": [
                {
                    "log_dir": "/d1",
                    "error_code": 0,
                    "total_bytes": -1,
                    "usable_bytes": -1,
                    "topics": [{"name": "t", "partitions": [part(0, 70), part(1, 20)]}],
                }
            ],
        },
    ]


def test_sizes_dirs_and_disks_come_from_the_answer() -> None:
    snap = ClusterSnapshot(
        brokers=(Broker(1, "a"), Broker(2, "b"), Broker(3, "c", alive=False)),
        topics=(
            Topic(
                "t",
                (
                    Partition("t", 0, (1, 2), leader=1, isr=(1, 2)),
                    Partition("t", 1, (2, 1), leader=2, isr=(2,), adding_replicas=(1,)),
                    Partition("t", 2, (1, 3), leader=1, isr=(1,), size_bytes=9),
                ),
                configs={"retention.ms": "1"},
                effective_min_isr=2,
                min_isr_source="topic",
            ),
        ),
        cluster_id="c",
        source="zookeeper",
    )
    out = with_log_dirs(snap, _answer())
    b1, b2, b3 = out.brokers
    assert b1.log_dirs == ("/d0", "/d1")
    assert b1.disks == (LogDir("/d0", None, None), LogDir("/d1", 1000, 600))
    assert b2.disks == (LogDir("/d1", None, None),)  # -1: figures not known
    assert b3 == snap.brokers[2]
    p0, p1, p2 = out.topics[0].partitions
    assert (p0.size_bytes, p0.replica_dirs, p0.replica_sizes) == (70, ("/d1", "/d1"), (50, 70))
    # broker 1's copy of partition 1 is a future replica: not where it lives yet
    assert (p1.size_bytes, p1.replica_dirs, p1.replica_sizes) == (20, ("/d1", None), (20, None))
    assert (p1.leader, p1.isr, p1.adding_replicas) == (2, (2,), (1,))
    assert p2 == snap.topics[0].partitions[2]  # not listed: kept as it was
    topic = out.topics[0]
    assert (topic.configs, topic.effective_min_isr, topic.min_isr_source) == (
        {"retention.ms": "1"},
        2,
        "topic",
    )
    assert (out.cluster_id, out.source) == ("c", "zookeeper")
