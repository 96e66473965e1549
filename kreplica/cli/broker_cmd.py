"""drain / add-brokers / replace / rebalance, once typer has parsed them. Imported lazily.

Each one reads the cluster, runs its pure planner operation (kreplica.planner.brokers), and
hands the plan to the same show / --out / apply path as the topic commands. drain and
rebalance run a preferred leader election for the plan's partitions once an apply finished.
"""

from __future__ import annotations

from typing import Any

from kreplica.cli.common import (
    parse_broker_ids,
    parse_headroom,
    parse_log_dirs_mode,
    parse_size,
    read_cluster,
    source_spec,
    topic_names,
    topics_pattern,
)
from kreplica.cli.options import Options
from kreplica.cli.present import show_plan
from kreplica.errors import UsageError


def _plan_options(opts: Options) -> Any:
    from kreplica.planner import PlanOptions

    return PlanOptions(
        exclude_brokers=parse_broker_ids(opts.exclude_brokers, "--exclude-brokers") or frozenset(),
        seed=opts.seed,
        skip_in_flight=opts.skip_in_flight,
        disk_headroom=parse_headroom(opts.disk_headroom),
        log_dirs=parse_log_dirs_mode(opts.log_dirs),
    )


def _ids(text: str, flag: str) -> frozenset[int]:
    ids = parse_broker_ids(text, flag)
    assert ids is not None
    if not ids:
        raise UsageError(f"{flag}: no broker id given; write ids like 1,2,5-8")
    return ids


def _topic_names(snap: Any, topics: list[str], regex: str | None) -> list[str] | None:
    if not topics and regex is None:
        return None
    return topic_names(snap, topics, topics_pattern(regex))


def drain(
    opts: Options,
    *,
    brokers: str,
    topics: list[str],
    regex: str | None,
    keep_rack_share: bool = False,
) -> None:
    from kreplica.planner.brokers import drain_plan

    ids = _ids(brokers, "--brokers")
    spec = source_spec(opts)
    snap = read_cluster(spec)
    names = _topic_names(snap, topics, regex)
    plan = drain_plan(
        snap, ids, topics=names, options=_plan_options(opts), keep_rack_share=keep_rack_share
    )
    scope = "" if names is None else f" ({', '.join(names[:5])}{' ...' if len(names) > 5 else ''})"
    title = f"drain broker(s) {', '.join(map(str, sorted(ids)))}{scope}"
    show_plan(opts, spec, snap, plan, title, elect_leaders=True)


def add_brokers(opts: Options, *, brokers: str, by: str) -> None:
    from kreplica.planner.brokers import add_brokers_plan

    ids = _ids(brokers, "--brokers")
    spec = source_spec(opts)
    snap = read_cluster(spec)
    plan = add_brokers_plan(snap, ids, by=by, options=_plan_options(opts))
    title = f"add broker(s) {', '.join(map(str, sorted(ids)))}: their share by {by}"
    show_plan(opts, spec, snap, plan, title)


def replace(opts: Options, *, broker: int, with_broker: int) -> None:
    from kreplica.planner.brokers import replace_plan

    spec = source_spec(opts)
    snap = read_cluster(spec)
    plan = replace_plan(snap, broker, with_broker, options=_plan_options(opts))
    title = f"replace broker {broker} with {with_broker}"
    show_plan(opts, spec, snap, plan, title, elect_leaders=True)


def rebalance(opts: Options, *, by: str, max_moves: int | None, max_bytes: str | None) -> None:
    from kreplica.planner.brokers import rebalance_plan

    budget = parse_size(max_bytes, "--max-bytes") if max_bytes is not None else None
    if max_moves is not None and max_moves < 0:
        raise UsageError(f"--max-moves {max_moves}: give 0 or more")
    if by not in ("count", "bytes", "traffic"):
        raise UsageError(f"--by {by!r}: use count, bytes or traffic")
    spec = source_spec(opts)
    snap = read_cluster(spec)
    if by == "traffic":  # from measured rates (snapshot --traffic): its own module
        from kreplica.planner.brokers.traffic_balance import traffic_rebalance_plan

        plan = traffic_rebalance_plan(
            snap, max_moves=max_moves, max_bytes=budget, options=_plan_options(opts)
        )
    else:
        plan = rebalance_plan(
            snap, by=by, max_moves=max_moves, max_bytes=budget, options=_plan_options(opts)
        )
    limits = [f"max {max_moves} moves" if max_moves is not None else ""]
    limits.append(f"max {max_bytes}" if max_bytes is not None else "")
    shown = ", ".join(x for x in limits if x)
    title = f"rebalance by {by}" + (f" ({shown})" if shown else "")
    show_plan(opts, spec, snap, plan, title, elect_leaders=True)
