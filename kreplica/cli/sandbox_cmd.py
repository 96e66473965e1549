"""`kreplica sandbox up|status|down`: a local Kafka cluster (JVM processes on 127.0.0.1) for
trying kreplica and rehearsing runbooks. The launcher is imported only when a command runs."""

# No `from __future__ import annotations`: typer reads these annotations at runtime.

import enum
import sys
from typing import Annotated, Any, Optional

import typer

from kreplica.cli import output
from kreplica.errors import UsageError


class Mode(enum.StrEnum):
    zk = "zk"
    kraft = "kraft"


class Output(enum.StrEnum):
    table = "table"
    json = "json"


sandbox_app = typer.Typer(
    name="sandbox",
    help="A local Kafka cluster (ZooKeeper or KRaft mode) for trying kreplica; needs Java 17 "
    "and Maven (jars come from Maven Central).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

NameOpt = Annotated[str, typer.Option("--name", help="Sandbox name: several can run side by side.")]
OutputOpt = Annotated[
    Output,
    typer.Option("--output", help="table for people, json for scripts (one envelope)."),
]


def _emit(command: str, data: Any) -> None:
    """The kreplica JSON envelope, built and printed as every other command's."""
    sys.stdout.write(output.dumps(output.envelope(command, data)))
    sys.stdout.flush()


def _parse_racks(text: str) -> Optional[list[str]]:  # noqa: UP045 - typer module style
    racks = [r.strip() for r in text.split(",")]
    if text.strip() == "":
        return None
    if any(not r for r in racks):
        raise UsageError(f"--racks {text!r} has an empty rack name: write e.g. --racks a,b,c")
    return racks


def _info_lines(info: Any) -> list[str]:
    lines = [
        f"sandbox      {info.name} ({info.mode}, Kafka {info.kafka_version})",
        f"bootstrap    {info.bootstrap_servers}",
    ]
    if info.zookeeper:
        lines.append(f"zookeeper    {info.zookeeper}")
    lines += [f"cluster id   {info.cluster_id}", "", "broker  rack  port"]
    lines += [f"{b.id:<6}  {b.rack or '-':<4}  {b.port}" for b in info.brokers]
    return lines


@sandbox_app.command()
def up(
    mode: Annotated[Mode, typer.Option("--mode", help="zk: ZooKeeper + brokers; kraft: KRaft.")] = (
        Mode.zk
    ),
    brokers: Annotated[
        int, typer.Option("--brokers", min=1, max=32, help="Number of brokers.")
    ] = 3,
    racks: Annotated[
        str,
        typer.Option("--racks", help="Comma-separated racks, given round-robin; '' for none."),
    ] = "a,b,c",
    kafka_version: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--kafka-version", help="Kafka version (default 3.9.2 for zk, 4.3.1 for kraft)."
        ),
    ] = None,
    name: NameOpt = "default",
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, metavar="SECONDS", help="Start-up limit.")
    ] = 180.0,
    output: OutputOpt = Output.table,
) -> None:
    """Start ZooKeeper and brokers (or a KRaft quorum) in the background; wait until all answer."""
    from kreplica import sandbox

    info = sandbox.up(
        mode=mode.value,
        brokers=brokers,
        racks=_parse_racks(racks),
        name=name,
        kafka_version=kafka_version,
        timeout_s=timeout,
    )
    if output is Output.json:
        _emit("sandbox up", info.to_dict())
        return
    for line in _info_lines(info):
        typer.echo(line)
    typer.echo(f"\nstop it with: kreplica sandbox down --name {info.name}")


@sandbox_app.command()
def status(name: NameOpt = "default", output: OutputOpt = Output.table) -> None:
    """Show a sandbox's addresses and whether each of its processes is running."""
    from kreplica import sandbox

    info = sandbox.status(name)
    if info is None:
        raise sandbox.SandboxError(
            f"no sandbox named {name!r} is running: start one with "
            f"`kreplica sandbox up --name {name}`"
        )
    procs = sandbox.processes(name)
    if output is Output.json:
        data = info.to_dict()
        data["processes"] = [
            {
                "role": p.role,
                "node_id": p.node_id,
                "pid": p.pid,
                "ports": list(p.ports),
                "alive": p.alive,
                "log": p.log,
            }
            for p in procs
        ]
        _emit("sandbox status", data)
        return
    for line in _info_lines(info):
        typer.echo(line)
    typer.echo("\nprocess            pid      state    log")
    for p in procs:
        role = p.role if p.node_id is None else f"{p.role} {p.node_id}"
        typer.echo(f"{role:<18} {p.pid:<8} {'running' if p.alive else 'DEAD':<8} {p.log}")


@sandbox_app.command()
def down(name: NameOpt = "default", output: OutputOpt = Output.table) -> None:
    """Stop exactly the processes of a sandbox and delete its data."""
    from kreplica import sandbox

    stopped = sandbox.down(name)
    if output is Output.json:
        _emit("sandbox down", {"name": name, "stopped": stopped})
        return
    typer.echo(
        f"sandbox {name} stopped" if stopped else f"no sandbox named {name!r}; nothing to stop"
    )
