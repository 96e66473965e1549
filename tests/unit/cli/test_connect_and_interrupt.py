"""The CLI in real processes against real local sockets: a refused connection fails in about a
second with one line that says so, silence waits --timeout, and Ctrl-C at any point is one
line, exit 130, and with --output json an envelope with status "interrupted"."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from kreplica.errors import ExitCode
from tests.unit.cli.conftest import EXAMPLE, REPO

SOURCES = ["--bootstrap-server", "--zookeeper"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A port that accepts connections and never answers (a hung server)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
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


def _env() -> dict[str, str]:
    return {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}


def _kreplica(*args: str) -> list[str]:
    return [sys.executable, "-m", "kreplica", *args]


def _sigint_default() -> None:
    # a test runner started in the background inherits SIGINT ignored; a user's shell does not
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("flag", SOURCES)
def test_connection_refused_fails_at_once_with_one_line(flag: str) -> None:
    started = time.monotonic()
    proc = subprocess.run(
        _kreplica("explain", flag, f"127.0.0.1:{_closed_port()}"),
        capture_output=True,
        text=True,
        env=_env(),
        cwd=REPO,
        check=False,
        timeout=60,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == ExitCode.SOURCE
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach "), proc.stderr
    assert "connection refused" in lines[0] and flag in lines[0]
    # the default --timeout is 15 s; refused must not wait for it (interpreter start-up included)
    assert elapsed < 3.0, f"took {elapsed:.1f}s"


@pytest.mark.parametrize("flag", SOURCES)
def test_silence_waits_for_the_timeout_and_says_so(flag: str, silent_server: str) -> None:
    started = time.monotonic()
    proc = subprocess.run(
        _kreplica("explain", flag, silent_server, "--timeout", "1.5"),
        capture_output=True,
        text=True,
        env=_env(),
        cwd=REPO,
        check=False,
        timeout=60,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == ExitCode.SOURCE
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "within 1.5s" in lines[0], proc.stderr
    assert "accepted the connection, then said nothing" in lines[0]
    assert 1.5 <= elapsed < 6.0, f"took {elapsed:.1f}s"


@pytest.mark.parametrize("output", ["table", "json"])
@pytest.mark.parametrize("flag", SOURCES)
def test_ctrl_c_while_connecting(flag: str, output: str, silent_server: str) -> None:
    proc = subprocess.Popen(
        _kreplica("explain", flag, silent_server, "--output", output),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=REPO,
        preexec_fn=_sigint_default,
    )
    time.sleep(1.0)  # start-up done, waiting on the server that never answers
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - started < 2.0, "Ctrl-C must not wait for the timeout"
    assert proc.returncode == ExitCode.INTERRUPTED == 130
    assert stderr.splitlines() == ["interrupted; nothing was changed"]
    if output == "json":
        envelope = json.loads(stdout)
        assert envelope["status"] == "interrupted" and envelope["command"] == "explain"
        assert envelope["errors"] == [
            {"code": "interrupted", "message": "interrupted; nothing was changed"}
        ]
    else:
        assert stdout == ""


CRASH = """
import kreplica.cli.commands as commands
from kreplica.cli import main, output
def interrupted(*args, **kwargs):
    {before}
    raise KeyboardInterrupt
commands.rf_change = interrupted
main(["expand", "--snapshot", {snap!r}, "-t", "orders", "--rf", "4"{extra}])
"""


@pytest.mark.parametrize("output", ["table", "json"])
def test_ctrl_c_after_a_change_says_what_was_changed(output: str) -> None:
    # apply (and cancel, elect, throttles --clear) set what an interrupt leaves behind
    note = "interrupted: what was submitted keeps moving, with its throttle; continue with ..."
    code = CRASH.format(
        before=f"output.STATE.interrupt_note = {note!r}",
        snap=str(EXAMPLE),
        extra=f', "--output", "{output}"',
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert proc.returncode == 130
    assert proc.stderr.splitlines() == [note]
    if output == "json":
        envelope = json.loads(proc.stdout)
        assert envelope["status"] == "interrupted"
        assert envelope["errors"][0]["message"] == note


def test_ctrl_c_before_the_command_runs() -> None:
    # an interrupt while the CLI is still being imported or parsed: the same one line
    code = (
        "import kreplica.cli.app as app\n"
        "def run(argv=None):\n"
        "    raise KeyboardInterrupt\n"
        "app.run = run\n"
        "from kreplica.cli import main\n"
        "main(['explain', '--snapshot', 'x.json', '--output', 'json'])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert proc.returncode == 130
    assert proc.stderr.splitlines() == ["interrupted; nothing was changed"]
    assert json.loads(proc.stdout)["status"] == "interrupted"
