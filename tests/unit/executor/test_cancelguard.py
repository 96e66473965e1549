"""The cancel guard's decision (pure): which partitions a cancel would leave under their
min.insync.replicas, and the one line `kreplica cancel` refuses with."""

from __future__ import annotations

from kreplica.executor.cancelguard import cancel_risks, original_replicas, refusal_text
from kreplica.executor.kafka_cluster import InFlight
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic


def _snapshot(parts: list[Partition], *, down: set[int], min_isr: int | None) -> ClusterSnapshot:
    configs = {"min.insync.replicas": str(min_isr)} if min_isr is not None else {}
    return ClusterSnapshot(
        brokers=tuple(Broker(b, alive=b not in down) for b in range(1, 6)),
        topics=(Topic("t", tuple(parts), configs=configs),),
        cluster_id="c",
    )


# t-0 moves [1, 2] -> [1, 3]: Kafka shows replicas [1, 3, 2], adding [3], removing [2]
MOVING = {("t", 0): InFlight((1, 3, 2), (3,), (2,))}


def test_an_original_replica_down_makes_the_cancel_unsafe() -> None:
    part = Partition("t", 0, (1, 3, 2), leader=1, isr=(1,))  # 2 killed, 3 still copying
    risks = cancel_risks(_snapshot([part], down={2}, min_isr=2), MOVING, [("t", 0)], {})
    assert [(r.name, r.original, r.kept, r.needed, r.down) for r in risks] == [
        ("t-0", (1, 2), (1,), 2, (2,))
    ]
    line = refusal_text(risks)
    assert "\n" not in line and "t-0" in line and "broker(s) 2 down" in line
    assert "let the move finish" in line and "--force" in line


def test_all_originals_in_sync_and_alive_is_safe() -> None:
    part = Partition("t", 0, (1, 3, 2), leader=1, isr=(1, 2))
    assert cancel_risks(_snapshot([part], down=set(), min_isr=2), MOVING, [("t", 0)], {}) == []


def test_the_new_replica_in_sync_and_an_original_out_of_sync_is_unsafe() -> None:
    # [1, 2] -> [3, 4]: 3 caught up, 1 fell behind (alive): the cancel keeps only 2
    moving = {("t", 0): InFlight((3, 4, 1, 2), (3, 4), (1, 2))}
    part = Partition("t", 0, (3, 4, 1, 2), leader=2, isr=(2, 3))
    risks = cancel_risks(_snapshot([part], down=set(), min_isr=2), moving, [("t", 0)], {})
    assert [(r.kept, r.down) for r in risks] == [((2,), ())]
    assert "out of sync" in refusal_text(risks)


def test_zero_live_in_sync_replicas_is_unsafe_even_at_min_isr_1() -> None:
    part = Partition("t", 0, (1, 3, 2), leader=3, isr=(3,))
    risks = cancel_risks(_snapshot([part], down={1, 2}, min_isr=None), MOVING, [("t", 0)], {})
    assert [(r.kept, r.needed, r.down) for r in risks] == [((), 1, (1, 2))]
    part = Partition("t", 0, (1, 3, 2), leader=1, isr=(1,))
    assert cancel_risks(_snapshot([part], down={2}, min_isr=None), MOVING, [("t", 0)], {}) == []


def test_min_isr_above_the_original_rf_asks_for_every_original_replica() -> None:
    moving = {("t", 0): InFlight((1, 2), (2,), (1,))}  # RF 1 [1] -> [2]
    part = Partition("t", 0, (1, 2), leader=1, isr=(1,))
    assert cancel_risks(_snapshot([part], down=set(), min_isr=2), moving, [("t", 0)], {}) == []


def test_originals_come_from_the_plan_when_the_cluster_does_not_list_them() -> None:
    assert original_replicas((1, 3, 2), object(), (1, 2)) == (1, 2)
    assert original_replicas((1, 3, 2), None, None) == (1, 3, 2)
    assert original_replicas((1, 3, 2), InFlight((1, 3, 2), (3,), (2,)), (9,)) == (1, 2)


def test_the_line_shows_three_partitions_and_counts_the_rest() -> None:
    parts = [Partition("t", p, (1, 3, 2), leader=1, isr=(1,)) for p in range(5)]
    moving = {("t", p): InFlight((1, 3, 2), (3,), (2,)) for p in range(5)}
    risks = cancel_risks(
        _snapshot(parts, down={2}, min_isr=2), moving, [("t", p) for p in range(5)], {}
    )
    line = refusal_text(risks)
    assert len(risks) == 5 and "(and 2 more)" in line and "t-3" not in line
