"""Before a client library connects: is anything there, and does it speak the right protocol?

kazoo and librdkafka retry a refused connection until their timeout, and say "cannot reach"
when a port answered in another protocol. A probe with the standard library tells the cases
apart in one round trip: refused (fails at once), an answer that is not ZooKeeper (or not
Kafka), and silence (the only case that waits, up to the timeout). Every address of a
connect string is probed at once; the first one that answers correctly ends the probe.
"""

from __future__ import annotations

import queue
import socket
import struct
import threading
import time
from dataclasses import dataclass

from kreplica.errors import SourceError

REFUSED = "refused"
UNRESOLVED = "unresolved"
SILENT = "silent"
WRONG = "wrong"  # answered, but not in the expected protocol
OK = "ok"


@dataclass(frozen=True)
class Outcome:
    address: str
    kind: str
    detail: str = ""


def split_addresses(text: str, default_port: int) -> list[tuple[str, int]]:
    """'h1:2181,[::1]:2182/chroot' -> [('h1', 2181), ('::1', 2182)]; entries that do not parse
    are left out (the client library reports them)."""
    hosts = text.split("/", 1)[0] if "://" not in text else text
    result: list[tuple[str, int]] = []
    for item in hosts.split(","):
        item = item.strip()
        if "://" in item:
            item = item.split("://", 1)[1]
        item = item.split("/", 1)[0]
        if not item:
            continue
        host, port = item, str(default_port)
        if item.startswith("["):
            end = item.find("]")
            if end < 0:
                continue
            host, rest = item[1:end], item[end + 1 :]
            if rest.startswith(":"):
                port = rest[1:]
        elif item.count(":") == 1:
            host, port = item.split(":")
        if not host or not port.isdigit():
            continue
        result.append((host, int(port)))
    return result


# ZooKeeper's ConnectRequest (jute): protocolVersion, lastZxidSeen, timeOut, sessionId, passwd.
# It asks to resume a session that does not exist, so ZooKeeper answers with an expired-session
# ConnectResponse and creates none. A Kafka broker reads these bytes as Produce v0 with acks=0;
# a new session (id 0) would be a valid, unanswered request, while this id's high half is a
# topic count of 2^31-1, which Kafka rejects by closing the connection.
_ZK_CONNECT = struct.pack(">iqiqi16s", 0, 0, 6000, 0x7FFFFFFF_FFFFFFFF, 16, b"\0" * 16)
# closeSession: RequestHeader(xid, type=-11), so the probe leaves no session behind
_ZK_CLOSE = struct.pack(">ii", 1, -11)
# Kafka ApiVersionsRequest v0: header v1 (api_key 18, version 0, correlation id, client id)
_KAFKA_CORRELATION = 0x6B72706C
_KAFKA_CLIENT = b"kreplica-probe"
_KAFKA_API_VERSIONS = struct.pack(">hhih", 18, 0, _KAFKA_CORRELATION, len(_KAFKA_CLIENT))
_KAFKA_API_VERSIONS += _KAFKA_CLIENT


def _framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _answer(sock: socket.socket, protocol: str) -> tuple[str, str]:
    """Send the protocol's first request; (OK | WRONG, detail)."""
    if protocol == "zookeeper":
        sock.sendall(_framed(_ZK_CONNECT))
        head = _read_exactly(sock, 4)
        if len(head) < 4:
            return WRONG, "it closed the connection on ZooKeeper's handshake"
        (length,) = struct.unpack(">i", head)
        body = _read_exactly(sock, length) if 0 < length < 1024 else b""
        if length in (36, 37) and len(body) == length and body[:4] == b"\0\0\0\0":
            (session,) = struct.unpack(">q", body[8:16])
            if session:
                sock.sendall(_framed(_ZK_CLOSE))
            return OK, ""
        return WRONG, f"its answer to ZooKeeper's handshake is not ZooKeeper's ({length} bytes)"
    sock.sendall(_framed(_KAFKA_API_VERSIONS))
    head = _read_exactly(sock, 8)
    if len(head) < 4:
        return WRONG, "it closed the connection on Kafka's ApiVersions request"
    if len(head) == 8 and struct.unpack(">i", head[4:])[0] == _KAFKA_CORRELATION:
        return OK, ""
    return WRONG, "its answer to Kafka's ApiVersions request is not Kafka's"


def _probe_one(host: str, port: int, protocol: str, deadline: float, handshake: bool) -> Outcome:
    address = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        return Outcome(address, UNRESOLVED, str(getattr(exc, "strerror", None) or exc))
    refused: OSError | None = None
    for family, kind, proto, _name, sockaddr in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.05))
            try:
                sock.connect(sockaddr)
            except ConnectionRefusedError as exc:
                refused = exc
                continue
            except TimeoutError:
                return Outcome(address, SILENT, "no answer to connecting")
            except OSError as exc:  # unreachable network or host: as final as refused
                refused = exc
                continue
            if not handshake:
                return Outcome(address, OK)
            try:
                kind_, detail = _answer(sock, protocol)
            except TimeoutError:
                return Outcome(address, SILENT, "it accepted the connection, then said nothing")
            except OSError as exc:  # reset by the peer: it is there, and it said no
                return Outcome(address, WRONG, f"it reset the connection ({exc.strerror or exc})")
            return Outcome(address, kind_, detail)
        finally:
            sock.close()
    detail = "connection refused"
    if refused is not None and not isinstance(refused, ConnectionRefusedError):
        detail = str(refused.strerror or refused).lower()
    return Outcome(address, REFUSED, detail)


def probe(
    addresses: list[tuple[str, int]], protocol: str, timeout_s: float, *, handshake: bool = True
) -> list[Outcome]:
    """Probe every address at once; return as soon as one answers in `protocol` ([that one]),
    else every outcome once all are known (silence ends at the timeout)."""
    deadline = time.monotonic() + timeout_s
    results: queue.Queue[Outcome] = queue.Queue()
    for host, port in addresses:
        threading.Thread(
            target=lambda h=host, p=port: results.put(
                _probe_one(h, p, protocol, deadline, handshake)
            ),
            name="kreplica-probe",
            daemon=True,
        ).start()
    outcomes: list[Outcome] = []
    while len(outcomes) < len(addresses):
        try:
            outcome = results.get(timeout=max(deadline - time.monotonic(), 0) + 1.0)
        except queue.Empty:
            break
        if outcome.kind == OK:
            return [outcome]
        outcomes.append(outcome)
    return outcomes


def require_server(
    text: str,
    *,
    protocol: str,
    default_port: int,
    timeout_s: float,
    flag: str,
    handshake: bool = True,
) -> None:
    """Raise a one-line SourceError unless some address of `text` answers in `protocol`
    (ZooKeeper or Kafka). Refused and unresolvable addresses fail at once; only silence waits."""
    addresses = split_addresses(text, default_port)
    if not addresses:
        return  # nothing we can parse: the client library says what is wrong with it
    outcomes = probe(addresses, protocol, timeout_s, handshake=handshake)
    if not outcomes or outcomes[0].kind == OK:
        return
    name = "ZooKeeper" if protocol == "zookeeper" else "Kafka"
    where = text.split("/", 1)[0] if protocol == "zookeeper" else text
    kinds = {o.kind for o in outcomes}
    parts = "; ".join(f"{o.address}: {o.detail}" for o in outcomes)
    if kinds == {REFUSED}:
        raise SourceError(
            f"cannot reach {name} at {where}: connection refused (nothing listens there); "
            f"check {flag} and that {name} is running"
        )
    if WRONG in kinds:
        other = "ZooKeeper" if protocol == "kafka" else "Kafka"
        other_flag = "`zookeeper`" if other == "ZooKeeper" else "`bootstrap_server`"
        hint = f"a {other} port? pass it as {other_flag}"
        raise SourceError(f"{where} answered, but is not {name} ({parts}); {hint}, or check {flag}")
    if kinds <= {REFUSED, UNRESOLVED}:
        raise SourceError(f"cannot reach {name} at {where} ({parts}); check {flag}")
    raise SourceError(
        f"cannot reach {name} at {where} within {timeout_s:g}s ({parts}); check {flag}, "
        f"that {name} is running and that no firewall drops the connection"
    )
