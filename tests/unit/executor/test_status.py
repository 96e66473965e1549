"""kreplica status's decisions (kreplica.executor.status): state, bytes, ETA and the one reason,
from raw facts. Every code of REASONS is reached, and each names its broker or dir."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kreplica.executor.status import (
    REASONS,
    DirFacts,
    PartitionFacts,
    ReplicaFacts,
    Throttle,
    average_rate,
    partition_status,
    plan_status,
    sample_rate,
)

MB = 1024 * 1024


def new_replica(**kw: object) -> ReplicaFacts:
    base = ReplicaFacts(
        broker=3,
        alive=True,
        in_sync=False,
        size=40 * MB,
        rate=1 * MB,
        dir="/data/a",
        dirs=(DirFacts("/data/a", usable_bytes=500 * MB), DirFacts("/data/b", usable_bytes=9 * MB)),
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def moving(**kw: object) -> PartitionFacts:
    base = PartitionFacts(
        topic="t",
        partition=0,
        planned=(1, 3),
        current=(1, 2, 3),
        in_flight=True,
        leader=1,
        leader_alive=True,
        leader_size=100 * MB,
        isr=(1, 2),
        new_replicas=(new_replica(),),
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def test_done_partition_counts_its_new_replica_as_copied() -> None:
    facts = moving(
        current=(1, 3),
        in_flight=False,
        isr=(1, 3),
        new_replicas=(new_replica(in_sync=True, size=100 * MB),),
    )
    row = partition_status(facts)
    assert (row.state, row.reason, row.copied, row.total) == ("done", None, 100 * MB, 100 * MB)


def test_follower_lagging_names_broker_bytes_behind_and_rate() -> None:
    row = partition_status(moving())
    assert row.state == "moving"
    assert row.reason == "follower-lagging"
    assert (row.copied, row.total) == (40 * MB, 100 * MB)
    assert row.eta_s == pytest.approx(60.0)
    assert "broker 3" in row.detail and "60.0 MiB behind" in row.detail
    assert "1.0 MiB/s" in row.detail and "leader broker 1" in row.detail


def test_follower_not_growing_says_so_and_has_no_eta() -> None:
    row = partition_status(moving(new_replicas=(new_replica(rate=0.0),)))
    assert row.reason == "follower-lagging" and "not growing" in row.detail
    assert row.eta_s is None


def test_destination_broker_offline_comes_first() -> None:
    facts = moving(new_replicas=(new_replica(alive=False, size=None, rate=None),), tiered=True)
    row = partition_status(facts)
    assert row.reason == "dest-broker-offline" and "broker 3" in row.detail


def test_destination_dir_offline_the_replica_lives_in() -> None:
    dirs = (DirFacts("/data/a", offline=True), DirFacts("/data/b", usable_bytes=500 * MB))
    row = partition_status(moving(new_replicas=(new_replica(dirs=dirs),)))
    assert row.reason == "dest-dir-offline" and "/data/a" in row.detail and "broker 3" in row.detail


def test_destination_dir_offline_when_the_new_replica_is_not_reported() -> None:
    dirs = (DirFacts("/data/a", usable_bytes=500 * MB), DirFacts("/data/b", offline=True))
    replica = new_replica(dir=None, size=None, rate=None, dirs=dirs)
    row = partition_status(moving(new_replicas=(replica,)))
    assert row.reason == "dest-dir-offline" and "/data/b" in row.detail


def test_destination_dir_full_when_less_usable_than_left_to_copy() -> None:
    dirs = (DirFacts("/data/a", usable_bytes=10 * MB),)
    row = partition_status(moving(new_replicas=(new_replica(dirs=dirs),)))
    assert row.reason == "dest-dir-full"
    assert "/data/a" in row.detail and "10.0 MiB usable" in row.detail
    assert "60.0 MiB left" in row.detail


def test_enough_room_is_not_full() -> None:
    dirs = (DirFacts("/data/a", usable_bytes=61 * MB),)
    row = partition_status(moving(new_replicas=(new_replica(dirs=dirs),)))
    assert row.reason == "follower-lagging"


def test_leader_offline() -> None:
    row = partition_status(moving(leader=-1, leader_alive=False))
    assert row.reason == "leader-offline"
    row = partition_status(moving(leader=1, leader_alive=False))
    assert row.reason == "leader-offline" and "broker 1" in row.detail


def test_throttle_bound_on_the_receiving_broker() -> None:
    facts = moving(new_replicas=(new_replica(rate=290 * 1024),))
    throttles = {3: Throttle(follower_rate=300 * 1024)}
    rows, _ = plan_status([facts], throttles)
    assert rows[0].reason == "throttle-bound"
    assert rows[0].detail == "broker 3 receives at its follower throttle, 300.0 KiB/s"


def test_throttle_bound_sums_the_partitions_sharing_the_broker() -> None:
    # each copy alone is well under the throttle; together they are at it
    first = moving(new_replicas=(new_replica(rate=150 * 1024),))
    second = replace(first, partition=1)
    throttles = {3: Throttle(follower_rate=300 * 1024)}
    rows, _ = plan_status([first, second], throttles)
    assert [r.reason for r in rows] == ["throttle-bound", "throttle-bound"]
    alone, _ = plan_status([first], throttles)
    assert alone[0].reason == "follower-lagging"


def test_throttle_bound_on_the_leader() -> None:
    facts = moving(new_replicas=(new_replica(rate=1 * MB),))
    rows, _ = plan_status([facts], {1: Throttle(leader_rate=1 * MB)})
    assert rows[0].reason == "throttle-bound"
    assert rows[0].detail == "leader broker 1 sends at its leader throttle, 1.0 MiB/s"


def test_tiered_topic_local_bytes_only() -> None:
    row = partition_status(moving(tiered=True))
    assert row.reason == "tiered-topic" and "local bytes only" in row.detail


def test_waiting_partition_not_submitted() -> None:
    facts = moving(current=(1, 2), in_flight=False, new_replicas=(new_replica(size=None),))
    row = partition_status(facts)
    assert (row.state, row.reason) == ("waiting", "not-submitted")
    assert row.eta_s is None and row.copied == 0


def test_waiting_new_partition_to_be_created() -> None:
    facts = moving(current=None, in_flight=False, leader=None, leader_alive=False, isr=())
    row = partition_status(facts)
    assert row.reason == "not-submitted" and "to be created" in row.detail


def test_waiting_for_an_offline_destination_names_it() -> None:
    facts = moving(current=(1, 2), in_flight=False, new_replicas=(new_replica(alive=False),))
    assert partition_status(facts).reason == "dest-broker-offline"


def test_unknown_shows_the_raw_state() -> None:
    # in flight, every new replica in sync: Kafka is removing the old ones
    facts = moving(isr=(1, 2, 3), new_replicas=(new_replica(in_sync=True),))
    row = partition_status(facts)
    assert row.reason == "unknown"
    assert "replicas [1, 2, 3]" in row.detail and "isr [1, 2, 3]" in row.detail


def test_unknown_when_someone_else_changed_the_partition() -> None:
    facts = moving(current=(1, 4), in_flight=False, isr=(1, 4), new_replicas=())
    row = partition_status(facts)
    assert (row.state, row.reason) == ("waiting", "unknown") and "[1, 4]" in row.detail


def test_every_reason_code_is_reached_by_a_test_here() -> None:
    import inspect
    import sys

    source = inspect.getsource(sys.modules[__name__])
    for code in REASONS:
        assert f'"{code}"' in source.replace(f'"{code}" in', ""), code


def test_summary_counts_bytes_rate_and_eta() -> None:
    done = moving(
        partition=1,
        current=(1, 3),
        in_flight=False,
        isr=(1, 3),
        new_replicas=(new_replica(in_sync=True),),
    )
    waiting = moving(partition=2, current=(1, 2), in_flight=False)
    _, summary = plan_status([moving(), done, waiting], {})
    assert (summary.done, summary.moving, summary.waiting) == (1, 1, 1)
    assert summary.total == 300 * MB
    assert summary.copied == 40 * MB + 100 * MB  # a waiting partition counts nothing copied
    assert summary.rate == pytest.approx(1 * MB)
    assert summary.eta_s == pytest.approx(160.0)  # 60 MiB moving + 100 MiB waiting at 1 MiB/s
    assert summary.line().startswith("1/3 done, 1 moving, 1 waiting")


def test_summary_all_done_has_eta_zero() -> None:
    done = moving(
        current=(1, 3), in_flight=False, isr=(1, 3), new_replicas=(new_replica(in_sync=True),)
    )
    _, summary = plan_status([done], {})
    assert summary.eta_s == 0.0 and summary.line().startswith("1/1 done")


def test_rates() -> None:
    assert sample_rate(10, 30, 2.0) == 10.0
    assert sample_rate(30, 10, 2.0) == 0.0  # a log that shrank (retention) did not copy backwards
    assert sample_rate(None, 30, 2.0) is None and sample_rate(1, 2, 0) is None
    assert average_rate(100, 50.0) == 2.0 and average_rate(None, 50.0) is None


def test_throttle_bound_eta_counts_the_copy_at_the_throttle() -> None:
    # averaged since the submit, the copy ran at 3x the throttle (the burst before the quota
    # window filled); from now on it runs at the throttle: 60 MiB left at 1 MiB/s
    facts = moving(new_replicas=(new_replica(rate=3 * MB),))
    rows, summary = plan_status([facts], {3: Throttle(follower_rate=1 * MB)})
    assert rows[0].reason == "throttle-bound"
    assert rows[0].rate == pytest.approx(1 * MB)
    assert rows[0].eta_s == pytest.approx(60.0)
    assert summary.eta_s == pytest.approx(60.0)
