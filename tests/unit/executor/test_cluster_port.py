"""The executor's Cluster port declares every method apply uses: a cluster lacking one is
refused when the apply is built (it used to skip the permission check, the controller checks
and the canary without a word), and what the port promises is asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kreplica.executor.apply_base import CanaryCluster, Cluster
from kreplica.executor.kafka_cluster import KafkaCluster
from tests.unit.executor.fakes import FakeCluster
from tests.unit.executor.test_apply_loop import START, _applier


def _without(method: str) -> Any:
    """A FakeCluster whose class lacks `method` (a fake written before the port grew it)."""
    members = {k: v for k, v in vars(FakeCluster).items() if k != method}
    return type(f"FakeClusterWithout_{method}", (), members)(START)


@pytest.mark.parametrize("method", ["require", "controller_facts", "live_broker_ids", "out_of_isr"])
def test_a_cluster_lacking_a_method_of_the_port_is_refused(tmp_path: Path, method: str) -> None:
    with pytest.raises(TypeError, match=r"does not implement .*apply_base\.Cluster"):
        _applier(tmp_path, _without(method))
    assert not (tmp_path / "plan.journal.jsonl").exists()


def test_the_shared_fake_and_kafka_implement_the_port() -> None:
    assert isinstance(FakeCluster(START), Cluster)
    # KafkaCluster's class has every method (its instances need a connection)
    assert all(callable(getattr(KafkaCluster, name, None)) for name in _port_methods(Cluster))
    assert all(callable(getattr(KafkaCluster, name, None)) for name in _port_methods(CanaryCluster))
    assert not isinstance(FakeCluster(START), CanaryCluster)


def _port_methods(protocol: type) -> list[str]:
    return [name for name, value in vars(protocol).items() if callable(value) and name[0] != "_"]


def test_an_apply_asks_for_the_permissions_it_needs_before_writing(tmp_path: Path) -> None:
    cluster = FakeCluster(START)
    _applier(tmp_path, cluster, throttle=1000).run()
    asked = {(need.resource, need.operation) for need in cluster.required}
    # the moved topics, and the throttles on topics and brokers
    assert {("topic", "ALTER"), ("topic", "ALTER_CONFIGS"), ("cluster", "ALTER_CONFIGS")} <= asked


def test_pace_on_a_cluster_without_a_canary_says_so(tmp_path: Path) -> None:
    applier = _applier(tmp_path, FakeCluster(START), throttle=1000, throttle_max=2000, pace=True)
    applier.run()
    notes = [e["message"] for e in applier.events if e["event"] == "note"]  # type: ignore[attr-defined]
    assert any(note.startswith("`pace`: no canary (FakeCluster cannot produce") for note in notes)
