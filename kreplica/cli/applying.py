"""Applying a plan from the command line: the apply flags checked into ApplyOptions, a
connection to the cluster the source names, the apply with its progress display and summary,
and the throttles earlier runs left pending. Shared by `kreplica apply` and every planning
command that applies what it planned; the work is kreplica.executor.facade's."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from kreplica.cli import output
from kreplica.cli.common import (
    console,
    describe_source,
    has_source,
    parse_size,
    source_spec,
    state_folder,
)
from kreplica.cli.config import SourceSpec, config_path, load_clusters, resolve_source, where_set
from kreplica.cli.options import Options, OutputFormat
from kreplica.errors import FLAGS, UsageError, flag_words
from kreplica.executor import facade
from kreplica.executor.facade import Connection
from kreplica.executor.options import VIAS, ApplyOptions, OnDrift, Order, Via

Choice = TypeVar("Choice", bound=str)


def plan_source(opts: Options, plan_path: Path) -> SourceSpec:
    """The cluster a command on a plan file works on: the source given (flags, variables,
    --cluster), else the one the plan's journal recorded (where its apply ran: so the
    `kreplica apply PLAN.json --resume` an interrupted apply prints works as written), else
    the config file's default cluster."""
    if has_source(opts):
        return source_spec(opts)
    journal = facade.journal_path(plan_path)
    recorded = facade.journal_source(plan_path) if journal.exists() else None
    if recorded is None:
        if opts.resume and not journal.exists():
            raise UsageError(
                f"--resume: no journal at {journal}, so nothing to resume; apply without --resume"
            )
        if journal.exists() and not load_clusters(config_path(os.environ), required=False).get(
            "default"
        ):
            raise UsageError(
                f"no cluster source given, and {journal} does not record one (written by an "
                "older kreplica); pass --bootstrap-server HOST:PORT, --zookeeper HOST:PORT or "
                "--cluster NAME"
            )
        return source_spec(opts)  # the default cluster, or the usual "no cluster source" error
    spec = resolve_source(
        cluster=recorded.get("cluster"),
        zookeeper=recorded.get("zookeeper"),
        bootstrap_server=recorded.get("bootstrap_server"),
        command_config=opts.command_config or recorded.get("command_config"),
        timeout_s=opts.timeout,
    )
    if spec.cluster is None:
        spec = dataclasses.replace(spec, origin=f"the journal {journal}")
    # errors name the journal the address came from, not a flag never given
    given_config = "command line" if opts.command_config else spec.origin
    names = where_set(spec, command_config_origin=given_config if spec.command_config else None)
    if spec.cluster is None:
        names[spec.kind] = f"the address in {journal} (or pass {FLAGS[spec.kind]})"
    output.state().flag_names = names

    if opts.output is OutputFormat.table:
        console(stderr=True).print(
            f"cluster: {describe_source(spec)}", markup=False, soft_wrap=True
        )
    return spec


@contextmanager
def connect(spec: SourceSpec) -> Iterator[Connection]:
    """A writable connection to the cluster the source names (kreplica.executor.facade); an
    apply journals the source (SourceSpec.record), for a resume given none."""
    if spec.kind == "snapshot" or spec.kind == "none":
        raise UsageError(
            "this command changes or watches a live cluster; pass --bootstrap-server HOST:PORT, "
            "--zookeeper HOST:PORT or --cluster NAME instead of `snapshot`"
        )
    with facade.connect(
        bootstrap_server=spec.bootstrap_server,
        zookeeper=spec.zookeeper if spec.kind == "zookeeper" else None,
        client_config=spec.client_config or None,
        zk_auth=spec.zk_auth or None,
        timeout_s=spec.timeout_s,
    ) as connection:
        connection.source = spec.record()
        yield connection


def _one_of(value: str, choices: tuple[Choice, ...]) -> Choice | None:
    """`value` as one of `choices` (typed as they are), None when it is none of them."""
    return next((choice for choice in choices if choice == value), None)


def _via(opts: Options, plan_path: Path | None = None) -> Via:
    """--via; not given: kafka, or for --resume the way the interrupted apply submitted (a
    move in /admin/reassign_partitions is waited for, not submitted again through the API)."""
    if opts.via is None:
        recorded = facade.journal_via(plan_path) if opts.resume and plan_path else None
        return "zookeeper" if recorded == "zookeeper" else "kafka"
    via = _one_of(opts.via, VIAS)
    if via is None:
        raise UsageError(f"--via {opts.via!r}: use kafka or zookeeper")
    return via


def apply_options(opts: Options) -> ApplyOptions:
    """The apply flags as ApplyOptions: the flags only the command line has (--pace auto's
    --throttle-min, rates as text) checked here, every other rule by ApplyOptions itself, its
    refusal said in the flags' words."""
    from kreplica.executor.throttles import parse_rate

    _via(opts)
    throttle = parse_rate(opts.throttle) if opts.throttle is not None else None
    throttle_max = None
    if opts.pace is not None:
        if opts.pace != "auto":
            raise UsageError(f"--pace {opts.pace!r}: use auto (or --throttle RATE for a fixed one)")
        if opts.throttle is not None:
            raise UsageError(
                "--pace auto sets the throttle itself: give --throttle-min and --throttle-max "
                "instead of --throttle"
            )
        throttle = parse_rate(opts.throttle_min) if opts.throttle_min is not None else None
        throttle_max = parse_rate(opts.throttle_max) if opts.throttle_max is not None else None
    elif opts.throttle_min is not None or opts.throttle_max is not None:
        raise UsageError("--throttle-min and --throttle-max go with --pace auto; add it")
    from kreplica.executor.window import parse_window, parse_zone

    budget = None
    if opts.max_bytes_per_hour is not None:
        budget = parse_size(opts.max_bytes_per_hour, "--max-bytes-per-hour")
    try:
        return ApplyOptions(
            window=parse_window(opts.window) if opts.window is not None else None,
            window_tz=parse_zone(opts.window_tz),
            window_floor=opts.window_floor,
            max_bytes_per_hour=budget,
            throttle=throttle,
            throttle_max=throttle_max,
            pace=opts.pace is not None,
            pace_interval_s=opts.pace_interval,
            keep_canary=opts.keep_canary,
            max_partitions=opts.max_partitions,
            max_per_broker=opts.max_per_broker,
            order=cast("Order", opts.order),  # ApplyOptions refuses any other value
            replica_at_a_time=opts.replica_at_a_time,
            additional=opts.additional,
            on_drift=cast("OnDrift", opts.on_drift),
            allow_under_min_isr=opts.allow_under_min_isr,
            allow_under_replicated=opts.allow_under_replicated,
            controller_settle_s=opts.controller_settle,
            rate_window_s=opts.rate_window,
            allow_under_write_rate=opts.allow_under_write_rate,
            stall_timeout_s=opts.stall_timeout,
            poll_interval_s=float(os.environ.get("KREPLICA_POLL_INTERVAL", "2")),
            resume=opts.resume,
        )
    except UsageError as exc:
        # under --pace auto the floor, `throttle`, is what --throttle-min gave
        said = {"throttle": "--throttle-min"} if opts.pace is not None else None
        raise UsageError(flag_words(exc.message, said)) from None


def run_apply(
    opts: Options, spec: SourceSpec, plan_path: Path, *, elect_leaders: bool = False
) -> dict[str, Any]:
    """Apply the plan at `plan_path` (and its plan document) with progress; returns the
    result as the JSON envelope's data. `elect_leaders`: a preferred leader election for the
    plan's partitions follows the moves (drain, replace, rebalance); a resume runs it when the
    journal says the apply asked for it."""
    from kreplica.render.progress import ProgressPrinter
    from kreplica.render.text import format_bytes

    options = apply_options(opts)  # bad flags fail before anything connects
    options = dataclasses.replace(options, elect_leaders=elect_leaders)
    if options.pace:  # the floor an error asks to raise is what --throttle-min gave
        output.state().flag_names.setdefault("throttle", "--throttle-min")
    # before connecting: an empty plan is refused with nothing touched
    plan = facade.load_plan_to_apply(plan_path)
    journal_path = plan.paths["journal"]
    json_mode = opts.output is OutputFormat.json
    printer = ProgressPrinter(console(stderr=json_mode), json_lines=json_mode)
    progress = printer if json_mode else notes_once_per_cluster(printer, plan.cluster_id)
    try:
        with connect(spec) as connection:
            result = facade.apply(
                connection,
                plan,
                options,
                progress=progress,
                via=_via(opts, plan_path),
            )
            clear_pending(connection)
    except KeyboardInterrupt:
        printer.close()
        # the one line the CLI prints for Ctrl-C (and the JSON envelope's message)
        output.state().interrupt_note = (
            f"interrupted: what was submitted keeps moving, with its throttle; continue with "
            f"`kreplica apply {plan_path} --resume`, or stop it with `kreplica cancel {plan_path}`"
        )
        raise
    finally:
        printer.close()
    from kreplica.cli import drained

    learnt = drained.after_apply(plan.cluster_id, _report(plan.document), plan_path)
    data = {
        "plan": str(plan_path),
        "journal": str(journal_path),
        "moved": [f"{t}-{p}" for t, p in result.moved],
        "created": [f"{t}-{p}" for t, p in result.created],
        "already_done": [f"{t}-{p}" for t, p in result.already_done],
        "skipped": result.skipped,
        "warnings": result.warnings,
        "waves": result.waves,
        "bytes_total": result.bytes_total,
        "seconds": round(result.seconds, 3),
        "nothing_to_do": result.nothing_to_do,
        "leaders_off_preferred": [f"{t}-{p}" for t, p in result.leaders_off],
        "dir_moved": [f"{t}-{p}@{b}" for t, p, b in result.dir_moved],
        "completed_while_down": [f"{t}-{p}" for t, p in result.completed_meanwhile],
        "pace": result.pace,
        "write_rates": result.write_rates,
    }
    if result.election is not None:
        data["election"] = {
            "elected": result.election.elected,
            "failed": result.election.failed,
        }
    if learnt:
        data["drained_note"] = learnt
    if not json_mode:
        out = console()
        if result.completed_meanwhile:
            out.print(
                f"{len(result.completed_meanwhile)} partition(s) finished their move while no "
                "kreplica was running (journalled as completed)",
                markup=False,
            )
        if result.nothing_to_do and result.skipped:
            out.print(
                f"{plan_path}: nothing applied, what is left of the plan changed since it was made",
                markup=False,
            )
        elif result.nothing_to_do:
            out.print(f"{plan_path}: nothing to do, the plan is applied already", markup=False)
        else:
            out.print(
                f"applied {plan_path}: {len(result.moved)} partition(s) moved in "
                f"{result.waves} wave(s), {len(result.created)} created, "
                + (
                    f"{len(result.dir_moved)} replica(s) moved between log dirs, "
                    if result.dir_moved
                    else ""
                )
                + f"{result.seconds:.1f} s (journal {journal_path})",
                markup=False,
            )
        if learnt:
            out.print(learnt, markup=False)
        if result.pace is not None:
            pace = result.pace
            p99_text = (
                f"canary p99 {pace['canary_p99_ms']:g} ms over {pace['canary_records']} "
                f"record(s) (baseline {pace['baseline_p99_ms']} ms)"
                if pace.get("canary_p99_ms") is not None
                else "no canary figure"
            )
            out.print(
                f"pace auto: {pace['changes']} throttle change(s), last "
                f"{format_bytes(int(pace['final_rate']))}/s (floor "
                f"{format_bytes(int(pace['floor']))}/s, ceiling "
                f"{format_bytes(int(pace['ceiling']))}/s); {p99_text}",
                markup=False,
            )
        if result.leaders_off and result.election is None:  # else the election says it
            out.print(
                f"{len(result.leaders_off)} partition(s) are led by a replica other than the "
                f"preferred one; `kreplica elect {plan_path}` moves leadership back",
                markup=False,
            )
        if result.skipped:
            out.print(
                f"left out (changed since the plan): {'; '.join(result.skipped)}", markup=False
            )
        if result.election is not None:
            elected, failed = result.election.elected, result.election.failed
            out.print(
                f"preferred leader elected on {len(elected)} partition(s)"
                + ("" if elected or failed else " (every leader was on its preferred replica)"),
                markup=False,
            )
            for name, err in sorted(failed.items()):
                # a failed election leaves the apply successful: leadership is not data
                out.print(
                    f"{name}: {err}; retry with `kreplica elect {plan_path}`",
                    style="warning",
                    markup=False,
                )
    return data


_NOTES, _NOTES_KIND = "notes-shown.json", "kreplica_notes"


def notes_once_per_cluster(
    sink: Callable[[Mapping[str, Any]], None], cluster_id: str | None
) -> Callable[[Mapping[str, Any]], None]:
    """`sink`, but a note on what could not be checked before starting (the controller's age:
    the same on every apply) shown the first time on a cluster only; the journal keeps all."""
    from kreplica.cli import statefile
    from kreplica.executor.safestart import UNCHECKED

    def filtered(event: Mapping[str, Any]) -> None:
        message = str(event.get("message") or "")
        if cluster_id and event.get("event") == "note" and message.startswith(UNCHECKED):
            record = statefile.read_record(_NOTES, _NOTES_KIND, "notes shown")
            clusters = record.get("clusters")
            shown = clusters if isinstance(clusters, dict) else {}
            seen = shown.setdefault(cluster_id, [])
            if message in seen:
                return
            seen.append(message)
            statefile.write_record(_NOTES, _NOTES_KIND, {"clusters": shown})
            event = {**event, "message": f"{message} (shown once per cluster)"}
        sink(event)

    return filtered


def _report(document: Mapping[str, Any] | None) -> Mapping[str, Any]:
    report = (document or {}).get("report")
    return report if isinstance(report, Mapping) else {}


def warn_stderr(event: Mapping[str, Any]) -> None:
    """Warnings and the ways throttles came off, for a command without a progress display,
    on stderr."""
    err = console(stderr=True)
    if event.get("event") == "warning":
        err.print(f"warning: {output.cli_words(str(event['message']))}", markup=False)
    if event.get("event") == "throttle-restored":
        for broker, path in sorted((event.get("via") or {}).items()):
            err.print(f"broker {broker} is down: its throttle was cleared through {path}")
        for resource, why in sorted((event.get("pending") or {}).items()):
            err.print(
                f"warning: {resource}: throttle left in place for now ({why}); recorded in the "
                "journal, cleared by `kreplica throttles --clear` or the next command once it "
                "is back",
                markup=False,
            )


def clear_pending(connection: Connection) -> None:
    """Throttles left pending by earlier runs (their broker was down) whose broker is back:
    restore them now (journals in the usual folders)."""
    facade.clear_pending_throttles(connection, journals_to_clear([]), warn_stderr)


def journals_to_clear(plans: list[Path]) -> list[Path]:
    """The journals of the given plans, else every journal in the current folder and in
    kreplica's state folder (where plans applied without --out live)."""
    if plans:
        return [facade.journal_path(p) for p in plans]
    folders = [Path.cwd(), state_folder()]
    return sorted(
        {j for folder in folders if folder.is_dir() for j in folder.glob("*.journal.jsonl")}
    )
