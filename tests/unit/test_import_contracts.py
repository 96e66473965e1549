"""The layering of DESIGN.md holds: the import-linter contracts in pyproject.toml all keep.

Static analysis of the source (no kreplica module is imported), well under a second.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="import-linter comes with the dev extra")

ROOT = Path(__file__).resolve().parents[2]


def test_every_import_contract_is_kept() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
    script = Path(sys.executable).parent / "lint-imports"
    command = [str(script)] if script.exists() else [shutil.which("lint-imports") or "lint-imports"]
    # This checkout's kreplica first on the path, whatever the venv's editable install points at.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [*command, "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # Every contract listed ran (a misspelt or unknown type would not be counted as kept).
    assert f"Contracts: {len(contracts)} kept, 0 broken." in done.stdout, done.stdout
