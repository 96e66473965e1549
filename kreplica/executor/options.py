"""How an apply runs: throttle, waves, and what it may start beside (data, checked when made)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo
from typing import Literal, get_args

from kreplica.errors import UsageError
from kreplica.executor.window import Window
from kreplica.planner.traffic import MIN_WINDOW_S

# the order moves start in; what a partition that changed since the plan does; the way a plan
# is submitted (KIP-455 AlterPartitionReassignments or the /admin/reassign_partitions znode)
Order = Literal["plan", "largest", "smallest"]
OnDrift = Literal["fail", "skip"]
Via = Literal["kafka", "zookeeper"]
ORDERS: tuple[Order, ...] = get_args(Order)
ON_DRIFT: tuple[OnDrift, ...] = get_args(OnDrift)
VIAS: tuple[Via, ...] = get_args(Via)


@dataclass(frozen=True)
class ApplyOptions:
    throttle: int | None = None  # bytes/s for the moving replicas; None: no throttle
    max_partitions: int | None = None  # partitions in flight at once, cluster-wide
    max_per_broker: int | None = None  # moving partitions a broker takes part in at once
    order: Order = "plan"
    replica_at_a_time: bool = False  # at most RF+1 replicas per partition during the move
    additional: bool = False  # start beside other reassignments in flight
    on_drift: OnDrift = "fail"
    allow_under_min_isr: bool = False
    # safe start (kreplica.executor.safestart): partitions outside the plan under-replicated,
    # and how long the active controller must have been in charge (0: not checked)
    allow_under_replicated: bool = False
    controller_settle_s: float = 60.0
    stall_timeout_s: float = 300.0
    # how long apply waits for every throttled broker to report a rate it set before a wave
    # (kreplica.executor.throttle_confirm); then it stops, nothing more submitted
    throttle_confirm_s: float = 30.0
    poll_interval_s: float = 2.0
    resume: bool = False
    # bytes/s for copies between log dirs of one broker (replica.alter.log.dirs.io.max.bytes.
    # per.second); None: the `throttle` rate when one is given, else no limit
    dir_throttle: int | None = None
    # --pace auto (kreplica.executor.pace): `throttle` is the floor, `throttle_max` the
    # ceiling; the rate is re-decided every `pace_interval_s` from the canary and the ISR
    pace: bool = False
    throttle_max: int | None = None
    pace_interval_s: float = 10.0
    keep_canary: bool = False
    # kreplica.executor.window: waves start only inside `window` (in `window_tz`, None: local
    # time) and within `max_bytes_per_hour`; `window_floor`: outside it, the pace floor
    window: Window | None = None
    window_tz: tzinfo | None = None
    window_floor: bool = False
    max_bytes_per_hour: int | None = None
    # the write rates of the moving partitions (kreplica.executor.writerate): those the plan
    # does not carry are measured over `rate_window_s` seconds before anything is written
    # (0: not measured), when a `throttle` is set; a throttle under them is refused unless
    # `allow_under_write_rate`
    rate_window_s: float = 10.0
    allow_under_write_rate: bool = False
    # after the moves, a preferred leader election for the plan's partitions led off their
    # first replica (drain, replace, rebalance); journalled, so a resume runs it too
    elect_leaders: bool = False

    def __post_init__(self) -> None:
        # here, not in the CLI: the library and the command line refuse the same options
        problem = options_problem(self)
        if problem is not None:
            raise UsageError(problem)


def options_problem(o: ApplyOptions) -> str | None:
    """What is wrong with these options, in the library's words (one line), or None."""
    if o.order not in ORDERS:
        return f"`order` {o.order!r}: use plan, largest or smallest"
    if o.on_drift not in ON_DRIFT:
        return f"`on_drift` {o.on_drift!r}: use fail or skip"
    for name, count in (("max_partitions", o.max_partitions), ("max_per_broker", o.max_per_broker)):
        if count is not None and count < 1:
            return f"`{name}` {count}: give 1 or more"
    for name, rate in (
        ("throttle", o.throttle),
        ("throttle_max", o.throttle_max),
        ("dir_throttle", o.dir_throttle),
        ("max_bytes_per_hour", o.max_bytes_per_hour),
    ):
        if rate is not None and rate < 1:
            return f"`{name}` {rate}: give more than 0"
    if o.controller_settle_s < 0:
        return f"`controller_settle_s` {o.controller_settle_s:g}: give seconds >= 0 (0: no check)"
    if o.rate_window_s != 0 and not o.rate_window_s >= MIN_WINDOW_S:
        return (
            f"`rate_window_s` {o.rate_window_s:g}: give 0 (no measurement) or "
            f"{MIN_WINDOW_S:g} seconds or more (a shorter window is too short to measure a rate)"
        )
    if o.stall_timeout_s <= 0:
        return f"`stall_timeout_s` {o.stall_timeout_s:g}: give a number of seconds > 0"
    if o.pace:
        if o.throttle is None or o.throttle_max is None:
            # without a floor the moves would run unthrottled
            return "`pace` needs `throttle` (the rate it starts at) and `throttle_max`"
        if o.throttle > o.throttle_max:
            return (
                f"`throttle` {o.throttle} is above `throttle_max` {o.throttle_max}; give a floor "
                "at or below the ceiling"
            )
        if o.pace_interval_s <= 0:
            return f"`pace_interval_s` {o.pace_interval_s:g}: give seconds > 0"
    elif o.throttle_max is not None:
        return "`throttle_max` goes with `pace`; add it"
    if o.window is None and (o.window_tz is not None or o.window_floor):
        return "`window_tz` and `window_floor` go with `window`; add it"
    if o.window_floor and not o.pace:
        return "`window_floor` drops the throttle to the `pace` floor; add `pace`"
    return None
