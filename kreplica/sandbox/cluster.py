"""Start, inspect and stop a local Kafka cluster made of plain JVM processes on 127.0.0.1.

ZooKeeper mode: one standalone ZooKeeper and N brokers. KRaft mode: N nodes, the first
min(N, 3) of them combined broker+controller (a static voter quorum), the rest broker-only.
Everything of one sandbox lives in one folder (configs, data, logs, `state.json` with pids and
ports), which `down` deletes after stopping exactly the pids recorded there.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kreplica.errors import UsageError
from kreplica.sandbox import security as _security
from kreplica.sandbox.jars import (
    SandboxError,
    check_version,
    default_version,
    fetch,
    java_binary,
    major,
)

STATE_FILE = "state.json"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_MAX_VOTERS = 3
MAX_LOG_DIRS = 8

# Lean JVMs: 2-core machines run 4+ of them at once. C1 only and SerialGC start faster and use
# less memory; the sandbox carries test traffic, not load.
_JVM_COMMON = [
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Xss1m",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
]
_ZK_HEAP = ["-Xms32m", "-Xmx128m"]
_BROKER_HEAP = ["-Xms128m", "-Xmx384m"]

# Settings Kafka's own test kit uses for small clusters (TestUtils.createBrokerConfig).
_SMALL_BROKER = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "5",
    "group.initial.rebalance.delay.ms": "0",
    "log.cleaner.dedupe.buffer.size": "2097152",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "log.initial.task.delay.ms": "100",
    "log.segment.delete.delay.ms": "1000",
    # Tests assert on placement and leadership: no accidental topics, no leader moves.
    "auto.create.topics.enable": "false",
    "auto.leader.rebalance.enable": "false",
}

_LOG4J1 = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.kafka.storage.internals.log=WARN
log4j.logger.kafka.log=WARN
"""

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = warn
logger.segments.name = org.apache.kafka.storage.internals.log
logger.segments.level = warn
"""


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


# --------------------------------------------------------------------------- where things live


def sandbox_root() -> Path:
    """Folder holding one sub-folder per named sandbox (temporary storage: data is throw-away)."""
    base = os.environ.get("KREPLICA_SANDBOX_DIR")
    if base:
        return Path(base)
    return Path(tempfile.gettempdir()) / f"kreplica-sandbox-{os.getuid()}"


def _state_dir(name: str) -> Path:
    if not _NAME_RE.match(name):
        raise UsageError(
            f"sandbox name {name!r} is not allowed: use letters, digits, '.', '_' or '-' "
            "(at most 64 characters)"
        )
    return sandbox_root() / name


def _read_state(name: str) -> dict[str, Any] | None:
    path = _state_dir(name) / STATE_FILE
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


def _write_state(state_dir: Path, state: dict[str, Any]) -> None:
    tmp = state_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(state_dir / STATE_FILE)


def _info_from_state(state: dict[str, Any]) -> SandboxInfo:
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
    )


def client_config(name: str, user: str = "admin") -> dict[str, Any]:
    """confluent-kafka settings (no bootstrap) to log in to sandbox `name` as `user`; {} for
    a plaintext sandbox."""
    state = _read_state(name)
    if state is None:
        return {}
    return _client_config_of(state, user)


def _client_config_of(state: Mapping[str, Any], user: str = "admin") -> dict[str, Any]:
    mode = state.get("security", "plaintext")
    if mode == "plaintext":
        return {}
    return _security.librdkafka_config(_security.load(mode, Path(state["state_dir"])), user)


def secrets(name: str) -> list[str]:
    """The passwords of sandbox `name` (for tests that check none of them leaks)."""
    state = _read_state(name)
    if state is None:
        return []
    mode = state.get("security", "plaintext")
    return _security.load(mode, Path(state["state_dir"])).secret_values()


# --------------------------------------------------------------------------- processes


def _is_ours(pid: int, state_dir: str) -> bool:
    """True while `pid` is a live process started for this sandbox (guards against pid reuse)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our own exited child
    for _ in range(50):
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                    return False
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return False
        except PermissionError:
            return True
        if cmdline:
            # Paths *inside* the folder: sandbox "demo2"'s folder name starts with "demo".
            return os.path.join(state_dir, "").encode() in cmdline
        time.sleep(0.01)  # empty for a moment while the process is in exec()
    return False


def _signal_all(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _stop(pids: Sequence[int], state_dir: str, grace_s: float) -> None:
    """SIGTERM (Kafka's shutdown hook runs), then SIGKILL whatever outlives the grace period."""
    live = [p for p in pids if _is_ours(p, state_dir)]
    _signal_all(live, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while live and time.monotonic() < deadline:
        time.sleep(0.1)
        live = [p for p in live if _is_ours(p, state_dir)]
    _signal_all(live, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while live and time.monotonic() < deadline:
        time.sleep(0.05)
        live = [p for p in live if _is_ours(p, state_dir)]


def _log_tail(path: str | Path, lines: int = 25) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _free_ports(count: int) -> list[int]:
    """Distinct free loopback ports (all sockets held open until every port is chosen)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _properties(values: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


def _new_cluster_id() -> str:
    # Like Kafka's Uuid.randomUuid: never starting with "-", which CLI parsers take for a flag.
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


# --------------------------------------------------------------------------- public API


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
) -> SandboxInfo:
    """Start a sandbox and return once every broker is registered and answers metadata.

    `security` (see kreplica.sandbox.security): plaintext, sasl_plaintext, sasl_ssl or ssl;
    secured sandboxes have users admin and readonly, ACLs, and `client_configs`.

    `log_dirs`: log dirs per broker (JBOD, `log.dirs=DIR1,DIR2,...`), all on this machine's
    temporary storage. KRaft JBOD needs metadata.version 3.7-IV2 or later; `kafka-storage
    format` writes the release's latest production version (Kafka 4.x: far past it) into every
    dir, the first of which also holds the metadata log."""
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
    state_dir = _state_dir(name)

    existing = _read_state(name)
    if existing is not None and any(
        _is_ours(p["pid"], existing["state_dir"]) for p in existing["processes"]
    ):
        raise SandboxError(
            f"sandbox {name!r} is already running: stop it with "
            f"`kreplica sandbox down --name {name}` or pick another --name"
        )
    if state_dir.exists():
        shutil.rmtree(state_dir)  # leftovers of a dead sandbox: stale data breaks start-up

    classpath = fetch(version)
    java = java_binary()
    deadline = time.monotonic() + timeout_s
    for attempt in (1, 2):
        state_dir.mkdir(parents=True)
        launcher = _Launcher(
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
        )
        try:
            return launcher.start(deadline=deadline, timeout_s=timeout_s)
        except BaseException as exc:  # Ctrl-C included: never leave a JVM behind
            _stop([p["pid"] for p in launcher.state["processes"]], str(state_dir), grace_s=2)
            shutil.rmtree(state_dir, ignore_errors=True)
            # A free port we picked can be taken by someone else before our JVM binds it.
            port_taken = isinstance(exc, SandboxError) and "Address already in use" in str(exc)
            if not port_taken or attempt == 2 or time.monotonic() > deadline:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def status(name: str = "default") -> SandboxInfo | None:
    """The running sandbox called `name`, or None if there is none (or all its processes died)."""
    state = _read_state(name)
    if state is None or not state.get("ready"):
        return None
    if not any(_is_ours(p["pid"], state["state_dir"]) for p in state["processes"]):
        return None
    return _info_from_state(state)


def processes(name: str = "default") -> list[SandboxProcess]:
    """The processes recorded for sandbox `name`, with whether each is still running."""
    state = _read_state(name)
    if state is None:
        return []
    return [
        SandboxProcess(
            role=p["role"],
            node_id=p["node_id"],
            pid=p["pid"],
            ports=tuple(p.get("ports", ())),
            log=p["log"],
            alive=_is_ours(p["pid"], state["state_dir"]),
            stopped=bool(p.get("stopped")),
        )
        for p in state["processes"]
    ]


def down(name: str = "default", *, grace_s: float = 3.0) -> bool:
    """Stop exactly the processes recorded for `name` and delete its folder.

    The grace period is short on purpose: the data is thrown away, and a KRaft quorum stopped
    all at once otherwise spends 5 s in the Raft leader's graceful-shutdown wait.

    Returns False when there was no such sandbox."""
    state = _read_state(name)
    state_dir = _state_dir(name)
    if state is None:
        if state_dir.exists():
            shutil.rmtree(state_dir, ignore_errors=True)
        return False
    procs = state["processes"]
    # Brokers first: a ZooKeeper-mode broker whose ZooKeeper is gone hangs in shutdown.
    _stop([p["pid"] for p in procs if p["role"] != "zookeeper"], state["state_dir"], grace_s)
    _stop([p["pid"] for p in procs if p["role"] == "zookeeper"], state["state_dir"], grace_s)
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


# --------------------------------------------------------------------------- the launcher


class _Launcher:
    def __init__(
        self,
        *,
        name: str,
        mode: str,
        version: str,
        classpath: str,
        java: str,
        state_dir: Path,
        rack_list: list[str],
        brokers: int,
        security: str = "plaintext",
        log_dirs: int = 1,
    ) -> None:
        self.mode = mode
        self.log_dir_count = log_dirs
        self.security_mode = security
        self.sec = _security.Security(mode="plaintext", dir=state_dir / "security")
        self.version = version
        self.classpath = classpath
        self.java = java
        self.dir = state_dir
        self.count = brokers
        self.racks: dict[int, str | None] = {
            i: (rack_list[(i - 1) % len(rack_list)] if rack_list else None)
            for i in range(1, brokers + 1)
        }
        self.log4j1 = major(version) < 4
        log_config = self.dir / ("log4j.properties" if self.log4j1 else "log4j2.properties")
        log_config.write_text(_LOG4J1 if self.log4j1 else _LOG4J2)
        self.log_flag = (
            f"-Dlog4j.configuration=file:{log_config}"
            if self.log4j1
            else f"-Dlog4j2.configurationFile={log_config}"
        )
        self.state: dict[str, Any] = {
            "kreplica_sandbox": 1,
            "name": name,
            "mode": mode,
            "kafka_version": version,
            "state_dir": str(state_dir),
            "ready": False,
            "processes": [],
            "security": security,
            "client_configs": {},
        }

    # -- helpers

    def _java(self, heap: list[str], node_dir: Path, main: str, *args: str) -> list[str]:
        return [
            self.java,
            *heap,
            *_JVM_COMMON,
            self.log_flag,
            f"-Dkafka.logs.dir={node_dir}",
            "-cp",
            self.classpath,
            main,
            *args,
        ]

    def _spawn(
        self, role: str, node_id: int | None, ports: list[int], cmd: list[str], log: Path
    ) -> None:
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
                start_new_session=True,  # outlives `kreplica sandbox up`, ignores its Ctrl-C
            )
        self.state["processes"].append(
            {
                "role": role,
                "node_id": node_id,
                "pid": proc.pid,
                "ports": ports,
                "log": str(log),
                "cmd": cmd,  # start_broker restarts a stopped broker with exactly this
            }
        )
        _write_state(self.dir, self.state)  # recorded at once so `down` can always find it

    def _check_alive(self) -> None:
        for p in self.state["processes"]:
            if not _is_ours(p["pid"], str(self.dir)):
                who = p["role"] if p["node_id"] is None else f"{p['role']} {p['node_id']}"
                raise SandboxError(
                    f"sandbox {who} (Kafka {self.version}) exited during start-up; "
                    f"fix the cause shown in its log ({p['log']}):\n{_log_tail(p['log'])}"
                )

    def _timeout(self, timeout_s: float, waiting_for: str) -> SandboxError:
        tails = "\n".join(
            f"--- {p['role']} {p['node_id'] or ''} ({p['log']})\n{_log_tail(p['log'], 10)}"
            for p in self.state["processes"]
        )
        return SandboxError(
            f"sandbox did not start within {timeout_s:.0f}s (waiting for {waiting_for}); "
            f"raise --timeout or check the logs:\n{tails}"
        )

    # -- start

    def start(self, *, deadline: float, timeout_s: float) -> SandboxInfo:
        self.sec = _security.prepare(self.security_mode, self.dir, self.java)
        self.state["client_configs"] = {u: str(p) for u, p in self.sec.client_configs.items()}
        if self.mode == "zk":
            self._start_zk_mode(deadline, timeout_s)
        else:
            self._start_kraft_mode(deadline, timeout_s)
        self._wait_brokers_ready(deadline, timeout_s)
        cluster_id = self._wait_metadata(deadline, timeout_s)
        self._grant_acls(deadline, timeout_s)
        if self.mode == "zk":
            self.state["cluster_id"] = cluster_id
        self.state["ready"] = True
        _write_state(self.dir, self.state)
        return _info_from_state(self.state)

    def _broker_ports(self) -> dict[int, int]:
        ports = _free_ports(self.count)
        return {i: ports[i - 1] for i in range(1, self.count + 1)}

    def _data_dirs(self, node_dir: Path) -> list[Path]:
        """The broker's log dirs: `data`, then `data-2` ... `data-N` (JBOD); the first keeps
        its single-dir name, where KRaft's metadata log and meta.properties are looked for."""
        return [node_dir / "data"] + [
            node_dir / f"data-{k}" for k in range(2, self.log_dir_count + 1)
        ]

    def _record_brokers(self, ports: dict[int, int]) -> None:
        node = "broker" if self.mode == "zk" else "node"
        self.state["brokers"] = [
            {
                "id": i,
                "rack": self.racks[i],
                "port": ports[i],
                "log_dirs": [str(d) for d in self._data_dirs(self.dir / f"{node}-{i}")],
            }
            for i in range(1, self.count + 1)
        ]
        self.state["bootstrap_servers"] = ",".join(
            f"127.0.0.1:{ports[i]}" for i in range(1, self.count + 1)
        )

    def _start_zk_mode(self, deadline: float, timeout_s: float) -> None:
        (zk_port,) = _free_ports(1)
        ports = self._broker_ports()
        self._record_brokers(ports)
        self.state["zookeeper"] = f"127.0.0.1:{zk_port}"
        self.state["cluster_id"] = ""

        zk_dir = self.dir / "zookeeper"
        zk_dir.mkdir()
        zk_props = self.dir / "zookeeper.properties"
        zk_props.write_text(
            _properties(
                {
                    "dataDir": str(zk_dir / "data"),
                    "clientPort": str(zk_port),
                    "clientPortAddress": "127.0.0.1",
                    "maxClientCnxns": "0",
                    "admin.enableServer": "false",
                    "4lw.commands.whitelist": "srvr,ruok,stat,mntr",
                }
            )
        )
        self._spawn(
            "zookeeper",
            None,
            [zk_port],
            self._java(
                _ZK_HEAP,
                zk_dir,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                str(zk_props),
            ),
            self.dir / "zookeeper.log",
        )
        while not _zk_answers(zk_port):
            self._check_alive()
            if time.monotonic() > deadline:
                raise self._timeout(timeout_s, "ZooKeeper to answer `srvr`")
            time.sleep(0.1)
        _security.write_zookeeper_users(self.sec, f"127.0.0.1:{zk_port}")
        listener = _security.protocol(self.security_mode)

        for i in range(1, self.count + 1):  # in parallel: Popen does not wait
            node_dir = self.dir / f"broker-{i}"
            node_dir.mkdir()
            props = {
                "broker.id": str(i),
                "listeners": f"{listener}://127.0.0.1:{ports[i]}",
                "advertised.listeners": f"{listener}://127.0.0.1:{ports[i]}",
                "zookeeper.connect": f"127.0.0.1:{zk_port}",
                "zookeeper.connection.timeout.ms": "30000",
                "zookeeper.session.timeout.ms": "6000",
                "log.dirs": ",".join(str(d) for d in self._data_dirs(node_dir)),
                # A throw-away cluster stops all brokers at once: skip the leader hand-off.
                "controlled.shutdown.enable": "false",
                **_SMALL_BROKER,
                **_security.broker_properties(self.sec, kraft=False),
            }
            if self.racks[i] is not None:
                props["broker.rack"] = str(self.racks[i])
            path = self.dir / f"broker-{i}.properties"
            path.write_text(_properties(props))
            self._spawn(
                "broker",
                i,
                [ports[i]],
                self._java(_BROKER_HEAP, node_dir, "kafka.Kafka", str(path)),
                self.dir / f"broker-{i}.log",
            )

    def _start_kraft_mode(self, deadline: float, timeout_s: float) -> None:
        voters = min(self.count, _MAX_VOTERS)
        ports = self._broker_ports()
        controller_ports = dict(zip(range(1, voters + 1), _free_ports(voters), strict=True))
        secured = self.sec.enabled
        # secured: brokers replicate over a PLAINTEXT INTERNAL listener (see security.py)
        internal_ports = (
            dict(zip(range(1, self.count + 1), _free_ports(self.count), strict=True))
            if secured
            else {}
        )
        listener = _security.protocol(self.security_mode)
        self._record_brokers(ports)
        self.state["zookeeper"] = None
        cluster_id = _new_cluster_id()
        self.state["cluster_id"] = cluster_id
        voter_list = ",".join(f"{i}@127.0.0.1:{p}" for i, p in controller_ports.items())

        node_props: dict[int, Path] = {}
        for i in range(1, self.count + 1):
            node_dir = self.dir / f"node-{i}"
            node_dir.mkdir()
            is_controller = i <= voters
            listeners = f"{listener}://127.0.0.1:{ports[i]}"
            if secured:
                listeners += f",INTERNAL://127.0.0.1:{internal_ports[i]}"
            advertised = listeners
            if is_controller:
                listeners += f",CONTROLLER://127.0.0.1:{controller_ports[i]}"
            protocol_map = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
            if secured:
                protocol_map = f"{listener}:{listener},INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
            props = {
                "process.roles": "broker,controller" if is_controller else "broker",
                "node.id": str(i),
                "controller.quorum.voters": voter_list,
                "listeners": listeners,
                "advertised.listeners": advertised if secured else listeners,
                "controller.listener.names": "CONTROLLER",
                "inter.broker.listener.name": "INTERNAL" if secured else "PLAINTEXT",
                "listener.security.protocol.map": protocol_map,
                "log.dirs": ",".join(str(d) for d in self._data_dirs(node_dir)),
                "share.coordinator.state.topic.replication.factor": "1",
                "share.coordinator.state.topic.min.isr": "1",
                **_SMALL_BROKER,
                **_security.broker_properties(self.sec, kraft=True),
            }
            if self.racks[i] is not None:
                props["broker.rack"] = str(self.racks[i])
            path = self.dir / f"node-{i}.properties"
            path.write_text(_properties(props))
            node_props[i] = path

        # Every node is formatted with the same cluster id before its first start.
        formats = {
            i: subprocess.Popen(
                self._java(
                    ["-Xmx128m"],
                    self.dir / f"node-{i}",
                    "kafka.tools.StorageTool",
                    "format",
                    f"--cluster-id={cluster_id}",
                    f"--config={path}",
                    *_security.storage_scram_arguments(self.sec),
                ),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=self.dir,
            )
            for i, path in node_props.items()
        }
        try:
            for i, proc in formats.items():
                try:
                    out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    raise self._timeout(timeout_s, f"the storage format of node {i}") from None
                if proc.returncode != 0:
                    tail = "\n".join(out.decode(errors="replace").splitlines()[-15:])
                    raise SandboxError(
                        f"formatting KRaft node {i} (Kafka {self.version}) failed; see:\n{tail}"
                    )
        finally:
            # On a failure or Ctrl-C no format JVM may go on writing into the folder `up`
            # deletes; these are not in the state file, so nothing else would stop them.
            for proc in formats.values():
                if proc.returncode is None:
                    proc.kill()
                    proc.communicate()

        for i, path in node_props.items():
            role = "broker,controller" if i <= voters else "broker"
            node_ports = [ports[i], controller_ports[i]] if i <= voters else [ports[i]]
            if secured:
                node_ports.append(internal_ports[i])  # last: client port first stays
            self._spawn(
                role,
                i,
                node_ports,
                self._java(_BROKER_HEAP, self.dir / f"node-{i}", "kafka.Kafka", str(path)),
                self.dir / f"node-{i}.log",
            )

    def _wait_brokers_ready(self, deadline: float, timeout_s: float) -> None:
        """Cheap first: each broker logs a line once it serves requests."""
        marker = "started (kafka.server.KafkaServer)" if self.mode == "zk" else "to RUNNING"
        pending = {p["log"] for p in self.state["processes"] if "broker" in p["role"]}
        while pending:
            self._check_alive()
            pending = {log for log in pending if marker not in _read(log)}
            if not pending:
                break
            if time.monotonic() > deadline:
                raise self._timeout(timeout_s, "every broker to log that it started")
            time.sleep(0.2)

    def _wait_metadata(self, deadline: float, timeout_s: float) -> str:
        """Then from outside: the cluster reports all N brokers, their racks and a controller."""
        from confluent_kafka.admin import AdminClient

        quiet = logging.getLogger("kreplica.sandbox.client")
        quiet.addHandler(logging.NullHandler())
        quiet.propagate = False
        config: dict[str, Any] = {"bootstrap.servers": self.state["bootstrap_servers"]}
        config["logger"] = quiet
        config.update(_security.librdkafka_config(self.sec, "admin"))
        admin = AdminClient(config)
        want = {b["id"]: b["rack"] for b in self.state["brokers"]}
        seen: dict[int, str | None] = {}
        while True:
            self._check_alive()
            try:
                described = admin.describe_cluster(request_timeout=5).result(timeout=10)
                seen = {n.id: n.rack for n in described.nodes}
                if seen == want and described.controller is not None:
                    return str(described.cluster_id)
            except Exception:  # not answering yet; the deadline bounds this
                pass
            if time.monotonic() > deadline:
                raise self._timeout(
                    timeout_s, f"metadata to show brokers {want} (last seen {seen or 'none'})"
                )
            time.sleep(0.3)

    def _grant_acls(self, deadline: float, timeout_s: float) -> None:
        """Secured: give `readonly` its ACLs and wait until they are in force."""
        if not self.sec.enabled:
            return
        bootstrap = self.state["bootstrap_servers"]
        try:
            _security.create_acls(bootstrap, self.sec, _quiet_admin)
        except Exception as exc:  # one line; the client's error names no secret
            raise SandboxError(f"creating the sandbox's ACLs failed: {exc}") from None
        while not _security.readonly_ready(bootstrap, self.sec, _quiet_admin):
            self._check_alive()
            if time.monotonic() > deadline:
                raise self._timeout(timeout_s, "the readonly user's ACLs to be in force")
            time.sleep(0.3)


def _quiet_admin(bootstrap: str, settings: Mapping[str, Any]) -> Any:
    from confluent_kafka.admin import AdminClient

    quiet = logging.getLogger("kreplica.sandbox.client")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": quiet, **settings}
    return AdminClient(config)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _zk_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"srvr")
            reply = s.recv(1024)
    except OSError:
        return False
    return b"Mode: standalone" in reply
