"""Pieces every live source shares (pure): closing on `with`, topic selection and snapshot
assembly."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from datetime import UTC, datetime
from types import TracebackType
from typing import Self

from kreplica.model import Broker, ClusterSnapshot, Topic, unknown_topics_error


class LiveSource(ABC):
    """A source that holds a connection: `with ZooKeeperSource(...) as source:` closes it
    however the block ends."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def select_topics(available: Iterable[str], wanted: Iterable[str] | None) -> list[str]:
    """The topics to read, sorted: all of `available`, or `wanted` after checking each exists."""
    known = sorted(set(available))
    if wanted is None:
        return known
    if isinstance(wanted, str):  # one name, not its characters
        wanted = [wanted]
    requested = sorted(set(wanted))
    known_set = set(known)
    missing = [name for name in requested if name not in known_set]
    if missing:
        raise unknown_topics_error(known, missing)
    return requested


def utc_timestamp(moment: datetime) -> str:
    """`captured_at` as the snapshot format writes it: ISO 8601 UTC to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def assemble_snapshot(
    *,
    brokers: Iterable[Broker],
    topics: Iterable[Topic],
    cluster_id: str | None,
    source: str,
    captured_at: str,
) -> ClusterSnapshot:
    """Sort everything, and add brokers that hold replicas but are not registered as dead
    (alive=False): the planner must know them to move replicas off them."""
    by_id = {b.id: b for b in brokers}
    topic_list = sorted(topics, key=lambda t: t.name)
    for topic in topic_list:
        for partition in topic.partitions:
            for broker_id in (*partition.replicas, *partition.adding_replicas):
                if broker_id not in by_id:
                    by_id[broker_id] = Broker(id=broker_id, alive=False)
    return ClusterSnapshot(
        brokers=tuple(by_id[k] for k in sorted(by_id)),
        topics=tuple(topic_list),
        cluster_id=cluster_id,
        source=source,
        captured_at=captured_at,
    )
