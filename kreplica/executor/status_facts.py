"""The raw facts `status` decides from (kreplica.executor.status decides, purely): two
DescribeLogDirs reads, the in-flight list, the brokers' throttles and the journal's submit
times. Read-only: nothing here writes to the cluster."""

from __future__ import annotations

import time
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kreplica.errors import StalePlan


def _submitted_at(journal_path: Path) -> dict[tuple[str, int], float]:
    """(topic, partition) -> epoch seconds of its last `submit` in the plan's journal."""
    from kreplica.executor.journal import Journal

    journal = Journal(journal_path)
    if not journal.exists():
        return {}
    out: dict[tuple[str, int], float] = {}
    for event in journal.read():
        if event.get("event") == "submit" and "ts" in event:
            with suppress(ValueError, TypeError):  # a journal from elsewhere: no rate, no error
                moment = datetime.strptime(event["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
                key = (str(event["topic"]), int(event["partition"]))
                out[key] = moment.replace(tzinfo=UTC).timestamp()
    return out


def _write_rates(journal_path: Path, plan: Any) -> dict[tuple[str, int], float]:
    """Partition -> bytes/s written to it: the plan document's rates, updated by those the
    journal's applies counted (their last `write-rates`), for the ETA."""
    from kreplica.executor.journal import Journal
    from kreplica.executor.writerate import journalled_rates

    journal = Journal(journal_path)
    return {
        **getattr(plan, "write_rates", {}),
        **(journalled_rates(journal.read()) if journal.exists() else {}),
    }


def _disks(snap: Any) -> dict[int, tuple[Any, ...]]:
    """Broker -> its log dirs as DirFacts. DescribeLogDirs gives an offline dir no figures;
    when no dir has figures (Kafka < 3.3) none is called offline."""
    from kreplica.executor.status import DirFacts

    measured = any(
        d.total_bytes is not None for b in snap.brokers for d in (b.disks or ()) if b.alive
    )
    return {
        b.id: tuple(
            DirFacts(
                d.path,
                offline=measured and d.total_bytes is None and d.usable_bytes is None,
                usable_bytes=d.usable_bytes,
            )
            for d in (b.disks or ())
        )
        for b in snap.brokers
    }


def gather(cluster: Any, plan: Any, interval_s: float, journal_path: Path) -> tuple[Any, ...]:
    """The raw facts status decides from: two DescribeLogDirs reads `interval_s` apart (the
        growth of each new replica, as apply measures progress), the in-flight list, the brokers'
        throttles, the journal's submit times (rates averaged since the submit) and the write rates
    the plan or its apply knew (the ETA counts the bytes written meanwhile)."""
    from kreplica.executor.status import (
        PartitionFacts,
        ReplicaFacts,
        Throttle,
        average_rate,
        sample_rate,
    )
    from kreplica.executor.throttles import parse_rate

    head = cluster.snapshot([])
    if plan.cluster_id and head.cluster_id and plan.cluster_id != head.cluster_id:
        raise StalePlan(
            f"{plan.path} was made for cluster {plan.cluster_id}, but this is cluster "
            f"{head.cluster_id}; point kreplica at the right cluster"
        )
    topics = list(plan.topics)
    snap = cluster.snapshot(topics)  # a topic this cluster lacks: one line, exit 3
    live = snap.live_broker_ids()
    submitted = _submitted_at(journal_path)
    written = _write_rates(journal_path, plan)
    in_flight = cluster.in_flight()
    first = cluster.replica_bytes(topics, live)
    started = time.monotonic()
    # a second read only for moves the journal cannot rate (no apply of this plan submitted them)
    unrated = [k for k in in_flight if k in plan.targets and k not in submitted]
    if interval_s > 0 and unrated:
        time.sleep(interval_s)
        in_flight = cluster.in_flight()
        sizes = cluster.replica_bytes(topics, live)
    else:
        sizes = first
    seconds = time.monotonic() - started
    parts = {(t.name, p.partition): p for t in snap.topics for p in t.partitions}
    tiered = {t.name for t in snap.topics if t.configs.get("remote.storage.enable", "") == "true"}
    disks = _disks(snap)
    facts = []
    for key, planned in sorted({**plan.targets, **plan.new_partitions}.items()):
        part = parts.get(key)
        flight = in_flight.get(key)
        current = tuple(part.replicas) if part is not None else None
        if key in plan.before:
            new = [b for b in planned if b not in plan.before[key]]
        elif flight is not None:
            new = list(flight.adding)
        else:
            new = [b for b in planned if current is None or b not in current]
        isr = tuple(part.in_sync) if part is not None else ()
        leader = part.leader if part is not None else None
        dirs = dict(zip(part.replicas, part.replica_dirs or (), strict=False)) if part else {}
        replicas = []
        for broker in new:
            size = sizes.get((key[0], key[1], broker))
            # The average since the journal's submit when there is one: a throttled copy runs
            # in bursts (Kafka's quota window), so a few seconds' sample may read 0 or a burst.
            rate = sample_rate(first.get((key[0], key[1], broker)), size, seconds)
            if key in submitted and flight is not None:
                rate = average_rate(size, time.time() - submitted[key]) or rate
            replicas.append(
                ReplicaFacts(
                    broker=broker,
                    alive=broker in live,
                    in_sync=current is not None and broker in current and broker in isr,
                    size=size,
                    rate=rate,
                    dir=dirs.get(broker),
                    dirs=disks.get(broker, ()),
                )
            )
        leader_size = None
        if leader is not None and leader >= 0:
            leader_size = sizes.get((key[0], key[1], leader))
        if leader_size is None and part is not None:
            leader_size = part.size_bytes
        facts.append(
            PartitionFacts(
                topic=key[0],
                partition=key[1],
                planned=tuple(planned),
                current=current,
                in_flight=flight is not None,
                leader=leader,
                leader_alive=leader is not None and leader in live,
                leader_size=leader_size,
                isr=isr,
                new_replicas=tuple(replicas),
                tiered=key[0] in tiered,
                write_rate=written.get(key),
            )
        )
    names = [str(b.id) for b in snap.brokers]
    values = cluster.configs("broker", names)

    def rate_of(config: dict[str, str], name: str) -> int | None:
        return parse_rate(config[name]) if config.get(name) else None

    throttles = {
        int(b): Throttle(
            rate_of(v, "leader.replication.throttled.rate"),
            rate_of(v, "follower.replication.throttled.rate"),
        )
        for b, v in values.items()
    }
    return facts, throttles, snap
