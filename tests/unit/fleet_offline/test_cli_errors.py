"""`kreplica fleet` bad input: one line on stderr and the documented exit code, before Spark."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kreplica.errors import ExitCode
from tests.unit.cli.conftest import run_cli

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("command", ["audit", "plan"])
def test_bad_policy_is_one_line_and_exit_2(command: str, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[[rule]]\ntopics = '.*'\nrf = 'three'\n")
    result = run_cli(
        ["fleet", command, "--input", str(tmp_path), "--out", str(tmp_path / "o"),
         "--policy", str(policy)]
    )  # fmt: skip
    assert result.code == ExitCode.USAGE
    assert result.stderr.splitlines() == [
        f"error: policy '{policy}': rule[0].rf must be a whole number >= 1, got 'three'"
    ]


def test_plan_without_target_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli(["fleet", "plan", "--input", str(tmp_path), "--out", str(tmp_path / "o")])
    assert result.code == ExitCode.USAGE
    assert "nothing to plan" in result.stderr


def test_no_java_is_one_line_naming_what_to_install(tmp_path: Path) -> None:
    # Without the fleet extra the first thing missing is PySpark, not Java.
    pytest.importorskip("pyspark", reason="the fleet extra is not installed")
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)  # the venv's bin: python, no java
    proc = subprocess.run(
        [sys.executable, "-m", "kreplica", "fleet", "audit", "--input", str(tmp_path),
         "--out", str(tmp_path / "o"), "--rf", "3"],
        capture_output=True, text=True, env=env, cwd=REPO, check=False,
    )  # fmt: skip
    assert proc.returncode == ExitCode.SOURCE
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert "Java 17" in errors[0] and ("JAVA_HOME" in errors[0] or "kreplica[fleet]" in errors[0])
