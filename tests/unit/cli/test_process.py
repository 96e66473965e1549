"""The installed entry point in a real subprocess: start-up imports and last-resort errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kreplica.errors import ExitCode
from tests.unit.cli.conftest import EXAMPLE, REPO

HEAVY = ("confluent_kafka", "kafka", "kazoo", "pyspark", "pandas", "pyarrow")

PROBE = """
import json, sys
from kreplica.cli import main
try:
    main({argv!r})
except SystemExit as exc:
    code = exc.code
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r}))
print(json.dumps({{"code": code, "loaded": loaded}}))
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["expand", "--help"],
        ["sandbox", "--help"],
        ["explain", "--snapshot", str(EXAMPLE), "-t", "orders"],
        ["expand", "--snapshot", str(EXAMPLE), "-t", "orders", "--rf", "4", "--dry-run"],
    ],
)
def test_no_kafka_client_or_spark_is_imported(argv: list[str]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "loaded": []}


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )


CRASH = """
import kreplica.cli.commands as commands
from kreplica.cli import main
def boom(*args, **kwargs):
    raise {exc}
commands.rf_change = boom
main(["expand", "--snapshot", {snap!r}, "-t", "orders", "--rf", "4"{extra}])
"""


def test_unexpected_exception_is_one_line_and_exit_1() -> None:
    proc = _run(CRASH.format(exc="ZeroDivisionError('oops')", snap=str(EXAMPLE), extra=""))
    assert proc.returncode == ExitCode.ERROR
    assert proc.stderr.splitlines() == [
        "error: unexpected ZeroDivisionError: oops; rerun with --debug and report it"
    ]


def test_unexpected_exception_with_debug_shows_traceback() -> None:
    proc = _run(
        CRASH.format(exc="ZeroDivisionError('oops')", snap=str(EXAMPLE), extra=', "--debug"')
    )
    assert proc.returncode == ExitCode.ERROR
    assert "Traceback" in proc.stderr and "ZeroDivisionError" in proc.stderr


def test_ctrl_c_exits_130_without_traceback() -> None:
    proc = _run(CRASH.format(exc="KeyboardInterrupt()", snap=str(EXAMPLE), extra=""))
    assert proc.returncode == ExitCode.INTERRUPTED == 130
    assert "Traceback" not in proc.stderr


def test_console_script_runs() -> None:
    kreplica = REPO / ".venv" / "bin" / "kreplica"
    if not kreplica.exists():
        pytest.skip("console script not installed")
    proc = subprocess.run([str(kreplica), "--version"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout.startswith("kreplica ")


def test_python_dash_m() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kreplica", "nope"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == ExitCode.USAGE
    assert proc.stderr.startswith("error: No such command 'nope'")


def test_reader_leaving_early_is_not_a_traceback(tmp_path: Path) -> None:
    brokers = [{"id": b, "rack": f"r{b % 3}"} for b in range(1, 7)]
    parts = [{"partition": p, "replicas": [1 + p % 6, 1 + (p + 1) % 6]} for p in range(3000)]
    snap = tmp_path / "big.json"
    snap.write_text(
        json.dumps(
            {
                "kreplica_snapshot": 1,
                "brokers": brokers,
                "topics": [{"name": "t", "partitions": parts}],
            }
        )
    )
    argv = ["-m", "kreplica", "expand", "--snapshot", str(snap), "-t", "t", "--rf", "3"]
    proc = subprocess.Popen(
        [sys.executable, *argv, "--dry-run", "--limit", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Traceback" not in stderr
    assert "Exception ignored" not in stderr


def test_json_plan_is_byte_identical_across_hash_seeds(tmp_path: Path) -> None:
    """Promise 5: same input and options, same bytes, whatever the interpreter's hash seed."""
    outputs = set()
    for seed in ("0", "1", "12345"):
        out = tmp_path / f"plan-{seed}.json"
        proc = subprocess.run(
            [
                *(sys.executable, "-m", "kreplica", "plan", "--snapshot", str(EXAMPLE)),
                *("--topics", ".*", "--rf", "3", "--fix-racks", "--dry-run"),
                *("--output", "json", "--out", str(out)),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        files = [
            out,
            out.with_name(f"plan-{seed}.kreplica.json"),
            out.with_name(f"plan-{seed}.rollback.json"),
        ]
        document = proc.stdout.replace(str(tmp_path), "TMP").replace(f"plan-{seed}", "plan")
        outputs.add((document, *(f.read_text() for f in files)))
    assert len(outputs) == 1
