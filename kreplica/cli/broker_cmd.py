"""drain / add-brokers / replace / rebalance, once typer has parsed them. Imported lazily.

Each one reads the cluster, runs its pure planner operation (kreplica.planner.brokers), and
hands the plan to the same show / --out / apply path as the topic commands. drain and
rebalance run a preferred leader election for the plan's partitions once an apply finished.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kreplica.cli import drained
from kreplica.cli.common import (
    measure_traffic,
    metrics_traffic,
    parse_broker_ids,
    parse_headroom,
    parse_log_dirs_mode,
    parse_size,
    read_capacity,
    read_cluster,
    source_spec,
    topic_names,
    topics_pattern,
    wants_metrics,
)
from kreplica.cli.options import Options
from kreplica.cli.present import show_plan
from kreplica.errors import UsageError


def _plan_options(opts: Options, left_out: frozenset[int] = frozenset()) -> Any:
    from kreplica.planner import PlanOptions

    return PlanOptions(
        exclude_brokers=(parse_broker_ids(opts.exclude_brokers, "--exclude-brokers") or frozenset())
        | left_out,
        seed=opts.seed,
        skip_in_flight=opts.skip_in_flight,
        disk_headroom=parse_headroom(opts.disk_headroom),
        log_dirs=parse_log_dirs_mode(opts.log_dirs),
    )


def _planned(
    opts: Options,
    snap: Any,
    make: Callable[[Any], Any],
    *,
    named: frozenset[int] | None = None,
    asked: frozenset[int] | None = None,
) -> Any:
    """`make(options)`'s plan, leaving out the brokers drained on the cluster unless `named`
    (kreplica.cli.drained), with the findings that say so and warn of empty brokers it fills
    that are not `asked` for."""
    left_out, notes = drained.exclusions(snap, named)
    return drained.annotate(make(_plan_options(opts, left_out)), notes, asked)


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
    snap = read_cluster(spec, columnar=True)  # the column run's, where the source can
    names = _topic_names(snap, topics, regex)
    plan = _planned(
        opts,
        snap,
        lambda o: drain_plan(snap, ids, topics=names, options=o, keep_rack_share=keep_rack_share),
        named=ids,
    )
    scope = "" if names is None else f" ({', '.join(names[:5])}{' ...' if len(names) > 5 else ''})"
    title = f"drain broker(s) {', '.join(map(str, sorted(ids)))}{scope}"
    show_plan(opts, spec, snap, plan, title, elect_leaders=True)


def add_brokers(opts: Options, *, brokers: str, by: str) -> None:
    from kreplica.planner.brokers import add_brokers_plan

    ids = _ids(brokers, "--brokers")
    spec = source_spec(opts)
    snap = read_cluster(spec, columnar=True)  # the column run's, where the source can
    plan = _planned(
        opts, snap, lambda o: add_brokers_plan(snap, ids, by=by, options=o), named=ids, asked=ids
    )
    title = f"add broker(s) {', '.join(map(str, sorted(ids)))}: their share by {by}"
    show_plan(opts, spec, snap, plan, title)


def replace(opts: Options, *, broker: int, with_broker: int) -> None:
    from kreplica.planner.brokers import replace_plan

    spec = source_spec(opts)
    snap = read_cluster(spec, columnar=True)  # the column run's, where the source can
    new = frozenset({with_broker})
    plan = _planned(
        opts,
        snap,
        lambda o: replace_plan(snap, broker, with_broker, options=o),
        named=new,
        asked=new,
    )
    title = f"replace broker {broker} with {with_broker}"
    show_plan(opts, spec, snap, plan, title, elect_leaders=True)


def rebalance(
    opts: Options,
    *,
    by: str,
    max_moves: int | None,
    max_bytes: str | None,
    window_s: float | None = None,
    capacity: Path | None = None,
) -> None:
    from kreplica.planner.brokers import rebalance_plan

    budget = parse_size(max_bytes, "--max-bytes") if max_bytes is not None else None
    if max_moves is not None and max_moves < 0:
        raise UsageError(f"--max-moves {max_moves}: give 0 or more")
    if by not in ("count", "bytes", "traffic"):
        raise UsageError(f"--by {by!r}: use count, bytes or traffic")
    from_metrics = wants_metrics(opts)
    if from_metrics and by != "traffic":
        raise UsageError(f"--traffic-from gives rates to --by traffic, not --by {by}")
    if capacity is not None and by != "traffic":
        raise UsageError(f"--capacity scales --by traffic's band, not --by {by}")
    spec = source_spec(opts)
    # a cluster entry's capacity (clusters.toml) serves --by traffic only
    capacity_of = read_capacity(capacity, spec.capacity if by == "traffic" else None)
    capacities: dict[int, dict[str, float]] | None = None

    def check(snap: Any) -> None:  # before any window: a typo costs no wait
        nonlocal capacities
        capacities = capacity_of(snap)

    if from_metrics:  # the cluster as read, with Prometheus's peak rates
        if window_s is not None:
            raise UsageError(
                "--traffic-window measures the brokers, --traffic-from reads Prometheus: "
                "give one of them"
            )
        snap = metrics_traffic(opts, spec, check=check, snap=read_cluster(spec))[0]
    else:
        snap = _rated(spec, window_s, check) if by == "traffic" else None
    if snap is None:
        if window_s is not None:
            raise UsageError(
                f"--traffic-window measures traffic: it goes with --by traffic, not --by {by}"
            )
        snap = read_cluster(spec, columnar=by != "traffic")  # count, bytes: the column run's
        check(snap)

    def make(o: Any) -> Any:
        if by == "traffic":  # from measured rates (snapshot --traffic): its own module
            from kreplica.planner.brokers.traffic_balance import traffic_rebalance_plan

            return traffic_rebalance_plan(
                snap, max_moves=max_moves, max_bytes=budget, options=o, capacities=capacities
            )
        return rebalance_plan(snap, by=by, max_moves=max_moves, max_bytes=budget, options=o)

    plan = _planned(opts, snap, make)
    limits = [f"max {max_moves} moves" if max_moves is not None else ""]
    limits.append(f"max {max_bytes}" if max_bytes is not None else "")
    shown = ", ".join(x for x in limits if x)
    title = f"rebalance by {by}" + (f" ({shown})" if shown else "")
    show_plan(opts, spec, snap, plan, title, elect_leaders=True)


def _rated(spec: Any, window_s: float | None, check: Callable[[Any], None]) -> Any:
    """--by traffic's cluster with rates: measured live over the window (60 s unless given);
    None from a snapshot file (it carries its rates, or the planner refuses it)."""
    if spec.kind == "snapshot":
        if window_s is not None:
            raise UsageError(
                "--traffic-window measures a live cluster; a --snapshot file carries the rates "
                "it was taken with: drop one of them"
            )
        return None
    return measure_traffic(spec, 60.0 if window_s is None else window_s, None, check)[0]


# --- the brokers remembered as drained (kreplica.cli.drained) --------------------------------


def drained_list(opts: Options, *, cluster_id: str | None) -> None:
    """`kreplica brokers list`: the drained brokers per cluster (one cluster with --cluster-id)."""
    from kreplica.cli.common import console, print_json_data
    from kreplica.cli.options import OutputFormat

    record = drained.load()
    if cluster_id is not None:
        record = {cluster_id: record.get(cluster_id, {})}
    rows: list[dict[str, Any]] = [
        {"cluster_id": cid, "broker": b, "since": e.get("since"), "plan": e.get("plan")}
        for cid, ids in sorted(record.items())
        for b, e in sorted(ids.items())
    ]
    if opts.output is OutputFormat.json:
        print_json_data({"file": str(drained.record_path()), "drained": rows})
        return
    out = console()
    if not rows:
        where = f" on cluster {cluster_id}" if cluster_id else ""
        out.print(f"no broker is remembered as drained{where}", markup=False)
        return
    width = max(len(r["cluster_id"]) for r in rows)
    out.print(f"{'cluster':<{width}}  broker  drained               plan", markup=False)
    for r in rows:
        out.print(
            f"{r['cluster_id']:<{width}}  {r['broker']:<6}  {r['since']:<20}  {r['plan']}",
            markup=False,
            soft_wrap=True,
        )


def undrain(opts: Options, *, brokers: str, cluster_id: str | None) -> None:
    """`kreplica brokers undrain IDS`: later plans may place replicas on them again."""
    from kreplica.cli.common import console, print_json_data
    from kreplica.cli.options import OutputFormat
    from kreplica.planner.drained import broker_words

    ids = _ids(brokers, "IDS")
    record = drained.load()
    if cluster_id is None:
        holding = sorted(cid for cid, known in record.items() if ids & set(known))
        if len(holding) > 1:
            raise UsageError(
                f"{broker_words(ids)}: drained on clusters {', '.join(holding)}; pass "
                "--cluster-id ID to say which"
            )
        cluster_id = holding[0] if holding else None
    back = drained.forget(cluster_id, ids) if cluster_id else []
    if not back:
        raise UsageError(
            f"{broker_words(ids)}: not remembered as drained"
            + (f" on cluster {cluster_id}" if cluster_id else "")
            + "; `kreplica brokers list` shows the ones that are"
        )
    line = (
        f"{broker_words(back)} undrained on cluster {cluster_id}: later plans may place "
        f"replicas on {'it' if len(back) == 1 else 'them'} again"
    )
    if opts.output is OutputFormat.json:
        print_json_data({"cluster_id": cluster_id, "undrained": back, "message": line})
    else:
        console().print(line, markup=False)
