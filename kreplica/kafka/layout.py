"""Layout inference: recover the broker order, start index and replica shift a topic was
created with, so a plan can extend it exactly as Kafka would have placed it."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from kreplica.kafka.zk import (
    batch_shift,
    place_zk,
    rack_alternated_brokers,
    replica_index,
    zk_add_start_index,
    zk_replicas,
)


def _add_call_replicas(
    order: Sequence[int],
    rack_of: Mapping[int, str] | None,
    num_racks: int,
    rf: int,
    add_start: int,
    call_start: int,
    partition: int,
) -> list[int]:
    """Replicas ZK add-partitions gives ``partition`` in a call that began at ``call_start``.

    The call passes fixedStartIndex = ``add_start`` (start and shift) and startPartitionId =
    ``call_start``; the shift then grows at each multiple of n from ``call_start`` on.
    """
    n = len(order)
    shift = batch_shift(n, add_start, call_start, partition)
    return zk_replicas(order, rack_of, num_racks, rf, (partition + add_start) % n, shift)


@dataclass(frozen=True)
class KafkaLayout:
    """Parameters under which ZK-mode Kafka reproduces a topic's assignment.

    ``broker_list`` is the list Kafka indexes (for ``rack_aware`` the rack-alternated list),
    ``start_index`` and ``replica_shift`` the two values Kafka draws at topic creation.
    ``conforming`` are the partitions whose replicas are a prefix of what :meth:`extend`
    returns; ``nonconforming`` the rest. ``added_ranges`` are ``(call_start, first, stop)``:
    partitions ``first..stop-1`` recognised as placed by a later ZK add-partitions call that
    began at partition ``call_start``. ``broker_racks`` holds the racks of a rack-aware layout.
    """

    broker_list: tuple[int, ...]
    start_index: int
    replica_shift: int
    rack_aware: bool
    conforming: tuple[int, ...]
    nonconforming: tuple[int, ...]
    added_ranges: tuple[tuple[int, int, int], ...] = ()
    broker_racks: tuple[tuple[int, str], ...] = ()

    @property
    def added_batches(self) -> tuple[tuple[int, int], ...]:
        """``(first, stop)`` of each range of partitions placed by ZK add-partitions."""
        return tuple((first, stop) for _, first, stop in self.added_ranges)

    def _rack_of(self) -> dict[int, str] | None:
        return dict(self.broker_racks) if self.rack_aware else None

    def _add_start_index(self) -> int:
        leader = self.broker_list[self.start_index % len(self.broker_list)]
        return zk_add_start_index(sorted(self.broker_list), leader)

    def extend(self, n_partitions: int, rf: int) -> dict[int, list[int]]:
        """Kafka's replicas for partitions ``0..n_partitions-1`` at replication factor ``rf``.

        Partitions in ``added_ranges`` follow the add-partitions placement of their call,
        all others the creation placement (also past the known partitions: for Kafka's own
        placement of new partitions use :func:`add_partitions`). Raising ``rf`` only appends
        replicas (Kafka's placement is prefix-stable), so conforming partitions keep theirs.
        """
        if n_partitions <= 0:
            return {}
        rf = max(1, min(rf, len(self.broker_list)))
        rack_of = self._rack_of()
        out = place_zk(
            self.broker_list, rack_of, n_partitions, rf, self.start_index, self.replica_shift, 0
        )
        if self.added_ranges:
            # ZK add-partitions indexes the id-sorted list (rack-alternated when racks).
            add_order = self.broker_list if self.rack_aware else sorted(self.broker_list)
            add_start = self._add_start_index()
            num_racks = len(set(rack_of.values())) if rack_of is not None else 0
            for call_start, first, stop in self.added_ranges:
                for p in range(first, min(stop, n_partitions)):
                    out[p] = _add_call_replicas(
                        add_order, rack_of, num_racks, rf, add_start, call_start, p
                    )
        return out


def _is_prefix(observed: Sequence[int], kafka: Sequence[int]) -> bool:
    return len(observed) <= len(kafka) and list(observed) == list(kafka[: len(observed)])


def _fits_unaware(
    observed: Sequence[int], order: Sequence[int], rf: int, first: int, shift: int
) -> bool:
    """``_is_prefix(observed, zk_replicas(order, None, 0, rf, first, shift))`` without building
    Kafka's replicas: the classification asks it of every partition of every candidate."""
    if len(observed) > rf:
        return False
    if not observed:
        return True
    n = len(order)
    if observed[0] != order[first]:
        return False
    return all(
        observed[j + 1] == order[(first + 1 + (shift + j) % (n - 1)) % n]
        for j in range(len(observed) - 1)
    )


def _aware_replicas(
    order: Sequence[int], rack_of: Mapping[int, str], rf: int
) -> Callable[[int, int], list[int]]:
    """``zk_replicas`` over a rack-alternated list, memoised for one search: it takes the
    shift only modulo n - 1 (as ``shift * numRacks``), so n * (n - 1) lists serve every
    partition and candidate shift. The lists returned are shared: read them only."""
    num_racks = len(set(rack_of.values()))
    period = max(1, len(order) - 1)
    memo: dict[tuple[int, int], list[int]] = {}

    def replicas(first: int, shift: int) -> list[int]:
        key = (first, shift % period)
        found = memo.get(key)
        if found is None:
            found = memo[key] = zk_replicas(order, rack_of, num_racks, rf, first, shift)
        return found

    return replicas


def _contiguous_ids(parts: Mapping[int, Sequence[int]]) -> int:
    count = 0
    while count in parts:
        count += 1
    return count


def _placeable(
    parts: Mapping[int, Sequence[int]], members: set[int], n: int
) -> dict[int, Sequence[int] | None]:
    """Each partition's replicas when some rack-unaware order of ``members`` can give them,
    else None (no replicas, duplicates, unknown brokers, RF above n). Checked once per
    search, not once per candidate shift."""
    return {
        p: (
            replicas
            if replicas
            and len(replicas) <= n
            and len(set(replicas)) == len(replicas)
            and members.issuperset(replicas)
            else None
        )
        for p, replicas in parts.items()
    }


def _pinned_positions(
    replicas: Sequence[int], n: int, partition: int, shift: int
) -> list[tuple[int, int]]:
    """(list position, broker) pairs a rack-unaware placement needs for this partition, whose
    replicas `_placeable` accepted."""
    first = partition % n
    current_shift = shift + partition // n
    pinned = [(first, replicas[0])]
    pinned.extend(
        (replica_index(first, current_shift, j, n), broker) for j, broker in enumerate(replicas[1:])
    )
    return pinned


def _pin(
    at: dict[int, int],
    where: dict[int, int],
    replicas: Sequence[int] | None,
    n: int,
    partition: int,
    shift: int,
) -> bool:
    """Add the partition's pins if they agree with those so far (position <-> broker is
    one-to-one). ``replicas``: as `_placeable` gives them (None pins nothing)."""
    if replicas is None:
        return False
    first = partition % n
    leader = replicas[0]
    # the leader first: it needs no arithmetic, and a hand-made topic fails there mostly
    if at.get(first, leader) != leader or where.get(leader, first) != first:
        return False
    current_shift = shift + partition // n
    # the positions replica_index gives, inline: this runs for every partition and shift
    positions = [first]
    positions += [(first + 1 + (current_shift + j) % (n - 1)) % n for j in range(len(replicas) - 1)]
    for pos, b in zip(positions[1:], replicas[1:], strict=True):
        if at.get(pos, b) != b or where.get(b, pos) != pos:
            return False
    for pos, b in zip(positions, replicas, strict=True):
        at[pos] = b
        where[b] = pos
    return True


def _unaware_prefix(
    placeable: Mapping[int, Sequence[int] | None], n: int, count: int, shift: int
) -> tuple[int, dict[int, int], dict[int, int]]:
    """Longest prefix of partitions consistent with some order (start 0) and this shift.

    Every replica pins a broker to a list position; pins are forced, so processing
    partitions in order and stopping at the first conflict gives the exact longest prefix.
    """
    at: dict[int, int] = {}  # position -> broker
    where: dict[int, int] = {}  # broker -> position
    for p in range(count):
        if not _pin(at, where, placeable[p], n, p, shift):
            return p, at, where
    return count, at, where


def _call_starts(n: int, lowest: int, partition: int, lookback: int = 4) -> list[int]:
    """Where the add-partitions call that placed ``partition`` may have begun, oldest first.

    A call's first partitions can coincide with an earlier placement, so it may have begun
    before ``partition``. Only ``(start - 1) // n`` changes the result, so one start per block
    of n is tried (the latest in the block), at most ``lookback`` blocks back. Oldest first:
    a later mismatch can still move on to a newer call, never back to an older one.
    """
    if partition < 1:
        return []
    starts = [partition]
    block_end = ((partition - 1) // n) * n  # latest start of the previous block
    while block_end >= max(lowest, 1) and len(starts) <= lookback:
        starts.append(block_end)
        block_end -= n
    return starts[::-1]


def _classify(
    parts: Mapping[int, Sequence[int]],
    order: Sequence[int],
    rack_of: Mapping[int, str] | None,
    start: int,
    shift: int,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, int, int], ...]]:
    """Split partitions into conforming / not, recognising ZK add-partitions calls.

    After the creation prefix, a partition is explained by the current add-partitions call,
    else by the creation layout, else by a new call (ZK add-partitions restarts at the then
    partition count with the id-sorted list and partition 0's leader). A partition nothing
    explains (edited by hand) leaves the current call running.
    """
    n = len(order)
    rf = max(1, min(n, max(len(r) for r in parts.values())))
    add_order = order if rack_of is not None else sorted(order)
    add_start = zk_add_start_index(sorted(order), parts[0][0])

    # rack-aware: the creation and the add-partitions placements index the same list
    aware = _aware_replicas(order, rack_of, rf) if rack_of is not None else None

    def by_creation(p: int) -> bool:
        if aware is None:
            return _fits_unaware(parts[p], order, rf, (p + start) % n, shift + p // n)
        return _is_prefix(parts[p], aware((p + start) % n, shift + p // n))

    def by_call(call_start: int, p: int) -> bool:
        call_shift = batch_shift(n, add_start, call_start, p)
        if aware is None:
            return _fits_unaware(parts[p], add_order, rf, (p + add_start) % n, call_shift)
        return _is_prefix(parts[p], aware((p + add_start) % n, call_shift))

    explained_by: dict[int, int | None] = {}  # conforming partition -> its call (None: creation)
    by_a_call: list[int] = []  # the partitions explained by a call, ascending
    nonconforming: list[int] = []
    call: int | None = None  # start of the add-partitions call in progress
    in_prefix = True
    for expected_id, p in enumerate(sorted(parts)):
        in_prefix = in_prefix and p == expected_id
        if in_prefix and by_creation(p):
            explained_by[p] = None
            continue
        in_prefix = False
        replicas = parts[p]
        if replicas and replicas[0] != add_order[(p + add_start) % n]:
            # Every add-partitions call gives p the same leader, not this one: only the
            # creation layout may explain p (trying each call would say the same, slowly).
            if by_creation(p):
                explained_by[p] = None
            else:
                nonconforming.append(p)
            continue
        if call is not None and by_call(call, p):
            explained_by[p] = call
            by_a_call.append(p)
            continue
        if by_creation(p):
            explained_by[p] = None
            continue
        lowest = call + 1 if call is not None else 1
        for candidate in _call_starts(n, lowest, p):
            # Partitions from the candidate start on now belong to the new call: those the
            # previous call explained must fit the new one too.
            moved = by_a_call[bisect_left(by_a_call, candidate) :]
            if by_call(candidate, p) and all(by_call(candidate, q) for q in moved):
                for q in moved:
                    explained_by[q] = candidate
                explained_by[p] = candidate
                by_a_call.append(p)
                call = candidate
                break
        else:
            nonconforming.append(p)
    ranges: list[list[int]] = []  # [call_start, first, stop] over consecutive partition ids
    for p in sorted(explained_by):
        owner = explained_by[p]
        if owner is None:
            continue
        if ranges and ranges[-1][0] == owner and ranges[-1][2] == p:
            ranges[-1][2] = p + 1
        else:
            ranges.append([owner, p, p + 1])
    return (
        tuple(sorted(explained_by)),
        tuple(nonconforming),
        tuple((c, first, stop) for c, first, stop in ranges),
    )


# Partitions times tied shifts examined to break ties; bounds the cost for hand-made topics.
_TIE_BREAK_BUDGET = 10_000


def _infer_unaware(parts: Mapping[int, Sequence[int]], members: list[int]) -> KafkaLayout | None:
    n = len(members)
    member_set = set(members)
    placeable = _placeable(parts, member_set, n)
    count = _contiguous_ids(parts)
    has_followers = any(len(parts[p]) > 1 for p in range(count))
    shifts = range(n - 1) if n > 1 and has_followers else range(1)
    prefixes: list[tuple[int, int, dict[int, int], dict[int, int]]] = []
    for shift in shifts:
        matched, positions, where = _unaware_prefix(placeable, n, count, shift)
        prefixes.append((matched, shift, positions, where))
        if matched == count:
            break
    longest = max(matched for matched, *_ in prefixes)
    if longest == 0:
        return None
    tied = [prefix for prefix in prefixes if prefix[0] == longest]
    if len(tied) * len(parts) > _TIE_BREAK_BUDGET:
        tied = tied[:1]  # a topic this far from Kafka's layout: any of the shifts will do
    best: tuple[int, int, dict[int, int]] | None = None
    after = [p for p in sorted(parts) if p > longest]
    gains = [0] * (len(after) + 1)  # the most a shift can still gain from each index on
    for i in range(len(after) - 1, -1, -1):
        gains[i] = gains[i + 1] + (placeable[after[i]] is not None)
    for _, shift, positions, where in tied:
        # Past the prefix, partitions that still agree pin the remaining positions (a
        # partition edited by hand then costs only itself); they also break ties of shifts.
        agreeing = 0
        for i, p in enumerate(after):
            if best is not None and agreeing + gains[i] <= best[0]:
                break  # it cannot beat the best so far, which wins ties: no need to finish
            if _pin(positions, where, placeable[p], n, p, shift):
                agreeing += 1
        if best is None or agreeing > best[0]:
            best = (agreeing, shift, positions)
    assert best is not None
    _, shift, positions = best
    # Positions nothing pins down get the spare brokers in id order (any order is valid).
    spare = iter(sorted(member_set - set(positions.values())))
    order = tuple(positions[i] if i in positions else next(spare) for i in range(n))
    conforming, nonconforming, ranges = _classify(parts, order, None, 0, shift)
    return KafkaLayout(order, 0, shift, False, conforming, nonconforming, ranges)


def _infer_unaware_by_votes(
    parts: Mapping[int, Sequence[int]], members: list[int]
) -> KafkaLayout | None:
    """A second opinion robust to partitions edited by hand: every partition votes.

    Leaders vote for list positions (partition p leads at position p mod n), then second
    replicas vote for the shift, then followers vote for the positions still open. One bad
    partition then costs only itself, where the longest-prefix search stops at it.
    """
    n = len(members)
    placeable = _placeable(parts, set(members), n)
    usable = [p for p in sorted(parts) if placeable[p] is not None]
    if n < 2 or not usable:
        return None
    at: dict[int, int] = {}
    where: dict[int, int] = {}

    def settle(votes: Mapping[tuple[int, int], int]) -> None:
        # Strongest votes first; a position and a broker are each taken once.
        for (pos, broker), _ in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
            if pos not in at and broker not in where:
                at[pos] = broker
                where[broker] = pos

    leader_votes: dict[tuple[int, int], int] = {}
    for p in usable:
        key = (p % n, parts[p][0])
        leader_votes[key] = leader_votes.get(key, 0) + 1
    settle(leader_votes)
    shift_votes: dict[int, int] = {}
    for p in usable:
        if len(parts[p]) > 1 and parts[p][1] in where:
            gap = (where[parts[p][1]] - p % n - 1) % n  # = (shift + p // n) % (n - 1)
            if gap < n - 1:
                vote = (gap - p // n) % (n - 1)
                shift_votes[vote] = shift_votes.get(vote, 0) + 1
    shift = min(shift_votes, key=lambda s: (-shift_votes[s], s)) if shift_votes else 0
    follower_votes: dict[tuple[int, int], int] = {}
    for p in usable:
        for pos, broker in _pinned_positions(parts[p], n, p, shift):
            follower_votes[(pos, broker)] = follower_votes.get((pos, broker), 0) + 1
    settle(follower_votes)
    spare = iter(sorted(set(members) - set(where)))
    order = tuple(at[i] if i in at else next(spare) for i in range(n))
    conforming, nonconforming, ranges = _classify(parts, order, None, 0, shift)
    if 0 not in conforming:  # add-partitions and extend() both build on partition 0
        return None
    return KafkaLayout(order, 0, shift, False, conforming, nonconforming, ranges)


def _infer_aware(
    parts: Mapping[int, Sequence[int]], members: list[int], racks: Mapping[int, str]
) -> KafkaLayout | None:
    rack_of = {b: racks[b] for b in members}
    order = rack_alternated_brokers(rack_of)
    n = len(order)
    leader = parts[0][0] if parts[0] else None
    if leader not in rack_of:
        return None
    start = order.index(leader)
    count = _contiguous_ids(parts)
    rf = max(1, min(n, max(len(parts[p]) for p in range(count))))
    kafka = _aware_replicas(order, rack_of, rf)

    def fits(p: int, shift: int) -> bool:
        return _is_prefix(parts[p], kafka((p + start) % n, shift + p // n))

    # shift * numRacks only matters modulo n - 1, and it grows by one per wrap.
    prefixes: list[tuple[int, int]] = []
    for shift in range(n - 1 if n > 1 else 1):
        matched = 0  # computed lazily: a wrong shift usually fails within the first round
        while matched < count and fits(matched, shift):
            matched += 1
        prefixes.append((matched, shift))
        if matched == count:
            break
    longest = max(matched for matched, _ in prefixes)
    if longest == 0:
        return None
    tied = [shift for matched, shift in prefixes if matched == longest]
    if len(tied) > 1 and len(tied) * len(parts) <= _TIE_BREAK_BUDGET:
        # A partition edited by hand ended the prefix early: let all partitions decide. Those
        # with no replicas fit every shift, those whose leader is not Kafka's none.
        after = [p for p in parts if p > longest]
        empty = sum(not parts[p] for p in after)
        led = [p for p in after if parts[p] and parts[p][0] == order[(p + start) % n]]
        shift = max(tied, key=lambda s: (empty + sum(fits(p, s) for p in led), -s))
    else:
        shift = tied[0]
    conforming, nonconforming, ranges = _classify(parts, order, rack_of, start, shift)
    return KafkaLayout(
        tuple(order),
        start,
        shift,
        True,
        conforming,
        nonconforming,
        ranges,
        tuple(sorted(rack_of.items())),
    )


def infer_layout(
    assignment: Mapping[int, Sequence[int]],
    brokers: Sequence[int] | None = None,
    racks: Mapping[int, str | None] | None = None,
    *,
    any_complete: bool = False,
) -> KafkaLayout | None:
    """Find the broker order, start index and shift under which Kafka reproduces ``assignment``.

    Candidates: the longest run of partitions from 0 that one layout reproduces (rack-unaware,
    and rack-aware over the rack-alternated list when every broker has a rack), and a layout
    voted by all partitions (so one partition edited by hand costs only itself). The one that
    reproduces most partitions wins (then the longer run from 0); partitions placed later by
    ZK add-partitions count as reproduced. ``brokers`` widens the broker set beyond those the
    topic uses. Rack-unaware layouts come rotated to ``start_index`` 0 (indistinguishable).
    ``replica_shift`` is the smallest equivalent value (only its value modulo n - 1 matters);
    with no followers anywhere it is unconstrained and reported as 0. None when partition 0
    fits no layout. Cost: O(n) candidate shifts, never permutations of the brokers.

    ``any_complete``: the first candidate found that reproduces every partition, when there
    is one, instead of the best (rack-aware ones tried first: the cheaper search). It has no
    nonconforming partition, as the best has then: enough to know a layout is Kafka's default.
    """
    parts = {int(p): list(r) for p, r in assignment.items()}
    if not parts.get(0):
        return None
    observed = sorted({b for replicas in parts.values() for b in replicas})
    broker_sets = [observed]
    if brokers is not None:
        widened = sorted(set(brokers) | set(observed))
        if widened != observed:
            broker_sets.append(widened)
    # (rank, rack-aware, search), in the order ties are settled
    searches: list[tuple[int, bool, Callable[[], KafkaLayout | None]]] = []
    for rank, members in enumerate(broker_sets):
        searches.append((rank, False, partial(_infer_unaware, parts, members)))
        searches.append((rank, False, partial(_infer_unaware_by_votes, parts, members)))
        rack_names = {b: racks.get(b) for b in members} if racks is not None else {}
        if racks is not None and all(r is not None for r in rack_names.values()):
            named = {b: r for b, r in rack_names.items() if r is not None}
            searches.append((rank, True, partial(_infer_aware, parts, members, named)))
    # rack-aware searches first: once one reproduces every partition, no rack-unaware layout
    # can beat it (its score is below on rack_aware at best), so those searches are skipped
    order = sorted(range(len(searches)), key=lambda i: not searches[i][1])
    candidates: list[tuple[tuple[int, ...], int, KafkaLayout]] = []
    aware_complete = False
    for i in order:
        rank, aware, search = searches[i]
        if aware_complete and not aware:
            continue
        layout = search()
        if layout is None:
            continue
        if any_complete and not layout.nonconforming:
            return layout
        aware_complete |= aware and not layout.nonconforming
        prefix = _contiguous_prefix(layout.conforming)
        score = (len(layout.conforming), prefix, int(layout.rack_aware), rank)
        candidates.append((score, -i, layout))  # equal scores: the first in search order
    if not candidates:
        return None
    return max(candidates, key=lambda c: c[:2])[2]


def _contiguous_prefix(conforming: Sequence[int]) -> int:
    prefix = 0
    for p in conforming:
        if p != prefix:
            break
        prefix += 1
    return prefix
