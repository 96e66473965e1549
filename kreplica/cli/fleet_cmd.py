"""`kreplica fleet collect|audit|plan|synth`: many clusters at once. The Spark job
(kreplica.fleet.job) is imported only when audit or plan runs, so `kreplica --help` and every
other command never load pyspark."""

# No `from __future__ import annotations`: typer reads these annotations at runtime.

import enum
import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from kreplica.cli import output
from kreplica.errors import PartialResult, SourceError, UsageError


class Output(enum.StrEnum):
    table = "table"
    json = "json"


fleet_app = typer.Typer(
    name="fleet",
    help="Audit and plan a whole fleet of clusters from their snapshots, on Spark "
    "(pip install 'kreplica[fleet]'; Java 17+).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

OutputOpt = Annotated[
    Output, typer.Option("--output", help="table for people, json for scripts (one envelope).")
]
InputOpt = Annotated[
    str,
    typer.Option(
        "--input",
        metavar="PATH",
        help="Snapshot files: a folder, a glob, any URI Spark reads (file://, s3a://, "
        "hdfs://), or a Parquet dataset of snapshots.",
    ),
]
# A str, not a Path: typer's Path would turn file:///x into file:/x under the working folder.
OutOpt = Annotated[
    str,
    typer.Option(
        "--out",
        metavar="DIR",
        help="Folder for results: a path, or a URI (file://, hdfs://, s3a://: the latter need "
        "that file system's Hadoop jars).",
    ),
]
LocalOutOpt = Annotated[str, typer.Option("--out", metavar="DIR", help="Local folder.")]
PolicyOpt = Annotated[
    Path | None,
    typer.Option("--policy", metavar="FILE", help="Policy file (TOML; see docs/fleet.md)."),
]
RfOpt = Annotated[
    int | None,
    typer.Option("--rf", metavar="N", help="Target RF for every topic (over the policy)."),
]
MinIsrOpt = Annotated[
    int | None,
    typer.Option("--min-insync", metavar="N", help="Target min.insync.replicas for every topic."),
]
MasterOpt = Annotated[
    str,
    typer.Option("--master", metavar="URL", help="Spark master (local[*]: embedded Spark)."),
]


def _start(command: str, fmt: Output) -> None:
    run = output.state()
    run.command = f"fleet {command}"
    run.output = fmt.value


def _emit(
    command: str, data: Any, errors: list[dict[str, str]] | None = None, status: str = ""
) -> None:
    sys.stdout.write(output.dumps(output.envelope(f"fleet {command}", data, errors, status=status)))
    sys.stdout.flush()
    output.state().envelope_sent = True


def _say(fmt: Output) -> Any:
    started = time.monotonic()

    def say(text: str) -> None:
        sys.stderr.write(f"[{time.monotonic() - started:6.1f}s] {text}\n")
        sys.stderr.flush()

    return say


def _spark(master: str, say: Any, input_path: str) -> Any:
    from kreplica.fleet.job import build_session
    from kreplica.fleet.preflight import local_input_bytes

    say(f"starting Spark ({master})")
    return build_session(master, input_bytes=local_input_bytes(input_path))


def _strip(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "markdown"}


@fleet_app.command()
def audit(
    input_path: InputOpt,
    out: OutOpt,
    policy: PolicyOpt = None,
    rf: RfOpt = None,
    min_insync: MinIsrOpt = None,
    master: MasterOpt = "local[*]",
    worst: Annotated[
        int, typer.Option("--worst", min=0, help="Chart this many worst clusters.")
    ] = 5,
    fmt: OutputOpt = Output.table,
) -> None:
    """Audit every cluster: findings (Parquet, by cluster), summaries and charts in DIR.

    Checks: RF below policy, RF <= min.insync.replicas, min.insync below policy, rack
    violations, under-replicated and offline partitions, leaders off the preferred replica,
    layouts that are not Kafka's default, replicas on dead or drained brokers, per-broker skew,
    replicas per broker above the policy's cap.
    """
    _start("audit", fmt)
    from kreplica.fleet.job import load_fleet_policy, preflight, run_audit

    pol = load_fleet_policy(str(policy) if policy else None, rf=rf, min_insync=min_insync)
    out_dir = preflight(master, out)
    say = _say(fmt)
    spark = _spark(master, say, input_path)
    _report("audit", fmt, run_audit(spark, input_path, out_dir, pol, worst=worst, progress=say))


def _report(command: str, fmt: Output, doc: dict[str, Any]) -> None:
    """The job's summary: the JSON envelope, or its markdown; then exit 9 (one line) when
    part of the input was skipped or a cluster could not be planned, so cron notices."""
    from kreplica.fleet.job import partial_message, shortfalls

    errors = shortfalls(doc)
    if fmt is Output.json:
        _emit(command, _strip(doc), errors, status="partial" if errors else "")
    else:
        sys.stdout.write(doc["markdown"])
    if errors:
        raise PartialResult(partial_message(doc))


@fleet_app.command()
def plan(
    input_path: InputOpt,
    out: OutOpt,
    policy: PolicyOpt = None,
    rf: RfOpt = None,
    min_insync: MinIsrOpt = None,
    master: MasterOpt = "local[*]",
    force: Annotated[
        bool, typer.Option("--force", help="Allow an RF at or below min.insync.replicas.")
    ] = False,
    skip_in_flight: Annotated[
        bool, typer.Option("--skip-in-flight", help="Leave partitions being moved out.")
    ] = False,
    replace_dead: Annotated[
        bool,
        typer.Option("--replace-dead", help="Put live brokers in place of dead ones it changes."),
    ] = False,
    fmt: OutputOpt = Output.table,
) -> None:
    """Plan every cluster: DIR/plans/<cluster_id>/reassignment.json (Kafka's JSON) and
    plan.json (the kreplica plan document), plus a fleet summary against lower bounds.

    Per cluster the plan is `kreplica plan --snapshot F --topics '.*' --rf N`'s (with a policy:
    each topic's target RF; racks repaired where the policy asks for racks). A cluster the
    planner refuses is reported in the summary; the others are planned.
    """
    _start("plan", fmt)
    from kreplica.fleet.adapter import PlanSettings
    from kreplica.fleet.job import load_fleet_policy, preflight, run_plan

    pol = load_fleet_policy(str(policy) if policy else None, rf=rf, min_insync=min_insync)
    if pol.empty:
        raise UsageError("nothing to plan: give --rf N or a --policy file with rf targets")
    out_dir = preflight(master, out)
    say = _say(fmt)
    spark = _spark(master, say, input_path)
    settings = PlanSettings(force=force, skip_in_flight=skip_in_flight, replace_dead=replace_dead)
    _report("plan", fmt, run_plan(spark, input_path, out_dir, pol, settings=settings, progress=say))


@fleet_app.command()
def synth(
    out: LocalOutOpt,
    clusters: Annotated[int, typer.Option("--clusters", min=1, help="Number of clusters.")] = 10,
    partitions: Annotated[
        int, typer.Option("--partitions", min=1, help="Partitions over the whole fleet.")
    ] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Same seed, same fleet.")] = 0,
    fmt: OutputOpt = Output.table,
) -> None:
    """Write a synthetic fleet: DIR/<cluster_id>.json snapshots with realistic brokers, racks,
    RF mix, skewed sizes, and Kafka-placed, grown and hand-made layouts."""
    _start("synth", fmt)
    from kreplica.fleet.preflight import local_out
    from kreplica.fleet.synth import write_fleet

    folder = local_out(out)
    paths = write_fleet(folder, clusters, partitions, seed)
    data = {"out": out, "clusters": len(paths), "partitions": max(partitions, clusters)}
    if fmt is Output.json:
        _emit("synth", data)
    else:
        sys.stdout.write(
            f"wrote {len(paths)} snapshots ({data['partitions']} partitions) to "
            f"{os.path.normpath(out)}\n"
        )


@fleet_app.command()
def collect(
    out: LocalOutOpt,
    cluster: Annotated[
        list[str] | None,
        typer.Option(
            "--cluster",
            metavar="NAME",
            help="A cluster of the config file (repeatable; default: all of them).",
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", metavar="SECONDS", help="Give up on one cluster after this."),
    ] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Clusters read at once.")] = 8,
    fmt: OutputOpt = Output.table,
) -> None:
    """Snapshot clusters of the config file into DIR/<cluster_id>.json, several at once.

    A cluster that cannot be read is reported and skipped; the others still land: exit 9
    when some could not be read, 3 when none could. Two entries for the same cluster are a
    usage error (exit 2): the cluster's file is written once, from the first.
    """
    _start("collect", fmt)
    from kreplica.cli.config import config_path, load_clusters, resolve_source
    from kreplica.fleet.collect import Target
    from kreplica.fleet.collect import collect as run_collect

    path = config_path(os.environ)
    data = load_clusters(path, required=True)
    known = sorted(data.get("clusters", {}))
    names = list(dict.fromkeys(cluster or known))
    if not names:
        raise UsageError(f"no clusters in {str(path)!r}; add [clusters.NAME] tables")
    targets = []
    seen: dict[str, str] = {}
    for name in names:
        spec = resolve_source(cluster=name, timeout_s=timeout)
        address = f"{spec.kind} {spec.address}"
        key = _same_source_key(spec.kind, spec.address)
        if key in seen:
            raise UsageError(
                f"clusters {seen[key]!r} and {name!r} of {str(path)!r} read the same cluster "
                f"({address}); remove one (each cluster's file would be written twice)"
            )
        seen[key] = name
        targets.append(Target(name=name, address=address, open=spec.open))
    from kreplica.fleet.preflight import local_out

    folder = local_out(out)
    results = _collect_with_progress(targets, folder, workers, run_collect, fmt)
    failed = [r for r in results if not r.ok]
    same = [r for r in results if r.same_as]
    partial = bool(failed) and len(failed) < len(results)
    if fmt is Output.json:
        errors = [{"code": "skipped", "message": f"{r.name}: {r.error}"} for r in failed]
        status = "partial" if partial else ("error" if failed else "")
        _emit("collect", {"out": out, "clusters": [r.as_dict() for r in results]}, errors, status)
    else:
        for r in results:
            if r.ok:
                sys.stdout.write(
                    f"{r.name}: {r.file} ({r.brokers} brokers, {r.topics} topics, "
                    f"{r.partitions} partitions)\n"
                )
    if same:
        r = same[0]
        raise UsageError(
            f"clusters {r.same_as!r} and {r.name!r} are the same cluster ({r.cluster_id}); "
            f"its file was written once, from {r.same_as!r}: remove one of the entries"
        )
    if failed and not partial:
        raise SourceError(f"no cluster could be read ({failed[0].name}: {failed[0].error})")
    if failed:
        names_failed = ", ".join(r.name for r in failed)
        raise PartialResult(
            f"{len(failed)} of {len(results)} cluster(s) could not be read ({names_failed}; "
            f"first: {failed[0].error}); the others are in {os.path.normpath(out)}"
        )


def _same_source_key(kind: str, address: str) -> str:
    """Two config entries naming one source: the same file, or the same bootstrap servers
    (in any order)."""
    if kind == "snapshot":
        return f"snapshot {os.path.realpath(address)}"
    return f"{kind} {','.join(sorted(a.strip().lower() for a in address.split(',')))}"


def _collect_with_progress(
    targets: list[Any], out: Path, workers: int, run_collect: Any, fmt: Output
) -> list[Any]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    err = Console(stderr=True)

    def report(result: Any) -> None:
        if not result.ok:
            err.print(
                f"skipped {result.name} ({result.address}): {result.error}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )

    if not err.is_terminal:
        return list(run_collect(targets, out, workers=workers, on_done=report))
    with Progress(
        TextColumn("collecting"), BarColumn(), MofNCompleteColumn(), console=err, transient=True
    ) as bar:
        task = bar.add_task("collect", total=len(targets))

        def done(result: Any) -> None:
            bar.advance(task)
            report(result)

        return list(run_collect(targets, out, workers=workers, on_done=done))
