"""Kafka's own command-line tools (`kafka-topics`, `kafka-reassign-partitions`, ...) run against
a sandbox: `kreplica sandbox kafka TOOL ARGS...`, so a runbook can be rehearsed with Kafka's tool
as well as with kreplica.

Each tool is the JVM its `bin/TOOL.sh` script would start, on the sandbox's classpath (the poms
beside this file add `kafka-tools`), with the sandbox's lean JVM options and quiet logging
(warnings and errors only, on stderr, as Kafka's `tools-log4j` configs do). The main class is
found in the jars: several moved between Kafka versions (`kafka-configs` is
`kafka.admin.ConfigCommand` up to 4.3 and `org.apache.kafka.tools.ConfigCommand` from 4.4).
"""

from __future__ import annotations

import os
import subprocess
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kreplica.errors import UsageError
from kreplica.sandbox.cds import archive_flags
from kreplica.sandbox.cluster import processes, status
from kreplica.sandbox.jars import SandboxError, fetch, java_binary, major
from kreplica.sandbox.procs import JVM_COMMON
from kreplica.sandbox.state import SandboxInfo, read_state

_TOOL_HEAP = ["-Xms16m", "-Xmx256m"]

# What the tarball's bin/tools-log4j(2) configs do: WARN and above, on stderr, so the tool's
# own output on stdout stays clean for scripts.
_TOOLS_LOG4J1 = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""

_TOOLS_LOG4J2 = """\
status = warn
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = STDERR
"""

# Options that name the cluster: when the user gives one, the sandbox's bootstrap is not added.
_TARGET_OPTIONS = ("--bootstrap-server", "--bootstrap-controller", "--zookeeper")
# ... and the old name of --bootstrap-server in the tools that still take it (elsewhere, as in
# kafka-reassign-partitions, --broker-list is a list of broker ids).
_BROKER_LIST = ("--broker-list",)


@dataclass(frozen=True)
class KafkaTool:
    """One `bin/NAME.sh` script: its main class (first one found in the jars: newer home first),
    and where `--bootstrap-server` goes (before everything, or after the sub-command for tools
    whose options belong to the sub-command, like `kafka-cluster cluster-id --bootstrap-server`)."""

    name: str
    main_classes: tuple[str, ...]
    bootstrap_after_subcommand: bool = False
    target_options: tuple[str, ...] = _TARGET_OPTIONS
    # The option that takes `bootstrap.servers=HOST:PORT` when the main class has no
    # --bootstrap-server (kafka-producer-perf-test's `--producer-props` in Kafka 3.9).
    props_option: str | None = None


# Checked against the kafka-tools and kafka_2.13 jars of 3.9.2 and 4.3.1 (`unzip -l`) and
# Kafka's bin/*.sh scripts; tests/integration/test_sandbox_kafka_tools.py checks every class.
TOOLS: dict[str, KafkaTool] = {
    t.name: t
    for t in (
        KafkaTool("kafka-topics", ("org.apache.kafka.tools.TopicCommand",)),
        KafkaTool(
            "kafka-reassign-partitions",
            ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand",),
        ),
        KafkaTool(
            "kafka-configs", ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")
        ),
        KafkaTool("kafka-leader-election", ("org.apache.kafka.tools.LeaderElectionCommand",)),
        KafkaTool(
            "kafka-consumer-groups",
            ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",),
        ),
        KafkaTool("kafka-log-dirs", ("org.apache.kafka.tools.LogDirsCommand",)),
        KafkaTool(
            "kafka-get-offsets",
            ("org.apache.kafka.tools.GetOffsetShell",),
            target_options=_TARGET_OPTIONS + _BROKER_LIST,
        ),
        KafkaTool("kafka-delete-records", ("org.apache.kafka.tools.DeleteRecordsCommand",)),
        KafkaTool(
            "kafka-broker-api-versions",
            (
                "org.apache.kafka.tools.BrokerApiVersionsCommand",
                "kafka.admin.BrokerApiVersionsCommand",
            ),
        ),
        KafkaTool("kafka-acls", ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand")),
        KafkaTool("kafka-features", ("org.apache.kafka.tools.FeatureCommand",)),
        KafkaTool("kafka-metadata-quorum", ("org.apache.kafka.tools.MetadataQuorumCommand",)),
        KafkaTool(
            "kafka-cluster",
            ("org.apache.kafka.tools.ClusterTool",),
            bootstrap_after_subcommand=True,
        ),
        KafkaTool(
            "kafka-console-producer",
            ("org.apache.kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer"),
            target_options=_TARGET_OPTIONS + _BROKER_LIST,
        ),
        KafkaTool("kafka-console-consumer", ("org.apache.kafka.tools.consumer.ConsoleConsumer",)),
        KafkaTool(
            "kafka-producer-perf-test",
            ("org.apache.kafka.tools.ProducerPerformance",),
            props_option="--producer-props",
        ),
        KafkaTool(
            "kafka-consumer-perf-test",
            ("org.apache.kafka.tools.ConsumerPerformance",),
            target_options=_TARGET_OPTIONS + _BROKER_LIST,
        ),
    )
}


def find_tool(name: str) -> KafkaTool:
    """The tool for `kafka-topics`, `kafka-topics.sh` or `topics`; a usage error otherwise."""
    key = name.strip().removesuffix(".sh")
    if not key.startswith("kafka-"):
        key = f"kafka-{key}"
    tool = TOOLS.get(key)
    if tool is None:
        raise UsageError(
            f"unknown Kafka tool {name!r}: the sandbox runs {', '.join(sorted(TOOLS))}"
        )
    return tool


_BOOTSTRAP_PROPERTY = "bootstrap.servers="


def names_target(tool: KafkaTool, args: Sequence[str]) -> bool:
    """True when the arguments already say which cluster to talk to."""
    if tool.props_option and any(arg.startswith(_BOOTSTRAP_PROPERTY) for arg in args):
        return True
    return any(
        arg == opt or arg.startswith(opt + "=") for arg in args for opt in tool.target_options
    )


def tool_arguments(
    tool: KafkaTool, args: Sequence[str], bootstrap: str, *, has_bootstrap_option: bool = True
) -> list[str]:
    """The tool's arguments with `--bootstrap-server BOOTSTRAP` added, unless the user named a
    cluster (--bootstrap-server, --bootstrap-controller, --zookeeper; --broker-list for the
    console producer and kafka-get-offsets, where it is the old --bootstrap-server). A main
    class without --bootstrap-server gets `bootstrap.servers=BOOTSTRAP` in its property list."""
    args = list(args)
    if names_target(tool, args):
        return args
    if tool.props_option and not has_bootstrap_option:
        prop = _BOOTSTRAP_PROPERTY + bootstrap
        if tool.props_option in args:  # a list of its own: the property joins it
            at = args.index(tool.props_option) + 1
            return [*args[:at], prop, *args[at:]]
        return [tool.props_option, prop, *args]
    added = ["--bootstrap-server", bootstrap]
    if tool.bootstrap_after_subcommand:
        # argparse sub-commands: the option belongs after the first word that is not an option
        for i, arg in enumerate(args):
            if not arg.startswith("-"):
                return [*args[: i + 1], *added, *args[i + 1 :]]
        return args  # no sub-command: let the tool print its own usage
    return [*added, *args]


def _kafka_jars(classpath: str) -> list[str]:
    return [
        p
        for p in classpath.split(os.pathsep)
        if os.path.basename(p).startswith(("kafka-tools-", "kafka_"))
    ]


def main_class(tool: KafkaTool, classpath: str) -> str:
    """The first of the tool's main classes that the classpath's Kafka jars contain."""
    entries = {c: c.replace(".", "/") + ".class" for c in tool.main_classes}
    contents: set[str] = set()
    for jar in _kafka_jars(classpath):
        try:
            with zipfile.ZipFile(jar) as zf:
                contents.update(n for n in zf.namelist() if n in entries.values())
        except (OSError, zipfile.BadZipFile):
            continue
    for cls, entry in entries.items():
        if entry in contents:
            return cls
    raise SandboxError(
        f"{tool.name} ({' or '.join(tool.main_classes)}) is not in the sandbox's Kafka jars; "
        "refetch them with `python -m kreplica.sandbox fetch`"
    )


def takes_bootstrap_option(classpath: str, cls: str) -> bool:
    """True when the main class knows `--bootstrap-server` (its name is a string constant of
    the class: 3.9's ProducerPerformance has none, 4.3's has it)."""
    entry = cls.replace(".", "/") + ".class"
    for jar in _kafka_jars(classpath):
        try:
            with zipfile.ZipFile(jar) as zf:
                return b"--bootstrap-server" in zf.read(entry)
        except (OSError, zipfile.BadZipFile, KeyError):
            continue
    return False


def _log_flag(state_dir: Path, kafka_version: str) -> str:
    """The tools' logging config, written into the sandbox's folder on first use."""
    if major(kafka_version) < 4:
        path, text = state_dir / "tools-log4j.properties", _TOOLS_LOG4J1
        flag = f"-Dlog4j.configuration=file:{path}"
    else:
        path, text = state_dir / "tools-log4j2.properties", _TOOLS_LOG4J2
        flag = f"-Dlog4j2.configurationFile={path}"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return flag


def _running(name: str) -> SandboxInfo:
    info = status(name)
    if info is None:
        raise SandboxError(
            f"no sandbox named {name!r} is running: start one with "
            f"`kreplica sandbox up --name {name}`"
        )
    return info


def live_bootstrap(name: str, info: SandboxInfo) -> str:
    """The bootstrap list without brokers that are not running (stopped with stop-broker or
    dead): a tool then needs no connection timeout to find a live one."""
    down = {p.node_id for p in processes(name) if "broker" in p.role and not p.alive}
    live = [f"127.0.0.1:{b.port}" for b in info.brokers if b.id not in down]
    return ",".join(live) or info.bootstrap_servers


def tool_command(name: str, tool_name: str, args: Sequence[str]) -> list[str]:
    """The java command line that runs `tool_name` with `args` against sandbox `name`."""
    tool = find_tool(tool_name)
    info = _running(name)
    state = read_state(name) or {}
    state_dir = Path(state.get("state_dir") or info.state_dir)
    classpath = fetch(info.kafka_version)
    java = java_binary()
    cls = main_class(tool, classpath)
    by_option = tool.props_option is None or takes_bootstrap_option(classpath, cls)
    return [
        java,
        *_TOOL_HEAP,
        *JVM_COMMON,
        *archive_flags(java, classpath),
        _log_flag(state_dir, info.kafka_version),
        "-cp",
        classpath,
        cls,
        *tool_arguments(tool, args, live_bootstrap(name, info), has_bootstrap_option=by_option),
    ]


def run_tool(name: str, tool_name: str, args: Sequence[str]) -> int:
    """Run the tool with this process's stdin, stdout and stderr; return its exit code."""
    cmd = tool_command(name, tool_name, args)
    proc = subprocess.Popen(cmd)
    try:
        return proc.wait()
    except KeyboardInterrupt:  # the tool got the same Ctrl-C (same process group)
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise KeyboardInterrupt from None
