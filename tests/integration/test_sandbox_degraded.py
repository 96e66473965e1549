"""The degraded session clusters are what their fixtures promise: broker 6 is dead in every
source, out of every ISR, and no longer leads what it led."""

from __future__ import annotations

import pytest

from kreplica.sandbox import SandboxInfo, processes
from kreplica.sources import open_source

pytestmark = pytest.mark.integration

RACK_OF = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}


def _check_degraded(info: SandboxInfo, source: dict[str, str], *, rack_known: bool) -> None:
    with open_source(**source) as opened:
        snap = opened.snapshot(["events", "logs", "hand"])
    brokers = {b.id: b for b in snap.brokers}
    assert {i for i, b in brokers.items() if b.alive} == {1, 2, 3, 4, 5}
    assert brokers[6].alive is False
    assert brokers[6].rack == (RACK_OF[6] if rack_known else None)
    assert all(brokers[i].rack == RACK_OF[i] for i in range(1, 6))

    partitions = [p for t in snap.topics for p in t.partitions]
    holding_6 = [p for p in partitions if 6 in p.replicas]
    assert holding_6, "broker 6 holds replicas"
    assert all(6 not in p.isr and p.leader != 6 for p in partitions)
    moved_leaders = [p for p in holding_6 if p.replicas[0] == 6]
    assert moved_leaders and all(p.leader != p.replicas[0] for p in moved_leaders)
    hand = {p.partition: p for t in snap.topics if t.name == "hand" for p in t.partitions}
    assert hand[0].replicas == (6, 1, 2) and hand[0].leader == 1
    assert hand[3].replicas == (6, 4, 5) and hand[3].leader == 4
    events = next(t for t in snap.topics if t.name == "events")
    assert len(events.partitions) == 12 and events.configs["min.insync.replicas"] == "2"
    assert [p.alive for p in processes(info.name) if p.node_id == 6] == [False]


def test_zk_degraded(zk_degraded: SandboxInfo) -> None:
    assert zk_degraded.zookeeper
    _check_degraded(zk_degraded, {"zookeeper": zk_degraded.zookeeper}, rack_known=False)
    _check_degraded(
        zk_degraded, {"bootstrap_server": zk_degraded.bootstrap_servers}, rack_known=False
    )


def test_kraft_degraded(kraft_degraded: SandboxInfo) -> None:
    # KRaft keeps a fenced broker registered: the AdminClient source still has its rack.
    _check_degraded(
        kraft_degraded, {"bootstrap_server": kraft_degraded.bootstrap_servers}, rack_known=True
    )
