"""Where cluster state comes from. One small read interface; every source returns model objects.

Client libraries (kazoo, confluent-kafka, kafka-python) are imported lazily by the concrete
sources, so importing this package stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from kreplica.model import ClusterSnapshot
from kreplica.sources.assemble import select_topics


class AssignmentSource(Protocol):
    """Reads a cluster's brokers and topic assignments."""

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot:
        """Brokers and the given topics (all topics when None)."""
        ...

    def close(self) -> None: ...


class SnapshotFileSource:
    """A snapshot file as a source: the fake every unit test uses, and a real offline input."""

    def __init__(self, path: str | Path) -> None:
        from kreplica.sources.snapshot import load_snapshot

        self._snapshot = load_snapshot(path)

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot:
        if topics is None:
            return self._snapshot
        by_name = {t.name: t for t in self._snapshot.topics}
        names = select_topics(by_name, topics)  # as the live sources select: same errors
        return replace(self._snapshot, topics=tuple(by_name[name] for name in names))

    def close(self) -> None:
        pass


class ZooKeeperWithBrokerDisks:
    """--zookeeper with --bootstrap-server: the assignment from ZooKeeper, and from the brokers
    what ZooKeeper does not hold (log dirs, disk figures, partition and replica sizes)."""

    columnar = False  # read into objects (with_log_dirs), whatever the ZooKeeper source can

    def __init__(self, zookeeper: AssignmentSource, admin: AssignmentSource) -> None:
        self.zookeeper = zookeeper
        self.admin = admin

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot:
        from kreplica.sources.logdirs import with_log_dirs

        snapshot = self.zookeeper.snapshot(topics)
        if not getattr(self.admin, "read_sizes", True):
            return snapshot
        partitions = {t.name: [p.partition for p in t.partitions] for t in snapshot.topics}
        live = [b.id for b in snapshot.brokers if b.alive]
        answer = self.admin.describe_log_dirs(partitions, live)  # type: ignore[attr-defined]
        return with_log_dirs(snapshot, answer)

    def __getattr__(self, name: str) -> object:
        return getattr(self.zookeeper, name)  # anything else a ZooKeeper source offers

    def close(self) -> None:
        try:
            self.admin.close()
        finally:
            self.zookeeper.close()


def open_source(
    *,
    snapshot: str | Path | None = None,
    zookeeper: str | None = None,
    bootstrap_server: str | None = None,
    client_config: dict[str, str] | None = None,
    zk_auth: list[tuple[str, str]] | None = None,
    timeout_s: float = 15.0,
    read_sizes: bool = True,
) -> AssignmentSource:
    """Open one source (or ZooKeeper plus a broker for the disk figures ZooKeeper lacks).
    `zookeeper` is HOST:PORT[,HOST:PORT...][/chroot];
    `client_config` holds Kafka client properties (security.protocol, sasl.*, ssl.*).
    `read_sizes=False`: the brokers are not asked for partition sizes, replica dirs and disk
    figures (DescribeLogDirs), for callers that use none of them."""
    from kreplica.errors import UsageError

    given = [
        n
        for n, v in (
            ("`snapshot`", snapshot),
            ("`zookeeper`", zookeeper),
            ("`bootstrap_server`", bootstrap_server),
        )
        if v
    ]
    if given == ["`zookeeper`", "`bootstrap_server`"]:
        from kreplica.sources.admin import AdminSource
        from kreplica.sources.zookeeper import ZooKeeperSource

        assert zookeeper is not None and bootstrap_server is not None
        return ZooKeeperWithBrokerDisks(
            ZooKeeperSource(
                zookeeper, auth=zk_auth, client_config=client_config, timeout_s=timeout_s
            ),
            AdminSource(
                bootstrap_server,
                client_config=client_config,
                timeout_s=timeout_s,
                read_sizes=read_sizes,
            ),
        )
    if len(given) != 1:
        if not given:
            raise UsageError(
                "no cluster source given; give one of `snapshot` (a file), `zookeeper` "
                "(HOST:PORT) or `bootstrap_server` (HOST:PORT)"
            )
        raise UsageError(f"{' and '.join(given)} both given; pass exactly one cluster source")
    if snapshot:
        return SnapshotFileSource(snapshot)
    if zookeeper:
        from kreplica.sources.zookeeper import ZooKeeperSource

        zk_source: AssignmentSource = ZooKeeperSource(
            zookeeper, auth=zk_auth, client_config=client_config, timeout_s=timeout_s
        )
        return zk_source
    from kreplica.sources.admin import AdminSource

    assert bootstrap_server is not None
    admin_source: AssignmentSource = AdminSource(
        bootstrap_server, client_config=client_config, timeout_s=timeout_s, read_sizes=read_sizes
    )
    return admin_source
