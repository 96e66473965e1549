"""The disk guard's pure parts: fits/take bookkeeping, dir choice, headroom, mark/restore,
and reading DescribeLogDirs answers (kafka-python's dicts) into log dirs and per-replica
dirs and sizes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kreplica.model import Broker, ClusterSnapshot, LogDir
from kreplica.planner.disk import DiskGuard, Headroom, unchecked_reason

GIB = 2**30


def _snap(*brokers: Broker, source: str = "admin") -> ClusterSnapshot:
    return ClusterSnapshot(brokers=brokers, topics=(), source=source)


def test_fits_keeps_the_headroom_and_take_counts_arriving_bytes() -> None:
    snap = _snap(Broker(1, disks=(LogDir("/a", 100 * GIB, 30 * GIB),)))
    guard = DiskGuard.build(snap, Headroom())
    assert guard is not None
    assert guard.room(1) == 20 * GIB  # 30 usable - 10 kept (10% of 100)
    assert guard.fits(1, 20 * GIB) and not guard.fits(1, 20 * GIB + 1)
    guard.take(1, 15 * GIB)
    assert guard.fits(1, 5 * GIB) and not guard.fits(1, 5 * GIB + 1)
    assert guard.fits(9, 10**18)  # a broker without figures is not guarded


def test_a_fixed_headroom_is_kept_on_every_dir() -> None:
    dirs = (LogDir("/a", 100 * GIB, 30 * GIB), LogDir("/b", 100 * GIB, 30 * GIB))
    guard = DiskGuard.build(_snap(Broker(1, disks=dirs)), Headroom(None, 25 * GIB))
    assert guard is not None and guard.room(1) == 10 * GIB


def test_balanced_takes_the_dir_with_most_usable_after_earlier_placements() -> None:
    dirs = (LogDir("/b", 100 * GIB, 50 * GIB), LogDir("/a", 100 * GIB, 52 * GIB))
    guard = DiskGuard.build(_snap(Broker(1, disks=dirs)), Headroom(), per_dir=True)
    assert guard is not None
    chosen = []
    for _ in range(4):
        d = guard.choose_dir(1, 2 * GIB)
        assert d is not None
        chosen.append(d.path)
    # /a 52 -> 50 ties /b 50: the tie goes to the lowest path, then they alternate
    assert chosen == ["/a", "/a", "/b", "/a"]


def test_per_dir_fits_needs_room_in_one_dir() -> None:
    dirs = (LogDir("/a", 100 * GIB, 15 * GIB), LogDir("/b", 100 * GIB, 15 * GIB))
    broker = DiskGuard.build(_snap(Broker(1, disks=dirs)), Headroom())
    per_dir = DiskGuard.build(_snap(Broker(1, disks=dirs)), Headroom(), per_dir=True)
    assert broker is not None and per_dir is not None
    assert broker.fits(1, 8 * GIB) and not per_dir.fits(1, 8 * GIB)
    assert "dir /a" in per_dir.refusal(1, 8 * GIB)


@settings(deadline=None, max_examples=50)
@given(st.lists(st.tuples(st.sampled_from([1, 2]), st.integers(0, 40 * GIB)), max_size=8))
def test_admits_leaves_the_bookkeeping_as_it_was(placements: list[tuple[int, int]]) -> None:
    disks = (LogDir("/a", 100 * GIB, 60 * GIB), LogDir("/b", 100 * GIB, 40 * GIB))
    guard = DiskGuard.build(_snap(Broker(1, disks=disks), Broker(2, disks=disks)), Headroom())
    assert guard is not None
    guard.take(1, GIB)
    before = (dict(guard.incoming), set(guard.received))
    expected = True
    room = {1: 80 * GIB - GIB, 2: 80 * GIB}
    for b, size in placements:
        if size > room[b]:
            expected = False
            break
        room[b] -= size
    assert guard.admits(placements) is expected
    assert (guard.incoming, guard.received) == before


def test_unchecked_reasons() -> None:
    assert unchecked_reason(_snap(Broker(1), source="zookeeper")) is not None
    assert "ZooKeeper" in (unchecked_reason(_snap(Broker(1), source="zookeeper")) or "")
    assert "snapshot" in (unchecked_reason(_snap(Broker(1), source=None)) or "")
    no_sizes = _snap(Broker(1, disks=(LogDir("/a"),)))
    assert "total/usable" in (unchecked_reason(no_sizes) or "")
    assert unchecked_reason(_snap(Broker(1, disks=(LogDir("/a", 10, 5),)))) is None


def test_headroom_of_a_total() -> None:
    assert Headroom().of(1000) == 100
    assert Headroom(12.5).of(1001) == 126  # rounded up: never keep less than asked
    assert Headroom(None, 7).of(10**12) == 7
    assert Headroom().text() == "10%" and Headroom(None, 2 * GIB).text() == "2.0 GiB"


def _answer() -> list[dict[str, object]]:
    def part(pid: int, size: int, future: bool = False) -> dict[str, object]:
        return {"partition_index": pid, "partition_size": size, "is_future_key": future}

    return [
        {
            "broker": 1,
            "log_dirs": [
                {
                    "error_code": 0,
                    "log_dir": "/d/b",
                    "total_bytes": 1000,
                    "usable_bytes": 400,
                    "topics": [{"name": "t", "partitions": [part(0, 70), part(1, 9, True)]}],
                },
                {
                    "error_code": 0,
                    "log_dir": "/d/a",
                    "total_bytes": 1000,
                    "usable_bytes": 900,
                    "topics": [{"name": "t", "partitions": [part(1, 5)]}],
                },
            ],
        },
        {  # DescribeLogDirs before v4 (Kafka < 3.3): -1 figures; an offline dir
            "broker": 2,
            "log_dirs": [
                {
                    "error_code": 0,
                    "log_dir": "/x",
                    "total_bytes": -1,
                    "usable_bytes": -1,
                    "topics": [{"name": "t", "partitions": [part(0, 60)]}],
                },
                {"error_code": 57, "log_dir": "/y", "total_bytes": 5, "usable_bytes": 5},
            ],
        },
    ]


def test_describe_log_dirs_gives_dirs_with_figures() -> None:
    from kreplica.sources.admin import broker_disks

    assert broker_disks(_answer()) == {
        1: (LogDir("/d/a", 1000, 900), LogDir("/d/b", 1000, 400)),
        2: (LogDir("/x"), LogDir("/y")),
    }


def test_describe_log_dirs_gives_each_replicas_dir_and_size() -> None:
    from kreplica.sources.admin import per_replica, replica_placement

    placed = replica_placement(_answer())
    assert placed[("t", 0)] == {1: ("/d/b", 70), 2: ("/x", 60)}
    assert placed[("t", 1)] == {1: ("/d/a", 5)}  # the future replica in /d/b is not it
    assert per_replica((2, 1, 3), placed[("t", 0)]) == (("/x", "/d/b", None), (60, 70, None))
    assert per_replica((1,), None) == (None, None)
