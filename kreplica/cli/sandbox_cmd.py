"""`kreplica sandbox up|status|down|stop-broker|start-broker|kafka`: a local Kafka cluster (JVM
processes on 127.0.0.1) for trying kreplica and rehearsing runbooks (Kafka's own tools included).
The launcher is imported only when a command runs."""

# No `from __future__ import annotations`: typer reads these annotations at runtime.

import enum
import sys
from typing import Annotated, Any

import typer

from kreplica.cli import output
from kreplica.errors import UsageError


class Mode(enum.StrEnum):
    zk = "zk"
    kraft = "kraft"


class Security(enum.StrEnum):
    plaintext = "plaintext"
    sasl_plaintext = "sasl_plaintext"
    sasl_ssl = "sasl_ssl"
    ssl = "ssl"


class Output(enum.StrEnum):
    table = "table"
    json = "json"


sandbox_app = typer.Typer(
    name="sandbox",
    help="A local Kafka cluster for trying kreplica. ZooKeeper or KRaft mode; needs Java 17+ "
    "and Maven (jars come from Maven Central).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)

NameOpt = Annotated[
    str,
    typer.Option("--name", metavar="NAME", help="Sandbox name: several can run side by side."),
]
OutputOpt = Annotated[
    Output,
    typer.Option(
        "--output", metavar="table|json", help="table for people, json for scripts (one envelope)."
    ),
]


def _emit(command: str, data: Any) -> None:
    """The kreplica JSON envelope, built and printed as every other command's."""
    sys.stdout.write(output.dumps(output.envelope(command, data)))
    sys.stdout.flush()


def _parse_racks(text: str) -> list[str] | None:
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
    if any(len(b.log_dirs) > 1 for b in info.brokers):
        lines += ["", "broker  log dirs"]
        lines += [f"{b.id:<6}  {','.join(b.log_dirs)}" for b in info.brokers]
    if info.prometheus:
        lines += ["", f"prometheus   http://{info.prometheus} (scrapes each broker's JMX exporter)"]
        lines.append(f"rates from   --traffic-from prometheus://{info.prometheus}")
    if info.security != "plaintext":
        lines += ["", f"security     {info.security} (users admin and readonly; ACLs)"]
        lines += [
            f"{'as ' + user:<12} --command-config {path}"
            for user, path in sorted(info.client_configs.items())
        ]
    return lines


@sandbox_app.command()
def up(
    mode: Annotated[
        Mode,
        typer.Option("--mode", metavar="zk|kraft", help="zk: ZooKeeper + brokers; kraft: KRaft."),
    ] = Mode.zk,
    brokers: Annotated[
        int, typer.Option("--brokers", min=1, max=32, metavar="N", help="Number of brokers (1-32).")
    ] = 3,
    racks: Annotated[
        str,
        typer.Option(
            "--racks",
            metavar="RACKS",
            help="Comma-separated racks, given round-robin; '' for none.",
        ),
    ] = "a,b,c",
    kafka_version: Annotated[
        str | None,
        typer.Option(
            "--kafka-version",
            metavar="VERSION",
            help="Kafka version (default 3.9.2 for zk, 4.3.1 for kraft).",
        ),
    ] = None,
    name: NameOpt = "default",
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, metavar="SECONDS", help="Start-up limit.")
    ] = 180.0,
    security: Annotated[
        Security,
        typer.Option(
            "--security",
            help="plaintext; or sasl_plaintext, sasl_ssl (SCRAM-SHA-512) or ssl (client "
            "certificates), with users admin and readonly, ACLs, and a --command-config "
            "file per user.",
        ),
    ] = Security.plaintext,
    log_dirs: Annotated[
        int,
        typer.Option(
            "--log-dirs",
            min=1,
            max=8,
            metavar="N",
            help="Log dirs per broker (JBOD: log.dirs=DIR1,...,DIRN); 1 by default.",
        ),
    ] = 1,
    metrics: Annotated[
        bool,
        typer.Option(
            "--metrics",
            help="Also Prometheus's JMX exporter agent on each broker (Kafka example rules) "
            "and a Prometheus server scraping them: for `--traffic-from prometheus://...`.",
        ),
    ] = False,
    output: OutputOpt = Output.table,
) -> None:
    """Start a sandbox: ZooKeeper and brokers, or a KRaft quorum.

    They run in the background; the command returns once all of them answer.
    """
    from kreplica import sandbox

    info = sandbox.up(
        mode=mode.value,
        brokers=brokers,
        racks=_parse_racks(racks),
        name=name,
        kafka_version=kafka_version,
        timeout_s=timeout,
        security=security.value,
        log_dirs=log_dirs,
        metrics=metrics,
    )
    if output is Output.json:
        _emit("sandbox up", info.to_dict())
        return
    for line in _info_lines(info):
        typer.echo(line)
    typer.echo(f"\nstop it with: kreplica sandbox down --name {info.name}")


@sandbox_app.command()
def status(name: NameOpt = "default", output: OutputOpt = Output.table) -> None:
    """Show a sandbox's addresses and which of its processes run."""
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
                "stopped": p.stopped,
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
        typer.echo(f"{role:<18} {p.pid:<8} {_state_word(p):<8} {p.log}")


def _state_word(p: Any) -> str:
    if p.alive:
        return "running"
    return "stopped" if p.stopped else "DEAD"


@sandbox_app.command()
def down(name: NameOpt = "default", output: OutputOpt = Output.table) -> None:
    """Stop exactly a sandbox's processes and delete its data."""
    from kreplica import sandbox

    stopped = sandbox.down(name)
    if output is Output.json:
        _emit("sandbox down", {"name": name, "stopped": stopped})
        return
    typer.echo(
        f"sandbox {name} stopped" if stopped else f"no sandbox named {name!r}; nothing to stop"
    )


BrokerArg = Annotated[int, typer.Argument(metavar="ID", help="Broker id (1..N).")]


def _running(sandbox: Any, name: str, broker_id: int) -> bool:
    return any(
        p.alive for p in sandbox.processes(name) if p.node_id == broker_id and "broker" in p.role
    )


def _broker_data(name: str, p: Any) -> dict[str, Any]:
    return {"name": name, "broker": p.node_id, "pid": p.pid, "alive": p.alive, "log": p.log}


@sandbox_app.command("stop-broker")
def stop_broker(
    broker_id: BrokerArg,
    name: NameOpt = "default",
    wait: Annotated[
        bool,
        typer.Option(
            "--wait/--no-wait",
            help="Return once the cluster no longer lists the broker (ZooKeeper session "
            "expired, KRaft broker fenced): about 6-10 s.",
        ),
    ] = True,
    output: OutputOpt = Output.table,
) -> None:
    """Kill one broker (SIGKILL, like a crash).

    To rehearse an incident; start-broker restarts it.
    """
    from kreplica import sandbox

    was_running = _running(sandbox, name, broker_id)
    proc = sandbox.stop_broker(name, broker_id, wait=wait)
    if output is Output.json:
        _emit("sandbox stop-broker", _broker_data(name, proc))
        return
    if not was_running:
        typer.echo(f"broker {broker_id} of sandbox {name} is not running; nothing to stop")
        return
    seen = "the cluster lists it as gone" if wait else "the cluster notices within about 10 s"
    typer.echo(f"broker {broker_id} of sandbox {name} killed (SIGKILL); {seen}")
    typer.echo(f"start it again with: kreplica sandbox start-broker {broker_id} --name {name}")


@sandbox_app.command("start-broker")
def start_broker(
    broker_id: BrokerArg,
    name: NameOpt = "default",
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, metavar="SECONDS", help="Start-up limit.")
    ] = 120.0,
    output: OutputOpt = Output.table,
) -> None:
    """Start a stopped broker again with its config and data. Waits until the cluster lists it."""
    from kreplica import sandbox

    was_running = _running(sandbox, name, broker_id)
    proc = sandbox.start_broker(name, broker_id, timeout_s=timeout)
    if output is Output.json:
        _emit("sandbox start-broker", _broker_data(name, proc))
        return
    if was_running:
        typer.echo(f"broker {broker_id} of sandbox {name} is already running (pid {proc.pid})")
        return
    typer.echo(f"broker {broker_id} of sandbox {name} is running again (pid {proc.pid})")


@sandbox_app.command(
    "kafka",
    context_settings={
        "allow_extra_args": True,
        "ignore_unknown_options": True,
        "allow_interspersed_args": False,  # everything after TOOL belongs to the tool
    },
)
def kafka(
    tool: Annotated[
        str,
        typer.Argument(
            metavar="TOOL",
            help="kafka-topics, kafka-reassign-partitions, kafka-configs, "
            "kafka-leader-election, kafka-consumer-groups, ... ('.sh' and 'kafka-' optional).",
        ),
    ],
    args: Annotated[
        list[str] | None,
        typer.Argument(metavar="[ARGS]...", help="The tool's own arguments."),
    ] = None,
    name: NameOpt = "default",
) -> int:
    """Run one of Kafka's own tools against the sandbox. Adds --bootstrap-server unless given.

    Options for kreplica (--name) go before TOOL; everything after TOOL goes to the tool.
    Exits with the tool's exit code.
    """
    from kreplica import sandbox
    from kreplica.cli import output

    output.state().interrupt_note = (
        f"interrupted; {tool} may have changed the sandbox before it stopped: check with the "
        "tool's own describe/verify"
    )
    return sandbox.run_tool(name, tool, args or [])
