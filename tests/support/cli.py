"""The one way tests run the command line in a child process: `python -m kreplica ARGS...`.

The child always runs this checkout's code (the repository root first on PYTHONPATH, whatever
the editable install points at), without colour, at a fixed width. Two starting environments:
the test's own (`os.environ`, which tests/conftest.py has already cleaned of the machine's
KREPLICA_* variables and user config; the default) or, with `isolated=True`, a bare PATH and
nothing else, for tests that show a command needs no environment at all. `env` is laid over
either."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
KREPLICA = (sys.executable, "-m", "kreplica")
BARE_PATH = "/usr/bin:/bin"


def kreplica_argv(*args: str) -> list[str]:
    """The argument vector, for tests that need a Popen (to interrupt or watch the child)."""
    return [*KREPLICA, *args]


def kreplica_env(
    env: Mapping[str, str] | None = None, *, columns: int | None = 120, isolated: bool = False
) -> dict[str, str]:
    """The child's environment: see the module's docstring. `columns=None` leaves COLUMNS as
    the starting environment has it."""
    base = {"PATH": BARE_PATH} if isolated else dict(os.environ)
    inherited = base.get("PYTHONPATH")
    full = {
        **base,
        "NO_COLOR": "1",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), inherited) if p),
    }
    if columns is not None:
        full["COLUMNS"] = str(columns)
    full.update(env or {})
    return full


def run_kreplica(
    *args: str,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    columns: int | None = 120,
    isolated: bool = False,
    timeout: float = 180,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m kreplica ARGS...` to the end; never raises on a non-zero exit (the tests
    assert on the code), only on `timeout` (a hung command fails its test)."""
    return subprocess.run(
        kreplica_argv(*args),
        cwd=cwd,
        env=kreplica_env(env, columns=columns, isolated=isolated),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class OutputLines(list[str]):
    """Every line a child prints on stdout and stderr, appended as it comes (reader threads,
    so that a full pipe never blocks the child). `complete` waits for the readers to reach
    the end of both streams: after the child exits, instead of a sleep."""

    def __init__(self) -> None:
        super().__init__()
        self.readers: list[threading.Thread] = []

    def complete(self, timeout_s: float = 60) -> OutputLines:
        for reader in self.readers:
            reader.join(timeout_s)
        return self


def collect_lines(proc: subprocess.Popen[str]) -> OutputLines:
    lines = OutputLines()

    def read(stream: Any) -> None:
        for line in stream:
            lines.append(line)

    for stream in (proc.stdout, proc.stderr):
        reader = threading.Thread(target=read, args=(stream,), daemon=True)
        reader.start()
        lines.readers.append(reader)
    return lines
