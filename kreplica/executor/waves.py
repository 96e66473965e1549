"""Which moves run together: waves under cluster and per-broker limits, and one replica at a time.

Pure (standard library only, deterministic).

A wave is a set of moves submitted together; the next wave starts when all of it is done.
`plan_waves` fills waves greedily in the chosen order: a move joins the current wave when the
wave has fewer than `max_partitions` moves and every broker the move keeps busy is busy with
fewer than `max_per_broker` moves of the wave; otherwise it waits for a later wave.

Which brokers a move keeps busy (`busy_brokers`): when the move copies data (it adds at least one
replica), every broker that receives a replica (a destination) and every current replica (the
sources: any of them may lead, and so serve the copy, while it runs; these are also the brokers
whose throttle rate Kafka's tool sets). A move that only drops or reorders replicas copies
nothing and keeps no broker busy; it still counts against `max_partitions`.

Two moves of the same partition (steps of `replica_at_a_time`) never share a wave and keep
their order, so chains from `expand_steps` can go through `plan_waves` as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from kreplica.errors import UsageError
from kreplica.executor.moves import Move

if TYPE_CHECKING:
    from kreplica.executor.options import Order

ORDERS = ("plan", "largest", "smallest")


def busy_brokers(move: Move) -> frozenset[int]:
    """The brokers a move keeps busy: sources and destinations when it copies data, else none."""
    if not move.added:
        return frozenset()
    return frozenset(move.before) | frozenset(move.added)


def order_moves(moves: Sequence[Move], order: Order = "plan") -> list[Move]:
    """Moves in plan order, or by partition size (`largest`/`smallest` first; unknown last).

    Ties keep plan order (the sort is stable), so the result is deterministic.
    """
    if order not in ORDERS:
        raise UsageError(f"order {order!r} is not one of {', '.join(ORDERS)}; e.g. largest")
    listed = list(moves)
    if order == "plan":
        return listed
    sign = -1 if order == "largest" else 1

    def key(move: Move) -> tuple[int, int]:
        if move.size_bytes is None:
            return (1, 0)
        return (0, sign * move.size_bytes)

    return sorted(listed, key=key)


def _check_limit(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise UsageError(f"{name} {value} must be at least 1 (or left out for no limit)")


def plan_waves(
    moves: Sequence[Move],
    *,
    max_partitions: int | None,
    max_per_broker: int | None,
    order: Order = "plan",
) -> list[list[Move]]:
    """Greedy waves: every move exactly once, limits held in every wave (see module docs).

    No limits gives one wave (moves of one partition aside). Each wave lists its moves in the
    chosen order.
    """
    _check_limit("max partitions", max_partitions)
    _check_limit("max per broker", max_per_broker)
    remaining = order_moves(moves, order)
    waves: list[list[Move]] = []
    while remaining:
        wave: list[Move] = []
        in_wave: set[tuple[str, int]] = set()
        blocked: set[tuple[str, int]] = set()  # an earlier step of the partition still waits
        load: dict[int, int] = {}
        left: list[Move] = []
        for move in remaining:
            key = move.key
            busy = busy_brokers(move)
            fits = (
                key not in in_wave
                and key not in blocked
                and (max_partitions is None or len(wave) < max_partitions)
                and (max_per_broker is None or all(load.get(b, 0) < max_per_broker for b in busy))
            )
            if fits:
                wave.append(move)
                in_wave.add(key)
                for b in busy:
                    load[b] = load.get(b, 0) + 1
            else:
                left.append(move)
                blocked.add(key)
        waves.append(wave)
        remaining = left
    return waves


def wave_load(wave: Iterable[Move]) -> dict[int, int]:
    """Per broker, how many moves of the wave keep it busy (ascending broker id)."""
    load: dict[int, int] = {}
    for move in wave:
        for b in busy_brokers(move):
            load[b] = load.get(b, 0) + 1
    return dict(sorted(load.items()))


def in_flight_replicas(move: Move) -> int:
    """How many replicas the partition has while the move runs (Kafka keeps old and new)."""
    return len(set(move.before) | set(move.after))


def replica_at_a_time(move: Move) -> list[Move]:
    """The move as a chain of steps, so no step carries more than max(RF before, after) + 1.

    * Lowering RF: the extra replicas go first, in one step (no data is copied; the leader, and
      replicas early in the list, go last).
    * Then each leaving replica is replaced by one new replica, one per step, the new one taking
      the old one's position (a new replica that the target puts at a leaving replica's position
      replaces that one first).
    * Raising RF: the remaining new replicas are added one per step.
    * The last step's target is the move's `after` exactly (order included), so no separate
      reorder step is needed; a move that only reorders is one step; a move that changes nothing
      gives no steps.

    Each step starts where the previous one ended and changes the replica set, except a pure
    reorder. Steps keep the move's `size_bytes` (the partition size).
    """
    before, after = move.before, move.after
    if before == after:
        return []
    leaving = [b for b in before if b not in after]
    joining = [b for b in after if b not in before]
    if not leaving and not joining:
        return [move]
    targets: list[tuple[int, ...]] = []
    current = list(before)
    # 1. lowering RF: drop the surplus leaving replicas, latest in the list first
    surplus = len(leaving) - len(joining)
    if surplus > 0:
        # keep for replacement the leaving replicas whose positions the target reuses
        reused = [
            b
            for i, b in enumerate(before)
            if b in leaving and i < len(after) and after[i] in joining
        ]
        droppable = [b for b in reversed(leaving) if b not in reused] + [
            b for b in reversed(leaving) if b in reused
        ]
        dropped = set(droppable[:surplus])
        current = [b for b in current if b not in dropped]
        leaving = [b for b in leaving if b not in dropped]
        targets.append(tuple(current))
    # 2. replacements, positional matches first
    pairs: list[tuple[int, int]] = []
    free_joining = list(joining)
    free_leaving = list(leaving)
    for i, b in enumerate(before):
        if b in free_leaving and i < len(after) and after[i] in free_joining:
            pairs.append((b, after[i]))
            free_leaving.remove(b)
            free_joining.remove(after[i])
    pairs += list(zip(free_leaving, free_joining, strict=False))
    used = {new for _, new in pairs}
    for old, new in pairs:
        current = [new if b == old else b for b in current]
        targets.append(tuple(current))
    # 3. raising RF: the rest of the new replicas, one at a time
    for new in joining:
        if new not in used:
            current.append(new)
            targets.append(tuple(current))
    # the last step lands exactly on the target order
    targets[-1] = after
    steps: list[Move] = []
    start = before
    for target in targets:
        steps.append(replace(move, before=start, after=target))
        start = target
    return steps


def expand_steps(moves: Iterable[Move]) -> list[Move]:
    """Every move as its `replica_at_a_time` chain, chains in move order (for `plan_waves`)."""
    return [step for move in moves for step in replica_at_a_time(move)]
