"""drain-dir / balance-dirs, once typer has parsed them: intra-broker moves on JBOD brokers.
Imported lazily by kreplica.cli.app.

The same flow as the other planning commands: read the cluster, plan (kreplica.planner.dirs),
show the per-dir table (or the JSON envelope), write --out PLAN.json (Kafka's reassignment JSON
with `log_dirs`), its rollback and PLAN.kreplica.json, and unless --dry-run apply it after a
confirmation through `kreplica apply` (AlterReplicaLogDirs, the dir throttle, journal)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kreplica.cli.common import (
    describe_source,
    parse_broker_ids,
    parse_headroom,
    read_cluster,
    source_spec,
)
from kreplica.cli.config import SourceSpec
from kreplica.cli.options import Options
from kreplica.cli.present import Presentation, present_and_apply, write_documents
from kreplica.model import ClusterSnapshot


def _headroom(opts: Options) -> Any:
    """--disk-headroom as the planning commands read it (10% when not given)."""
    return parse_headroom(opts.disk_headroom)


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
    from kreplica.planner.dirs import plan_files, replicas_of

    replicas = replicas_of(snap)
    return write_documents(
        out, lambda: plan_files(plan, replicas, cluster_id=snap.cluster_id), overwrite=overwrite
    )


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
    """Through the one show / --out / apply path (kreplica.cli.present)."""
    from kreplica.planner.dirs import report

    source = describe_source(spec)

    def json_data(files: dict[str, Path] | None) -> dict[str, Any]:
        data: dict[str, Any] = {"title": title, "source": source, "cluster_id": snap.cluster_id}
        data.update(report(plan))
        data["files"] = {k: str(v) for k, v in files.items()} if files else None
        return data

    def view(out: Any) -> None:
        for line in _lines(plan, title, source, opts.limit):
            out.print(line, markup=False, soft_wrap=True)

    def next_steps(out: Any, files: dict[str, Path] | None) -> None:
        if files:
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
        elif plan.moves:
            out.print()
            out.print(
                "add --out PLAN.json to write Kafka's reassignment JSON, its rollback and the "
                "kreplica plan document",
                markup=False,
            )

    present_and_apply(
        opts,
        spec,
        Presentation(
            title=title,
            has_changes=bool(plan.moves),
            cluster_id=snap.cluster_id,
            live_sources="--bootstrap-server",
            write=lambda out, overwrite: _write(plan, snap, out, overwrite=overwrite),
            default_name=lambda: (
                f"{snap.cluster_id or 'cluster'}-{plan.command}-{snap.fingerprint()}.json"
            ),
            json_data=json_data,
            view=view,
            next_steps=next_steps,
        ),
    )
