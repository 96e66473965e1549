"""Traffic per partition and per broker (pure): rates from two offset reads, and the network
load they put on each broker.

A partition's write rate is its log-end offset's advance over the window times its bytes per
offset (its log's size over its offset span): offset deltas, not size deltas, since retention
deletes segments mid-window. Its fan-out is the number of consumer groups whose committed
offset on it advanced in the window. Per broker: network in is the sum of the rates of the
partitions it holds a replica of (the leader takes the producers' bytes, each follower the
leader's); network out is, for the partitions it leads, rate x (followers + fan-out).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kreplica.errors import InputError, UsageError
from kreplica.model import ClusterSnapshot, Partition, TrafficWindow

MIN_WINDOW_S = 5.0  # under it, one batch more or less is a large share of the rate
BAND_FACTOR = 1.05  # the band: max(1.05 x mean, mean + the largest single load)

# why a partition's figures are not plain measurements (PartitionTraffic.notes)
IDLE = "idle"  # no offset advanced in the window: 0 B/s
COMPACTED = "compacted"  # bytes per offset estimated: compaction removed records of the span
TIERED = "tiered"  # the local log does not cover the offset span: rate not measurable
NO_SIZE = "no-size"  # the brokers gave no log size: rate not measurable
FANOUT_UNKNOWN = "fanout-unknown"  # a group is assigned it but committed nothing new
OFFLINE = "offline"  # no leader to answer for its offsets: not measured
NOT_MEASURED = "not-measured"  # a snapshot's partition stored without a rate
NO_SERIES = "no-series"  # metrics (--traffic-from) have no window of it: not measured
FANOUT_TOPIC = "fanout-topic"  # fan-out from its topic's bytes out / bytes in: an estimate

NOTE_TEXT = {
    IDLE: "idle in the window (0 B/s)",
    COMPACTED: "compacted: bytes per offset is an estimate",
    TIERED: "tiered storage: the local log does not span its offsets, rate not measured",
    NO_SIZE: "no log size (DescribeLogDirs, or kafka_log_log_size), rate not measured",
    FANOUT_UNKNOWN: "a consumer group is assigned it but did not commit: fan-out unknown",
    OFFLINE: "no leader (offline): not measured",
    NOT_MEASURED: "stored without a rate (not measurable when measured)",
    NO_SERIES: "no whole window of it in Prometheus (newer, or not scraped): not measured",
    FANOUT_TOPIC: "fan-out is the topic's bytes out / bytes in (no committed offsets in metrics)",
}


# Prometheus's duration units (--traffic-range), in seconds
UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def duration_text(seconds: float) -> str:
    """`7d`, `5m`, `90s`: the largest unit that divides it."""
    for unit in ("w", "d", "h", "m", "s"):
        if seconds >= UNITS[unit] and seconds % UNITS[unit] == 0:
            return f"{int(seconds // UNITS[unit])}{unit}"
    return f"{seconds:g}s"


def check_window(window_s: float) -> None:
    if not window_s >= MIN_WINDOW_S:
        raise UsageError(
            f"a traffic window of {window_s:g}s is too short to measure a rate; give "
            f"{MIN_WINDOW_S:g} seconds or more"
        )


@dataclass(frozen=True, slots=True)
class OffsetRead:
    """What the brokers said of one partition: its offsets at the window's start and end,
    its log start at the end, and its log size (bytes) at the end (None: not read)."""

    end_before: int
    end_after: int
    start_after: int
    size_bytes: int | None


@dataclass(frozen=True, slots=True)
class PartitionTraffic:
    topic: str
    partition: int
    bytes_in_per_s: float | None  # None: not measurable (see notes)
    fanout: int | None  # None: unknown
    notes: tuple[str, ...] = ()


def partition_rate(
    read: OffsetRead, elapsed_s: float, *, compacted: bool, tiered: bool
) -> tuple[float | None, tuple[str, ...]]:
    """Bytes written per second over the window, and why it is not a plain measurement."""
    advanced = read.end_after - read.end_before
    if advanced <= 0:
        return 0.0, (IDLE,)
    if tiered:
        return None, (TIERED,)
    span = read.end_after - read.start_after
    if read.size_bytes is None or span <= 0:
        return None, (NO_SIZE,)
    rate = advanced * (read.size_bytes / span) / elapsed_s
    return rate, (COMPACTED,) if compacted else ()


def fanout(
    advanced_groups: int, assigned_not_advanced: bool, idle: bool
) -> tuple[int | None, tuple[str, ...]]:
    """Groups that read the partition in the window. A group assigned it whose commit did not
    move while it took writes may read without committing: then unknown, never 0."""
    if assigned_not_advanced and not idle:
        return None, (FANOUT_UNKNOWN,)
    return advanced_groups, ()


def measure_partitions(
    reads: Mapping[tuple[str, int], OffsetRead],
    elapsed_s: float,
    *,
    compacted: Iterable[str] = (),
    tiered: Iterable[str] = (),
    commits_before: Mapping[str, Mapping[tuple[str, int], int]],
    commits_after: Mapping[str, Mapping[tuple[str, int], int]],
    assigned: Mapping[str, Iterable[tuple[str, int]]],
    offline: Iterable[tuple[str, int]] = (),
) -> list[PartitionTraffic]:
    """Each partition's traffic, sorted by topic and partition. `commits_*`: per group, its
    committed offset per partition at the window's start and end; `assigned`: per group, the
    partitions its members hold now; `offline`: partitions without a leader (not read)."""
    if not elapsed_s > 0:
        raise ValueError("the window must have a positive length")
    compacted_set, tiered_set = set(compacted), set(tiered)
    advanced: dict[tuple[str, int], int] = {}
    for group, after in commits_after.items():
        before = commits_before.get(group, {})
        for key, offset in after.items():
            if key in before and offset > before[key]:
                advanced[key] = advanced.get(key, 0) + 1
    silent: set[tuple[str, int]] = set()
    for group, keys in assigned.items():
        before = commits_before.get(group, {})
        after = commits_after.get(group, {})
        for key in keys:
            if not (key in before and after.get(key, -1) > before[key]):
                silent.add(key)
    out = []
    for key in sorted(reads):
        topic, number = key
        rate, rate_notes = partition_rate(
            reads[key],
            elapsed_s,
            compacted=topic in compacted_set,
            tiered=topic in tiered_set,
        )
        fans, fan_notes = fanout(advanced.get(key, 0), key in silent, IDLE in rate_notes)
        out.append(PartitionTraffic(topic, number, rate, fans, rate_notes + fan_notes))
    out += [PartitionTraffic(t, n, None, None, (OFFLINE,)) for t, n in offline]
    return sorted(out, key=lambda m: (m.topic, m.partition))


def with_traffic(
    snapshot: ClusterSnapshot, measured: Iterable[PartitionTraffic], window: TrafficWindow
) -> ClusterSnapshot:
    """The snapshot with each measured partition's rate and fan-out (what a snapshot file
    taken with `snapshot --traffic` stores)."""
    by_key = {(m.topic, m.partition): m for m in measured}

    def one(p: Partition) -> Partition:
        m = by_key.get((p.topic, p.partition))
        if m is None:
            return p
        return dataclasses.replace(p, bytes_in_per_s=m.bytes_in_per_s, fanout=m.fanout)

    topics = tuple(
        dataclasses.replace(t, partitions=tuple(one(p) for p in t.partitions))
        for t in snapshot.topics
    )
    return dataclasses.replace(snapshot, topics=topics, traffic=window)


def require_rates(snapshot: ClusterSnapshot, origin: str) -> None:
    if snapshot.traffic is None:
        raise InputError(
            f"{origin} carries no traffic rates; take one with kreplica snapshot `traffic_s` "
            "SECONDS (through the brokers)"
        )


def stored_traffic(snapshot: ClusterSnapshot) -> list[PartitionTraffic]:
    """The partitions' traffic as a snapshot with rates stores it, with the notes that can
    be told again from it (a rate it could not measure is stored as none)."""
    out = []
    for topic in snapshot.topics:
        compacted = "compact" in topic.configs.get("cleanup.policy", "")
        for p in topic.partitions:
            rate = p.bytes_in_per_s
            notes: tuple[str, ...] = ()
            if rate is None:
                notes = (NOT_MEASURED,)
            elif rate == 0:
                notes = (IDLE,)
            elif compacted:
                notes = (COMPACTED,)
            if p.fanout is None and rate:
                notes += (FANOUT_UNKNOWN,)
            elif rate and snapshot.traffic is not None and snapshot.traffic.origin is not None:
                notes += (FANOUT_TOPIC,)  # metrics have no committed offsets
            out.append(PartitionTraffic(p.topic, p.partition, rate, p.fanout, notes))
    return sorted(out, key=lambda m: (m.topic, m.partition))


# -- the model per broker ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerTraffic:
    id: int
    rack: str | None
    nw_in: float  # B/s: producers' bytes to its leaders plus replication to its followers
    nw_out: float  # B/s: replication to followers plus consumers of the partitions it leads
    leader_bytes_in: float  # B/s: producers' bytes to the partitions it leads
    disk_bytes: int | None  # its replicas' log sizes (None: no sizes known)
    replicas: int
    leaders: int
    fanout_unknown: int  # partitions it leads with unknown fan-out: nw_out is a floor
    nw_in_util: float | None = None  # nw_in / capacity (None: no capacity given)
    nw_out_util: float | None = None


def leader_out_load(p: Partition, replicas: Sequence[int] | None = None) -> float:
    """What the leader of `p` sends per second to each follower (of `replicas`, default its
    own) and each consumer group; an unknown rate or fan-out counts as none (a floor)."""
    followers = len(p.replicas if replicas is None else replicas) - 1
    return (p.bytes_in_per_s or 0.0) * (followers + (p.fanout or 0))


def bytes_out_per_s(p: Partition) -> float | None:
    """leader_out_load, or None when the rate or the fan-out is unknown."""
    if p.bytes_in_per_s is None or p.fanout is None:
        return None
    return leader_out_load(p)


def broker_traffic(
    snapshot: ClusterSnapshot, capacities: Mapping[int, Mapping[str, float]] | None = None
) -> list[BrokerTraffic]:
    """Each broker's network in and out, leader bytes in and disk, from the partitions'
    rates; with `capacities` (check_capacities), their share of each broker's capacity."""
    ids = [b.id for b in snapshot.brokers]
    nw_in = dict.fromkeys(ids, 0.0)
    nw_out = dict.fromkeys(ids, 0.0)
    lead_in = dict.fromkeys(ids, 0.0)
    disk: dict[int, int | None] = dict.fromkeys(ids, None)
    replicas = dict.fromkeys(ids, 0)
    leaders = dict.fromkeys(ids, 0)
    unknown = dict.fromkeys(ids, 0)
    for topic in snapshot.topics:
        for p in topic.partitions:
            rate = p.bytes_in_per_s or 0.0
            sizes = p.replica_sizes or (p.size_bytes,) * len(p.replicas)
            for broker, size in zip(p.replicas, sizes, strict=False):
                if broker not in nw_in:
                    continue  # a replica on a broker the source does not list
                nw_in[broker] += rate
                replicas[broker] += 1
                if size is not None:
                    disk[broker] = (disk[broker] or 0) + size
            leader = p.current_leader
            if leader not in nw_out:
                continue
            assert leader is not None
            leaders[leader] += 1
            lead_in[leader] += rate
            nw_out[leader] += leader_out_load(p)
            if p.fanout is None and rate > 0:
                unknown[leader] += 1
    out = []
    for b in snapshot.brokers:
        cap = (capacities or {}).get(b.id, {})
        out.append(
            BrokerTraffic(
                b.id,
                b.rack,
                nw_in[b.id],
                nw_out[b.id],
                lead_in[b.id],
                disk[b.id],
                replicas[b.id],
                leaders[b.id],
                unknown[b.id],
                nw_in[b.id] / cap["nw_in"] if "nw_in" in cap else None,
                nw_out[b.id] / cap["nw_out"] if "nw_out" in cap else None,
            )
        )
    return out


def band(loads: Mapping[int, float], largest: float) -> float:
    """The most a broker may carry: max(1.05 x mean, mean + the largest single load): a
    broker can be brought under it by moving whole partitions, where 1.05 x mean alone may
    be out of reach."""
    mean = sum(loads.values()) / len(loads) if loads else 0.0
    return max(BAND_FACTOR * mean, mean + largest)


def scaled_band(
    loads: Mapping[int, float], largest: float, capacity: Mapping[int, float]
) -> dict[int, float]:
    """The band per broker on utilisation (load / capacity), in B/s: with U the mean
    utilisation (all the load over all the capacity: no move changes it), broker b may carry
    capacity_b x max(1.05 x U, U + largest / capacity_b) = max(1.05 x U x capacity_b,
    U x capacity_b + largest): band's rule, each broker's share scaled by its capacity."""
    mean_util = sum(loads.values()) / sum(capacity[b] for b in loads) if loads else 0.0
    return {
        b: max(BAND_FACTOR * mean_util * capacity[b], mean_util * capacity[b] + largest)
        for b in loads
    }


def capacity_of(
    capacities: Mapping[int, Mapping[str, float]], among: Iterable[int], origin: str
) -> tuple[dict[int, float], dict[int, float]]:
    """(network in, network out) capacity per broker of `among`; a broker without both is
    bad input: a guess could fill a small broker past its NIC."""
    ids = sorted(set(among))
    missing = [b for b in ids if not {"nw_in", "nw_out"} <= set(capacities.get(b, {}))]
    if missing:
        raise InputError(
            f"{origin}: no nw_in and nw_out for broker(s) {', '.join(map(str, missing))}; "
            "give every broker the plan may use both capacities"
        )
    return (
        {b: capacities[b]["nw_in"] for b in ids},
        {b: capacities[b]["nw_out"] for b in ids},
    )


def bands(
    snapshot: ClusterSnapshot, loads: Iterable[BrokerTraffic], among: Iterable[int]
) -> tuple[float, float]:
    """The bands of network in and out over the brokers `among` (their mean), the largest
    single loads taken over every partition: what `rebalance --by traffic` brings them to."""
    ids = set(among)
    listed = [b for b in loads if b.id in ids]
    parts = [p for t in snapshot.topics for p in t.partitions]
    largest_in = max((p.bytes_in_per_s or 0.0 for p in parts), default=0.0)
    largest_out = max((leader_out_load(p) for p in parts), default=0.0)
    return (
        band({b.id: b.nw_in for b in listed}, largest_in),
        band({b.id: b.nw_out for b in listed}, largest_out),
    )


def check_capacities(
    raw: object, broker_ids: Iterable[int], origin: str
) -> dict[int, dict[str, float]]:
    """`--capacity FILE`'s JSON, {broker id: {"nw_in": B/s, "nw_out": B/s}}, checked against
    the cluster's brokers: a broker it does not have is bad input (a typo would go unseen)."""
    if not isinstance(raw, dict):
        raise InputError(
            f'{origin}: must be an object {{"BROKER_ID": {{"nw_in": B/s, "nw_out": B/s}}}}'
        )
    known = set(broker_ids)
    out: dict[int, dict[str, float]] = {}
    for key, value in raw.items():
        try:
            broker = int(key)
        except ValueError:
            raise InputError(f"{origin}: key {key!r} is not a broker id") from None
        if broker not in known:
            raise InputError(
                f"{origin}: broker {broker} is not in this cluster (brokers: "
                f"{', '.join(map(str, sorted(known))) or 'none'}); fix the capacity file"
            )
        if not isinstance(value, dict) or not value:
            raise InputError(f'{origin}: broker {broker} must be {{"nw_in": B/s, "nw_out": B/s}}')
        caps: dict[str, float] = {}
        for name, number in value.items():
            if name not in ("nw_in", "nw_out"):
                raise InputError(
                    f"{origin}: broker {broker} has {name!r}; only nw_in and nw_out are read"
                )
            if type(number) not in (int, float) or not number > 0:
                raise InputError(
                    f"{origin}: broker {broker} {name} must be bytes per second > 0, got {number!r}"
                )
            caps[name] = float(number)
        out[broker] = caps
    return out
