"""A contributor without the fleet extra (pyspark, pandas, pyarrow, matplotlib) collects the
unit tests without an error: the ones that need it skip (`pytest.importorskip`). Checked by
collecting tests/unit in a fresh interpreter where those packages cannot be imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FLEET_EXTRA = ("pyspark", "py4j", "pandas", "pyarrow", "matplotlib")

COLLECT = textwrap.dedent(
    f"""
    import sys

    class NotInstalled:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in {FLEET_EXTRA!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, NotInstalled())
    import pytest

    args = ["--collect-only", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "tests/unit"]
    sys.exit(pytest.main(args))
    """
)


def test_unit_tests_collect_without_the_fleet_extra() -> None:
    done = subprocess.run(
        [sys.executable, "-c", COLLECT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    tail = done.stdout[-3000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    assert "error" not in done.stdout.splitlines()[-1], tail
    assert "tests/unit/fleet_offline/test_resolve.py::" not in done.stdout, "collected, not skipped"
