"""Intra-broker moves (a replica changes log dir on its broker): what is left to do and how far
it got (pure, standard library only).

A plan asks for them through the reassignment JSON's `log_dirs` (a path instead of "any").
Kafka moves a replica between dirs when AlterReplicaLogDirs names its new dir: the broker
creates a *future* log there (DescribeLogDirs lists it with `is_future_key`), copies the log at
up to `replica.alter.log.dirs.io.max.bytes.per.second`, and swaps it in when it caught up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

DirKey = tuple[str, int, int]  # topic, partition, broker


@dataclass(frozen=True)
class ReplicaLog:
    """Where one replica lives now (DescribeLogDirs): its dir and size, and the dir and size
    of its future log while a move between dirs runs."""

    path: str
    size_bytes: int = 0
    future_path: str | None = None
    future_bytes: int = 0


def dir_targets(
    replicas: Mapping[tuple[str, int], tuple[int, ...]],
    log_dirs: Mapping[tuple[str, int], tuple[str, ...]],
) -> dict[DirKey, str]:
    """(topic, partition, broker) -> the dir the plan names for it ("any" left out)."""
    out: dict[DirKey, str] = {}
    for key, dirs in log_dirs.items():
        brokers = replicas.get(key, ())
        for broker, path in zip(brokers, dirs, strict=False):
            if path != "any":
                out[(key[0], key[1], broker)] = path
    return out


def is_done(log: ReplicaLog | None, target: str) -> bool:
    return log is not None and log.path == target and log.future_path is None


def pending(targets: Mapping[DirKey, str], logs: Mapping[DirKey, ReplicaLog]) -> list[DirKey]:
    """The replicas not yet in their planned dir (or with a move between dirs still running)."""
    return sorted(k for k, target in targets.items() if not is_done(logs.get(k), target))


def copied(targets: Mapping[DirKey, str], logs: Mapping[DirKey, ReplicaLog]) -> tuple[int, int]:
    """(bytes copied into future logs so far, bytes in all) over these replicas; a replica
    already in its dir counts as copied."""
    done = total = 0
    for key, target in targets.items():
        log = logs.get(key)
        if log is None:
            continue
        total += log.size_bytes
        if is_done(log, target):
            done += log.size_bytes
        elif log.future_path == target:
            done += min(log.size_bytes, log.future_bytes)
    return done, total
