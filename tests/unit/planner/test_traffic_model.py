"""The traffic model (kreplica.planner.traffic, pure) on small clusters computed by hand."""

from __future__ import annotations

import pytest

from kreplica.errors import InputError, UsageError
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic, TrafficWindow
from kreplica.planner.traffic import (
    COMPACTED,
    FANOUT_UNKNOWN,
    IDLE,
    NO_SIZE,
    NOT_MEASURED,
    OFFLINE,
    TIERED,
    OffsetRead,
    broker_traffic,
    bytes_out_per_s,
    check_capacities,
    check_window,
    measure_partitions,
    partition_rate,
    require_rates,
    stored_traffic,
    with_traffic,
)


def _cluster(*partitions: Partition, configs: dict[str, str] | None = None) -> ClusterSnapshot:
    return ClusterSnapshot(
        brokers=(Broker(1, "a"), Broker(2, "b"), Broker(3, "c")),
        topics=(Topic("t", partitions, configs or {}),),
        traffic=TrafficWindow(60.0, "2026-11-28T00:00:00Z"),
    )


def _p(n: int, replicas: tuple[int, ...], rate: float | None, fanout: int | None) -> Partition:
    return Partition("t", n, replicas, leader=replicas[0], size_bytes=1000, bytes_in_per_s=rate,
                     fanout=fanout)  # fmt: skip


def test_rate_is_offsets_advanced_times_bytes_per_offset_over_the_window() -> None:
    # 1,000 offsets in the log over 500,000 bytes: 500 B per offset; 120 new offsets in 60 s
    read = OffsetRead(end_before=1880, end_after=2000, start_after=1000, size_bytes=500_000)
    rate, notes = partition_rate(read, 60.0, compacted=False, tiered=False)
    assert rate == pytest.approx(120 * 500 / 60)  # 1,000 B/s
    assert notes == ()


def test_retention_moving_the_log_start_does_not_change_the_rate() -> None:
    # the same writes, but retention deleted the first 400 offsets (and their bytes)
    kept = OffsetRead(end_before=1880, end_after=2000, start_after=1400, size_bytes=300_000)
    rate, _ = partition_rate(kept, 60.0, compacted=False, tiered=False)
    assert rate == pytest.approx(1000.0)


def test_what_cannot_be_measured_says_why() -> None:
    idle = OffsetRead(2000, 2000, 1000, 500_000)
    assert partition_rate(idle, 60.0, compacted=False, tiered=True) == (0.0, (IDLE,))
    busy = OffsetRead(1880, 2000, 1000, 500_000)
    assert partition_rate(busy, 60.0, compacted=False, tiered=True) == (None, (TIERED,))
    sizeless = OffsetRead(1880, 2000, 1000, None)
    assert partition_rate(sizeless, 60.0, compacted=False, tiered=False) == (None, (NO_SIZE,))
    rate, notes = partition_rate(busy, 60.0, compacted=True, tiered=False)
    assert rate == pytest.approx(1000.0) and notes == (COMPACTED,)


def test_fanout_counts_groups_that_advanced_and_is_unknown_for_a_silent_reader() -> None:
    reads = {
        ("t", 0): OffsetRead(100, 220, 0, 22_000),  # read by g1 and g2
        ("t", 1): OffsetRead(100, 160, 0, 16_000),  # assigned to g3, which never commits
        ("t", 2): OffsetRead(50, 50, 0, 5_000),  # idle, assigned to g3
    }
    before = {"g1": {("t", 0): 90}, "g2": {("t", 0): 100, ("t", 1): 100}, "g3": {}}
    after = {"g1": {("t", 0): 200}, "g2": {("t", 0): 220, ("t", 1): 100}, "g3": {}}
    assigned = {"g3": [("t", 1), ("t", 2)]}
    m = measure_partitions(
        reads,
        12.0,
        commits_before=before,
        commits_after=after,
        assigned=assigned,
        offline=[("t", 3)],
    )
    assert [(x.partition, x.fanout) for x in m] == [(0, 2), (1, None), (2, 0), (3, None)]
    assert m[3].bytes_in_per_s is None and m[3].notes == (OFFLINE,)
    assert m[0].bytes_in_per_s == pytest.approx(120 * 100 / 12)
    assert m[1].notes == (FANOUT_UNKNOWN,)
    assert m[2].notes == (IDLE,)


def test_broker_model_by_hand() -> None:
    # p0: 100 B/s on [1, 2], fan-out 2; p1: 50 B/s on [2, 3, 1], fan-out 1; p2: 10 B/s on
    # [3], fan-out unknown
    snap = _cluster(_p(0, (1, 2), 100.0, 2), _p(1, (2, 3, 1), 50.0, 1), _p(2, (3,), 10.0, None))
    by_id = {b.id: b for b in broker_traffic(snap)}
    assert (by_id[1].nw_in, by_id[2].nw_in, by_id[3].nw_in) == (150.0, 150.0, 60.0)
    # out: leader of p0 sends to 1 follower + 2 groups; of p1 to 2 followers + 1 group
    assert by_id[1].nw_out == 100.0 * 3
    assert by_id[2].nw_out == 50.0 * 3
    assert by_id[3].nw_out == 0.0 and by_id[3].fanout_unknown == 1
    assert [by_id[i].leader_bytes_in for i in (1, 2, 3)] == [100.0, 50.0, 10.0]
    assert [by_id[i].disk_bytes for i in (1, 2, 3)] == [2000, 2000, 2000]
    assert bytes_out_per_s(snap.topics[0].partitions[2]) is None
    # every byte in is written once per replica: the cluster's network in is their sum
    assert sum(b.nw_in for b in by_id.values()) == 100 * 2 + 50 * 3 + 10


def test_capacities_give_utilisation_and_unknown_brokers_are_refused() -> None:
    snap = _cluster(_p(0, (1, 2), 100.0, 1))
    caps = check_capacities({"1": {"nw_in": 1000, "nw_out": 400}}, snap.broker_ids(), "caps.json")
    one = broker_traffic(snap, caps)[0]
    assert one.nw_in_util == pytest.approx(0.1) and one.nw_out_util == pytest.approx(0.5)
    assert broker_traffic(snap, caps)[1].nw_in_util is None
    with pytest.raises(InputError, match="broker 9 is not in this cluster"):
        check_capacities({"9": {"nw_in": 1}}, snap.broker_ids(), "caps.json")
    with pytest.raises(InputError, match="nw_in must be bytes per second > 0"):
        check_capacities({"1": {"nw_in": -1}}, snap.broker_ids(), "caps.json")
    with pytest.raises(InputError, match="only nw_in and nw_out"):
        check_capacities({"1": {"disk": 1}}, snap.broker_ids(), "caps.json")


def test_window_under_five_seconds_is_refused() -> None:
    with pytest.raises(UsageError, match="too short"):
        check_window(4.9)
    check_window(5)


def test_a_snapshot_keeps_rates_and_says_what_it_cannot() -> None:
    bare = _cluster(_p(0, (1, 2), None, None), _p(1, (2, 1), 0.0, 0), _p(2, (1,), 5.0, None))
    measured = stored_traffic(bare)
    assert [m.notes for m in measured] == [(NOT_MEASURED,), (IDLE,), (FANOUT_UNKNOWN,)]
    without = ClusterSnapshot(bare.brokers, bare.topics)
    with pytest.raises(InputError, match="kreplica snapshot `traffic_s` SECONDS"):
        require_rates(without, "old.json")
    back = with_traffic(without, measured, TrafficWindow(6.0, "now"))
    assert back.traffic == TrafficWindow(6.0, "now")
    assert back.topics[0].partitions[2].bytes_in_per_s == 5.0
