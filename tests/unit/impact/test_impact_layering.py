"""kreplica.impact is pure core: standard library only (same probe as test_layering.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.unit.test_layering import PROBE


@pytest.mark.parametrize(
    "module",
    ["kreplica.impact", "kreplica.impact.partitioner", "kreplica.impact.assignors"],
)
def test_impact_loads_only_stdlib(module: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == [], f"{module} pulled in third-party modules"
