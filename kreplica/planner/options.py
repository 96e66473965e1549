"""What a user asks the planner for: per-topic targets and plan-wide options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from kreplica.planner.disk import DEFAULT_HEADROOM, Headroom

Strategy = Literal["balanced", "kafka", "append"]
STRATEGIES: tuple[Strategy, ...] = get_args(Strategy)


@dataclass(frozen=True)
class TopicRequest:
    """The target shape of one topic. None keeps today's value."""

    topic: str
    rf: int | None = None  # absolute target replication factor
    partitions: int | None = None  # absolute target partition count
    fix_racks: bool = False  # rack repair for this topic


@dataclass(frozen=True)
class PlanOptions:
    strategy: Strategy = "balanced"  # checked again at run time: a caller may pass any str
    brokers: frozenset[int] | None = None  # eligible brokers (None: all alive brokers)
    exclude_brokers: frozenset[int] = frozenset()
    seed: int | None = None  # tie-break and kafka-strategy randomness, deterministic
    force: bool = False  # allow lowering RF to <= min.insync.replicas
    replace_dead: bool = False  # replace replicas on dead brokers in the partitions that change
    skip_in_flight: bool = False  # leave partitions being reassigned out instead of refusing
    disk_headroom: Headroom = DEFAULT_HEADROOM  # kept free on each log dir (planner/disk.py)
    log_dirs: str = "any"  # "any" or "balanced": name each new replica's log dir
