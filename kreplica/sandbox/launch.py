"""Launching a sandbox: the configs of ZooKeeper, brokers and KRaft controllers, their JVMs,
and waiting until the cluster answers (ZooKeeper mode and KRaft)."""

from __future__ import annotations

import base64
import socket
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from kreplica.sandbox import cds
from kreplica.sandbox import metrics as _metrics
from kreplica.sandbox import security as _security
from kreplica.sandbox.client import quiet_admin
from kreplica.sandbox.jars import SandboxError, major
from kreplica.sandbox.procs import (
    BROKER_HEAP,
    JVM_COMMON,
    ZK_HEAP,
    free_ports,
    is_ours,
    log_tail,
    read_log,
)
from kreplica.sandbox.state import SandboxInfo, info_from_state, write_state

_MAX_VOTERS = 3

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


def properties_text(values: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


def new_cluster_id() -> str:
    # Like Kafka's Uuid.randomUuid: never starting with "-", which CLI parsers take for a flag.
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


class Launcher:
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
        metrics: _metrics.MetricsTools | None = None,
    ) -> None:
        self.mode = mode
        self.metrics = metrics
        self.metrics_ports: dict[int, int] = {}
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
        # class-data sharing: map the archive of this classpath, or record one (cds.py)
        self.cds_flags = cds.archive_flags(java, classpath)
        self.recording = [] if self.cds_flags else cds.start_recording(java, classpath, state_dir)
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

    def _java(
        self, heap: list[str], node_dir: Path, main: str, *args: str, broker: int | None = None
    ) -> list[str]:
        shared = self.cds_flags
        if main == "kafka.Kafka" and self.recording:  # the first broker records (cds.py)
            shared, self.recording = self.recording, []
        agent = []
        if broker is not None and self.metrics is not None:
            rules = self.dir / "jmx-exporter.yml"
            port = self.metrics_ports[broker]
            agent = [_metrics.agent_flag(self.metrics.agent_jar, port, rules)]
        return [
            self.java,
            *heap,
            *JVM_COMMON,
            *shared,
            *agent,
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
        write_state(self.dir, self.state)  # recorded at once so `down` can always find it

    def _check_alive(self) -> None:
        for p in self.state["processes"]:
            if not is_ours(p["pid"], str(self.dir)):
                who = p["role"] if p["node_id"] is None else f"{p['role']} {p['node_id']}"
                raise SandboxError(
                    f"sandbox {who} (Kafka {self.version}) exited during start-up; "
                    f"fix the cause shown in its log ({p['log']}):\n{log_tail(p['log'])}"
                )

    def _timeout(self, timeout_s: float, waiting_for: str) -> SandboxError:
        tails = "\n".join(
            f"--- {p['role']} {p['node_id'] or ''} ({p['log']})\n{log_tail(p['log'], 10)}"
            for p in self.state["processes"]
        )
        return SandboxError(
            f"sandbox did not start within {timeout_s:.0f}s (waiting for {waiting_for}); "
            f"raise --timeout or check the logs:\n{tails}"
        )

    # -- start

    def start(self, *, deadline: float, timeout_s: float) -> SandboxInfo:
        recording = bool(self.recording)
        try:
            info = self._start(deadline=deadline, timeout_s=timeout_s)
        except BaseException:
            if recording:
                cds.abandon(self.java, self.classpath)
            raise
        if recording:
            cds.dump_later(self.java, self.classpath, self.dir)
        return info

    def _start(self, *, deadline: float, timeout_s: float) -> SandboxInfo:
        self.sec = _security.prepare(self.security_mode, self.dir, self.java)
        self.state["client_configs"] = {u: str(p) for u, p in self.sec.client_configs.items()}
        if self.mode == "zk":
            self._start_zk_mode(deadline, timeout_s)
        else:
            self._start_kraft_mode(deadline, timeout_s)
        self._wait_brokers_ready(deadline, timeout_s)
        cluster_id = self._wait_metadata(deadline, timeout_s)
        self._start_prometheus(deadline, timeout_s)
        self._grant_acls(deadline, timeout_s)
        if self.mode == "zk":
            self.state["cluster_id"] = cluster_id
        self.state["ready"] = True
        write_state(self.dir, self.state)
        return info_from_state(self.state)

    def _broker_ports(self) -> dict[int, int]:
        ports = free_ports(self.count * (2 if self.metrics else 1))
        if self.metrics is not None:  # each broker's JMX exporter listens on one more
            self.metrics_ports = {i: ports[self.count + i - 1] for i in range(1, self.count + 1)}
            (self.dir / "jmx-exporter.yml").write_text(_metrics.RULES)
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
                "metrics_port": self.metrics_ports.get(i),
            }
            for i in range(1, self.count + 1)
        ]
        self.state["bootstrap_servers"] = ",".join(
            f"127.0.0.1:{ports[i]}" for i in range(1, self.count + 1)
        )

    def _start_zk_mode(self, deadline: float, timeout_s: float) -> None:
        (zk_port,) = free_ports(1)
        ports = self._broker_ports()
        self._record_brokers(ports)
        self.state["zookeeper"] = f"127.0.0.1:{zk_port}"
        self.state["cluster_id"] = ""

        zk_dir = self.dir / "zookeeper"
        zk_dir.mkdir()
        zk_props = self.dir / "zookeeper.properties"
        zk_props.write_text(
            properties_text(
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
                ZK_HEAP,
                zk_dir,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                str(zk_props),
            ),
            self.dir / "zookeeper.log",
        )
        while not zk_answers(zk_port):
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
            path.write_text(properties_text(props))
            self._spawn(
                "broker",
                i,
                [ports[i]],
                self._java(BROKER_HEAP, node_dir, "kafka.Kafka", str(path), broker=i),
                self.dir / f"broker-{i}.log",
            )

    def _start_kraft_mode(self, deadline: float, timeout_s: float) -> None:
        voters = min(self.count, _MAX_VOTERS)
        ports = self._broker_ports()
        controller_ports = dict(zip(range(1, voters + 1), free_ports(voters), strict=True))
        secured = self.sec.enabled
        # secured: brokers replicate over a PLAINTEXT INTERNAL listener (see security.py)
        internal_ports = (
            dict(zip(range(1, self.count + 1), free_ports(self.count), strict=True))
            if secured
            else {}
        )
        listener = _security.protocol(self.security_mode)
        self._record_brokers(ports)
        self.state["zookeeper"] = None
        cluster_id = new_cluster_id()
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
                # The active controller appends a no-op record every 500 ms (KIP-835) that every
                # node replicates: a quarter of an idle sandbox's CPU. Every 5 s still lets the
                # quorum's health metrics move.
                "metadata.max.idle.interval.ms": "5000",
                **_SMALL_BROKER,
                **_security.broker_properties(self.sec, kraft=True),
            }
            if self.racks[i] is not None:
                props["broker.rack"] = str(self.racks[i])
            path = self.dir / f"node-{i}.properties"
            path.write_text(properties_text(props))
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
                self._java(BROKER_HEAP, self.dir / f"node-{i}", "kafka.Kafka", str(path), broker=i),
                self.dir / f"node-{i}.log",
            )

    def _wait_brokers_ready(self, deadline: float, timeout_s: float) -> None:
        """Cheap first: each broker logs a line once it serves requests."""
        marker = "started (kafka.server.KafkaServer)" if self.mode == "zk" else "to RUNNING"
        pending = {p["log"] for p in self.state["processes"] if "broker" in p["role"]}
        while pending:
            self._check_alive()
            pending = {log for log in pending if marker not in read_log(log)}
            if not pending:
                break
            if time.monotonic() > deadline:
                raise self._timeout(timeout_s, "every broker to log that it started")
            time.sleep(0.2)

    def _wait_metadata(self, deadline: float, timeout_s: float) -> str:
        """Then from outside: the cluster reports all N brokers, their racks and a controller."""
        admin = quiet_admin(
            self.state["bootstrap_servers"], _security.librdkafka_config(self.sec, "admin")
        )
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

    def _start_prometheus(self, deadline: float, timeout_s: float) -> None:
        """--metrics: a Prometheus scraping every broker's exporter, once it has scraped each."""
        if self.metrics is None:
            return
        (port,) = free_ports(1)
        (self.dir / "prometheus.yml").write_text(_metrics.prometheus_config(self.metrics_ports))
        self.state["prometheus"] = f"127.0.0.1:{port}"
        command = _metrics.prometheus_command(self.metrics.prometheus, self.dir, port)
        self._spawn("prometheus", None, [port], command, self.dir / "prometheus.log")
        while not _metrics.wait_scraped(port, self.count, min(deadline, time.monotonic() + 1)):
            self._check_alive()
            if time.monotonic() > deadline:
                raise self._timeout(timeout_s, "Prometheus to scrape every broker's exporter")

    def _grant_acls(self, deadline: float, timeout_s: float) -> None:
        """Secured: give `readonly` its ACLs and wait until they are in force."""
        if not self.sec.enabled:
            return
        bootstrap = self.state["bootstrap_servers"]
        try:
            _security.create_acls(bootstrap, self.sec, quiet_admin)
        except Exception as exc:  # one line; the client's error names no secret
            raise SandboxError(f"creating the sandbox's ACLs failed: {exc}") from None
        while not _security.readonly_ready(bootstrap, self.sec, quiet_admin):
            self._check_alive()
            if time.monotonic() > deadline:
                raise self._timeout(timeout_s, "the readonly user's ACLs to be in force")
            time.sleep(0.3)


def zk_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"srvr")
            reply = s.recv(1024)
    except OSError:
        return False
    return b"Mode: standalone" in reply
