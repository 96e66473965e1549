"""The sandbox's JVM processes: which pids are still ours, stopping them, their logs, ports."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Sequence
from pathlib import Path

# Lean JVMs: 2-core machines run 4+ of them at once. C1 only and SerialGC start faster and use
# less memory; the sandbox carries test traffic, not load.
JVM_COMMON = [
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Xss1m",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
]
ZK_HEAP = ["-Xms32m", "-Xmx128m"]
BROKER_HEAP = ["-Xms128m", "-Xmx384m"]


def is_ours(pid: int, state_dir: str) -> bool:
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


def signal_all(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def stop_pids(pids: Sequence[int], state_dir: str, grace_s: float) -> None:
    """SIGTERM (Kafka's shutdown hook runs), then SIGKILL whatever outlives the grace period."""
    live = [p for p in pids if is_ours(p, state_dir)]
    signal_all(live, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while live and time.monotonic() < deadline:
        time.sleep(0.1)
        live = [p for p in live if is_ours(p, state_dir)]
    signal_all(live, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while live and time.monotonic() < deadline:
        time.sleep(0.05)
        live = [p for p in live if is_ours(p, state_dir)]


def log_tail(path: str | Path, lines: int = 25) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def free_ports(count: int) -> list[int]:
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


def read_log(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""
