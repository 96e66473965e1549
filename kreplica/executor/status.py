"""`kreplica status PLAN.json`: where each partition of a plan stands, from raw facts. Pure.

Each partition is `done` (replicas as planned, nothing in flight), `moving` (its reassignment is
in flight) or `waiting` (not as planned, nothing in flight: a later wave, or no apply running).
A partition not done gets ONE reason, the first of this fixed list that holds (REASONS), each
naming the broker or log dir concerned:

* `dest-broker-offline`: a broker that must receive a new replica is down.
* `dest-dir-offline`: the log dir of a new replica's broker is offline (a failed disk).
* `dest-dir-full`: the log dir receiving a new replica has less usable space than is left to
  copy.
* `leader-offline`: the partition has no live leader to copy from.
* `throttle-bound`: the new replicas' broker receives (or the leader sends) at >= 80% of the
  replication throttle set on it: the throttle, not the cluster, sets the pace.
* `tiered-topic`: remote.storage.enable=true: bytes are the local log only (remote segments are
  not copied), so the figures understate the topic.
* `follower-lagging`: a new replica is behind the leader by so many bytes, growing at a rate.
* `not-submitted`: waiting: the partition's move was not submitted (a later wave of a running
  apply, or no apply running).
* `unknown`: none of the above; the raw state (replicas, in flight, ISR) is shown.

Bytes are those of the new replicas: per new replica the leader's log size is the total and its
own log size (DescribeLogDirs, as apply measures progress) is what is copied; an in-sync new
replica counts as fully copied. The ETA counts the bytes written while the copy runs: a new
replica gains on its leader at its copy rate minus the partition's write rate (the plan's, or
what its apply measured), so it is left / (rate - writes), and none when it never catches up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kreplica.executor.copyrate import THROTTLE_SHARE, eta_s
from kreplica.render.text import format_bytes as fmt_bytes
from kreplica.render.text import format_seconds as fmt_seconds

Key = tuple[str, int]

REASONS = (
    "dest-broker-offline",
    "dest-dir-offline",
    "dest-dir-full",
    "leader-offline",
    "throttle-bound",
    "tiered-topic",
    "follower-lagging",
    "not-submitted",
    "unknown",
)


@dataclass(frozen=True)
class DirFacts:
    path: str
    offline: bool = False
    usable_bytes: int | None = None  # None: unknown


@dataclass(frozen=True)
class ReplicaFacts:
    """A new replica of a partition (on a broker that did not hold it before)."""

    broker: int
    alive: bool
    in_sync: bool
    size: int | None  # its log size now; None: not reported (down, or not created yet)
    rate: float | None = None  # bytes/s its log grew by over the sampling interval
    dir: str | None = None  # the log dir holding it, when reported
    dirs: tuple[DirFacts, ...] = ()  # the broker's log dirs


@dataclass(frozen=True)
class PartitionFacts:
    topic: str
    partition: int
    planned: tuple[int, ...]
    current: tuple[int, ...] | None  # None: the partition does not exist (yet)
    in_flight: bool
    leader: int | None  # None or -1: none
    leader_alive: bool
    leader_size: int | None  # the leader's log size
    isr: tuple[int, ...]
    new_replicas: tuple[ReplicaFacts, ...]
    tiered: bool = False
    write_rate: float | None = None  # bytes/s written to it (plan or journal); None: unknown

    @property
    def writes(self) -> float:
        """Bytes/s its copy must outrun: the write rate once per new replica not in sync."""
        lagging = sum(1 for r in self.new_replicas if not r.in_sync)
        return (self.write_rate or 0.0) * lagging


@dataclass(frozen=True)
class Throttle:
    """The replication throttles set on one broker, bytes/s (None: not set)."""

    leader_rate: int | None = None
    follower_rate: int | None = None


@dataclass(frozen=True)
class PartitionStatus:
    partition: str
    state: str  # done, moving, waiting
    copied: int
    total: int
    rate: float | None  # bytes/s over its new replicas
    eta_s: float | None
    reason: str | None  # a code of REASONS; None when done
    detail: str  # the reason in words, naming the broker or dir


@dataclass(frozen=True)
class StatusSummary:
    done: int
    moving: int
    waiting: int
    copied: int
    total: int
    rate: float | None
    eta_s: float | None
    writes: float = 0.0  # bytes/s written meanwhile to what is still copying (once per replica)

    def line(self) -> str:
        total = self.done + self.moving + self.waiting
        text = f"{self.done}/{total} done, {self.moving} moving, {self.waiting} waiting"
        if self.total:
            text += f"; {fmt_bytes(self.copied)} of {fmt_bytes(self.total)} copied"
        if self.rate:
            text += f" at {fmt_bytes(int(self.rate))}/s"
        if self.writes:
            text += f", written at {fmt_bytes(int(self.writes))}/s"
        if self.eta_s is not None:
            text += f", ETA {fmt_seconds(self.eta_s)}"
        elif self.rate and self.writes >= self.rate:
            text += ", ETA never at this rate"
        return text


def _bytes(facts: PartitionFacts) -> tuple[int, int, float | None]:
    copied = total = 0
    rates = [r.rate for r in facts.new_replicas if r.rate is not None and not r.in_sync]
    leader = facts.leader_size or 0
    for replica in facts.new_replicas:
        total += leader
        if replica.in_sync:
            copied += leader
        else:
            copied += min(replica.size or 0, leader)
    return copied, total, (sum(rates) if rates else None)


def _replica_dir(replica: ReplicaFacts) -> DirFacts | None:
    for d in replica.dirs:
        if d.path == replica.dir:
            return d
    return None


def _dir_reason(facts: PartitionFacts, replica: ReplicaFacts) -> tuple[str, str] | None:
    own = _replica_dir(replica)
    if own is not None and own.offline:
        return "dest-dir-offline", f"broker {replica.broker} log dir {own.path} is offline"
    offline = [d for d in replica.dirs if d.offline]
    if own is None and replica.size is None and offline:
        # not created, or created on a dir that failed: a failed dir reports no replicas
        return (
            "dest-dir-offline",
            f"broker {replica.broker} log dir {offline[0].path} is offline "
            f"(the new replica is not reported)",
        )
    left = max((facts.leader_size or 0) - (replica.size or 0), 0)
    candidates = [own] if own is not None else [d for d in replica.dirs if not d.offline]
    known = [d for d in candidates if d.usable_bytes is not None]
    if left and known and all(d.usable_bytes is not None and d.usable_bytes < left for d in known):
        d = known[0]
        return (
            "dest-dir-full",
            f"broker {replica.broker} log dir {d.path} has {fmt_bytes(d.usable_bytes or 0)} "
            f"usable, {fmt_bytes(left)} left to copy",
        )
    return None


def _raw(facts: PartitionFacts) -> str:
    return (
        f"replicas {list(facts.current) if facts.current is not None else 'missing'}, "
        f"planned {list(facts.planned)}, isr {list(facts.isr)}, leader {facts.leader}, "
        f"{'in flight' if facts.in_flight else 'nothing in flight'}"
    )


def _throttle_reason(
    facts: PartitionFacts,
    lagging: Sequence[ReplicaFacts],
    inbound: Mapping[int, float],
    outbound: Mapping[int, float],
    throttles: Mapping[int, Throttle],
) -> tuple[str, float] | None:
    """The throttle-bound detail, and the share of the measured rate the throttle lets
    through (a rate averaged since the submit includes the burst before the quota window
    filled, so a throttle-bound copy is counted at the throttle for its ETA)."""

    def at_throttle(limit: int | None, rate: float, what: str) -> tuple[str, float] | None:
        if limit and rate >= THROTTLE_SHARE * limit:
            return f"{what}, {fmt_bytes(limit)}/s", min(1.0, limit / rate)
        return None

    for replica in lagging:
        b = replica.broker
        found = at_throttle(
            throttles.get(b, Throttle()).follower_rate,
            inbound.get(b, 0.0),
            f"broker {b} receives at its follower throttle",
        )
        if found:
            return found
    if facts.leader is not None and facts.leader >= 0:
        lead = facts.leader
        return at_throttle(
            throttles.get(lead, Throttle()).leader_rate,
            outbound.get(lead, 0.0),
            f"leader broker {lead} sends at its leader throttle",
        )
    return None


def partition_status(
    facts: PartitionFacts,
    *,
    inbound: Mapping[int, float] | None = None,
    outbound: Mapping[int, float] | None = None,
    throttles: Mapping[int, Throttle] | None = None,
) -> PartitionStatus:
    """The state, bytes, ETA and one reason of one partition. `inbound`/`outbound`: bytes/s
    each broker receives / sends for the plan's new replicas (summed over partitions, as a
    broker's throttle caps the sum); `throttles`: the rates set per broker."""
    name = f"{facts.topic}-{facts.partition}"
    copied, total, rate = _bytes(facts)
    if facts.current == facts.planned and not facts.in_flight:
        return PartitionStatus(name, "done", total, total, None, None, None, "")
    state = "moving" if facts.in_flight else "waiting"
    if state == "waiting":  # nothing is being built: a stray log elsewhere copies nothing
        copied, rate = 0, None
    left = total - copied
    eta = eta_s(left, rate, facts.writes) if rate and state == "moving" else None

    written = (
        f"; written at {fmt_bytes(int(facts.write_rate))}/s"
        if facts.write_rate and state == "moving"
        else ""
    )

    def out(code: str, detail: str) -> PartitionStatus:
        return PartitionStatus(name, state, copied, total, rate, eta, code, detail + written)

    lagging = [r for r in facts.new_replicas if not r.in_sync]
    for replica in lagging:
        if not replica.alive:
            return out("dest-broker-offline", f"destination broker {replica.broker} is offline")
    for replica in lagging:
        found = _dir_reason(facts, replica)
        if found is not None:
            return out(*found)
    if facts.current is not None and (
        facts.leader is None or facts.leader < 0 or not facts.leader_alive
    ):
        who = f"broker {facts.leader}" if facts.leader is not None and facts.leader >= 0 else "-"
        return out("leader-offline", f"no live leader (leader {who})")
    if state == "waiting":
        stranger = (
            facts.current is not None
            and set(facts.current) - set(facts.planned)
            and not facts.new_replicas
        )
        if stranger:
            return out("unknown", _raw(facts))
        what = "to be created" if facts.current is None else "not submitted yet"
        return out("not-submitted", f"{what} (a later wave, or no apply running)")
    if not lagging:
        return out("unknown", _raw(facts))
    bound = _throttle_reason(facts, lagging, inbound or {}, outbound or {}, throttles or {})
    if bound is not None:
        detail, scale = bound
        rate = rate * scale if rate else rate
        eta = eta_s(left, rate, facts.writes) if rate else None
        return out("throttle-bound", detail)
    if facts.tiered:
        return out(
            "tiered-topic",
            "remote.storage.enable=true: local bytes only, remote segments are not copied",
        )
    slowest = min(lagging, key=lambda r: r.size or 0)
    behind = max((facts.leader_size or 0) - (slowest.size or 0), 0)
    speed = f"at {fmt_bytes(int(slowest.rate))}/s" if slowest.rate else "not growing"
    return out(
        "follower-lagging",
        f"broker {slowest.broker} is {fmt_bytes(behind)} behind leader broker {facts.leader}, "
        f"{speed}",
    )


def plan_status(
    partitions: Sequence[PartitionFacts], throttles: Mapping[int, Throttle]
) -> tuple[list[PartitionStatus], StatusSummary]:
    """Every partition's status, and the summary. Broker rates are summed over the plan's
    moving partitions first: a throttle caps a broker's whole replication traffic."""
    inbound: dict[int, float] = {}
    outbound: dict[int, float] = {}
    for facts in partitions:
        if not facts.in_flight:
            continue
        for replica in facts.new_replicas:
            if replica.rate and not replica.in_sync:
                inbound[replica.broker] = inbound.get(replica.broker, 0.0) + replica.rate
                if facts.leader is not None and facts.leader >= 0:
                    outbound[facts.leader] = outbound.get(facts.leader, 0.0) + replica.rate
    rows = [
        partition_status(f, inbound=inbound, outbound=outbound, throttles=throttles)
        for f in partitions
    ]
    moving = [r for r in rows if r.state == "moving"]
    rate = sum(r.rate or 0.0 for r in moving) or None
    copied = sum(r.copied for r in rows)
    total = sum(r.total for r in rows)
    left = sum(r.total - r.copied for r in rows if r.state != "done")
    writes = sum(f.writes for f in partitions if f.in_flight)
    eta = eta_s(left, rate, writes) if rate else None
    summary = StatusSummary(
        done=sum(1 for r in rows if r.state == "done"),
        moving=len(moving),
        waiting=sum(1 for r in rows if r.state == "waiting"),
        copied=copied,
        total=total,
        rate=rate,
        eta_s=0.0 if all(r.state == "done" for r in rows) else eta,
        writes=writes,
    )
    return rows, summary


def sample_rate(before: int | None, after: int | None, seconds: float) -> float | None:
    """Growth of a log between two DescribeLogDirs reads, bytes/s (None when unmeasured)."""
    if before is None or after is None or seconds <= 0:
        return None
    return max(after - before, 0) / seconds


def average_rate(size: int | None, since_s: float | None) -> float | None:
    """Bytes/s since the journal's submit of this partition (the fallback without sampling)."""
    if size is None or not since_s or since_s <= 0:
        return None
    return size / since_s
