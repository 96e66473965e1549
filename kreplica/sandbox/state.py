"""Where a sandbox lives and what it recorded: its folder, `state.json` (pids, ports, brokers)
and what a client needs to log in to it."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kreplica.errors import UsageError
from kreplica.sandbox import security as _security
from kreplica.sandbox.jars import SandboxError

STATE_FILE = "state.json"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class SandboxBroker:
    id: int
    rack: str | None
    port: int
    log_dirs: tuple[str, ...] = ()  # its `log.dirs`, in order (the first holds KRaft metadata)


@dataclass(frozen=True)
class SandboxInfo:
    name: str
    mode: str  # "zk" | "kraft"
    bootstrap_servers: str
    zookeeper: str | None
    cluster_id: str
    kafka_version: str
    brokers: tuple[SandboxBroker, ...]
    state_dir: str
    security: str = "plaintext"
    # user ("admin", "readonly") -> its client properties file (--command-config); secured only
    client_configs: Mapping[str, str] = field(default_factory=dict)
    prometheus: str | None = None  # HOST:PORT of its Prometheus (up --metrics), else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mode": self.mode,
            "bootstrap_servers": self.bootstrap_servers,
            "zookeeper": self.zookeeper,
            "cluster_id": self.cluster_id,
            "kafka_version": self.kafka_version,
            "brokers": [
                {"id": b.id, "rack": b.rack, "port": b.port, "log_dirs": list(b.log_dirs)}
                for b in self.brokers
            ],
            "state_dir": self.state_dir,
            "security": self.security,
            "client_configs": dict(self.client_configs),
            "prometheus": self.prometheus,
        }


@dataclass(frozen=True)
class SandboxProcess:
    role: str  # "zookeeper" | "broker" | "controller" | "broker,controller"
    node_id: int | None
    pid: int
    ports: tuple[int, ...]  # listeners: client port first, then the controller port (KRaft)
    log: str
    alive: bool
    stopped: bool = False  # stopped on purpose with stop_broker (not crashed)


def sandbox_root() -> Path:
    """Folder holding one sub-folder per named sandbox (temporary storage: data is throw-away)."""
    base = os.environ.get("KREPLICA_SANDBOX_DIR")
    if base:
        return Path(base)
    return Path(tempfile.gettempdir()) / f"kreplica-sandbox-{os.getuid()}"


def state_dir_of(name: str) -> Path:
    if not NAME_RE.match(name):
        raise UsageError(
            f"sandbox name {name!r} is not allowed: use letters, digits, '.', '_' or '-' "
            "(at most 64 characters)"
        )
    return sandbox_root() / name


def read_state(name: str) -> dict[str, Any] | None:
    path = state_dir_of(name) / STATE_FILE
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise SandboxError(
            f"sandbox state file {path} is unreadable ({exc}): stop its java processes by hand "
            "and delete that folder"
        ) from exc
    return data


def write_state(state_dir: Path, state: dict[str, Any]) -> None:
    tmp = state_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(state_dir / STATE_FILE)


def info_from_state(state: dict[str, Any]) -> SandboxInfo:
    return SandboxInfo(
        name=state["name"],
        mode=state["mode"],
        bootstrap_servers=state["bootstrap_servers"],
        zookeeper=state["zookeeper"],
        cluster_id=state["cluster_id"],
        kafka_version=state["kafka_version"],
        brokers=tuple(
            SandboxBroker(
                id=b["id"],
                rack=b["rack"],
                port=b["port"],
                log_dirs=tuple(b.get("log_dirs") or ()),
            )
            for b in state["brokers"]
        ),
        state_dir=state["state_dir"],
        security=state.get("security", "plaintext"),
        client_configs=dict(state.get("client_configs") or {}),
        prometheus=state.get("prometheus"),
    )


def client_config(name: str, user: str = "admin") -> dict[str, Any]:
    """confluent-kafka settings (no bootstrap) to log in to sandbox `name` as `user`; {} for
    a plaintext sandbox."""
    state = read_state(name)
    if state is None:
        return {}
    return client_config_of(state, user)


def client_config_of(state: Mapping[str, Any], user: str = "admin") -> dict[str, Any]:
    mode = state.get("security", "plaintext")
    if mode == "plaintext":
        return {}
    return _security.librdkafka_config(_security.load(mode, Path(state["state_dir"])), user)


def secrets(name: str) -> list[str]:
    """The passwords of sandbox `name` (for tests that check none of them leaks)."""
    state = read_state(name)
    if state is None:
        return []
    mode = state.get("security", "plaintext")
    return _security.load(mode, Path(state["state_dir"])).secret_values()
