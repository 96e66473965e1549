"""A local Kafka cluster for tests, demos and runbook rehearsals: plain JVM processes on
127.0.0.1, started from jars Maven fetches from Maven Central (no Docker needed).

    info = up(mode="zk", brokers=3, racks=("a", "b", "c"), name="demo")
    ...  # info.bootstrap_servers, info.zookeeper
    down("demo")

Broker ids are 1..N; broker i gets rack racks[(i-1) % len(racks)].
"""

from __future__ import annotations

from kreplica.sandbox.cluster import (
    SandboxBroker,
    SandboxInfo,
    SandboxProcess,
    down,
    processes,
    sandbox_root,
    status,
    up,
)
from kreplica.sandbox.jars import (
    DEFAULT_KRAFT_VERSION,
    DEFAULT_ZK_VERSION,
    SandboxError,
    fetch,
)

__all__ = [
    "DEFAULT_KRAFT_VERSION",
    "DEFAULT_ZK_VERSION",
    "SandboxBroker",
    "SandboxError",
    "SandboxInfo",
    "SandboxProcess",
    "down",
    "fetch",
    "processes",
    "sandbox_root",
    "status",
    "up",
]
