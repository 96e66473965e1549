"""A local Kafka cluster for tests, demos and runbook rehearsals: plain JVM processes on
127.0.0.1, started from jars Maven fetches from Maven Central (no Docker needed).

    info = up(mode="zk", brokers=3, racks=("a", "b", "c"), name="demo")
    ...  # info.bootstrap_servers, info.zookeeper
    stop_broker("demo", 2, wait=True)   # SIGKILL, like a crash
    start_broker("demo", 2)             # same config and data
    run_tool("demo", "kafka-topics", ["--describe"])   # Kafka's own CLI, exit code back
    down("demo")

Broker ids are 1..N; broker i gets rack racks[(i-1) % len(racks)].
"""

from __future__ import annotations

from kreplica.sandbox.brokers import start_broker, stop_broker
from kreplica.sandbox.cluster import (
    SandboxBroker,
    SandboxInfo,
    SandboxProcess,
    client_config,
    down,
    processes,
    reap_orphans,
    sandbox_root,
    secrets,
    status,
    up,
)
from kreplica.sandbox.jars import (
    DEFAULT_KRAFT_VERSION,
    DEFAULT_ZK_VERSION,
    SandboxError,
    fetch,
)
from kreplica.sandbox.tools import TOOLS, find_tool, run_tool, tool_arguments, tool_command

__all__ = [
    "DEFAULT_KRAFT_VERSION",
    "DEFAULT_ZK_VERSION",
    "TOOLS",
    "SandboxBroker",
    "SandboxError",
    "SandboxInfo",
    "SandboxProcess",
    "client_config",
    "down",
    "fetch",
    "find_tool",
    "processes",
    "reap_orphans",
    "run_tool",
    "sandbox_root",
    "secrets",
    "start_broker",
    "status",
    "stop_broker",
    "tool_arguments",
    "tool_command",
    "up",
]
