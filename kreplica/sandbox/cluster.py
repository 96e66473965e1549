"""Start, inspect and stop a local Kafka cluster made of plain JVM processes on 127.0.0.1.

ZooKeeper mode: one standalone ZooKeeper and N brokers. KRaft mode: N nodes, the first
min(N, 3) of them combined broker+controller (a static voter quorum), the rest broker-only.
Everything of one sandbox lives in one folder (configs, data, logs, `state.json` with pids and
ports), which `down` deletes after stopping exactly the pids recorded there.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Sequence

from kreplica.errors import UsageError
from kreplica.sandbox import metrics as _metrics
from kreplica.sandbox import security as _security
from kreplica.sandbox.jars import (
    SandboxError,
    check_version,
    default_version,
    fetch,
    java_binary,
)
from kreplica.sandbox.launch import Launcher
from kreplica.sandbox.procs import is_ours, stop_pids
from kreplica.sandbox.state import (
    SandboxBroker,
    SandboxInfo,
    SandboxProcess,
    client_config,
    info_from_state,
    read_state,
    sandbox_root,
    secrets,
    state_dir_of,
)

__all__ = [
    "MAX_LOG_DIRS",
    "SandboxBroker",
    "SandboxInfo",
    "SandboxProcess",
    "client_config",
    "down",
    "processes",
    "reap_orphans",
    "sandbox_root",
    "secrets",
    "status",
    "up",
]

MAX_LOG_DIRS = 8


def up(
    *,
    mode: str = "zk",
    brokers: int = 3,
    racks: Sequence[str] | None = ("a", "b", "c"),
    name: str = "default",
    kafka_version: str | None = None,
    timeout_s: float = 180,
    security: str = "plaintext",
    log_dirs: int = 1,
    metrics: bool = False,
) -> SandboxInfo:
    """Start a sandbox and return once every broker is registered and answers metadata.

    `security` (see kreplica.sandbox.security): plaintext, sasl_plaintext, sasl_ssl or ssl;
    secured sandboxes have users admin and readonly, ACLs, and `client_configs`.

    `log_dirs`: log dirs per broker (JBOD, `log.dirs=DIR1,DIR2,...`), all on this machine's
    temporary storage. KRaft JBOD needs metadata.version 3.7-IV2 or later; `kafka-storage
    format` writes the release's latest production version (Kafka 4.x: far past it) into every
    dir, the first of which also holds the metadata log.

    `metrics`: each broker runs Prometheus's JMX exporter agent and a Prometheus server scrapes
    them (`SandboxInfo.prometheus`; kreplica.sandbox.metrics)."""
    security = _security.check_mode(security)
    if mode not in ("zk", "kraft"):
        raise UsageError(f"sandbox mode {mode!r} is unknown: use zk or kraft")
    if not 1 <= brokers <= 32:
        raise UsageError(f"--brokers {brokers} is out of range: use 1 to 32")
    if not 1 <= log_dirs <= MAX_LOG_DIRS:
        raise UsageError(f"--log-dirs {log_dirs} is out of range: use 1 to {MAX_LOG_DIRS}")
    rack_list = list(racks) if racks else []
    for rack in rack_list:
        if not rack or not re.match(r"^[A-Za-z0-9_.-]+$", rack):
            raise UsageError(
                f"rack {rack!r} is not allowed: use letters, digits, '.', '_' or '-' "
                "(e.g. --racks a,b,c)"
            )
    version = kafka_version or default_version(mode)
    check_version(mode, version)
    state_dir = state_dir_of(name)

    existing = read_state(name)
    if existing is not None and any(
        is_ours(p["pid"], existing["state_dir"]) for p in existing["processes"]
    ):
        raise SandboxError(
            f"sandbox {name!r} is already running: stop it with "
            f"`kreplica sandbox down --name {name}` or pick another --name"
        )
    if state_dir.exists():
        shutil.rmtree(state_dir)  # leftovers of a dead sandbox: stale data breaks start-up

    classpath = fetch(version)
    java = java_binary()
    tools = _metrics.fetch() if metrics else None
    deadline = time.monotonic() + timeout_s
    for attempt in (1, 2):
        state_dir.mkdir(parents=True)
        launcher = Launcher(
            name=name,
            mode=mode,
            version=version,
            classpath=classpath,
            java=java,
            state_dir=state_dir,
            rack_list=rack_list,
            brokers=brokers,
            security=security,
            log_dirs=log_dirs,
            metrics=tools,
        )
        try:
            return launcher.start(deadline=deadline, timeout_s=timeout_s)
        except BaseException as exc:  # Ctrl-C included: never leave a JVM behind
            stop_pids([p["pid"] for p in launcher.state["processes"]], str(state_dir), grace_s=2)
            shutil.rmtree(state_dir, ignore_errors=True)
            # A free port we picked can be taken by someone else before our JVM binds it.
            port_taken = isinstance(exc, SandboxError) and "Address already in use" in str(exc)
            if not port_taken or attempt == 2 or time.monotonic() > deadline:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def status(name: str = "default") -> SandboxInfo | None:
    """The running sandbox called `name`, or None if there is none (or all its processes died)."""
    state = read_state(name)
    if state is None or not state.get("ready"):
        return None
    if not any(is_ours(p["pid"], state["state_dir"]) for p in state["processes"]):
        return None
    return info_from_state(state)


def processes(name: str = "default") -> list[SandboxProcess]:
    """The processes recorded for sandbox `name`, with whether each is still running."""
    state = read_state(name)
    if state is None:
        return []
    return [
        SandboxProcess(
            role=p["role"],
            node_id=p["node_id"],
            pid=p["pid"],
            ports=tuple(p.get("ports", ())),
            log=p["log"],
            alive=is_ours(p["pid"], state["state_dir"]),
            stopped=bool(p.get("stopped")),
        )
        for p in state["processes"]
    ]


def down(name: str = "default", *, grace_s: float = 3.0) -> bool:
    """Stop exactly the processes recorded for `name` and delete its folder.

    The grace period is short on purpose: the data is thrown away, and a KRaft quorum stopped
    all at once otherwise spends 5 s in the Raft leader's graceful-shutdown wait.

    Returns False when there was no such sandbox."""
    state = read_state(name)
    state_dir = state_dir_of(name)
    if state is None:
        if state_dir.exists():
            shutil.rmtree(state_dir, ignore_errors=True)
        return False
    procs = state["processes"]
    # Brokers first: a ZooKeeper-mode broker whose ZooKeeper is gone hangs in shutdown.
    stop_pids([p["pid"] for p in procs if p["role"] != "zookeeper"], state["state_dir"], grace_s)
    stop_pids([p["pid"] for p in procs if p["role"] == "zookeeper"], state["state_dir"], grace_s)
    shutil.rmtree(state_dir, ignore_errors=True)
    return True


def reap_orphans(prefix: str) -> list[str]:
    """Stop the sandboxes named `PREFIX...-PID` whose PID (the test session or script that
    started them) is gone, and return their names: a killed session never ran its teardown."""
    root = sandbox_root()
    reaped: list[str] = []
    if not root.is_dir():
        return reaped
    for entry in sorted(root.iterdir()):
        match = re.fullmatch(re.escape(prefix) + r"[A-Za-z0-9_.-]*?-(\d+)", entry.name)
        if match is None:
            continue
        try:
            os.kill(int(match.group(1)), 0)
            continue  # its owner still runs
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        down(entry.name)
        reaped.append(entry.name)
    return reaped
