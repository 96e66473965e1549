"""AdminSource.snapshot closes every connection of its own on every path, a failed one
included: an unknown topic is found after the brokers' connections are open. The wire is a
fake (kreplica.sources.admin_wire.BrokerConnection): what is tested is the bookkeeping, and a
real cluster would not show a socket left open."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from kreplica.errors import KreplicaError
from kreplica.sources import admin_wire
from kreplica.sources.admin import AdminSource
from tests.support.polling import eventually

BROKERS = [{"node_id": i, "rack": None, "host": "127.0.0.1", "port": 9100 + i} for i in (1, 2, 3)]
TOPICS = {"orders": (0, {0: ([1, 2], [1, 2], 1), 1: ([2, 3], [2, 3], 2)})}


class FakeConnection:
    """A broker that answers ApiVersions and Metadata, and records whether it was closed."""

    made: ClassVar[list[FakeConnection]] = []

    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.address = (host, port)
        self.closed = False
        self.versions: dict[int, tuple[int, int]] = {}
        FakeConnection.made.append(self)

    def ask_versions(self) -> None:
        return None

    def describe_metadata(self, topics: bool = True) -> tuple[Any, ...]:
        return BROKERS, "cluster-1", 1, (TOPICS if topics else {})

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> FakeConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[FakeConnection]:
    FakeConnection.made = []
    monkeypatch.setattr(admin_wire, "BrokerConnection", FakeConnection)
    return FakeConnection.made


def _open(made: list[FakeConnection]) -> list[FakeConnection]:
    return [c for c in made if not c.closed]


def test_an_unknown_topic_leaves_no_connection_open(made: list[FakeConnection]) -> None:
    source = AdminSource("127.0.0.1:9101", probe=False)
    with pytest.raises(KreplicaError, match="nope"):
        source.snapshot(["orders", "nope"])
    # the bootstrap server's connection and one per broker (opened in threads: the last
    # ones are closed as their connect ends)
    assert eventually(lambda: len(made), lambda n: n == 4, timeout_s=30) == 4
    assert eventually(lambda: _open(made), lambda left: not left, timeout_s=30) == []
    assert {c.address for c in made[1:]} == {("127.0.0.1", 9100 + i) for i in (1, 2, 3)}
    source.close()


def test_a_failure_before_the_metadata_closes_the_bootstrap_connection(
    made: list[FakeConnection], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: admin_wire.WireReads, brokers: Any) -> None:
        raise OSError("no thread to start")

    monkeypatch.setattr(admin_wire.WireReads, "open", refuse)
    source = AdminSource("127.0.0.1:9101", probe=False)
    with pytest.raises(OSError, match="no thread"):
        source.snapshot(["orders"])
    assert len(made) == 1 and made[0].closed
    source.close()
