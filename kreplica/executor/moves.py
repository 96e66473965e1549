"""One partition's move: its replicas before and after (pure, standard library only)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Move:
    """A reassignment of one existing partition, replicas with the preferred leader first.

    `size_bytes` is the size of one replica's log (the partition size), when known; the bytes a
    move copies are `bytes_to_copy` (one log per added replica).
    """

    topic: str
    partition: int
    before: tuple[int, ...]
    after: tuple[int, ...]
    size_bytes: int | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    @property
    def added(self) -> tuple[int, ...]:
        """Brokers that receive a replica, in `after` order."""
        return tuple(b for b in self.after if b not in self.before)

    @property
    def removed(self) -> tuple[int, ...]:
        """Brokers that lose their replica, in `before` order."""
        return tuple(b for b in self.before if b not in self.after)

    @property
    def bytes_to_copy(self) -> int | None:
        """Bytes the move replicates (size × added replicas), None when the size is unknown."""
        if not self.added:
            return 0
        if self.size_bytes is None:
            return None
        return self.size_bytes * len(self.added)

    @property
    def name(self) -> str:
        """Kafka's way to write a partition: `topic-partition`."""
        return f"{self.topic}-{self.partition}"
