"""drain-dir / balance-dirs, once typer has parsed them: intra-broker moves on JBOD brokers.
Imported lazily by kreplica.cli.app.

The same flow as the other planning commands: read the cluster, plan (kreplica.planner.dirs),
show the per-dir table (or the JSON envelope), write --out PLAN.json (Kafka's reassignment JSON
with `log_dirs`), its rollback and PLAN.kreplica.json, and unless --dry-run apply it after a
confirmation through `kreplica apply` (AlterReplicaLogDirs, the dir throttle, journal)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kreplica.cli.commands import (
    console,
    describe_source,
    interactive,
    parse_broker_ids,
    print_json_data,
    read_cluster,
    source_spec,
    write_documents,
)
from kreplica.cli.config import SourceSpec
from kreplica.cli.options import Options, OutputFormat
from kreplica.errors import UsageError
from kreplica.model import ClusterSnapshot


def _headroom(opts: Options) -> Any:
    """--disk-headroom as the planning commands read it (kreplica.cli.options.parse_headroom),
    or 10% when this build has no such option."""
    from kreplica.cli import options as cli_options
    from kreplica.planner.dirs import DEFAULT_HEADROOM

    parse = getattr(cli_options, "parse_headroom", None)
    if parse is None:
        return DEFAULT_HEADROOM
    return parse(getattr(opts, "disk_headroom", None))


def drain_dir(opts: Options, *, broker: int, path: str) -> None:
    from kreplica.planner.dirs import drain_dir as plan_drain

    spec = source_spec(opts)
    snap = read_cluster(spec)
    path = path.rstrip("/") or "/"
    plan = plan_drain(snap, broker=broker, path=path, headroom=_headroom(opts))
    _show(opts, spec, snap, plan, f"drain log dir {path} of broker {broker}")


def balance_dirs(opts: Options, *, brokers: str | None) -> None:
    from kreplica.planner.dirs import balance_dirs as plan_balance

    ids = parse_broker_ids(brokers, "--brokers")
    spec = source_spec(opts)
    snap = read_cluster(spec)
    plan = plan_balance(snap, brokers=ids, headroom=_headroom(opts))
    scope = "every broker" if ids is None else f"broker(s) {', '.join(map(str, sorted(ids)))}"
    _show(opts, spec, snap, plan, f"balance the log dirs of {scope}")


def _write(plan: Any, snap: ClusterSnapshot, out: Path, *, overwrite: bool) -> dict[str, Path]:
    from kreplica.planner.dirs import plan_document, reassignment_json, replicas_of, rollback_json

    replicas = replicas_of(snap)
    return write_documents(
        out,
        lambda: {
            "reassignment": reassignment_json(plan, replicas),
            "rollback": rollback_json(plan, replicas),
            "plan_document": plan_document(plan, replicas, cluster_id=snap.cluster_id),
        },
        overwrite=overwrite,
    )


def _default_path(plan: Any, snap: ClusterSnapshot) -> Path:
    from kreplica.cli.apply_cmd import state_folder

    folder = state_folder()
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{snap.cluster_id or 'cluster'}-{plan.command}-{snap.fingerprint()}.json"


def _size(n: int | None) -> str:
    from kreplica.render.text import format_bytes

    return "?" if n is None else format_bytes(n)


def _lines(plan: Any, title: str, source: str, limit: int) -> list[str]:
    # drain-dir must move every byte of the dir (a lower bound); balance-dirs moves at most the
    # excess over the targets (a bound from above), so the two are worded apart.
    bound = (
        f"lower bound {_size(plan.lower_bound_bytes)}"
        if plan.command == "drain-dir"
        else f"at most the excess over the targets, {_size(plan.lower_bound_bytes)}"
    )
    lines = [
        f"{title}  ({source})",
        f"{len(plan.moves)} replica move(s) between log dirs, {_size(plan.bytes_moved)} "
        f"({bound}); headroom {plan.headroom}",
        "",
        f"{'broker':<7}{'log dir':<44}{'replicas':>11}{'kafka bytes':>24}"
        f"{'usable now':>12}{'usable after':>14}",
    ]
    for r in plan.rows:
        replicas = f"{r.replicas_before}->{r.replicas_after}"
        kafka = f"{_size(r.bytes_before)}->{_size(r.bytes_after)}"
        flag = "  UNDER HEADROOM" if r.under_headroom else ""
        lines.append(
            f"{r.broker:<7}{r.path:<44}{replicas:>11}{kafka:>24}"
            f"{_size(r.usable_before):>12}{_size(r.usable_after):>14}{flag}"
        )
    if plan.moves:
        lines += ["", "moves (topic-partition, broker: from -> to, size)"]
        for m in plan.moves[:limit]:
            lines.append(
                f"  {m.name}, broker {m.broker}: {m.source} -> {m.target}, {_size(m.size_bytes)}"
            )
        if len(plan.moves) > limit:
            lines.append(f"  ... and {len(plan.moves) - limit} more (--limit)")
    lines += [f"warning: {w}" for w in plan.warnings]
    lines += ["", f"guarantee: {plan.guarantee}"]
    return lines


def _show(opts: Options, spec: SourceSpec, snap: ClusterSnapshot, plan: Any, title: str) -> None:
    """Show, write --out, and apply unless --dry-run (after a confirmation): show_plan's flow."""
    from kreplica.planner.dirs import report

    applying = not opts.dry_run and bool(plan.moves)
    if applying:
        from kreplica.cli.apply_cmd import apply_options

        apply_options(opts)
        if spec.kind == "snapshot":
            raise UsageError(
                "applying needs a live cluster: plan from --bootstrap-server, or add --dry-run "
                "to only show the plan"
            )
        if not opts.yes and not interactive():
            raise UsageError(
                "applying a plan needs a confirmation: run it on a terminal, pass --yes, or "
                "add --dry-run to only show the plan"
            )
    files = _write(plan, snap, opts.out, overwrite=opts.force_out) if opts.out else None
    data: dict[str, Any] = {}
    if opts.output is OutputFormat.json:
        data = {"title": title, "source": describe_source(spec), "cluster_id": snap.cluster_id}
        data.update(report(plan))
        data["files"] = {k: str(v) for k, v in files.items()} if files else None
    else:
        out = console()
        for line in _lines(plan, title, describe_source(spec), opts.limit):
            out.print(line, markup=False, soft_wrap=True)
        if files:
            out.print()
            out.print("wrote " + ", ".join(str(p) for p in files.values()), markup=False)
            if not applying:
                plan_path = files["reassignment"]
                out.print()
                out.print("# apply it (dir throttle: --throttle RATE)", markup=False)
                out.print(f"kreplica apply {plan_path} --throttle 50MB/s", markup=False)
                out.print("# or with Kafka's own tool", markup=False)
                out.print(
                    f"kafka-reassign-partitions --bootstrap-server HOST:PORT --execute "
                    f"--reassignment-json-file {plan_path} "
                    "--replica-alter-log-dirs-throttle 50000000",
                    markup=False,
                )
        elif plan.moves and not applying:
            out.print()
            out.print(
                "add --out PLAN.json to write Kafka's reassignment JSON, its rollback and the "
                "kreplica plan document",
                markup=False,
            )
    if applying:
        if opts.output is OutputFormat.table and not opts.yes:
            import typer

            target = snap.cluster_id or describe_source(spec)
            if not typer.confirm(f"Apply this plan to cluster {target}?", default=False):
                console().print("Not applied; nothing was changed.")
                return
        out_path = opts.out
        if files is None:
            out_path = _default_path(plan, snap)
            files = _write(plan, snap, out_path, overwrite=True)
            if opts.output is not OutputFormat.json:
                console().print("wrote " + ", ".join(str(p) for p in files.values()), markup=False)
        from kreplica.cli.apply_cmd import run_apply

        assert out_path is not None
        result = run_apply(opts, spec, out_path)
        if opts.output is OutputFormat.json:
            data["files"] = {k: str(v) for k, v in files.items()}
            data["apply"] = result
    if opts.output is OutputFormat.json:
        print_json_data(data)
