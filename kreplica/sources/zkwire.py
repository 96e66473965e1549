"""Many znode reads in one pipelined stream, on a ZooKeeper session of its own (no kazoo).

kazoo sends one request per turn of its connection thread and wakes that thread once per
request: 20,000 partition-state reads took 5-15 s on a busy 2-core machine. Here the requests
are written a window at a time and the answers parsed as they stream back, in the calling
thread. Only plain, unauthenticated connections are read this way; ZooKeeperSource keeps kazoo
for TLS, SASL and digest logins, and falls back to it when this reader fails (WireError).

ZooKeeper's wire format (jute, big-endian), the parts used: every frame is a 4-byte length then
its body. ConnectRequest: protocolVersion int, lastZxidSeen long, timeOut int, sessionId long,
passwd buffer (int length + bytes), readOnly bool; ConnectResponse: protocolVersion int, timeOut
int, sessionId long, passwd buffer. A request: xid int, type int (4 getData, -11 closeSession),
then getData's path string (int length + UTF-8) and watch bool. A reply: xid int, zxid long,
err int (0 ok, -101 no node), then for getData the data buffer (length -1: null) and a Stat.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence

_GET_DATA = 4
_CLOSE_SESSION = -11
_NO_NODE = -101
_WINDOW = 1000  # requests in flight at most: bounds what the server queues for us
_HEADER = struct.Struct(">iqi")  # xid, zxid, err
_REQUEST = struct.Struct(">iiii")  # length, xid, type, path length


class WireError(Exception):
    """This reader cannot answer (refused, an error code, a frame it does not expect)."""


def split_connect(connect: str) -> tuple[list[tuple[str, int]], str]:
    """`HOST:PORT[,HOST:PORT...][/chroot]` → ([(host, port)...], chroot or "")."""
    hosts_part, slash, chroot = connect.strip().partition("/")
    chroot = f"/{chroot}".rstrip("/") if slash else ""
    hosts = []
    for item in hosts_part.split(","):
        item = item.strip()
        if not item:
            continue
        host, colon, port = item.rpartition(":")
        if not colon or not port.isdigit():
            host, port = item, "2181"
        hosts.append((host.strip("[]"), int(port)))
    return hosts, chroot


def _connect_frame(timeout_ms: int) -> bytes:
    body = struct.pack(">iqiqi", 0, 0, timeout_ms, 0, 16) + b"\0" * 16 + b"\0"
    return struct.pack(">i", len(body)) + body


def _get_data_frame(xid: int, path: bytes) -> bytes:
    # length covers xid, type, path length, path and the watch flag
    return _REQUEST.pack(13 + len(path), xid, _GET_DATA, len(path)) + path + b"\0"


class _Reader:
    """Whole frames off a socket, buffered."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.pos = 0

    def frame(self) -> bytes:
        while True:
            have = len(self.buf) - self.pos
            if have >= 4:
                (size,) = struct.unpack_from(">i", self.buf, self.pos)
                if size < 0:
                    raise WireError(f"negative frame length {size}")
                if have >= 4 + size:
                    start = self.pos + 4
                    self.pos = start + size
                    return bytes(self.buf[start : start + size])
            if self.pos:  # keep the buffer from growing without end
                del self.buf[: self.pos]
                self.pos = 0
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise WireError("ZooKeeper closed the connection")
            self.buf += chunk


def read_znodes(connect: str, paths: Sequence[str], *, timeout_s: float) -> dict[str, bytes | None]:
    """The data of every path (None: no such znode), read over one new session: the requests
    go out `_WINDOW` at a time while the answers are parsed. WireError when any read fails
    (the caller reads again another way, which reports the error properly)."""
    hosts, chroot = split_connect(connect)
    if not paths:
        return {}
    last: Exception | None = None
    for host, port in hosts:
        try:
            sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as exc:
            last = exc
            continue
        try:
            return _session(sock, chroot, paths, timeout_s)
        except (OSError, struct.error) as exc:
            raise WireError(str(exc)) from None
        finally:
            sock.close()
    raise WireError(f"no ZooKeeper server answered ({last})")


def _session(
    sock: socket.socket, chroot: str, paths: Sequence[str], timeout_s: float
) -> dict[str, bytes | None]:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(_connect_frame(max(6000, int(timeout_s * 1000))))
    reader = _Reader(sock)
    answer = reader.frame()
    if len(answer) < 16 or struct.unpack_from(">i", answer, 4)[0] <= 0:
        raise WireError("ZooKeeper refused the session")
    encoded = [(chroot + path).encode() for path in paths]
    out: dict[str, bytes | None] = {}
    sent = 0
    received = 0
    while received < len(paths):
        if sent < len(paths) and sent - received < _WINDOW:
            batch = range(sent, min(len(paths), received + 2 * _WINDOW))
            sock.sendall(b"".join(_get_data_frame(i + 1, encoded[i]) for i in batch))
            sent = batch.stop
        frame = reader.frame()
        xid, _zxid, err = _HEADER.unpack_from(frame, 0)
        if xid != received + 1:
            raise WireError(f"answer {xid} came for request {received + 1}")
        path = paths[received]
        if err == _NO_NODE:
            out[path] = None
        elif err != 0:
            raise WireError(f"error {err} reading {path}")
        else:
            (size,) = struct.unpack_from(">i", frame, _HEADER.size)
            start = _HEADER.size + 4
            out[path] = None if size < 0 else frame[start : start + size]
        received += 1
    sock.sendall(struct.pack(">iii", 8, len(paths) + 1, _CLOSE_SESSION))  # ends the session now
    return out
