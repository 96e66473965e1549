"""What each command does, once typer has parsed it. Imported lazily by kreplica.cli.app."""

from __future__ import annotations

import gc
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kreplica.cli import output
from kreplica.cli.config import SourceSpec, resolve_source
from kreplica.cli.options import Options, OutputFormat, parse_headroom, parse_log_dirs_mode
from kreplica.errors import UsageError
from kreplica.model import ClusterSnapshot, Plan
from kreplica.userfiles import decode_json, read_user_file

# --- shared steps ------------------------------------------------------------------------


def source_spec(opts: Options) -> SourceSpec:
    import os

    from kreplica.cli.config import where_set

    spec = resolve_source(
        snapshot=opts.snapshot,
        zookeeper=opts.zookeeper,
        bootstrap_server=opts.bootstrap_server,
        command_config=opts.command_config,
        cluster=opts.cluster,
        timeout_s=opts.timeout,
    )
    command_config_origin = (
        "command line"
        if opts.command_config
        else "KREPLICA_COMMAND_CONFIG"
        if os.environ.get("KREPLICA_COMMAND_CONFIG")
        else None
    )
    # errors name the cluster entry or variable the source came from, not a flag never given
    output.STATE.flag_names = where_set(spec, command_config_origin=command_config_origin)
    return spec


def read_cluster(
    spec: SourceSpec,
    topics: Sequence[str] | None = None,
    *,
    columnar: bool = False,
    sizes: bool = True,
) -> ClusterSnapshot:
    """All topics by default: planning balances against the whole cluster's load.
    `columnar`: a snapshot file is read into columns (kreplica/columns.py) for the array
    planner; the snapshot's objects are built only if something else reads them.
    sizes=False: no partition sizes, replica dirs or disk figures (no DescribeLogDirs)."""
    if columnar and sizes and spec.kind == "snapshot" and not topics and spec.snapshot:
        from kreplica.sources.snapshot import load_snapshot_columnar

        snap: ClusterSnapshot = load_snapshot_columnar(spec.snapshot)
        gc.freeze()
        return snap
    source = spec.open(read_sizes=sizes)
    try:
        snap = source.snapshot(list(topics) if topics else None)
    finally:
        source.close()
    # The snapshot lives as long as this process and holds no cycles: keep the cyclic
    # collector from rescanning its objects on every later pass (see kreplica/gcpause.py;
    # planning a million partitions spent seconds there).
    gc.freeze()
    return snap


def require_topics(snap: ClusterSnapshot, names: Sequence[str]) -> None:
    """Unknown names fail before planning, all of them in one message."""
    from kreplica.sources.assemble import select_topics

    select_topics(topic_list(snap), names)


def topic_list(snap: ClusterSnapshot) -> list[str]:
    """The snapshot's topic names, in order (a ColumnarSnapshot's without building topics)."""
    names = getattr(snap, "topic_names", None)
    return list(names()) if names is not None else [t.name for t in snap.topics]


def describe_source(spec: SourceSpec) -> str:
    names = {"snapshot": "snapshot", "zookeeper": "zookeeper", "bootstrap_server": "bootstrap"}
    text = f"{names.get(spec.kind, spec.kind)} {spec.address}"
    return text if spec.origin == "command line" else f"{text} (from {spec.origin})"


def parse_broker_ids(text: str | None, flag: str) -> frozenset[int] | None:
    """'1,2,5-8' -> {1, 2, 5, 6, 7, 8}."""
    if text is None:
        return None
    ids: set[int] = set()
    for item in text.split(","):
        item = item.strip()
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", item)
        if not match:
            raise UsageError(f"{flag}: {item!r} is not a broker id; write ids like 1,2,5-8")
        low = int(match.group(1))
        high = int(match.group(2) or low)
        if high < low:
            raise UsageError(f"{flag}: range {item!r} runs backwards; write it as {high}-{low}")
        ids.update(range(low, high + 1))
    return frozenset(ids)


def console(file: Any = None) -> Any:
    from kreplica.render.console import make_console

    return make_console(file, no_color=output.STATE.no_color)


def print_json_data(data: Any, errors: list[dict[str, str]] | None = None) -> None:
    output.emit_envelope(data, errors)


# --- plan commands -------------------------------------------------------------------------


def rf_change(opts: Options, *, topics: list[str], rf: int, direction: str) -> None:
    """expand / shrink / set-rf: the RF is absolute; expand never lowers, shrink never raises."""
    if rf < 1:
        raise UsageError(f"--rf {rf} is not a replication factor; use 1 or more")
    spec = source_spec(opts)
    snap = read_cluster(spec, columnar=True, sizes=not opts.no_sizes)
    require_topics(snap, topics)
    currents: dict[str, int] = {}
    for name in topics:
        current = currents[name] = snap.topic(name).replication_factor
        if direction == "expand" and rf < current:
            raise UsageError(
                f"expand raises RF, but {name} has RF {current} and --rf is {rf}; "
                f"use `kreplica shrink --topic {name} --rf {rf}`"
            )
        if direction == "shrink" and rf > current:
            raise UsageError(
                f"shrink lowers RF, but {name} has RF {current} and --rf is {rf}; "
                f"use `kreplica expand --topic {name} --rf {rf}`"
            )
    from kreplica.planner import TopicRequest

    requests = [TopicRequest(topic=name, rf=rf) for name in dict.fromkeys(topics)]
    verb = {"expand": "expand", "shrink": "shrink", "any": "set RF of"}[direction]
    title = f"{verb} " + ", ".join(f"{n} (RF {c} → {rf})" for n, c in currents.items())
    _plan_and_show(opts, spec, snap, requests, title)


def topics_pattern(regex: str | None) -> re.Pattern[str] | None:
    if regex is None:
        return None
    try:
        return re.compile(regex)
    except re.error as exc:
        raise UsageError(f"--topics {regex!r} is not a valid regex ({exc}); fix it") from None


def topic_names(
    snap: ClusterSnapshot, topics: Sequence[str], pattern: re.Pattern[str] | None
) -> list[str]:
    """--topic names (all must exist) then the topics --topics REGEX matches as a whole."""
    names = list(dict.fromkeys(topics))
    require_topics(snap, names)
    if pattern is not None:
        matched = [name for name in topic_list(snap) if pattern.fullmatch(name)]
        if not matched:
            from kreplica.errors import UnknownTopicError

            raise UnknownTopicError(
                f"--topics {pattern.pattern!r} matches no topic in this cluster; "
                "the regex must match the whole name (e.g. 'orders.*')"
            )
        names += [m for m in matched if m not in names]
    return names


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
    from kreplica.planner import PlanOptions, make_plan

    plan_options = PlanOptions(
        strategy=opts.strategy,
        brokers=parse_broker_ids(opts.brokers, "--brokers"),
        exclude_brokers=parse_broker_ids(opts.exclude_brokers, "--exclude-brokers") or frozenset(),
        seed=opts.seed,
        force=opts.force,
        replace_dead=opts.replace_dead,
        skip_in_flight=opts.skip_in_flight,
        disk_headroom=parse_headroom(opts.disk_headroom),
        log_dirs=parse_log_dirs_mode(opts.log_dirs),
    )
    plan = make_plan(snap, requests, plan_options)
    if opts.no_sizes and spec.kind != "snapshot":  # the report says why it has no bytes
        plan = _sizes_not_read(plan)
    impact = None
    if plan.new_partitions:  # keyed producers and consumer groups see the new partitions
        from kreplica.cli.impact_cmd import plan_client_impact

        impact = plan_client_impact(plan, snap, spec, keys_file=keys_file, sample=sample)
    show_plan(opts, spec, snap, plan, title, impact=impact)


def _sizes_not_read(plan: Plan) -> Plan:
    """The plan's report marked `sizes_read: false`, its disk check unchecked for that reason."""
    import dataclasses
    from collections.abc import Mapping

    report: dict[str, Any] = {**plan.report, "sizes_read": False}
    disk = report.get("disk")
    if isinstance(disk, Mapping) and disk.get("unchecked"):
        report["disk"] = {**disk, "unchecked": "--no-sizes: no disk sizes read"}
    return dataclasses.replace(plan, report=report)


def show_plan(
    opts: Options,
    spec: SourceSpec,
    snap: ClusterSnapshot,
    plan: Plan,
    title: str,
    after_apply: Callable[[Path, dict[str, Any]], dict[str, Any] | None] | None = None,
    impact: dict[str, Any] | None = None,
) -> None:
    """Show a plan, write --out, and apply it unless --dry-run (after a confirmation).
    `after_apply(plan_path, apply_result)` runs once the apply finished (e.g. an election);
    what it returns joins the JSON envelope as `after_apply`."""
    applying = not opts.dry_run and bool(plan.changes)
    if applying:
        from kreplica.cli.apply_cmd import apply_options

        apply_options(opts)  # bad apply flags fail before the plan is shown or written
        if spec.kind == "snapshot":
            raise UsageError(
                "applying needs a live cluster: plan from --bootstrap-server or --zookeeper, "
                "or add --dry-run to only show the plan"
            )
        if not opts.yes and not interactive():
            raise UsageError(
                "applying a plan needs a confirmation: run it on a terminal, pass --yes, or "
                "add --dry-run to only show the plan"
            )
    out_path = opts.out
    files = write_plan_files(plan, snap, out_path, overwrite=opts.force_out) if out_path else None
    if opts.output is OutputFormat.json:
        data = plan_data(plan, snap, title=title, source=describe_source(spec), files=files)
        if impact is not None:
            data["impact"] = impact
    elif opts.output is OutputFormat.markdown:
        from kreplica.render.markdown import plan_markdown

        sys.stdout.write(
            plan_markdown(
                plan,
                snap,
                title=title,
                source=describe_source(spec),
                runbook=runbook(plan, snap, opts, spec),
                limit=opts.limit,
                impact=impact,
            )
        )
    else:
        from rich.text import Text

        from kreplica.render.diff import plan_view

        out = console()
        out.print(
            plan_view(
                plan,
                snap,
                title=title,
                source=describe_source(spec),
                limit=opts.limit,
                impact=impact,
            )
        )
        if files:
            out.print()
            out.print("wrote " + ", ".join(str(p) for p in files.values()), markup=False)
        if plan.changes and files and not applying:
            out.print()
            for label, command in runbook(plan, snap, opts, spec):
                if label:
                    out.print(Text(f"# {label}", style="muted"), soft_wrap=True)
                out.print(command, soft_wrap=True, markup=False)
        elif plan.changes and not applying:
            out.print()
            out.print(
                "[muted]add --out PLAN.json to write Kafka's reassignment JSON, its rollback "
                "and the kreplica plan document[/muted]"
            )
    if applying:
        if opts.output is OutputFormat.table and not opts.yes:
            import typer

            target = plan.cluster_id or describe_source(spec)
            if not typer.confirm(f"Apply this plan to cluster {target}?", default=False):
                console().print("Not applied; nothing was changed.")
                return
        if files is None:
            out_path = default_plan_path(plan)
            files = write_plan_files(plan, snap, out_path)
            if opts.output is not OutputFormat.json:
                console().print("wrote " + ", ".join(str(p) for p in files.values()), markup=False)
        from kreplica.cli.apply_cmd import run_apply

        assert out_path is not None
        result = run_apply(opts, spec, out_path)
        extra = after_apply(out_path, result) if after_apply is not None else None
        if opts.output is OutputFormat.json:
            data["files"] = {k: str(v) for k, v in files.items()}
            data["apply"] = result
            if extra is not None:
                data["after_apply"] = extra
    if opts.output is OutputFormat.json:
        print_json_data(data)


def default_plan_path(plan: Plan) -> Path:
    """Where a plan applied without --out is kept, its journal beside it (for --resume)."""
    from kreplica.cli.apply_cmd import state_folder

    folder = state_folder()
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{plan.cluster_id or 'cluster'}-{plan.snapshot_fingerprint}.json"


def interactive() -> bool:
    """Ask before applying only when a person is at the keyboard."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def plan_data(
    plan: Plan,
    snap: ClusterSnapshot,
    *,
    title: str,
    source: str,
    files: dict[str, Path] | None,
) -> dict[str, Any]:
    from kreplica.planner.serialize import (
        findings_json,
        new_partitions_list,
        reassignment_json,
        rollback_json,
    )

    return {
        "title": title,
        "source": source,
        "cluster_id": plan.cluster_id,
        "snapshot_fingerprint": plan.snapshot_fingerprint,
        "strategy": plan.strategy,
        "reassignment": reassignment_json(plan, lazy=True),
        "new_partitions": new_partitions_list(plan),
        "rollback": rollback_json(plan, lazy=True),
        "report": dict(plan.report),
        "findings": findings_json(plan.findings),
        "files": {k: str(v) for k, v in files.items()} if files else None,
    }


def sibling_paths(out: Path) -> dict[str, Path]:
    """PLAN.json and the files written beside it (the journal comes later, from apply)."""
    from kreplica.executor.planfile import plan_siblings

    paths = plan_siblings(out)
    del paths["journal"]
    return paths


def write_plan_files(
    plan: Plan, snap: ClusterSnapshot, out: Path, *, overwrite: bool = True
) -> dict[str, Path]:
    """PLAN.json (Kafka's format), PLAN.rollback.json and PLAN.kreplica.json beside it.
    Without `overwrite`, existing plan files (or an old plan's journal) are a usage error."""
    from kreplica.planner.serialize import plan_files

    return write_documents(out, lambda: plan_files(plan, snap, lazy=True), overwrite=overwrite)


def write_documents(
    out: Path, documents: Callable[[], dict[str, Any]], *, overwrite: bool
) -> dict[str, Path]:
    """Write the plan files at `out` (`documents()` gives them by sibling key) once it is safe:
    no existing plan files unless `overwrite`, never over an apply that did not finish, and
    into a folder that exists."""
    from kreplica.executor.planfile import plan_siblings

    paths = sibling_paths(out)
    journal = plan_siblings(out)["journal"]
    existing = [p for p in (*paths.values(), journal) if p.exists()]
    if existing and not overwrite:
        names = ", ".join(str(p) for p in existing)
        raise UsageError(
            f"--out {str(out)!r}: {names} exist(s) already; pass --force-out to overwrite, or "
            "choose another name"
        )
    if journal.exists():
        from kreplica.executor.journal import Journal

        state = Journal(journal).state()
        if not (state.finished or state.cancelled):
            raise UsageError(
                f"--out {str(out)!r}: {journal} shows an apply of the plan there that did not "
                f"finish; continue it with `kreplica apply {out} --resume` or stop it with "
                f"`kreplica cancel {out}`, or choose another name"
            )
        journal.unlink()  # a finished apply's journal belongs to the plan being overwritten
    if not out.parent.exists():
        raise UsageError(
            f"--out {str(out)!r}: folder {str(out.parent)!r} does not exist; create it"
        )
    contents = documents()
    for key, path in paths.items():
        try:
            output.write_file(path, contents[key])
        except OSError as exc:
            raise UsageError(f"cannot write {str(path)!r} ({exc.strerror}); check --out") from None
    return paths


def runbook(
    plan: Plan, snap: ClusterSnapshot, opts: Options, spec: SourceSpec
) -> list[tuple[str, str]]:
    """The exact commands that apply, verify and roll back this plan with Kafka's own tools."""
    from kreplica.render.text import runbook_commands

    return runbook_commands(
        plan,
        snap,
        bootstrap=spec.bootstrap_server or "BROKER:9092",
        command_config=opts.command_config,
        out=opts.out,
    )


# --- explain, check, snapshot ---------------------------------------------------------------


def explain(opts: Options, *, topics: list[str]) -> None:
    from kreplica.planner import explain_topic

    spec = source_spec(opts)
    wanted = list(dict.fromkeys(topics))
    # only what is asked for, and no sizes (an explanation shows none): cheap on a large cluster
    snap = read_cluster(spec, wanted, sizes=False)
    names = wanted or [t.name for t in snap.topics]
    results = [explain_topic(snap, name) for name in names]
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
    spec = source_spec(opts)
    snap = read_cluster(spec)
    findings = check_reassignment(snap, data)
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


def snapshot(opts: Options, *, out: Path | None, topics: list[str]) -> None:
    from kreplica.sources.snapshot import dump_snapshot, snapshot_to_dict

    spec = source_spec(opts)
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
