"""Bad input against real processes: a clear one-line SourceError within a bounded time, no
hang, no stderr noise, no client threads left behind. Plus ZooKeeper digest auth for real."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kreplica.errors import ExitCode, KreplicaError, SourceError, UsageError
from kreplica.sandbox import SandboxInfo
from kreplica.sources import open_source
from kreplica.sources.admin import AdminSource
from kreplica.sources.zookeeper import ZooKeeperSource
from tests.support.cli import run_kreplica
from tests.support.polling import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TIMEOUT_S = 3.0
SLACK_S = 10.0  # thread start-up and teardown on a loaded 2-core machine


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP port that accepts connections and never answers (a hung server)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                accepted.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(2)
        for conn in accepted:
            conn.close()
        server.close()


def _fails_fast(action: Callable[[], object], bound_s: float = TIMEOUT_S) -> SourceError:
    """Run `action`, expect a SourceError within the bound, and no leftover client threads."""
    threads_before = {t.ident for t in threading.enumerate()}
    started = time.monotonic()
    with pytest.raises(SourceError) as err:
        action()
    elapsed = time.monotonic() - started
    assert elapsed < bound_s + SLACK_S, f"took {elapsed:.1f}s"
    message = str(err.value)
    assert "\n" not in message and "Traceback" not in message
    assert err.value.exit_code == ExitCode.SOURCE
    # stopped client threads may take a moment to finish
    leftover = eventually(
        lambda: [t.name for t in threading.enumerate() if t.ident not in threads_before],
        lambda names: not names,
        timeout_s=5,
    )
    assert leftover == [], leftover
    return err.value


def _own_stderr(capfd: pytest.CaptureFixture[str], address: str | None = None) -> list[str]:
    """The stderr lines this call may have printed: librdkafka lines naming another address
    come from another test's client still retrying a cluster that test stopped (the capture
    is of the whole process)."""
    lines = capfd.readouterr().err.splitlines()
    return [x for x in lines if "rdkafka#" not in x or (address is not None and address in x)]


def _zk_snapshot(connect: str, **kwargs: object) -> object:
    with ZooKeeperSource(connect, timeout_s=TIMEOUT_S, **kwargs) as source:  # type: ignore[arg-type]
        return source.snapshot()


def _admin_snapshot(bootstrap: str, **kwargs: object) -> object:
    with AdminSource(bootstrap, timeout_s=TIMEOUT_S, **kwargs) as source:  # type: ignore[arg-type]
        return source.snapshot()


def test_unreachable_zookeeper(capfd: pytest.CaptureFixture[str]) -> None:
    error = _fails_fast(lambda: _zk_snapshot(f"127.0.0.1:{_closed_port()}"))
    assert "cannot reach ZooKeeper" in str(error) and "check `zookeeper`" in str(error)
    assert _own_stderr(capfd) == []


def test_unreachable_bootstrap(capfd: pytest.CaptureFixture[str]) -> None:
    port = _closed_port()
    error = _fails_fast(lambda: _admin_snapshot(f"127.0.0.1:{port}"))
    assert f"cannot reach Kafka at 127.0.0.1:{port}" in str(error)
    assert "connection refused" in str(error).lower()
    assert _own_stderr(capfd, f"127.0.0.1:{port}") == []


def test_kafka_python_bootstrap_failure_leaves_no_thread() -> None:
    # kafka-python (reassignments, sizes) connects separately from confluent-kafka; its own
    # failure must be as clean (it starts an I/O thread before bootstrapping).
    # (without the probe, which would refuse the port before any client connects)
    source = AdminSource(f"127.0.0.1:{_closed_port()}", timeout_s=TIMEOUT_S, probe=False)
    error = _fails_fast(source._kafka_python_client)
    assert "kafka-python cannot connect" in str(error)


def test_unresolvable_hosts() -> None:
    _fails_fast(lambda: _zk_snapshot("no-such-host.invalid:2181"))
    error = _fails_fast(lambda: _admin_snapshot("no-such-host.invalid:9092"))
    assert "no-such-host.invalid" in str(error)


def test_hung_servers_do_not_hang_us(silent_server: str) -> None:
    _fails_fast(lambda: _zk_snapshot(silent_server))
    _fails_fast(lambda: _admin_snapshot(silent_server))


def test_wrong_chroot(zk_cluster: SandboxInfo) -> None:
    error = _fails_fast(lambda: _zk_snapshot(f"{zk_cluster.zookeeper}/no-kafka-here"))
    assert "/brokers/ids does not exist" in str(error) and "chroot" in str(error)


def test_kafka_port_given_as_zookeeper(zk_cluster: SandboxInfo) -> None:
    # A common mix-up: the broker port answers, but not as ZooKeeper: named at once.
    broker = zk_cluster.bootstrap_servers.split(",")[0]
    error = _fails_fast(lambda: _zk_snapshot(broker), bound_s=1.0)
    assert f"{broker} answered, but is not ZooKeeper" in str(error)
    assert "pass it as `bootstrap_server`" in str(error)  # the library's words


def test_sasl_against_a_plaintext_listener(zk_cluster: SandboxInfo) -> None:
    sasl = {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "wrong",
    }
    error = _fails_fast(lambda: _admin_snapshot(zk_cluster.bootstrap_servers, client_config=sasl))
    assert zk_cluster.bootstrap_servers in str(error)


def test_zookeeper_sasl_refused(zk_cluster: SandboxInfo) -> None:
    # The sandbox's ZooKeeper has no SASL (no JAAS login): a SASL client is refused.
    assert zk_cluster.zookeeper is not None
    sasl = {
        "zookeeper.sasl.mechanism": "DIGEST-MD5",
        "zookeeper.sasl.username": "kafka",
        "zookeeper.sasl.password": "secret",
    }
    # kazoo runs the SASL login inside its connection thread with the session's read timeout
    # (ZooKeeper's minimum session is 6 s) and waits for that thread on close: bound ~10 s.
    error = _fails_fast(
        lambda: _zk_snapshot(str(zk_cluster.zookeeper), client_config=sasl), bound_s=10.0
    )
    # Refused or unanswered, depending on whether the server drops the connection in time.
    assert "SASL" in str(error) and "zookeeper.sasl" in str(error)


def test_bad_client_config_is_a_usage_error(zk_cluster: SandboxInfo) -> None:
    with pytest.raises(UsageError, match=r"no\.such\.property"):
        AdminSource(zk_cluster.bootstrap_servers, client_config={"no.such.property": "1"})
    with pytest.raises(UsageError, match="`zookeeper` is empty"):
        open_source(zookeeper=" ")


def test_closed_sources_refuse(zk_cluster: SandboxInfo) -> None:
    assert zk_cluster.zookeeper is not None
    for source in (
        ZooKeeperSource(zk_cluster.zookeeper),
        AdminSource(zk_cluster.bootstrap_servers),
    ):
        source.close()
        source.close()  # twice is fine
        with pytest.raises(KreplicaError, match="closed"):
            source.snapshot()


@pytest.fixture
def secured_chroot(zk_cluster: SandboxInfo) -> Iterator[str]:
    """A copy of the cluster's znodes (brokers, `orders`) under a chroot only admin:secret may
    read, as an operator's ACL-protected ZooKeeper would be."""
    from kazoo.client import KazooClient
    from kazoo.security import make_digest_acl

    acl = [make_digest_acl("admin", "secret", all=True)]
    root = f"/kreplica-secured-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zk_cluster.zookeeper, auth_data=[("digest", "admin:secret")])
    zk.start(timeout=10)
    try:
        zk.create(root, acl=acl)
        paths = ["/cluster/id", "/brokers/topics/orders"]
        paths += [f"/brokers/ids/{b}" for b in zk.get_children("/brokers/ids")]
        for p in zk.get_children("/brokers/topics/orders/partitions"):
            paths.append(f"/brokers/topics/orders/partitions/{p}/state")
        for path in paths:
            data, _ = zk.get(path)
            zk.create(root + path, data, acl=acl, makepath=True)
        yield f"{zk_cluster.zookeeper}{root}"
    finally:
        zk.delete(root, recursive=True)
        zk.stop()
        zk.close()


def test_zookeeper_digest_auth(zk_cluster: SandboxInfo, secured_chroot: str) -> None:
    assert zk_cluster.zookeeper is not None
    with ZooKeeperSource(zk_cluster.zookeeper) as plain:
        expected = plain.snapshot(["orders"])
    with ZooKeeperSource(secured_chroot, auth=[("digest", "admin:secret")]) as source:
        secured = source.snapshot(["orders"])
    assert replace(secured, captured_at=None) == replace(expected, captured_at=None)
    # the same credentials given as a client property
    config = {"zookeeper.digest": "admin:secret"}
    with ZooKeeperSource(secured_chroot, client_config=config) as source:
        assert source.snapshot(["orders"]).topics == expected.topics


@pytest.mark.parametrize("auth", [None, [("digest", "admin:wrong")]])
def test_zookeeper_auth_failure(secured_chroot: str, auth: list[tuple[str, str]] | None) -> None:
    error = _fails_fast(lambda: _zk_snapshot(secured_chroot, auth=auth))
    assert "denied reading" in str(error) and "credentials" in str(error)


def test_cli_passes_zookeeper_credentials_from_command_config(
    secured_chroot: str, tmp_path: Path
) -> None:
    """`--command-config` holds Kafka and ZooKeeper properties alike; zookeeper.* reach kazoo."""
    props = tmp_path / "admin.properties"
    props.write_text("security.protocol=PLAINTEXT\nzookeeper.digest=admin:secret\n")
    out = tmp_path / "snap.json"
    base = ["snapshot", "--zookeeper", secured_chroot]
    ok = run_kreplica(
        *base, "--command-config", str(props), "-t", "orders", "-o", str(out),
        isolated=True, columns=None, timeout=60,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert [t.name for t in open_source(snapshot=out).snapshot().topics] == ["orders"]
    denied = run_kreplica(
        *base, "-t", "orders", "--timeout", "5", isolated=True, columns=None, timeout=60
    )
    assert denied.returncode == ExitCode.SOURCE
    assert denied.stderr.count("\n") == 1 and "denied reading" in denied.stderr
