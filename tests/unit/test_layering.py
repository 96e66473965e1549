"""The pure core imports nothing outside the standard library (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PURE_MODULES = [
    "kreplica.errors",
    "kreplica.model",
    "kreplica.sources.snapshot",
    "kreplica.userfiles",
    "kreplica.kafka",
    "kreplica.planner",
    "kreplica.executor",
    "kreplica.executor.moves",
    "kreplica.executor.throttles",
    "kreplica.executor.throttle_confirm",
    "kreplica.executor.waves",
    "kreplica.executor.journal",
    "kreplica.executor.status",
]

PROBE = """
import importlib, json, sys
before = set(sys.modules)
importlib.import_module({module!r})
loaded = sorted(
    name for name in set(sys.modules) - before
    if name.split(".")[0] not in sys.stdlib_module_names and name.split(".")[0] != "kreplica"
)
print(json.dumps(loaded))
"""


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_module_loads_only_stdlib(module: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == [], f"{module} pulled in third-party modules"
