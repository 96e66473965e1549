"""Recognise KRaft's ``StripedReplicaPlacer`` in a topic's assignment (pure, standard library;
numpy, imported when first needed, for topics whose partitions all fall in the first cycle).

Kafka's striped placer (see :func:`kreplica.kafka.striped_place`) draws its randomness once per
topic creation: a start offset into the racks, a start offset into each rack's brokers, and,
after every ``U`` partitions (``U`` = unfenced brokers), a shuffle of the rack order and of the
brokers inside each rack. Between shuffles ("cycles") it is fully regular:

* partition ``p`` starts at rack position ``(o0 + p) mod R``: leader racks alternate per
  partition, and the replicas of one partition walk the racks in that same order, the leader's
  rack skipped once, a rack that has given all its brokers skipped;
* a rack hands out its brokers in a fixed cyclic order, starting one place further each
  partition that uses it.

In the first cycle the orders are known (racks sorted as Java sorts them, empty rack first;
brokers by id), only the offsets are unknown. Later cycles have unknown orders. So
:func:`match_striped` replays the placer's bookkeeping (which rack and broker *position* each
replica must come from, including the placer's quirks: a rack that gave all its brokers at the
same epoch number one cycle earlier gives nothing) and checks that positions map one-to-one to
racks and brokers, per cycle. Every layout the placer produces is accepted; a hand-made layout
rarely fits more than a few partitions. Fenced brokers at creation time are not modelled.
When every partition falls in the first cycle there is nothing to search (`first_cycle_rows`
computes the search's answer directly, for many topics at once).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cmp_to_key
from typing import TYPE_CHECKING, Generic, TypeVar

from kreplica.kafka import java_compare_strings

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["StripedMatch", "match_striped"]

_Rack = str | None
_State = tuple[int, int, int]  # a rack's BrokerList: (epoch, index, bumps)

# Candidate walks and cross-partition backtracking steps the exact search may take per cycle,
# and per topic, before it gives up and the partitions vote instead (a topic this far off is
# hand-made anyway); bounds the cost of one topic to well under a second.
_SEARCH_BUDGET = 20_000
_TOPIC_BUDGET = 200_000


@dataclass(frozen=True)
class StripedMatch:
    """How far a topic's assignment fits KRaft's striped placement.

    ``fitting``: partitions whose replicas the placer can produce under one consistent set of
    draws (a partition may hold a prefix of them; but the placer's bookkeeping is replayed from
    the replicas partitions hold, so a partition whose RF changed after creation also
    unsettles the partitions after it in its cycle); ``nonconforming``: the rest.
    ``cycle_length``: the number of unfenced brokers assumed (partitions between shuffles).
    ``racks``: the racks in Kafka's sorted order (``None`` is the no-rack pseudo rack).
    """

    fitting: tuple[int, ...]
    nonconforming: tuple[int, ...]
    cycle_length: int
    racks: tuple[_Rack, ...]


def rack_sort_key(rack: _Rack) -> tuple[bool, object]:
    return (rack is not None, cmp_to_key(java_compare_strings)(rack or ""))


class _Unset(Enum):
    UNSET = 0


_UNSET = _Unset.UNSET
_T = TypeVar("_T", int, _Rack)


class _Ring(Generic[_T]):
    """A one-to-one map between ring positions and values. A ``fixed`` ring is a rotation of a
    known order (the first cycle) whose rotation is unknown until the first pin."""

    __slots__ = ("at", "base", "fixed", "index", "size", "where")

    def __init__(self, values: Sequence[_T], fixed: bool) -> None:
        self.size = len(values)
        self.fixed: tuple[_T, ...] | None = tuple(values) if fixed else None
        self.index: dict[_T, int] = {v: i for i, v in enumerate(values)}
        self.base: int | None = None
        self.at: dict[int, _T] = {}
        self.where: dict[_T, int] = {}

    def copy(self) -> _Ring[_T]:
        other: _Ring[_T] = _Ring.__new__(_Ring)
        other.size, other.fixed, other.index = self.size, self.fixed, self.index
        other.base = self.base
        if self.fixed is not None:  # a fixed ring's pins are its base: at/where stay empty
            other.at, other.where = self.at, self.where
        else:
            other.at, other.where = dict(self.at), dict(self.where)
        return other

    def get(self, pos: int) -> _T | _Unset:
        if self.fixed is not None:
            return _UNSET if self.base is None else self.fixed[(self.base + pos) % self.size]
        return self.at.get(pos, _UNSET)

    def can_pin(self, pos: int, value: _T) -> bool:
        if value not in self.index:
            return False
        if self.fixed is not None:
            return self.base is None or self.base == (self.index[value] - pos) % self.size
        return self.at.get(pos, value) == value and self.where.get(value, pos) == pos

    def pin(self, pos: int, value: _T) -> None:
        if self.fixed is not None:
            self.base = (self.index[value] - pos) % self.size
        else:
            self.at[pos] = value
            self.where[value] = pos

    def pins(self) -> list[tuple[int, _T]]:
        """The (position, value) pairs known, by position."""
        if self.fixed is not None:
            if self.base is None:
                return []
            fixed, base, size = self.fixed, self.base, self.size
            return [(pos, fixed[(base + pos) % size]) for pos in range(size)]
        return sorted(self.at.items())

    def settle(self, votes: Mapping[tuple[int, _T], int]) -> None:
        """Pin the strongest votes first; a position and a value are each taken once."""
        if self.fixed is not None:
            tally: dict[int, int] = {}
            for (pos, value), n in votes.items():
                if value in self.index:
                    base = (self.index[value] - pos) % self.size
                    tally[base] = tally.get(base, 0) + n
            if tally:
                self.base = min(tally, key=lambda b: (-tally[b], b))
            return
        ranked = sorted(votes.items(), key=lambda kv: (-kv[1], kv[0][0], self.index[kv[0][1]]))
        for (pos, value), _ in ranked:
            if pos not in self.at and self.can_pin(pos, value):
                self.pin(pos, value)


class _Env:
    """One reading of a cycle's unknowns (rack and broker rings), plus the BrokerList
    bookkeeping of the partition being walked. Broker rings are copied on first write."""

    __slots__ = ("brokers", "owned", "racks", "states")

    def __init__(
        self,
        racks: _Ring[_Rack],
        brokers: dict[_Rack, _Ring[int]],
        states: Mapping[_Rack, _State],
    ) -> None:
        self.racks = racks
        self.brokers = dict(brokers)
        self.states = dict(states)  # immutable values: a shallow copy is a copy
        self.owned: set[_Rack] = set()

    def copy(self) -> _Env:
        return _Env(self.racks.copy(), self.brokers, self.states)

    def broker_ring(self, rack: _Rack) -> _Ring[int]:
        if rack not in self.owned:
            self.brokers[rack] = self.brokers[rack].copy()
            self.owned.add(rack)
        return self.brokers[rack]


class _Matcher:
    def __init__(
        self,
        parts: Mapping[int, Sequence[int]],
        rack_of: Mapping[int, _Rack],
        members: Mapping[_Rack, list[int]],
        cycle_length: int,
    ) -> None:
        self.parts = parts
        self.rack_of = rack_of
        self.members = members
        self.rack_names = sorted(members, key=rack_sort_key)
        self.r = len(self.rack_names)
        self.size = {k: len(v) for k, v in members.items()}
        self.u = cycle_length
        self.before = self._states_before()
        self.budget = _TOPIC_BUDGET
        # The partitions some walk may produce (replicas, distinct, of known brokers): checked
        # once, not at each of the many walks of a partition.
        self.walkable = {
            p: list(replicas)
            for p, replicas in parts.items()
            if replicas
            and len(set(replicas)) == len(replicas)
            and all(b in rack_of for b in replicas)
        }
        # Unpinned envs, built once: `at` and the walks copy what they change, never these.
        self.blank = {first: self.fresh(first) for first in (True, False)}

    # -- the placer's bookkeeping -------------------------------------------------------------

    def epoch(self, p: int) -> int:
        return p % self.u if self.u > 1 else p

    def cycle(self, p: int) -> int:
        return p // self.u if self.u > 1 else 0

    def _states_before(self) -> dict[int, dict[_Rack, _State]]:
        """Each rack's BrokerList (epoch, index, bumps) before each partition, replayed from
        the replicas the partitions hold (a replica taken = one successful ``next``)."""
        states: dict[_Rack, _State] = dict.fromkeys(self.rack_names, (0, 0, 0))
        out: dict[int, dict[_Rack, _State]] = {}
        for p in sorted(self.parts):
            out[p] = dict(states)
            e = self.epoch(p)
            taken: dict[_Rack, int] = {}
            for b in self.parts[p]:
                if b in self.rack_of:
                    taken[self.rack_of[b]] = taken.get(self.rack_of[b], 0) + 1
            for rack, count in taken.items():
                epoch, index, bumps = states[rack]
                if epoch != e:
                    epoch, index, bumps = e, 0, bumps + 1
                states[rack] = (epoch, index + count, bumps)
        return out

    def fresh(self, first_cycle: bool) -> _Env:
        racks: _Ring[_Rack] = _Ring(self.rack_names, first_cycle)
        brokers = {k: _Ring(sorted(v), first_cycle) for k, v in self.members.items()}
        return _Env(racks, brokers, {})

    def at(self, p: int, env: _Env) -> _Env:
        """A copy of ``env``'s pins with the bookkeeping as it stands before partition ``p``."""
        return _Env(env.racks.copy(), env.brokers, self.before[p])

    # -- one partition ------------------------------------------------------------------------

    def walks_at(self, p: int, env: _Env) -> Iterator[_Env]:
        """`walks` of ``p`` from ``env``'s pins and the bookkeeping before ``p`` (``env`` is
        not changed). Most partitions of a hand-made topic fail at the leader once the rings
        hold pins: that is checked first, as the walk would, without copying ``env``."""
        replicas = self.parts[p]
        known = env.racks.get(p % self.r)
        if replicas and replicas[0] in self.rack_of and not isinstance(known, _Unset):
            leader = replicas[0]
            epoch, index, bumps = self.before[p][known]
            if epoch != self.epoch(p):
                index, bumps = 0, bumps + 1
            if index < self.size[known]:  # the rack at the first position gives a broker:
                if known != self.rack_of[leader]:  # the leader's rack it must be
                    return iter(())
                pos = (bumps + index) % self.size[known]
                if not env.brokers[known].can_pin(pos, leader):  # and its broker there
                    return iter(())
        return self.walks(p, self.at(p, env))

    def walks(self, p: int, env: _Env) -> Iterator[_Env]:
        """Every way (given ``env``'s pins, which it may change) the placer can produce
        partition ``p``'s replicas; each yielded env holds the pins that way needs."""
        replicas = self.walkable.get(p)
        if replicas is None:
            return
        e = self.epoch(p)
        r = self.r
        start = p % r
        rack_of = self.rack_of
        size = self.size
        rack_names = self.rack_names

        def take(env: _Env, rack: _Rack, broker: int) -> bool:
            epoch, index, bumps = env.states[rack]
            if epoch != e:
                epoch, index, bumps = e, 0, bumps + 1
            pos = (bumps + index) % size[rack]
            env.states[rack] = (epoch, index + 1, bumps)
            ring = env.brokers[rack]
            if ring.get(pos) == broker:
                return True  # pinned so already: no copy of the ring needed
            if not ring.can_pin(pos, broker):
                return False
            env.broker_ring(rack).pin(pos, broker)
            return True

        def options(env: _Env, pos: int, want: _Rack) -> list[tuple[bool, _Rack]]:
            """(gives a broker, rack) for each rack that may sit at rack position ``pos``.
            A rack gives one unless it gave all its brokers in this epoch (tested inline:
            this runs for every replica of every walk)."""
            known = env.racks.get(pos)
            states = env.states
            if not isinstance(known, _Unset):
                epoch, index, _ = states[known]
                return [(epoch != e or index < size[known], known)]
            found: list[tuple[bool, _Rack]] = []
            epoch, index, _ = states[want]
            if (epoch != e or index < size[want]) and env.racks.can_pin(pos, want):
                found.append((True, want))
            for rack in rack_names:  # racks that give nothing in this epoch (the quirk)
                epoch, index, _ = states[rack]
                gives = epoch != e or index < size[rack]
                if not gives and rack != want and env.racks.can_pin(pos, rack):
                    found.append((False, rack))
            return found

        def step(env: _Env, pos: int, gives: bool, rack: _Rack, want: _Rack, broker: int) -> bool:
            env.racks.pin(pos, rack)
            return not gives or (rack == want and take(env, rack, broker))

        def followers(env: _Env, first: int, i: int, idx: int, idle: int) -> Iterator[_Env]:
            while i < len(replicas):
                if idle > 2 * r + 1:
                    return  # no rack gives a broker: Kafka would not get here
                if idx == first:  # the leader's rack is skipped once
                    first, idx, idle = -1, (idx + 1) % r, idle + 1
                    continue
                want = rack_of[replicas[i]]
                found = options(env, idx, want)
                if len(found) > 1:  # a branch: try each reading of this position
                    for gives, rack in found:
                        branch = env.copy()
                        if step(branch, idx, gives, rack, want, replicas[i]):
                            yield from followers(
                                branch, first, i + gives, (idx + 1) % r, 0 if gives else idle + 1
                            )
                    return
                if not found:
                    return
                gives, rack = found[0]
                if not step(env, idx, gives, rack, want, replicas[i]):
                    return
                i, idle = (i + 1, 0) if gives else (i, idle + 1)
                idx = (idx + 1) % r
            yield env

        def leader(env: _Env, first: int, tries: int) -> Iterator[_Env]:
            if tries >= r:
                return
            want = rack_of[replicas[0]]
            found = options(env, first, want)
            for gives, rack in found:
                branch = env.copy() if len(found) > 1 else env
                if not step(branch, first, gives, rack, want, replicas[0]):
                    continue
                if gives:
                    yield from followers(branch, first, 1, start, 0)
                else:
                    yield from leader(branch, (first + 1) % r, tries + 1)

        yield from leader(env, start, 0)

    # -- one cycle ----------------------------------------------------------------------------

    def exact(self, cycle: Sequence[int], first_cycle: bool) -> bool:
        """Can every partition of the cycle fit under one set of pins (depth-first, budgeted)?"""
        budget = min(_SEARCH_BUDGET, self.budget)
        stack = [self.walks(cycle[0], self.at(cycle[0], self.blank[first_cycle]))]
        while stack:
            budget -= 1
            self.budget -= 1
            if budget < 0:
                return False
            env = next(stack[-1], None)
            if env is None:
                stack.pop()
            elif len(stack) == len(cycle):
                return True
            else:
                p = cycle[len(stack)]
                stack.append(self.walks_at(p, env))
        return False

    def by_votes(self, cycle: Sequence[int], first_cycle: bool) -> set[int]:
        """Each partition, read alone, votes for the pins; then partitions fit in turn or not
        (a partition edited by hand then costs only itself)."""
        rack_votes: dict[tuple[int, _Rack], int] = {}
        broker_votes: dict[_Rack, dict[tuple[int, int], int]] = {k: {} for k in self.rack_names}
        for p in cycle:
            way = next(self.walks(p, self.at(p, self.blank[first_cycle])), None)
            if way is None:
                continue
            for key in way.racks.pins():
                rack_votes[key] = rack_votes.get(key, 0) + 1
            for rack in self.rack_names:
                votes = broker_votes[rack]
                for key2 in way.brokers[rack].pins():
                    votes[key2] = votes.get(key2, 0) + 1
        env = self.fresh(first_cycle)
        env.racks.settle(rack_votes)
        for rack, votes in broker_votes.items():
            env.broker_ring(rack).settle(votes)
        fits: set[int] = set()
        for p in cycle:
            way = next(self.walks_at(p, env), None)
            if way is not None:
                fits.add(p)
                env = way
        return fits

    def run(self) -> set[int]:
        cycles: dict[int, list[int]] = {}
        for p in sorted(self.parts):
            cycles.setdefault(self.cycle(p), []).append(p)
        fits: set[int] = set()
        for c, members in sorted(cycles.items()):
            if self.exact(members, c == 0):
                fits.update(members)
            else:
                fits.update(self.by_votes(members, c == 0))
        return fits


def match_striped(
    assignment: Mapping[int, Sequence[int]],
    brokers: Sequence[int] | None = None,
    racks: Mapping[int, str | None] | None = None,
) -> StripedMatch | None:
    """Which partitions KRaft's ``StripedReplicaPlacer`` could have produced, in one placement.

    ``brokers`` are the cluster's brokers (those the topic uses are added); ``racks`` their
    racks (absent or None: the no-rack pseudo rack, as KRaft treats it). The number of brokers
    is taken as the cycle length; when the topic uses fewer brokers, that count is tried too,
    and the one that fits more partitions wins. None when the topic has no partitions or no
    partition fits.
    """
    parts = {int(p): [int(b) for b in r] for p, r in assignment.items()}
    if not parts:
        return None
    used = {b for replicas in parts.values() for b in replicas}
    universe = sorted(set(brokers or ()) | used)
    rack_of: dict[int, _Rack] = {b: (racks.get(b) if racks is not None else None) for b in universe}
    members: dict[_Rack, list[int]] = {}
    for b in universe:
        members.setdefault(rack_of[b], []).append(b)
    best: StripedMatch | None = None
    first_cycle: set[int] | None = None  # the same for every length that holds all of them
    for length in dict.fromkeys([len(universe), len(used)]):
        if _one_cycle(parts, length):
            if first_cycle is None:
                first_cycle = _first_cycle_fits(parts, rack_of, members)
            fits = first_cycle
        else:
            fits = _Matcher(parts, rack_of, members, length).run()
        match = StripedMatch(
            fitting=tuple(sorted(fits)),
            nonconforming=tuple(sorted(set(parts) - fits)),
            cycle_length=length,
            racks=tuple(sorted(members, key=rack_sort_key)),
        )
        if best is None or len(match.fitting) > len(best.fitting):
            best = match
    if best is None or not best.fitting:
        return None
    return best


# -- every partition in the first cycle: no search ------------------------------------------


def _one_cycle(parts: Mapping[int, Sequence[int]], length: int) -> bool:
    """Whether every partition falls in the first cycle (ids 0..length-1), where the search
    has nothing to branch on (see `_first_cycle_fits`)."""
    return min(parts) >= 0 and (length <= 1 or max(parts) < length)


def _first_cycle_fits(
    parts: Mapping[int, Sequence[int]],
    rack_of: Mapping[int, _Rack],
    members: Mapping[_Rack, list[int]],
) -> set[int]:
    """`_Matcher.run`'s answer when every partition is in the first cycle, without the search
    (`first_cycle_rows` for one topic)."""
    import numpy as np

    rack_names = sorted(members, key=rack_sort_key)
    rack_index = {k: i for i, k in enumerate(rack_names)}
    position = {b: i for k in rack_names for i, b in enumerate(sorted(members[k]))}
    ids = sorted(parts)
    width = max(1, max(len(parts[p]) for p in ids))
    rack = np.full((len(ids), width), -1, dtype=np.int64)
    pos = np.zeros((len(ids), width), dtype=np.int64)
    for row, p in enumerate(ids):
        for j, b in enumerate(parts[p]):
            rack[row, j] = rack_index[rack_of[b]]
            pos[row, j] = position[b]
    sizes = np.array([len(members[k]) for k in rack_names], dtype=np.int64)
    pids = np.array(ids, dtype=np.int64)
    fits = first_cycle_rows(rack, pos, pids, np.array([0, len(ids)], dtype=np.int64), sizes)
    return {ids[row] for row in np.flatnonzero(fits).tolist()}


def first_cycle_rows(
    rack: npt.NDArray[np.int64],
    pos: npt.NDArray[np.int64],
    pids: npt.NDArray[np.int64],
    start: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
) -> npt.NDArray[np.bool_]:
    """Which partitions KRaft's striped placement fits, for topics whose partitions all fall
    in its first cycle (as `match_striped`'s search finds them), every topic at once.

    Rows are partitions, topic t's are start[t]:start[t+1], by partition id (`pids`);
    `rack`: each replica's rack (index into the racks in Kafka's sorted order; -1 pads),
    `pos`: its position among its rack's brokers (by id); `sizes`: brokers per rack.

    In the first cycle every epoch is new, so each rack gives a broker at a partition's first
    visit (the quirk of a rack that gave all its brokers one cycle earlier cannot arise), and
    the rings are rotations of known orders: a partition's walk has no branch, and it pins
    the rack ring's rotation (by its leader) and each used rack's broker rotation (position =
    partitions before it on that rack, plus brokers it took there already, plus 1 but at
    partition 0). Pins only agree or clash, so the exact search fits all partitions exactly
    when their walks agree, and the vote (each ring's most voted rotation, the lowest on a
    tie) keeps the partitions whose walk needs only the winning rotations.
    """
    import numpy as np

    n, width = rack.shape
    r = len(sizes)
    topics = len(start) - 1
    topic = np.repeat(np.arange(topics), np.diff(start))
    length = (rack >= 0).sum(axis=1)
    # walkable as _Matcher.walkable says: replicas, none twice (all brokers are known here)
    ordered = np.sort(np.where(rack >= 0, rack * (1 << 32) + pos, -1), axis=1)
    twice = ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any(axis=1)
    ok = (length > 0) & ~twice
    # A rack's next position: one further per partition of the topic that used it before
    # (_states_before's bumps), and one more at this partition's first take, except for
    # partition 0, whose epoch is the one every rack starts in.
    uses = np.zeros((n, r), dtype=np.int32)  # (rows x racks) arrays in int32: 4 MB a
    rows = np.repeat(np.arange(n), width)  # million rows and rack
    flat = rack.ravel()
    uses[rows[flat >= 0], flat[flat >= 0]] = 1
    del rows, flat
    uses[pids == 0] = 0
    bumps = np.cumsum(uses, axis=0, dtype=np.int32)
    bumps -= uses
    firsts = start[:-1][np.diff(start) > 0]
    bumps -= np.repeat(bumps[firsts], np.diff(start)[np.diff(start) > 0], axis=0)
    del uses
    bumps += (pids != 0).astype(np.int32)[:, None]
    every = np.arange(n)
    rack_base = (rack[:, 0] - pids % r) % r
    taken = np.zeros((n, r), dtype=np.int32)
    broker_base = np.full((n, r), -1, dtype=np.int64)

    def take(live: npt.NDArray[np.bool_], j: npt.NDArray[np.int64]) -> None:
        """Replica j of the live rows from its rack: its broker must sit at the rack's next
        position (a rotation agreeing with the walk's earlier pins of that rack)."""
        at = every[live]
        k = rack[at, j[at]]
        b = (pos[at, j[at]] - (bumps[at, k] + taken[at, k])) % sizes[k]
        pinned = broker_base[at, k]
        ok[at] &= (pinned < 0) | (pinned == b)
        broker_base[at, k] = b
        taken[at, k] += 1

    take(ok.copy(), np.zeros(n, dtype=np.int64))
    i = np.ones(n, dtype=np.int64)  # the next replica to place
    idx = pids % r  # the rack position visited
    first = idx.copy()  # the leader's position, skipped once (-1 once skipped)
    idle = np.zeros(n, dtype=np.int64)
    while True:
        live = ok & (i < length)
        if not live.any():
            break
        ok &= ~(live & (idle > 2 * r + 1))  # no rack gives a broker
        live &= ok
        skip = live & (idx == first)
        first[skip] = -1
        here = (rack_base + idx) % r
        gives = taken[every, here] < sizes[here]
        placing = live & ~skip & gives
        ok &= ~(placing & (here != rack[every, np.minimum(i, width - 1)]))
        placing &= ok
        take(placing, i)
        i[placing] += 1
        idle = np.where(placing, 0, np.where(live, idle + 1, idle))
        idx = np.where(live, (idx + 1) % r, idx)
    # the vote: the rack ring by its rotation, each used rack's broker ring by its rotation
    votes = np.bincount(topic[ok] * r + rack_base[ok], minlength=topics * r)
    fits = ok & (rack_base == votes.reshape(topics, r).argmax(axis=1)[topic])
    top = int(sizes.max(initial=1))
    for k in range(r):
        voted = ok & (broker_base[:, k] >= 0)
        cells = topic[voted] * top + broker_base[voted, k]
        best = np.bincount(cells, minlength=topics * top).reshape(topics, top).argmax(axis=1)
        fits &= (broker_base[:, k] < 0) | (broker_base[:, k] == best[topic])
    out: npt.NDArray[np.bool_] = fits
    return out
