from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kreplica.cli.app import app

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "cluster.json"
GOLDEN = REPO / "tests" / "golden"


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli(args: list[str], env: Mapping[str, str] | None = None) -> Run:
    """Run kreplica in-process the way the console script does (errors mapped by the group)."""
    result = CliRunner().invoke(app, args, env=dict(env or {}), catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def cli() -> Any:
    return run_cli


@pytest.fixture
def example() -> Path:
    return EXAMPLE


@pytest.fixture
def example_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXAMPLE.read_text())
    return data


@pytest.fixture(autouse=True)
def _no_forced_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI that forces colour (FORCE_COLOR, TTY_COMPATIBLE) must not change golden text."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CLICOLOR_FORCE"):
        monkeypatch.delenv(name, raising=False)
