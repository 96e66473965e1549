"""What each command does, once typer has parsed it. Imported lazily by kreplica.cli.app."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kreplica.cli.common import (
    console,
    describe_source,
    measure_traffic,
    metrics_traffic,
    parse_broker_ids,
    parse_headroom,
    parse_log_dirs_mode,
    print_json_data,
    read_cluster,
    require_topics,
    rf_ranges,
    source_spec,
    topic_list,
    topic_names,
    topics_pattern,
    wants_metrics,
)
from kreplica.cli.config import SourceSpec
from kreplica.cli.options import Options, OutputFormat
from kreplica.cli.present import show_plan
from kreplica.errors import UsageError
from kreplica.model import ClusterSnapshot, Plan
from kreplica.userfiles import decode_json, read_user_file

if TYPE_CHECKING:
    from kreplica.planner.options import Strategy

# --- plan commands -------------------------------------------------------------------------


def rf_change(opts: Options, *, topics: list[str], rf: int, direction: str) -> None:
    """expand / shrink / set-rf: the RF is absolute; expand never lowers, shrink never raises."""
    if rf < 1:
        raise UsageError(f"--rf {rf} is not a replication factor; use 1 or more")
    spec = source_spec(opts)
    snap = read_cluster(spec, columnar=True, sizes=not opts.no_sizes)
    require_topics(snap, topics)
    currents: dict[str, str] = {}
    ranges = rf_ranges(snap, topics)
    for name in topics:
        # a topic an RF change stopped half way has partitions at two RFs: "RF 2-3"
        low, high = ranges[name]
        current = currents[name] = str(low) if low == high else f"{low}-{high}"
        if direction == "expand" and rf < high:
            raise UsageError(
                f"expand raises RF, but {name} has RF {current} and --rf is {rf}; "
                f"use `kreplica shrink --topic {name} --rf {rf}`"
            )
        if direction == "shrink" and rf > low:
            raise UsageError(
                f"shrink lowers RF, but {name} has RF {current} and --rf is {rf}; "
                f"use `kreplica expand --topic {name} --rf {rf}`"
            )
    from kreplica.planner import TopicRequest

    requests = [TopicRequest(topic=name, rf=rf) for name in dict.fromkeys(topics)]
    verb = {"expand": "expand", "shrink": "shrink", "any": "set RF of"}[direction]
    title = f"{verb} " + ", ".join(f"{n} (RF {c} → {rf})" for n, c in currents.items())
    _plan_and_show(opts, spec, snap, requests, title)


def plan_topics(
    opts: Options,
    *,
    topics: list[str],
    regex: str | None,
    rf: int | None,
    partitions: int | None,
    fix_racks: bool,
    keys_file: Path | None = None,
    sample: int | None = None,
) -> None:
    if rf is None and partitions is None and not fix_racks:
        raise UsageError("nothing to plan; give --rf N, --partitions N and/or --fix-racks")
    if rf is not None and rf < 1:
        raise UsageError(f"--rf {rf} is not a replication factor; use 1 or more")
    if partitions is not None and partitions < 1:
        raise UsageError(f"--partitions {partitions} is not a partition count; use 1 or more")
    if not topics and regex is None:
        raise UsageError("no topic given; pass --topic NAME (repeatable) or --topics REGEX")
    pattern = topics_pattern(regex)  # a bad regex fails before connecting
    spec = source_spec(opts)
    snap = read_cluster(spec, columnar=True, sizes=not opts.no_sizes)
    names = topic_names(snap, topics, pattern)
    from kreplica.planner import TopicRequest

    requests = [
        TopicRequest(topic=n, rf=rf, partitions=partitions, fix_racks=fix_racks) for n in names
    ]
    what = []
    if rf is not None:
        what.append(f"RF {rf}")
    if partitions is not None:
        what.append(f"{partitions} partitions")
    if fix_racks:
        what.append("racks repaired")
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    _plan_and_show(
        opts,
        spec,
        snap,
        requests,
        f"plan {shown}: {', '.join(what)}",
        keys_file=keys_file,
        sample=sample,
    )


def _plan_and_show(
    opts: Options,
    spec: SourceSpec,
    snap: ClusterSnapshot,
    requests: list[Any],
    title: str,
    *,
    keys_file: Path | None = None,
    sample: int | None = None,
) -> None:
    from kreplica.cli import drained
    from kreplica.planner import PlanOptions, make_plan

    brokers = parse_broker_ids(opts.brokers, "--brokers")
    # --brokers names every broker the plan may use: nothing drained is left out then
    left_out, notes = drained.exclusions(snap, None) if brokers is None else (frozenset(), [])
    plan_options = PlanOptions(
        strategy=cast("Strategy", opts.strategy),  # make_plan says when it is none of them
        brokers=brokers,
        exclude_brokers=(parse_broker_ids(opts.exclude_brokers, "--exclude-brokers") or frozenset())
        | left_out,
        seed=opts.seed,
        force=opts.force,
        replace_dead=opts.replace_dead,
        skip_in_flight=opts.skip_in_flight,
        disk_headroom=parse_headroom(opts.disk_headroom),
        log_dirs=parse_log_dirs_mode(opts.log_dirs),
    )
    plan = drained.annotate(make_plan(snap, requests, plan_options), notes, brokers)
    if opts.no_sizes and spec.kind != "snapshot":  # the report says why it has no bytes
        plan = _sizes_not_read(plan)
    impact = None
    if plan.new_partitions:  # keyed producers and consumer groups see the new partitions
        from kreplica.cli.client_impact import plan_client_impact

        impact = plan_client_impact(plan, snap, spec, keys_file=keys_file, sample=sample)
    show_plan(opts, spec, snap, plan, title, impact=impact)


def _sizes_not_read(plan: Plan) -> Plan:
    """The plan's report marked `sizes_read: false`, its disk check unchecked for that reason."""
    import dataclasses
    from collections.abc import Mapping

    report = plan.report.copy()
    report["sizes_read"] = False
    disk = report.get("disk")
    if isinstance(disk, Mapping) and disk.get("unchecked"):
        report["disk"] = {**disk, "unchecked": "--no-sizes: no disk sizes read"}
    return dataclasses.replace(plan, report=report)


# --- explain, check, snapshot ---------------------------------------------------------------


def explain(opts: Options, *, topics: list[str]) -> None:
    from kreplica.planner.explain_arrays import explain_topics

    spec = source_spec(opts)
    wanted = list(dict.fromkeys(topics))
    # only what is asked for, and no sizes (an explanation shows none): cheap on a large
    # cluster; a snapshot file is read whole, in columns (explained from its arrays)
    in_file = spec.kind == "snapshot"
    snap = read_cluster(spec, None if in_file else wanted, columnar=in_file, sizes=in_file)
    if in_file and wanted:
        require_topics(snap, wanted)
    names = wanted or topic_list(snap)
    results = explain_topics(snap, names)
    if not results:
        # an empty cluster (or a selection that matched nothing) says so instead of nothing
        note = (
            f"nothing to explain: the cluster ({describe_source(spec)}) has no topics"
            f"{' matching the selection' if wanted else ''}"
        )
        if opts.output is OutputFormat.json:
            print_json_data({"source": describe_source(spec), "topics": [], "message": note})
        elif opts.output is OutputFormat.markdown:
            sys.stdout.write(f"{note}\n")
        else:
            console().print(note, markup=False, soft_wrap=True)
        return
    if opts.output is OutputFormat.json:
        data: dict[str, Any] = {"source": describe_source(spec), "topics": results}
        if len(results) == 1:
            # one topic asked for: its explanation is also the data itself (`data.layout`)
            data.update(results[0])
        print_json_data(data)
    elif opts.output is OutputFormat.markdown:
        from kreplica.render.markdown import explain_markdown

        sys.stdout.write(explain_markdown(results, snap))
    else:
        from kreplica.render.explain import explain_view

        console().print(explain_view(results, snap))


def check(opts: Options, plan_file: Path) -> None:
    from kreplica.planner import check_reassignment
    from kreplica.planner.serialize import findings_json

    text = read_user_file(plan_file, "plan file", fix="check the path")
    data = decode_json(
        text,
        str(plan_file),
        fix="pass a kafka-reassign-partitions JSON or a PLAN.kreplica.json",
    )
    from kreplica.executor.facade import plan_document_of

    # PLAN.json is checked as its plan document beside it, as apply reads it: the same
    # cluster id, before-state and new partitions
    document = plan_document_of(plan_file, data)
    spec = source_spec(opts)
    snap = read_cluster(spec)
    findings = check_reassignment(snap, document if document is not None else data)
    from kreplica.render.text import finding_text, plural

    errors = [f for f in findings if f.level == "error"]
    if opts.output is OutputFormat.json:
        print_json_data(
            {
                "source": describe_source(spec),
                "file": str(plan_file),
                "findings": findings_json(findings),
            },
            [{"code": f.code, "message": finding_text(f)} for f in errors],
        )
    elif opts.output is OutputFormat.markdown:
        from kreplica.render.markdown import findings_markdown

        sys.stdout.write(findings_markdown(findings, title=f"kreplica check {plan_file}"))
    else:
        from kreplica.render.diff import findings_view

        out = console()
        if findings:
            out.print(findings_view(findings))
        counts = {
            lvl: sum(f.level == lvl for f in findings) for lvl in ("error", "warning", "info")
        }
        out.print(
            f"{plan_file}: {plural(counts['error'], 'error')}, "
            f"{plural(counts['warning'], 'warning')}, {plural(counts['info'], 'note')} "
            f"(checked against {describe_source(spec)})",
            markup=False,
        )
    if errors:
        from kreplica.errors import VerificationFailed

        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise VerificationFailed(f"{plan_file}: {finding_text(first)}{more}")


def snapshot(
    opts: Options, *, out: Path | None, topics: list[str], traffic_s: float | None = None
) -> None:
    from kreplica.sources.snapshot import dump_snapshot, snapshot_to_dict

    spec = source_spec(opts)
    if wants_metrics(opts):
        if traffic_s is not None:
            raise UsageError(
                "give --traffic SECONDS (measured through the brokers) or --traffic-from "
                "(read from Prometheus), not both"
            )
        snap = metrics_traffic(opts, spec, topics)[0]
    elif traffic_s is not None:
        snap = measure_traffic(spec, traffic_s, list(dict.fromkeys(topics)))[0]
    else:
        snap = read_cluster(spec, list(dict.fromkeys(topics)))
    if out is not None and str(out) != "-":
        if not out.parent.exists():
            raise UsageError(
                f"-o {str(out)!r}: folder {str(out.parent)!r} does not exist; create it"
            )
        try:
            out.write_text(dump_snapshot(snap), encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {str(out)!r} ({exc.strerror}); check -o") from None
    summary: dict[str, Any] = {
        "file": None if out is None or str(out) == "-" else str(out),
        "cluster_id": snap.cluster_id,
        "brokers": len(snap.brokers),
        "topics": len(snap.topics),
        "partitions": sum(len(t.partitions) for t in snap.topics),
        "fingerprint": snap.fingerprint(),
    }
    if opts.output is OutputFormat.json:
        if summary["file"] is None:
            summary["snapshot"] = snapshot_to_dict(snap)
        print_json_data(summary)
    elif summary["file"] is None:
        sys.stdout.write(dump_snapshot(snap))
    else:
        console().print(
            f"wrote {out}: {summary['brokers']} brokers, {summary['topics']} topics, "
            f"{summary['partitions']} partitions (cluster {snap.cluster_id or 'unknown'}, "
            f"fingerprint {summary['fingerprint']})",
            markup=False,
        )
