"""The fleet's pure modules load only the standard library, and no command but
`kreplica fleet audit|plan` loads pyspark, pandas, pyarrow or matplotlib (fresh interpreters)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "cluster.json"
HEAVY = ("pyspark", "pandas", "pyarrow", "matplotlib", "py4j")

PURE = """
import importlib, json, sys
before = set(sys.modules)
importlib.import_module({module!r})
print(json.dumps(sorted(
    name for name in set(sys.modules) - before
    if name.split(".")[0] not in sys.stdlib_module_names and name.split(".")[0] != "kreplica"
)))
"""

CLI = """
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
    "module",
    [
        "kreplica.fleet",
        "kreplica.fleet.policy",
        "kreplica.fleet.adapter",
        "kreplica.fleet.records",
        "kreplica.fleet.synth",
        "kreplica.fleet.report",
        "kreplica.fleet.collect",
        "kreplica.fleet.preflight",
        "kreplica.fleet.outfiles",
    ],
)
def test_pure_fleet_modules_load_only_stdlib(module: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PURE.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["fleet", "--help"],
        ["fleet", "audit", "--help"],
        ["fleet", "plan", "--help"],
        ["explain", "--snapshot", str(EXAMPLE), "-t", "orders"],
        ["plan", "--snapshot", str(EXAMPLE), "-t", "orders", "--rf", "4", "--dry-run"],
    ],
)
def test_cli_does_not_import_spark(argv: list[str]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CLI.format(argv=argv, heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "loaded": []}


def test_synth_does_not_import_spark(tmp_path: Path) -> None:
    argv = ["fleet", "synth", "--clusters", "2", "--partitions", "50", "--out", str(tmp_path)]
    out = subprocess.run(
        [sys.executable, "-c", CLI.format(argv=argv, heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "loaded": []}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["synth-0000.json", "synth-0001.json"]
