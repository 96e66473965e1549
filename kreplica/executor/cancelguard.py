"""Whether cancelling a plan's moves now is safe (pure: standard library and the model only).

A KIP-455 cancel puts a partition back on its original replicas and drops the replicas being
built (KAFKA-14424). When an original replica's broker is down, or an original replica is out
of sync, the partition keeps fewer in-sync copies than it has now: below min.insync.replicas,
acks=all producers block; at zero, it is offline (and where the originals were behind, the
records only the new replicas hold are lost). So, per partition in flight: the live in-sync
replicas the cancel would keep, against min.insync.replicas (never less than one, never more
than the original replication factor).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kreplica.model import ClusterSnapshot

Key = tuple[str, int]
SHOWN = 3


@dataclass(frozen=True)
class CancelRisk:
    """A partition a cancel would leave with too few live in-sync replicas."""

    topic: str
    partition: int
    original: tuple[int, ...]  # the replicas the cancel returns to
    kept: tuple[int, ...]  # of those, live and in sync now
    needed: int  # min.insync.replicas (capped by the original replication factor)
    down: tuple[int, ...]  # original replicas on brokers that are down

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "partition": self.name,
            "original": list(self.original),
            "kept": list(self.kept),
            "min_insync_replicas": self.needed,
            "down": list(self.down),
        }


def original_replicas(
    replicas: Sequence[int], state: Any, before: Sequence[int] | None
) -> tuple[int, ...]:
    """The replicas a cancel returns to: Kafka's in-flight listing minus the adding ones,
    else the plan's before-state, else the replicas shown."""
    adding = getattr(state, "adding", None)
    listed = getattr(state, "replicas", None) or replicas
    if adding is not None and (adding or getattr(state, "removing", None)):
        return tuple(b for b in listed if b not in set(adding))
    if before:
        return tuple(before)
    return tuple(replicas)


def cancel_risks(
    snapshot: ClusterSnapshot,
    in_flight: Mapping[Key, Any],
    keys: Sequence[Key],
    before: Mapping[Key, Sequence[int]],
) -> list[CancelRisk]:
    """The partitions among `keys` (in flight) that a cancel would leave under their
    min.insync.replicas, or with no live in-sync replica at all."""
    live = snapshot.live_broker_ids()
    parts = {(t.name, p.partition): (t, p) for t in snapshot.topics for p in t.partitions}
    out: list[CancelRisk] = []
    for key in sorted(keys):
        found = parts.get(key)
        if found is None:
            continue
        topic, part = found
        original = original_replicas(part.replicas, in_flight.get(key), before.get(key))
        if not original:
            continue
        in_sync = set(part.isr) if part.isr is not None else set(part.replicas)
        kept = tuple(b for b in original if b in in_sync and b in live)
        needed = max(1, min(topic.min_insync_replicas, len(original)))
        if len(kept) < needed:
            down = tuple(b for b in original if b not in live)
            out.append(CancelRisk(key[0], key[1], original, kept, needed, down))
    return out


def refusal_text(risks: Sequence[CancelRisk]) -> str:
    """The one line `kreplica cancel` refuses with."""
    shown = "; ".join(
        f"{r.name} would keep {len(r.kept)} live in-sync replica(s)"
        + (f" {list(r.kept)}" if r.kept else "")
        + f" of {list(r.original)}, under min.insync.replicas {r.needed}"
        for r in risks[:SHOWN]
    )
    more = f" (and {len(risks) - SHOWN} more)" if len(risks) > SHOWN else ""
    down = sorted({b for r in risks for b in r.down})
    why = (
        f"broker(s) {', '.join(map(str, down))} down"
        if down
        else "the original replicas are out of sync"
    )
    wait = (
        f"wait for broker(s) {', '.join(map(str, down))} to return"
        if down
        else "wait for the original replicas to catch up"
    )
    return (
        f"cancel refused, nothing changed: {shown}{more} ({why}); {wait}, or let the move "
        "finish (kreplica apply --resume); --force cancels anyway"
    )
