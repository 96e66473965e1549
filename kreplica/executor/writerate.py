"""The write rates of the moving partitions against the throttle that carries them. Pure.

A new replica catches up with a leader that is still being written: it closes the gap at the
throttle minus the partition's write rate, so a partition written at R B/s never finishes
under a throttle at or below R (Kafka's docs warn of it). Kafka throttles only replicas out
of the ISR, at both ends, and a throttle caps a broker's whole throttled traffic, so per wave
and per broker the writes the throttle must carry just to keep pace add up:

* follower side, a receiving broker: R of every partition it receives a new replica of;
* leader side, a partition's leader: R x the new replicas of every partition it leads.

A wave finishes only where each such load is below the throttle. Its copy takes, per broker,
the bytes the broker copies over (throttle - load): the slowest broker's time, an upper bound
(a new replica that joined the ISR stops taking throttle, which speeds up the others).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from kreplica.executor.moves import Move
from kreplica.planner.serialize import parse_rate_rows
from kreplica.render.text import format_bytes

Key = tuple[str, int]
Side = Literal["leader", "follower"]
SHOWN = 3  # partitions named in a refusal


@dataclass(frozen=True)
class BrokerLoad:
    """What one broker's throttle carries in one wave (`wave` 0: moves a resume waits for)."""

    wave: int
    broker: int
    side: Side
    writes: float  # bytes/s written to the partitions it copies: the throttle's share to keep pace
    bytes: int | None  # bytes it copies in the wave (None: a partition's size unknown)
    partitions: tuple[tuple[Key, float], ...]  # (partition, its write rate), busiest first

    @property
    def written(self) -> tuple[tuple[Key, float], ...]:
        """The partitions of `partitions` that are written to (not idle)."""
        return tuple((key, rate) for key, rate in self.partitions if rate > 0)


def leader_of(move: Move, leaders: Mapping[Key, int | None]) -> int | None:
    """The broker that feeds the move's new replicas: its leader now when it is one of the
    replicas before, else the preferred one."""
    now = leaders.get(move.key)
    if now is not None and now in move.before:
        return now
    return move.before[0] if move.before else None


def broker_loads(
    waves: Sequence[Sequence[Move]],
    rates: Mapping[Key, float],
    leaders: Mapping[Key, int | None],
    *,
    first_wave: int = 1,
) -> list[BrokerLoad]:
    """Per wave and per broker (follower and leader side), the writes its throttle carries and
    the bytes it copies; partitions without a known rate count 0 B/s. Sorted by wave, then
    broker, then side."""
    out: list[BrokerLoad] = []
    for number, wave in enumerate(waves, start=first_wave):
        carried: dict[tuple[int, Side], list[tuple[Key, float, int | None]]] = {}
        for move in wave:
            added = move.added
            if not added:
                continue
            rate = rates.get(move.key, 0.0)
            for broker in added:
                carried.setdefault((broker, "follower"), []).append(
                    (move.key, rate, move.size_bytes)
                )
            leader = leader_of(move, leaders)
            if leader is not None:
                for _ in added:
                    carried.setdefault((leader, "leader"), []).append(
                        (move.key, rate, move.size_bytes)
                    )
        for (broker, side), rows in sorted(carried.items()):
            sizes = [size for _, _, size in rows]
            out.append(
                BrokerLoad(
                    number,
                    broker,
                    side,
                    sum(rate for _, rate, _ in rows),
                    None if None in sizes else sum(s or 0 for s in sizes),
                    tuple(sorted(((k, r) for k, r, _ in rows), key=lambda kr: (-kr[1], kr[0]))),
                )
            )
    return out


def overloaded(loads: Iterable[BrokerLoad], throttle: int) -> list[BrokerLoad]:
    """The loads at or above the throttle (their moves never finish), worst first."""
    over = [load for load in loads if load.writes > 0 and load.writes >= throttle]
    return sorted(over, key=_worst_first)


def _worst_first(load: BrokerLoad) -> tuple[float, int, bool, int]:
    # the most writes; on a tie the earlier wave, the receiving side (the one people look
    # at), the lower broker id
    return (-load.writes, load.wave, load.side != "follower", load.broker)


def busiest(loads: Iterable[BrokerLoad]) -> BrokerLoad | None:
    """The load that takes the largest share of its throttle."""
    return min(loads, key=_worst_first, default=None)


def copy_time_s(loads: Sequence[BrokerLoad], throttle: int) -> float | None:
    """Seconds to copy every wave at the throttle, counting the bytes written meanwhile: per
    wave the slowest broker's bytes / (throttle - writes). None when a size is unknown or a
    load reaches the throttle (never, at this rate)."""
    per_wave: dict[int, float] = {}
    for load in loads:
        if load.bytes is None or load.writes >= throttle:
            return None
        seconds = load.bytes / (throttle - load.writes)
        per_wave[load.wave] = max(per_wave.get(load.wave, 0.0), seconds)
    return sum(per_wave.values())


def rate_text(rate: float) -> str:
    return f"{format_bytes(int(rate))}/s"


def _named(partitions: Sequence[tuple[Key, float]]) -> str:
    shown = ", ".join(f"{t}-{p} at {rate_text(r)}" for (t, p), r in partitions[:SHOWN])
    more = len(partitions) - SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def overload_text(over: Sequence[BrokerLoad], throttle: int) -> str:
    """The worst overloaded broker in words: the wave, the partitions whose writes its
    throttle would carry, and the throttle."""
    worst = over[0]
    where = "the moves a resume waits for" if worst.wave == 0 else f"wave {worst.wave}"
    verb = "receive" if worst.side == "follower" else "send to"
    others = {(load.broker, load.side) for load in over[1:]} - {(worst.broker, worst.side)}
    besides = f" (and {len(others)} more broker throttle(s))" if others else ""
    written = worst.written
    if len(written) == 1:
        ((t, p), _), *_ = written
        what = f"the new replica of {t}-{p}, written at {rate_text(worst.writes)}"
    else:
        what = (
            f"{len(written)} new replicas of partitions written at "
            f"{rate_text(worst.writes)} together ({_named(written)})"
        )
    return (
        f"in {where} broker {worst.broker} would {verb} {what}, at or above its {worst.side} "
        f"throttle of {rate_text(throttle)}{besides}"
    )


def refusal(over: Sequence[BrokerLoad], throttle: int, *, pace: bool) -> str:
    """One line: the worst broker (overload_text) and what to do, in the library's words
    (`throttle`, `max_per_broker`, ...)."""
    worst = over[0]
    which = "the `pace` floor `throttle`" if pace else "`throttle`"
    fewer = (
        ", move fewer partitions through a broker at once (`max_per_broker`)"
        if len(worst.written) > 1 and worst.written[0][1] < throttle
        else ""
    )
    return (
        f"the moves would never finish: {overload_text(over, throttle)}; raise {which} above "
        f"{rate_text(worst.writes)}{fewer}, or pass `allow_under_write_rate` to apply anyway "
        "(nothing was written)"
    )


def journalled_rates(events: Iterable[Mapping[str, object]]) -> dict[Key, float]:
    """The write rates a plan's journal recorded (each apply's `write-rates`, the last one
    winning), for a resume and for `status`."""
    rates: dict[Key, float] = {}
    for event in events:
        if event.get("event") == "write-rates":
            rates.update(parse_rate_rows(event.get("partitions")))
    return rates


def pending_writes(
    pending: Mapping[Key, Sequence[int]],
    moves: Mapping[Key, Move | None],
    in_sync: Mapping[Key, Iterable[int]],
    rates: Mapping[Key, float],
) -> float:
    """Bytes/s written to the partitions still copying, once per new replica not yet in sync:
    what the copy must outrun before it gains on the leader (the ETA's `writes`)."""
    total = 0.0
    for key, target in pending.items():
        rate = rates.get(key)
        if not rate:
            continue
        move = moves.get(key)
        before = set(move.before) if move is not None else set()
        synced = set(in_sync.get(key, ()))
        total += rate * sum(1 for b in target if b not in before and b not in synced)
    return total
