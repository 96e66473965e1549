"""The CLI in real processes against real local sockets: a refused connection fails at once with
one line that says so, silence waits --timeout, and Ctrl-C at any point is one line, exit 130,
and with --output json an envelope with status "interrupted".

No tight time limits (the machines are shared and noisy): where "at once" matters, the command
gets a --timeout far longer than the subprocess is allowed to run, so waiting for it fails the
test instead of a stopwatch."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from kreplica.errors import ExitCode
from tests.support.cli import kreplica_argv, kreplica_env
from tests.unit.cli.conftest import EXAMPLE, REPO

SOURCES = ["--bootstrap-server", "--zookeeper"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


LONG_TIMEOUT = "300"  # seconds; no test lets kreplica run that long
RUN_LIMIT_S = 90


class SilentServer(str):
    """host:port of a server that accepts connections and never answers; `accepted` lists
    the connections it took."""

    accepted: list[socket.socket]


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
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
    address = SilentServer(f"127.0.0.1:{server.getsockname()[1]}")
    address.accepted = accepted
    try:
        yield address
    finally:
        stop.set()
        thread.join(2)
        for conn in accepted:
            conn.close()
        server.close()


def _env() -> dict[str, str]:
    return kreplica_env(columns=100)


def _sigint_default() -> None:
    # a test runner started in the background inherits SIGINT ignored; a user's shell does not
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("flag", SOURCES)
def test_connection_refused_fails_at_once_with_one_line(flag: str) -> None:
    # Refused must not wait for --timeout: with 300 s, waiting would hit the run limit.
    proc = subprocess.run(
        kreplica_argv("explain", flag, f"127.0.0.1:{_closed_port()}", "--timeout", LONG_TIMEOUT),
        capture_output=True,
        text=True,
        env=_env(),
        cwd=REPO,
        check=False,
        timeout=RUN_LIMIT_S,
    )
    assert proc.returncode == ExitCode.SOURCE
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach "), proc.stderr
    assert "connection refused" in lines[0] and flag in lines[0]


@pytest.mark.parametrize("flag", SOURCES)
def test_silence_waits_for_the_timeout_and_says_so(flag: str, silent_server: SilentServer) -> None:
    started = time.monotonic()
    proc = subprocess.run(
        kreplica_argv("explain", flag, silent_server, "--timeout", "1.5"),
        capture_output=True,
        text=True,
        env=_env(),
        cwd=REPO,
        check=False,
        timeout=RUN_LIMIT_S,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == ExitCode.SOURCE
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "within 1.5s" in lines[0], proc.stderr
    assert "accepted the connection, then said nothing" in lines[0]
    assert elapsed >= 1.5, f"gave up after {elapsed:.1f}s, before its --timeout"


@pytest.mark.parametrize("output", ["table", "json"])
@pytest.mark.parametrize("flag", SOURCES)
def test_ctrl_c_while_connecting(flag: str, output: str, silent_server: SilentServer) -> None:
    proc = subprocess.Popen(
        kreplica_argv(
            "explain", flag, silent_server, "--output", output, "--timeout", LONG_TIMEOUT
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=REPO,
        preexec_fn=_sigint_default,
    )
    # Start-up is done once it has connected to the server that never answers.
    deadline = time.monotonic() + RUN_LIMIT_S
    while not silent_server.accepted and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert silent_server.accepted, "kreplica never connected"
    time.sleep(0.2)  # and is waiting for the answer
    proc.send_signal(signal.SIGINT)
    # Ctrl-C must not wait for the 300 s timeout: communicate's limit would raise first.
    stdout, stderr = proc.communicate(timeout=RUN_LIMIT_S)
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
        before=f"output.state().interrupt_note = {note!r}",
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
