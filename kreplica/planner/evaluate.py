"""Invariant checks and measures shared by the planner's report, `kreplica check` and the tests.

Racks: a broker without a rack (or unknown to the snapshot) counts as a rack of its own, so a
cluster without rack information never has rack violations and a partial one degrades gently.
A partition violates rack diversity when it spans fewer distinct racks than
min(its replica count, the racks available).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

Assignment = Mapping[tuple[str, int], Sequence[int]]


def rack_key(racks: Mapping[int, str | None], broker: int) -> str:
    rack = racks.get(broker)
    # NUL cannot appear in a real rack name, so a rackless broker never shares a "rack".
    return rack if rack is not None else f"\0broker:{broker}"


def distinct_racks(racks: Mapping[int, str | None], replicas: Iterable[int]) -> int:
    return len({rack_key(racks, b) for b in replicas})


def rack_count(racks: Mapping[int, str | None], brokers: Iterable[int]) -> int:
    return distinct_racks(racks, brokers)


def has_rack_violation(
    racks: Mapping[int, str | None], replicas: Sequence[int], available_racks: int
) -> bool:
    return distinct_racks(racks, replicas) < min(len(set(replicas)), available_racks)


def rack_violations(
    assignment: Assignment, racks: Mapping[int, str | None], brokers: Iterable[int]
) -> list[tuple[str, int]]:
    """Partitions spanning fewer racks than min(RF, racks of `brokers`), sorted."""
    available = rack_count(racks, brokers)
    return sorted(
        key for key, reps in assignment.items() if has_rack_violation(racks, reps, available)
    )


def duplicate_brokers(replicas: Sequence[int]) -> list[int]:
    seen: set[int] = set()
    dups: list[int] = []
    for b in replicas:
        if b in seen and b not in dups:
            dups.append(b)
        seen.add(b)
    return dups


def replicas_per_broker(assignment: Assignment, brokers: Iterable[int]) -> dict[int, int]:
    """Replica count per broker; every broker in `brokers` is present (others only if used)."""
    counts = dict.fromkeys(brokers, 0)
    for reps in assignment.values():
        for b in reps:
            counts[b] = counts.get(b, 0) + 1
    return dict(sorted(counts.items()))


def leaders_per_broker(assignment: Assignment, brokers: Iterable[int]) -> dict[int, int]:
    """Preferred-leader (first replica) count per broker."""
    counts = dict.fromkeys(brokers, 0)
    for reps in assignment.values():
        if reps:
            counts[reps[0]] = counts.get(reps[0], 0) + 1
    return dict(sorted(counts.items()))


def spread(counts: Mapping[int, int]) -> int:
    """max - min of a per-broker count (0 for no brokers)."""
    if not counts:
        return 0
    values = counts.values()
    return max(values) - min(values)


def water_level(counts: Sequence[int], added: int) -> int:
    """The highest level L with sum(max(0, L - c)) <= added (counts sorted, not empty):
    fill the k lowest brokers, k = 1, 2, ..., until the level stays below the next one."""
    filled = 0
    n = len(counts)
    for k in range(1, n + 1):
        filled += counts[k - 1]
        level = (added + filled) // k
        if k == n or level < counts[k]:
            return level
    raise AssertionError("unreachable")


def spread_floor(fixed: Mapping[int, int], eligible: Mapping[int, int], added: int) -> int:
    """The lowest spread any placement of `added` more replicas on the `eligible` brokers can
    reach, every other broker keeping its `fixed` count (per-partition and rack rules ignored,
    so no real plan does better). Water filling: raise the emptiest eligible brokers to a
    common level L, the remainder one above it. The one copy of this rule for the object
    planners (balance.floor_of calls it); arrays._floor is its form on numpy arrays, held to
    it by test_water_filling_floor_is_one_rule."""
    if not eligible:
        values = list(fixed.values())
        return max(values) - min(values) if values else 0
    counts = sorted(eligible.values())
    low = water_level(counts, added)
    extra = added - sum(low - c for c in counts if c < low)  # they go one above `low`
    top = max(counts[-1], low + (1 if extra else 0), *fixed.values())
    bottom = min(low, *fixed.values()) if fixed else low
    return top - bottom


def removal_window(counts: Sequence[int], total: int) -> tuple[int, int]:
    """The lowest highest count and highest lowest count of brokers that start at `counts`
    and only lose replicas, down to `total` in all: (lo, hi), and hi - lo is a spread no
    removal of that many replicas goes below. Each ends in [0, c]; hi is the least level h
    with sum(min(c, h)) >= total, lo = min(min c, total // n)."""
    ordered = sorted(counts)
    n = len(ordered)
    if not n:
        return 0, 0
    high, below = ordered[-1], 0
    for i, c in enumerate(ordered):  # a level between c_(i-1) and c_i gives below + (n - i) h
        need = -(-(total - below) // (n - i))
        if need <= c:
            high = max(need, 0)
            break
        below += c
    return min(ordered[0], total // n), high


def balance_bound(total_replicas: int, eligible: int, rf: int) -> int:
    """Most replicas of one topic a single eligible broker can hold after `balanced` adds
    replicas, when it held fewer before and racks do not restrict the choice.

    Why: a new replica goes to the least-loaded broker outside its partition, so at least
    eligible-rf+1 brokers hold as many as the chosen one: its load before the pick is at
    most total/(eligible-rf+1), and after the pick one more.
    """
    return total_replicas // max(1, eligible - rf + 1) + 1


def invariant_violations(
    before: Assignment,
    after: Assignment,
    *,
    eligible: Iterable[int],
    target_rf: Mapping[str, int],
    repaired: Collection[str] = (),
) -> list[str]:
    """Problems a plan must never have, as readable strings (empty: all good).

    - every partition of a topic in `target_rf` has that many replicas, none duplicated;
    - every replica not there before is on an eligible broker;
    - raising RF keeps every existing replica in place and in order (before is a prefix),
      lowering keeps a subset in order, and an equal RF changes nothing, except in topics
      under rack repair (`repaired`), which may replace replicas but keep the first one;
    - partitions of other topics are identical; no partition disappears.
    """
    eligible_set = set(eligible)
    problems: list[str] = []
    for key, reps in sorted(after.items()):
        topic, pid = key
        name = f"{topic}-{pid}"
        if duplicate_brokers(reps):
            problems.append(f"{name}: duplicate brokers {list(reps)}")
        old = before.get(key)
        if topic not in target_rf:
            if old is None or tuple(old) != tuple(reps):
                problems.append(f"{name}: untouched topic changed {old} -> {list(reps)}")
            continue
        if len(reps) != target_rf[topic]:
            problems.append(f"{name}: {len(reps)} replicas, wanted {target_rf[topic]}")
        fresh = [b for b in reps if old is None or b not in old]
        if any(b not in eligible_set for b in fresh):
            problems.append(f"{name}: new replica on an ineligible broker {fresh}")
        if old is None:
            continue
        if topic in repaired:
            if old and reps and reps[0] != old[0]:
                problems.append(f"{name}: rack repair moved the leader {list(old)} -> {list(reps)}")
            continue
        if len(old) <= len(reps) and tuple(reps[: len(old)]) != tuple(old):
            problems.append(f"{name}: existing replicas moved {list(old)} -> {list(reps)}")
        if len(old) > len(reps) and [b for b in old if b in reps] != list(reps):
            problems.append(
                f"{name}: lowering is not an ordered subset {list(old)} -> {list(reps)}"
            )
    for key in before:
        if key not in after:
            problems.append(f"{key[0]}-{key[1]}: partition disappeared")
    return problems
