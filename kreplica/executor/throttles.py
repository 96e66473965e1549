"""Replication throttles exactly as Kafka's `kafka-reassign-partitions --throttle` computes them.

Pure (standard library only, deterministic). The calculation follows
`ReassignPartitionsCommand` (Kafka 3.x, `calculateProposedMoveMap`, `calculateLeaderThrottles`,
`calculateFollowerThrottles`, `calculateReassigningBrokers`):

* the move map starts from the reassignments already in flight (sources = replicas − adding,
  destinations = adding); then for every proposed partition, sources = the in-flight move's
  sources if the partition is moving already, else its current replicas, and destinations =
  proposed − sources;
* per topic, `leader.replication.throttled.replicas` lists `partition:broker` for every source
  and `follower.replication.throttled.replicas` every destination that is not a source, each
  sorted as strings ("10:1" before "2:1") and comma-joined (possibly empty);
* `leader.replication.throttled.rate` and `follower.replication.throttled.rate` are set on every
  broker that is a source or a destination of any move.

Unlike Kafka's tool, which overwrites the topic lists and deletes every throttle when done,
kreplica merges its lists with what is set already (`merge_replica_list`,
`ThrottlePlan.merged_with`) and afterwards restores exactly what was there (`restore_plan`).

Config values are strings, as the Admin API carries them. A resource is `("topic", name)` or
`("broker", str(id))`; a missing config is `None`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from kreplica.errors import UsageError
from kreplica.executor.moves import Move
from kreplica.model import Partition

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
# The broker's limit on copying a replica between its own log dirs (intra-broker moves).
ALTER_DIRS_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
TOPIC_KEYS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
BROKER_KEYS = (LEADER_RATE, FOLLOWER_RATE, ALTER_DIRS_RATE)
TOPIC = "topic"
BROKER = "broker"
LONG_MAX = 2**63 - 1  # the broker's rate config is a Java long
# Every string in a Kafka protocol message (IncrementalAlterConfigs' config value, KRaft's
# ConfigRecord) is at most 0x7fff bytes of UTF-8: a longer throttled-replica list cannot be set
# (KAFKA-17993: "'value' field is too long to be serialized"). Appending it in pieces does not
# help: the stored value has the same limit.
MAX_CONFIG_VALUE = 0x7FFF

Resource = tuple[str, str]  # ("topic", "orders") or ("broker", "3")
ConfigValues = Mapping[Resource, Mapping[str, str | None]]

# ---------------------------------------------------------------------------------------- rates

_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "ki": 2**10,
    "kib": 2**10,
    "mi": 2**20,
    "mib": 2**20,
    "gi": 2**30,
    "gib": 2**30,
}
_RATE = re.compile(r"\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*([a-z]*)\s*(?:/\s*s)?\s*", re.IGNORECASE)
_EXAMPLE = "give bytes per second such as 50MB/s, 10MiB/s or 52428800"


def parse_rate(text: str) -> int:
    """Bytes per second from "50MB/s", "50MB", "10MiB/s", "1.5GB/s", "500KiB/s" or "1000000".

    Units are case-insensitive: B, KB, MB, GB (powers of 1000), KiB, MiB, GiB (powers of 1024);
    the B may be left out and "/s" is optional. Zero, negative, fractional-byte and unparsable
    values raise UsageError.
    """
    match = _RATE.fullmatch(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise UsageError(f"throttle {text!r} is not a rate; {_EXAMPLE}")
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        raise UsageError(f"throttle {text!r} is not a rate; {_EXAMPLE}") from None
    value = number * _UNITS[unit]
    if value <= 0:
        raise UsageError(f"throttle {text!r} must be more than 0 bytes per second; {_EXAMPLE}")
    if value != value.to_integral_value():
        raise UsageError(f"throttle {text!r} is not a whole number of bytes per second; {_EXAMPLE}")
    if value > LONG_MAX:
        raise UsageError(f"throttle {text!r} is above Kafka's largest rate; {_EXAMPLE}")
    return int(value)


def format_rate(rate: int) -> str:
    """A rate for people: "50 MB/s" or "10 MiB/s" when exact, else bytes ("1234 B/s")."""
    for unit, size in (("GiB", 2**30), ("GB", 10**9), ("MiB", 2**20), ("MB", 10**6)):
        if rate >= size and rate % size == 0:
            return f"{rate // size} {unit}/s"
    for unit, size in (("KiB", 2**10), ("KB", 10**3)):
        if rate >= size and rate % size == 0:
            return f"{rate // size} {unit}/s"
    return f"{rate} B/s"


# ------------------------------------------------------------------------------------- move map


@dataclass(frozen=True)
class InFlight:
    """A reassignment already running (ListPartitionReassignments, or a snapshot's partition).

    `replicas` is the full set Kafka reports during the move (target plus removing ones).
    """

    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)


def in_flight_from_partitions(partitions: Iterable[Partition]) -> list[InFlight]:
    """The in-flight reassignments among a snapshot's partitions."""
    return [
        InFlight(p.topic, p.partition, p.replicas, p.adding_replicas, p.removing_replicas)
        for p in partitions
        if p.reassigning
    ]


@dataclass(frozen=True)
class PartitionMove:
    """Kafka's `PartitionMove`: the brokers that send (sources) and receive (destinations)."""

    sources: frozenset[int]
    destinations: frozenset[int]


MoveMap = dict[str, dict[int, PartitionMove]]


def move_map(
    current: Mapping[tuple[str, int], Sequence[int]],
    proposed: Mapping[tuple[str, int], Sequence[int]],
    in_flight: Iterable[InFlight] = (),
) -> MoveMap:
    """Kafka's `calculateProposedMoveMap`, topics and partitions in sorted order.

    In-flight reassignments stay in the map even when not proposed (their throttles must stay).
    A proposed partition missing from `current` has no sources (as Kafka's getOrDefault).
    """
    result: dict[str, dict[int, PartitionMove]] = {}
    for move in in_flight:
        adding = set(move.adding)
        sources = frozenset(b for b in move.replicas if b not in adding)
        result.setdefault(move.topic, {})[move.partition] = PartitionMove(
            sources, frozenset(adding)
        )
    for (topic, partition), replicas in proposed.items():
        moves = result.setdefault(topic, {})
        if partition in moves:
            sources = moves[partition].sources
        else:
            sources = frozenset(current.get((topic, partition), ()))
        moves[partition] = PartitionMove(sources, frozenset(replicas) - sources)
    return {t: dict(sorted(result[t].items())) for t in sorted(result)}


def _as_move_map(moves: Mapping[str, Mapping[int, PartitionMove]] | Iterable[Move]) -> MoveMap:
    if isinstance(moves, Mapping):
        return {t: dict(ps) for t, ps in moves.items()}
    listed = list(moves)
    return move_map({m.key: m.before for m in listed}, {m.key: m.after for m in listed})


def _java_sorted_join(items: Iterable[str]) -> str:
    # TreeSet<String>: String.compareTo on UTF-16 code units; these are ASCII digits and ':'.
    return ",".join(sorted(set(items)))


def leader_throttles(moves: Mapping[str, Mapping[int, PartitionMove]]) -> dict[str, str]:
    """Kafka's `calculateLeaderThrottles`: `p:b` for every source, sorted as strings."""
    return {
        topic: _java_sorted_join(f"{p}:{b}" for p, move in parts.items() for b in move.sources)
        for topic, parts in moves.items()
    }


def follower_throttles(moves: Mapping[str, Mapping[int, PartitionMove]]) -> dict[str, str]:
    """Kafka's `calculateFollowerThrottles`: `p:b` for every destination that is not a source."""
    return {
        topic: _java_sorted_join(
            f"{p}:{b}" for p, move in parts.items() for b in move.destinations - move.sources
        )
        for topic, parts in moves.items()
    }


def throttled_replicas(
    moves: Mapping[str, Mapping[int, PartitionMove]] | Iterable[Move],
) -> dict[str, dict[str, str]]:
    """Per topic, both throttled-replica configs as Kafka's tool would SET them.

    `moves` is a move map (`move_map`) or plain `Move`s (then before = current, after = proposed,
    nothing in flight).
    """
    mm = _as_move_map(moves)
    leaders, followers = leader_throttles(mm), follower_throttles(mm)
    return {t: {LEADER_REPLICAS: leaders[t], FOLLOWER_REPLICAS: followers[t]} for t in mm}


def reassigning_brokers(
    moves: Mapping[str, Mapping[int, PartitionMove]] | Iterable[Move],
) -> list[int]:
    """Kafka's `calculateReassigningBrokers`: every source and destination, ascending."""
    mm = _as_move_map(moves)
    brokers: set[int] = set()
    for parts in mm.values():
        for move in parts.values():
            brokers |= move.sources | move.destinations
    return sorted(brokers)


# -------------------------------------------------------------------------------- throttle plan


@dataclass(frozen=True)
class ThrottlePlan:
    """The throttle configs for a set of moves at one rate (bytes per second)."""

    rate: int
    topics: Mapping[str, Mapping[str, str]]  # topic -> {leader/follower replicas key: list}
    brokers: Mapping[int, Mapping[str, str]]  # broker -> {leader/follower rate key: str(rate)}
    moves: Mapping[str, Mapping[int, PartitionMove]]

    def configs(self) -> dict[Resource, dict[str, str]]:
        """Every config as Kafka's tool would SET it (overwriting), topics then brokers."""
        out: dict[Resource, dict[str, str]] = {}
        for topic, values in self.topics.items():
            out[(TOPIC, topic)] = dict(values)
        for broker, values in self.brokers.items():
            out[(BROKER, str(broker))] = dict(values)
        return out

    def resources(self) -> list[Resource]:
        return list(self.configs())

    def merged_with(self, existing: ConfigValues) -> dict[Resource, dict[str, str]]:
        """What to SET so both kreplica's and the existing throttles hold.

        Replica lists are merged (`merge_replica_list`); rates are ours. Only configs whose value
        changes are returned, and an empty list is never set where nothing is set.
        """
        out: dict[Resource, dict[str, str]] = {}
        for resource, values in self.configs().items():
            before = existing.get(resource, {})
            for key, ours in values.items():
                old = before.get(key)
                new = merge_replica_list(old, ours) if key in TOPIC_KEYS else ours
                if new == old or (old is None and new == ""):
                    continue
                out.setdefault(resource, {})[key] = new
        return out


def one_less(values: Mapping[str, str]) -> dict[str, str]:
    """The rates one byte/s lower: a value the brokers report only once they have applied a
    change written after any before it (a value that is not a count above 1 is kept)."""
    return {k: str(int(v) - 1) if v.isdigit() and int(v) > 1 else v for k, v in values.items()}


def fit_to_limit(
    configs: Mapping[Resource, Mapping[str, str]],
) -> tuple[dict[Resource, dict[str, str]], list[str]]:
    """Configs to SET, with every throttled-replica list longer than MAX_CONFIG_VALUE bytes
    widened to "*" (every replica of the topic on the throttled brokers: what Kafka can take);
    also the topics widened, for a note."""
    out: dict[Resource, dict[str, str]] = {}
    widened: list[str] = []
    for resource, values in configs.items():
        fitted = dict(values)
        for key, value in values.items():
            if key in TOPIC_KEYS and len(value.encode("utf-8")) > MAX_CONFIG_VALUE:
                fitted[key] = "*"
                if resource[1] not in widened:
                    widened.append(resource[1])
        out[resource] = fitted
    return out, widened


def throttle_plan(
    moves: Sequence[Move], rate: int, in_flight: Iterable[InFlight] = ()
) -> ThrottlePlan:
    """Kafka's throttles for `moves` (before = current, after = proposed) plus those in flight."""
    if rate <= 0:
        raise UsageError(f"throttle rate {rate} must be more than 0 bytes per second")
    mm = move_map({m.key: m.before for m in moves}, {m.key: m.after for m in moves}, in_flight)
    rate_text = str(rate)
    return ThrottlePlan(
        rate=rate,
        topics=throttled_replicas(mm),
        brokers={
            b: {LEADER_RATE: rate_text, FOLLOWER_RATE: rate_text} for b in reassigning_brokers(mm)
        },
        moves=mm,
    )


# ------------------------------------------------------------------------ merging and restoring


def _entries(value: str | None) -> set[str]:
    if value is None:
        return set()
    return {item.strip() for item in value.split(",") if item.strip()}


def _is_wildcard(value: str | None) -> bool:
    return value is not None and value.strip() == "*"


def merge_replica_list(existing: str | None, ours: str) -> str:
    """The union of a throttled-replica list already set and ours, sorted as Kafka sorts.

    "*" (every replica) on either side stays "*".
    """
    if _is_wildcard(existing) or _is_wildcard(ours):
        return "*"
    return _java_sorted_join(_entries(existing) | _entries(ours))


def remove_from_replica_list(current: str | None, ours: str) -> str | None:
    """The list with our entries taken out; None (delete the config) when nothing is left.

    "*" is kept as it is: kreplica never sets it, so it belongs to someone else.
    """
    if current is None:
        return None
    if _is_wildcard(current):
        return "*"
    left = _entries(current) - _entries(ours)
    return _java_sorted_join(left) if left else None


def restore_value(key: str, previous: str | None, current: str | None, ours: str) -> str | None:
    """The value to leave once kreplica is done with one config (None: delete it).

    `previous` was there before kreplica set `ours`; `current` is there now. When nobody changed
    the config meanwhile (current is ours), previous comes back exactly. Otherwise, for replica
    lists only what kreplica added is taken out of current; a rate someone else changed is kept.
    """
    if key in TOPIC_KEYS:
        if current is None:
            return None
        if _is_wildcard(current) or _is_wildcard(ours):
            return previous if current.strip() == ours.strip() else current
        if _entries(current) == _entries(ours):
            return previous
        added = _entries(ours) - _entries(previous)
        return remove_from_replica_list(current, ",".join(sorted(added)))
    if current == ours:
        return previous
    return current


def restore_plan(
    previous_values: ConfigValues,
    current_values: ConfigValues,
    ours: Mapping[Resource, Mapping[str, str]],
) -> dict[Resource, dict[str, str | None]]:
    """The changes that put back what was there before kreplica's throttles (None: DELETE).

    `ours` is what kreplica SET (e.g. `merged_with`'s result, as the journal recorded it),
    `previous_values` what was there before, `current_values` what is there now. Configs that are
    already right are left out, so an empty result means nothing to do.
    """
    out: dict[Resource, dict[str, str | None]] = {}
    for resource, values in ours.items():
        previous = previous_values.get(resource, {})
        current = current_values.get(resource, {})
        for key, value in values.items():
            now = current.get(key)
            target = restore_value(key, previous.get(key), now, value)
            if target != now:
                out.setdefault(resource, {})[key] = target
    return out
