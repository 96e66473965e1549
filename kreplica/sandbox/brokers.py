"""Crash one broker of a sandbox and bring it back, to rehearse incidents.

`stop_broker` SIGKILLs the broker's JVM (no controlled shutdown: like a crash or a pulled
plug) and marks it stopped in the state file. The cluster notices on its own clock: a
ZooKeeper-mode broker disappears from `/brokers/ids` when its session expires (6 s in the
sandbox), a KRaft broker is fenced when its heartbeats stop (9 s, Kafka's default). With
`wait=True` the call returns once the cluster's metadata no longer lists the broker.

`start_broker` starts the same command again (same config, same data folder) and returns once
the broker has logged that it runs and the cluster lists it again.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from kreplica.errors import UsageError
from kreplica.sandbox.client import quiet_admin
from kreplica.sandbox.cluster import processes, status
from kreplica.sandbox.jars import SandboxError
from kreplica.sandbox.procs import is_ours, log_tail
from kreplica.sandbox.state import SandboxProcess, client_config_of, read_state, write_state

_STARTED = {"zk": "started (kafka.server.KafkaServer)", "kraft": "to RUNNING"}


def _running_state(name: str) -> dict[str, Any]:
    state = read_state(name)
    if state is None or status(name) is None:
        raise SandboxError(
            f"no sandbox named {name!r} is running: start one with "
            f"`kreplica sandbox up --name {name}`"
        )
    return state


def _broker_entry(state: dict[str, Any], broker_id: int) -> dict[str, Any]:
    for p in state["processes"]:
        if p["node_id"] == broker_id and "broker" in p["role"]:
            entry: dict[str, Any] = p
            return entry
    ids = sorted(p["node_id"] for p in state["processes"] if "broker" in p["role"])
    raise UsageError(
        f"sandbox {state['name']!r} has no broker {broker_id}: its brokers are "
        f"{', '.join(map(str, ids))}"
    )


def _process(name: str, broker_id: int) -> SandboxProcess:
    return next(p for p in processes(name) if p.node_id == broker_id and "broker" in p.role)


def _admin(bootstrap: str, settings: dict[str, Any] | None = None) -> Any:
    return quiet_admin(bootstrap, settings or {})


def _listed_brokers(bootstrap: str, settings: dict[str, Any] | None = None) -> set[int] | None:
    """The brokers the cluster's metadata lists as alive (KRaft leaves fenced ones out), or
    None when no broker answered.

    A new client each time: librdkafka sends DescribeCluster to the broker the metadata named
    as controller, which a KRaft broker picks at random among live brokers; a client that was
    told "the killed broker" keeps waiting for it ("Timed out waiting for controller")."""
    admin = _admin(bootstrap, settings)  # held until the future resolves: a dropped client fails it
    try:
        described = admin.describe_cluster(request_timeout=3).result(timeout=5)
    except Exception:  # not answering right now; the caller's deadline bounds the retries
        return None
    return {n.id for n in described.nodes}


def _live_bootstrap(state: dict[str, Any], leave_out: int) -> str:
    ports = {b["id"]: b["port"] for b in state["brokers"]}
    live = [
        f"127.0.0.1:{ports[p['node_id']]}"
        for p in state["processes"]
        if "broker" in p["role"]
        and p["node_id"] != leave_out
        and is_ours(p["pid"], state["state_dir"])
    ]
    return ",".join(live) or str(state["bootstrap_servers"])


def stop_broker(
    name: str, broker_id: int, *, wait: bool = False, timeout_s: float = 60
) -> SandboxProcess:
    """SIGKILL broker `broker_id` of sandbox `name` and mark it stopped.

    With `wait`, return only once the cluster no longer lists it as alive (ZooKeeper session
    expired / KRaft broker fenced). Stopping a broker that is not running changes nothing."""
    state = _running_state(name)
    entry = _broker_entry(state, broker_id)
    state_dir = state["state_dir"]
    if is_ours(entry["pid"], state_dir):
        os.kill(entry["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 10
        while is_ours(entry["pid"], state_dir):
            if time.monotonic() > deadline:
                raise SandboxError(
                    f"broker {broker_id} (pid {entry['pid']}) did not exit after SIGKILL"
                )
            time.sleep(0.05)
    entry["stopped"] = True
    write_state(Path(state_dir), state)
    if wait:
        _wait_listed(state, broker_id, listed=False, timeout_s=timeout_s)
    return _process(name, broker_id)


def start_broker(name: str, broker_id: int, *, timeout_s: float = 120) -> SandboxProcess:
    """Start broker `broker_id` of sandbox `name` again, with the config and data it had, and
    wait until it runs and the cluster lists it. Starting a running broker changes nothing."""
    state = _running_state(name)
    entry = _broker_entry(state, broker_id)
    state_dir = state["state_dir"]
    if is_ours(entry["pid"], state_dir):
        return _process(name, broker_id)
    cmd = entry.get("cmd")
    if not cmd:
        raise SandboxError(
            f"sandbox {name!r} was started by an older kreplica that did not record how to "
            f"restart a broker: recreate it with `kreplica sandbox down --name {name}` and "
            "`kreplica sandbox up`"
        )
    deadline = time.monotonic() + timeout_s
    if state["mode"] == "zk":
        _wait_registration_gone(state["zookeeper"], broker_id, deadline, timeout_s)
    log = Path(entry["log"])
    offset = log.stat().st_size if log.exists() else 0
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=state_dir,
            start_new_session=True,
        )
    entry["pid"] = proc.pid
    entry["stopped"] = False
    write_state(Path(state_dir), state)

    marker = _STARTED[state["mode"]]
    while marker not in _read_from(log, offset):
        if not is_ours(proc.pid, state_dir):
            raise SandboxError(
                f"broker {broker_id} exited while restarting; fix the cause shown in its log "
                f"({log}):\n{log_tail(log)}"
            )
        if time.monotonic() > deadline:
            raise SandboxError(
                f"broker {broker_id} did not start within {timeout_s:.0f}s; see its log "
                f"({log}):\n{log_tail(log, 10)}"
            )
        time.sleep(0.2)
    _wait_listed(state, broker_id, listed=True, timeout_s=max(1.0, deadline - time.monotonic()))
    return _process(name, broker_id)


def _wait_listed(state: dict[str, Any], broker_id: int, *, listed: bool, timeout_s: float) -> None:
    """Wait until the cluster's metadata lists (or no longer lists) the broker."""
    bootstrap = _live_bootstrap(state, leave_out=-1 if listed else broker_id)
    deadline = time.monotonic() + timeout_s
    settings = client_config_of(state)  # a secured sandbox: as admin
    while True:
        seen = _listed_brokers(bootstrap, settings)
        if seen is not None and (broker_id in seen) == listed:
            return
        if time.monotonic() > deadline:
            raise SandboxError(
                f"the cluster still {'does not list' if listed else 'lists'} broker "
                f"{broker_id} after {timeout_s:.0f}s (brokers listed: "
                f"{sorted(seen) if seen is not None else 'no answer'})"
            )
        time.sleep(0.3)


def _wait_registration_gone(
    zookeeper: str, broker_id: int, deadline: float, timeout_s: float
) -> None:
    """A killed ZooKeeper-mode broker's ephemeral /brokers/ids/N lives until its session
    expires; a broker restarted before that finds the node taken and exits."""
    from kazoo.client import KazooClient

    quiet = logging.getLogger("kreplica.sandbox.kazoo")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    zk = KazooClient(hosts=zookeeper, timeout=5, logger=quiet)
    path = f"/brokers/ids/{broker_id}"
    try:
        zk.start(timeout=10)
        while zk.exists_async(path).get(timeout=5) is not None:
            if time.monotonic() > deadline:
                raise SandboxError(
                    f"broker {broker_id}'s ZooKeeper registration ({path}) did not expire "
                    f"within {timeout_s:.0f}s, so it cannot be restarted yet"
                )
            time.sleep(0.3)
    except SandboxError:
        raise
    except Exception as exc:  # kazoo's timeouts and connection errors
        raise SandboxError(
            f"cannot read {path} from the sandbox's ZooKeeper at {zookeeper} "
            f"({exc or type(exc).__name__})"
        ) from None
    finally:
        zk.stop()
        zk.close()


def _read_from(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read().decode(errors="replace")
    except OSError:
        return ""
