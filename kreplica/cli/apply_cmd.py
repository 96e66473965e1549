"""apply / verify / cancel / elect / throttles, once typer has parsed them. Imported lazily."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kreplica.cli import output
from kreplica.cli.config import SourceSpec
from kreplica.cli.options import Options, OutputFormat
from kreplica.errors import KreplicaError, UsageError, VerificationFailed


@dataclass
class Connection:
    cluster: Any  # kreplica.executor.kafka_cluster.KafkaCluster
    zookeeper: Any = None  # kreplica.sources.zookeeper.ZooKeeperSource when the source is ZK


@contextmanager
def connect(spec: SourceSpec) -> Any:
    """A writable connection to the cluster the source names. A ZooKeeper source reaches the
    brokers through the addresses they registered (with the same client config)."""
    from kreplica.executor.kafka_cluster import KafkaCluster
    from kreplica.executor.offline_configs import OfflineBrokerConfigs
    from kreplica.sources.admin import AdminSource

    if spec.kind == "snapshot" or spec.kind == "none":
        raise UsageError(
            "this command changes or watches a live cluster; pass --bootstrap-server HOST:PORT, "
            "--zookeeper HOST:PORT or --cluster NAME instead of --snapshot"
        )
    zk = None
    bootstrap = spec.bootstrap_server
    try:
        if spec.kind == "zookeeper":
            zk = replace(spec, bootstrap_server=None).open()
        if zk is not None and not bootstrap:
            brokers = [b for b in zk.snapshot([]).brokers if b.alive and b.host and b.port]
            if not brokers:
                raise UsageError(
                    f"ZooKeeper at {spec.zookeeper} lists no live broker with an address; "
                    "pass --bootstrap-server"
                )
            bootstrap = ",".join(f"{b.host}:{b.port}" for b in brokers)
        assert bootstrap is not None
        admin = AdminSource(
            bootstrap, client_config=spec.client_config or None, timeout_s=spec.timeout_s
        )
        cluster = KafkaCluster(admin)
        cluster.offline = OfflineBrokerConfigs(cluster, zk)  # a down broker's throttles
        cluster.zookeeper = zk  # /controller: migration and the controller's age
        connection = Connection(cluster, zk)
        try:
            yield connection
        finally:
            connection.cluster.close()
    finally:
        if zk is not None:
            zk.close()


def _submitter(connection: Connection, via: str) -> Any:
    from kreplica.executor.kafka_cluster import KafkaSubmitter, ZooKeeperSubmitter

    if via == "zookeeper":
        if connection.zookeeper is None:
            raise UsageError("--via zookeeper writes /admin/reassign_partitions: pass --zookeeper")
        return ZooKeeperSubmitter(connection.zookeeper)
    return KafkaSubmitter(connection.cluster)


def apply_options(opts: Options) -> Any:
    from kreplica.executor.options import ApplyOptions
    from kreplica.executor.throttles import parse_rate

    if opts.on_drift not in ("fail", "skip"):
        raise UsageError(f"--on-drift {opts.on_drift!r}: use fail or skip")
    if opts.order not in ("plan", "largest", "smallest"):
        raise UsageError(f"--order {opts.order!r}: use plan, largest or smallest")
    if opts.via not in ("kafka", "zookeeper"):
        raise UsageError(f"--via {opts.via!r}: use kafka or zookeeper")
    for flag, value in (
        ("--max-partitions", opts.max_partitions),
        ("--max-per-broker", opts.max_per_broker),
    ):
        if value is not None and value < 1:
            raise UsageError(f"{flag} {value}: give 1 or more")
    if opts.controller_settle < 0:
        raise UsageError(
            f"--controller-settle {opts.controller_settle:g}: give seconds >= 0 (0: no check)"
        )
    if opts.stall_timeout <= 0:
        raise UsageError(f"--stall-timeout {opts.stall_timeout:g}: give a number of seconds > 0")
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
        if opts.throttle_min is None or opts.throttle_max is None:
            raise UsageError(
                "--pace auto needs --throttle-min RATE (where it starts) and --throttle-max RATE"
            )
        throttle, throttle_max = parse_rate(opts.throttle_min), parse_rate(opts.throttle_max)
        if throttle > throttle_max:
            raise UsageError(
                f"--throttle-min {opts.throttle_min} is above --throttle-max {opts.throttle_max}; "
                "give a floor at or below the ceiling"
            )
        if opts.pace_interval <= 0:
            raise UsageError(f"--pace-interval {opts.pace_interval:g}: give seconds > 0")
    elif opts.throttle_min is not None or opts.throttle_max is not None:
        raise UsageError("--throttle-min and --throttle-max go with --pace auto; add it")
    from kreplica.cli.broker_cmd import parse_size
    from kreplica.executor.window import parse_window, parse_zone

    window = parse_window(opts.window) if opts.window is not None else None
    if window is None and (opts.window_tz is not None or opts.window_floor):
        raise UsageError("--window-tz and --window-floor go with --window HH:MM-HH:MM; add it")
    if opts.window_floor and opts.pace is None:
        raise UsageError(
            "--window-floor drops the throttle to the --pace auto floor; add --pace auto"
        )
    budget = None
    if opts.max_bytes_per_hour is not None:
        budget = parse_size(opts.max_bytes_per_hour, "--max-bytes-per-hour")
        if budget <= 0:
            raise UsageError(f"--max-bytes-per-hour {opts.max_bytes_per_hour}: give more than 0")
    return ApplyOptions(
        window=window,
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
        order=opts.order,
        replica_at_a_time=opts.replica_at_a_time,
        additional=opts.additional,
        on_drift=opts.on_drift,
        allow_under_min_isr=opts.allow_under_min_isr,
        allow_under_replicated=opts.allow_under_replicated,
        controller_settle_s=opts.controller_settle,
        stall_timeout_s=opts.stall_timeout,
        poll_interval_s=float(os.environ.get("KREPLICA_POLL_INTERVAL", "2")),
        resume=opts.resume,
    )


def _console(stderr: bool = False) -> Any:
    from kreplica.render.console import make_console

    return make_console(sys.stderr if stderr else None, no_color=output.STATE.no_color)


def run_apply(opts: Options, spec: SourceSpec, plan_path: Path) -> dict[str, Any]:
    """Apply the plan at `plan_path` (and its plan document) with progress; returns the
    result as the JSON envelope's data."""
    from kreplica.executor.apply import Applier, require_moves
    from kreplica.executor.journal import Journal
    from kreplica.executor.planfile import load_plan_file, plan_siblings
    from kreplica.render.progress import ProgressPrinter
    from kreplica.render.text import format_bytes

    options = apply_options(opts)  # bad flags fail before anything connects
    plan = load_plan_file(plan_path)
    require_moves(plan)  # before connecting: an empty plan is refused with nothing touched
    journal = Journal(plan_siblings(plan_path)["journal"])
    json_mode = opts.output is OutputFormat.json
    printer = ProgressPrinter(_console(stderr=json_mode), json_lines=json_mode)
    try:
        with connect(spec) as connection:
            applier = Applier(
                connection.cluster,
                _submitter(connection, opts.via),
                plan,
                journal,
                options,
                printer,
            )
            result = applier.run()
            _clear_pending(connection.cluster)
    except KeyboardInterrupt:
        printer.close()
        # the one line the CLI prints for Ctrl-C (and the JSON envelope's message)
        output.STATE.interrupt_note = (
            f"interrupted: what was submitted keeps moving, with its throttle; continue with "
            f"`kreplica apply {plan_path} --resume`, or stop it with `kreplica cancel {plan_path}`"
        )
        raise
    finally:
        printer.close()
    data = {
        "plan": str(plan_path),
        "journal": str(journal.path),
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
    }
    if not json_mode:
        out = _console()
        if result.completed_meanwhile:
            out.print(
                f"{len(result.completed_meanwhile)} partition(s) finished their move while no "
                "kreplica was running (journalled as completed)",
                markup=False,
            )
        if result.nothing_to_do:
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
                + f"{result.seconds:.1f} s (journal {journal.path})",
                markup=False,
            )
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
        if result.leaders_off:
            out.print(
                f"{len(result.leaders_off)} partition(s) are led by a replica other than the "
                f"preferred one; `kreplica elect {plan_path}` moves leadership back",
                markup=False,
            )
        if result.skipped:
            out.print(
                f"left out (changed since the plan): {'; '.join(result.skipped)}", markup=False
            )
    return data


def apply(opts: Options, spec: SourceSpec, plan_path: Path) -> None:
    data = run_apply(opts, spec, plan_path)
    if opts.output is OutputFormat.json:
        output.emit_envelope(data)


def verify(opts: Options, spec: SourceSpec, plan_path: Path) -> None:
    from kreplica.executor.apply import verify_plan
    from kreplica.executor.planfile import load_plan_file

    plan = load_plan_file(plan_path)
    with connect(spec) as connection:
        differences = verify_plan(connection.cluster, plan)
    rows = [
        {
            "partition": d.partition,
            "planned": list(d.planned),
            "now": list(d.now) if d.now is not None else None,
            "moving": d.moving,
            "planned_dir": d.planned_dir,
            "now_dir": d.now_dir,
        }
        for d in differences
    ]
    total = len(plan.targets) + len(plan.new_partitions)
    if opts.output is OutputFormat.json:
        errors = (
            [
                {
                    "code": "verification-failed",
                    "message": _verify_line(plan_path, differences, total),
                }
            ]
            if differences
            else []
        )
        output.emit_envelope(
            {"plan": str(plan_path), "partitions": total, "differences": rows}, errors
        )
    else:
        out = _console()
        for d in differences[:20]:
            now = "missing" if d.now is None else str(list(d.now))
            state = " (moving)" if d.moving else ""
            if d.planned_dir is not None:
                now = "not on the broker" if d.now_dir is None else d.now_dir
                out.print(
                    f"{d.partition}: planned in {d.planned_dir}, now in {now}{state}", markup=False
                )
                continue
            out.print(f"{d.partition}: planned {list(d.planned)}, now {now}{state}", markup=False)
        if not differences:
            out.print(
                f"{plan_path}: all {total} partition(s) as planned, nothing in flight", markup=False
            )
    if differences:
        raise VerificationFailed(_verify_line(plan_path, differences, total))


def _verify_line(plan_path: Path, differences: list[Any], total: int) -> str:
    moving = sum(1 for d in differences if d.moving)
    return (
        f"{plan_path}: {len(differences)} of {total} partition(s) not as planned"
        + (f" ({moving} still moving)" if moving else "")
        + "; wait and verify again, or kreplica apply --resume / kreplica cancel"
    )


def cancel(opts: Options, spec: SourceSpec, plan_path: Path, *, force: bool = False) -> None:
    from kreplica.executor.apply import cancel_plan
    from kreplica.executor.journal import Journal
    from kreplica.executor.planfile import load_plan_file, plan_siblings

    plan = load_plan_file(plan_path)
    journal = Journal(plan_siblings(plan_path)["journal"])
    with connect(spec) as connection:
        output.STATE.interrupt_note = (
            f"interrupted: part of the cancel may have been sent; `kreplica cancel {plan_path}` "
            f"again finishes it, `kreplica verify {plan_path}` shows where things are"
        )
        cancelled, running = cancel_plan(
            connection.cluster, plan, journal, _warn_stderr, force=force
        )
        _clear_pending(connection.cluster)
    names = [f"{t}-{p}" for t, p in cancelled]
    if opts.output is OutputFormat.json:
        output.emit_envelope({"plan": str(plan_path), "cancelled": names, "apply_running": running})
    else:
        text = (
            f"cancelled {len(names)} reassignment(s) in flight; they return to their old replicas"
            if names
            else "nothing of this plan was in flight"
        )
        after = (
            "the running apply stops and restores the throttles"
            if running
            else "kreplica's throttles restored"
        )
        _console().print(f"{plan_path}: {text}; {after}", markup=False)


def _warn_stderr(event: dict[str, Any]) -> None:
    """Warnings and the ways throttles came off, for a command without a progress display,
    on stderr."""
    err = _console(stderr=True)
    if event.get("event") == "warning":
        err.print(f"warning: {event['message']}", markup=False)
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


def _clear_pending(cluster: Any, also: Path | None = None) -> None:
    """Throttles left pending by earlier runs (their broker was down) whose broker is back:
    restore them now (journals beside `also` and in the usual folders)."""
    from kreplica.executor.apply import clear_pending_throttles
    from kreplica.executor.journal import Journal

    paths = set(_journals_to_clear([]))
    if also is not None:
        paths.add(also)
    clear_pending_throttles(cluster, [Journal(p) for p in sorted(paths)], _warn_stderr)


def elect(opts: Options, spec: SourceSpec, plan_path: Path | None, topics: list[str]) -> None:
    from kreplica.executor.planfile import load_plan_file

    if plan_path is None and not topics:
        raise UsageError("nothing to elect; pass PLAN.json or --topic NAME")
    with connect(spec) as connection:
        snap = connection.cluster.snapshot(None)
        keys: list[tuple[str, int]] = []
        if plan_path is not None:
            plan = load_plan_file(plan_path)
            keys += sorted({*plan.targets, *plan.new_partitions})
        if topics:
            from kreplica.sources.assemble import select_topics

            names = select_topics([t.name for t in snap.topics], topics)
            keys += [
                (t.name, p.partition) for t in snap.topics if t.name in names for p in t.partitions
            ]
        parts = {(t.name, p.partition): p for t in snap.topics for p in t.partitions}
        off = [
            k for k in dict.fromkeys(keys) if k in parts and parts[k].leader != parts[k].replicas[0]
        ]
        output.STATE.interrupt_note = (
            "interrupted: the election may have been sent; running elect again is safe"
        )
        from kreplica.executor.authz import CLUSTER, Need

        # asked even when every leader is preferred: this command is for writing
        connection.cluster.require([Need("cluster", CLUSTER, "ALTER", "elect leaders")])
        results = connection.cluster.elect_preferred(off)
    failed = {f"{t}-{p}": err for (t, p), err in results.items() if err}
    elected = [f"{t}-{p}" for (t, p), err in results.items() if not err]
    if opts.output is OutputFormat.json:
        output.emit_envelope({"elected": sorted(elected), "failed": failed})
    else:
        out = _console()
        out.print(
            f"preferred leader elected on {len(elected)} partition(s)"
            + ("" if off else " (every leader was on its preferred replica already)"),
            markup=False,
        )
        for name, err in sorted(failed.items()):
            out.print(f"{name}: {err}", style="warning", markup=False)
    if failed:
        raise VerificationFailed(
            f"{len(failed)} partition(s) kept their leader ({', '.join(sorted(failed)[:3])}): "
            "the preferred replica is not in sync or not alive; retry once it is"
        )


def _journals_to_clear(plans: list[Path]) -> list[Path]:
    """The journals of the given plans, else every journal in the current folder and in
    kreplica's state folder (where plans applied without --out live)."""
    from kreplica.executor.planfile import plan_siblings

    if plans:
        return [plan_siblings(p)["journal"] for p in plans]
    folders = [Path.cwd(), state_folder()]
    return sorted(
        {j for folder in folders if folder.is_dir() for j in folder.glob("*.journal.jsonl")}
    )


def state_folder() -> Path:
    """Where plans applied without --out are kept: $KREPLICA_STATE_DIR, else
    $XDG_STATE_HOME/kreplica/plans, else ~/.local/state/kreplica/plans."""
    base = os.environ.get("KREPLICA_STATE_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state"),
        "kreplica",
        "plans",
    )
    return Path(base)


def throttles(
    opts: Options, spec: SourceSpec, *, clear: bool, everything: bool, plans: list[Path]
) -> None:
    """List the replication throttles set on a cluster. --clear restores those kreplica set
    and has not restored (found in the plans' journals), --clear --all removes every one."""
    from kreplica.executor.apply import list_throttles, restore_journal_throttles
    from kreplica.executor.journal import Journal
    from kreplica.executor.throttles import BROKER_KEYS

    unread: list[int] = []
    with connect(spec) as connection:
        cluster = connection.cluster
        snap = cluster.snapshot(None)
        _clear_pending(cluster)  # what earlier runs could not clear, now its broker is back
        known = {b.id for b in snap.brokers} | set(cluster.offline.known_brokers())
        for path in _journals_to_clear(plans):
            state = Journal(path).state()
            known |= {int(n) for k, n in state.throttles_set if k == "broker"}

        def listed() -> list[dict[str, str]]:
            rows, unread[:] = list_throttles(cluster, [t.name for t in snap.topics], known)
            return rows

        rows = listed()
        cleared = 0
        if clear:  # refused before the first config is changed
            from kreplica.executor.apply import _journal_throttles
            from kreplica.executor.authz import throttle_needs

            if everything:
                resources = [(row["kind"], row["name"]) for row in rows]
            else:
                resources = [
                    resource
                    for path in _journals_to_clear(plans)
                    for resource in _journal_throttles(Journal(path).read())[1]
                ]
            resources.append(("broker", "*"))  # asked even when nothing is set
            cluster.require(throttle_needs(resources, "clear throttles"))
        if clear:
            output.STATE.interrupt_note = (
                "interrupted: some throttles may have been cleared; `kreplica throttles "
                "--clear` again finishes it"
            )
        if clear and everything:
            for row in rows:
                cluster.alter_configs(row["kind"], row["name"], {row["config"]: None})
                cleared += 1
            for broker in list(unread):  # cannot be read, may be written (ZooKeeper, controller)
                try:
                    cluster.alter_configs("broker", str(broker), dict.fromkeys(BROKER_KEYS))
                except KreplicaError as exc:
                    _warn_stderr({"event": "warning", "message": str(exc)})
                    continue
                cleared += 1
                _console(stderr=True).print(
                    f"broker {broker} is down: its throttles were removed through "
                    f"{cluster.last_path}",
                    markup=False,
                )
        elif clear:
            for path in _journals_to_clear(plans):
                journal = Journal(path)
                state = journal.state()
                if not state.has_throttles or state.cluster_id not in (None, snap.cluster_id):
                    continue
                with journal.lock():
                    cleared += restore_journal_throttles(cluster, journal, lambda event: None)
        if clear:
            rows = listed()
    if opts.output is OutputFormat.json:
        output.emit_envelope({"throttles": rows, "cleared": cleared, "unread_brokers": unread})
        return
    out = _console()
    if clear:
        out.print(f"cleared {cleared} throttle config(s)", markup=False)
    if not rows:
        where = "on the brokers that could be read" if unread else ""
        out.print(f"no replication throttles are set {where}".strip(), markup=False)
    for row in rows:
        out.print(f"{row['kind']} {row['name']}: {row['config']}={row['value']}", markup=False)
    if unread:
        out.print(
            f"broker(s) {', '.join(map(str, unread))} down: their throttles could not be read "
            "(unread, not none); run this again once they are back",
            markup=False,
        )
