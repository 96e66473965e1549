"""Measuring traffic through the brokers: two ListOffsets reads a window apart, the consumer
groups' committed offsets at both ends, and the log sizes DescribeLogDirs gives (through the
source's snapshot). What the figures mean is kreplica.planner.traffic (pure); this module
only asks (confluent-kafka's AdminClient) and keeps time.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from kreplica.errors import UsageError
from kreplica.model import ClusterSnapshot, TrafficWindow
from kreplica.planner.traffic import (
    OffsetRead,
    PartitionTraffic,
    check_window,
    measure_partitions,
    with_traffic,
)
from kreplica.sources.assemble import utc_timestamp

Key = tuple[str, int]
# told (seconds waited, seconds to wait) about once a `progress_every_s` while it waits
Progress = Callable[[float, float], None]


NEEDS_BROKERS = (
    "traffic is measured through the brokers: give `bootstrap_server` (or a `cluster` with "
    "one); ZooKeeper and snapshot files hold no offsets"
)


def _admin_of(source: Any) -> Any:
    """The AdminClient source behind `source` (--zookeeper with --bootstrap-server: its
    broker part); rates and groups are read from the brokers only."""
    from kreplica.sources.admin import AdminSource

    admin = getattr(source, "admin", source)
    if not isinstance(admin, AdminSource):
        raise UsageError(NEEDS_BROKERS)
    return admin


def _latest(admin: Any, keys: Iterable[Key], earliest: bool = False) -> dict[Key, int]:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    kind: Any = OffsetSpec
    spec = kind.earliest() if earliest else kind.latest()
    wanted = {TopicPartition(t, p): spec for t, p in keys}
    if not wanted:
        return {}
    futures = admin.confluent_admin().list_offsets(wanted, request_timeout=admin.timeout_s)
    which = "log start" if earliest else "log end"
    return {
        (tp.topic, tp.partition): int(
            admin.call(future, f"list the {which} offsets of {tp.topic}-{tp.partition}").offset
        )
        for tp, future in futures.items()
    }


def _group_ids(admin: Any) -> list[str]:
    listed = admin.call(admin.confluent_admin().list_consumer_groups(), "list consumer groups")
    return sorted(str(g.group_id) for g in listed.valid)


def _commits(admin: Any, groups: list[str], keys: set[Key]) -> dict[str, dict[Key, int]]:
    """Per group, its committed offset on each partition of `keys` it has one for."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    client = admin.confluent_admin()

    def ask(group: str) -> Any:  # one group per request: librdkafka takes no more
        return client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]

    futures = {group: ask(group) for group in groups}
    out: dict[str, dict[Key, int]] = {}
    for group, future in futures.items():
        what = f"read the committed offsets of group {group!r}"
        answer = _retrying(admin, future, functools.partial(ask, group), what)
        out[group] = {
            (tp.topic, tp.partition): int(tp.offset)
            for tp in answer.topic_partitions or []
            if (tp.topic, tp.partition) in keys and tp.offset >= 0
        }
    return out


def _retrying(admin: Any, future: Any, again: Callable[[], Any], what: str) -> Any:
    """A future's result, asked again (up to 5 times, a second apart) while the broker says
    to retry: a group coordinator still loading its offsets after a restart or a move."""
    from confluent_kafka import KafkaException

    for _ in range(5):
        try:
            return future.result(timeout=admin.timeout_s)
        except KafkaException as exc:
            error: Any = exc.args[0] if exc.args else None
            if not (hasattr(error, "retriable") and error.retriable()):
                break
        except TimeoutError:
            break
        time.sleep(1.0)
        future = again()
    return admin.call(future, what)  # the last answer, or one SourceError line


def _assigned(admin: Any, groups: list[str], keys: set[Key]) -> dict[str, list[Key]]:
    """Per group, the partitions of `keys` its members hold now."""
    if not groups:
        return {}
    futures = admin.confluent_admin().describe_consumer_groups(
        groups, request_timeout=admin.timeout_s
    )
    out: dict[str, list[Key]] = {}
    for group, future in futures.items():
        described = admin.call(future, f"describe consumer group {group!r}")
        held = [
            (tp.topic, tp.partition)
            for member in described.members or []
            for tp in (member.assignment.topic_partitions if member.assignment else [])
        ]
        out[group] = [k for k in held if k in keys]
    return out


def _timed(read: Callable[[], dict[Key, int]]) -> tuple[dict[Key, int], float]:
    """A read and the monotonic time of its middle (the request's send and answer)."""
    begun = time.monotonic()
    answer = read()
    return answer, (begun + time.monotonic()) / 2


def _wait(seconds: float, progress: Progress | None, every_s: float) -> None:
    begun = time.monotonic()
    while (waited := time.monotonic() - begun) < seconds:
        if progress is not None:
            progress(waited, seconds)
        time.sleep(min(every_s, seconds - waited))


def _is_compacted(configs: Mapping[str, str]) -> bool:
    return "compact" in configs.get("cleanup.policy", "")


def _is_tiered(configs: Mapping[str, str]) -> bool:
    return configs.get("remote.storage.enable", "").lower() == "true"


def _leader_size(snapshot: ClusterSnapshot) -> dict[Key, int | None]:
    """Each partition's log size on its leader (whose offsets ListOffsets gives), else the
    largest replica's."""
    out: dict[Key, int | None] = {}
    for topic in snapshot.topics:
        for p in topic.partitions:
            size = p.size_bytes
            if p.replica_sizes is not None and p.current_leader in p.replicas:
                own = p.replica_sizes[p.replicas.index(p.current_leader)]
                size = own if own is not None else size
            out[(p.topic, p.partition)] = size
    return out


def measure(
    source: Any,
    window_s: float,
    topics: Iterable[str] | None = None,
    *,
    progress: Progress | None = None,
    progress_every_s: float = 5.0,
    check: Callable[[ClusterSnapshot], None] | None = None,
    partitions: Collection[Key] | None = None,
    fanout: bool = True,
) -> tuple[ClusterSnapshot, list[PartitionTraffic]]:
    """Read the cluster, wait `window_s`, read again: the snapshot at the window's end with
    each partition's rate and fan-out in it, and the measurements with their notes. `check`
    is given the first read, before the wait (bad input fails without waiting).
    `partitions`: only these of the topics are measured (apply's moving ones); `fanout`
    False: no consumer group is read (fan-out 0)."""
    check_window(window_s)
    admin = _admin_of(source)
    wanted = list(topics) if topics else None
    first = source.snapshot(wanted)
    if check is not None:
        check(first)
    listed = {
        (p.topic, p.partition): p
        for t in first.topics
        for p in t.partitions
        if partitions is None or (p.topic, p.partition) in partitions
    }
    # a partition without a leader answers no ListOffsets: it is reported, not read
    keys = {key for key, p in listed.items() if p.current_leader is not None}
    groups = _group_ids(admin) if fanout else []
    commits_before = _commits(admin, groups, keys)
    ends_before, began = _timed(lambda: _latest(admin, keys))
    _wait(window_s, progress, progress_every_s)
    ends_after, ended = _timed(lambda: _latest(admin, keys))
    commits_after = _commits(admin, groups, keys)
    assigned = _assigned(admin, groups, keys)
    measured_at = utc_timestamp(datetime.now(UTC))
    # sizes and spans a moment apart: the span is taken at the middle of the two log-end
    # reads that bracket the sizes, so a partition written meanwhile is not skewed
    last = source.snapshot(wanted)
    ends_later = _latest(admin, keys)
    starts = _latest(admin, keys, earliest=True)
    sizes = _leader_size(last)
    keys &= {(p.topic, p.partition) for t in last.topics for p in t.partitions}
    reads = {
        key: OffsetRead(
            ends_before[key],
            ends_after[key],
            starts[key] - (ends_later[key] - ends_after[key]) // 2,
            sizes.get(key),
        )
        for key in sorted(keys)
        if key in ends_after and key in starts and key in ends_later
    }
    configs = {t.name: t.configs for t in last.topics}
    measured = measure_partitions(
        reads,
        ended - began,
        compacted=[name for name, c in configs.items() if _is_compacted(c)],
        tiered=[name for name, c in configs.items() if _is_tiered(c)],
        commits_before=commits_before,
        commits_after=commits_after,
        assigned=assigned,
        # listed at both ends and not read (a topic created meanwhile is neither)
        offline=[
            (p.topic, p.partition)
            for t in last.topics
            for p in t.partitions
            if (p.topic, p.partition) in listed and (p.topic, p.partition) not in reads
        ],
    )
    window = TrafficWindow(round(ended - began, 3), measured_at)
    return with_traffic(last, measured, window), measured
