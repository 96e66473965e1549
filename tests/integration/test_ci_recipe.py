"""docs/ci.md's GitHub Actions job, run as written: the commands of its "Apply and verify a
plan" and "Stop the cluster" steps, read from the page, in a fresh folder with the safe starts
on. The cluster is one the job has just started (its own sandbox, in this test's temporary
folder): a first start, not a failover, so the applies start at once, without
`--controller-settle 0`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
STEPS = ("Apply and verify a plan", "Stop the cluster")


def step_commands(page: str, step: str) -> str:
    """The `run:` text of the workflow step named `step` in the page's YAML block (a `run: |`
    block, or a one-line `run:`)."""
    lines = page.split("```yaml\n", 1)[1].split("```", 1)[0].splitlines()
    start = lines.index(f"      - name: {step}")
    for number, line in enumerate(lines[start + 1 :], start + 1):
        if line.startswith("      - "):
            break
        key, _, value = line.strip().partition(" ")
        if key != "run:":
            continue
        if value != "|":
            return value + "\n"
        indent = len(line) - len(line.lstrip()) + 2
        body = []
        for more in lines[number + 1 :]:
            if more.strip() and len(more) - len(more.lstrip()) < indent:
                break
            body.append(more[indent:])
        return "\n".join(body) + "\n"
    raise AssertionError(f"docs/ci.md: step {step!r} has no run:")


def test_the_ci_recipe_applies_and_verifies_on_a_fresh_cluster(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    apply_step, stop_step = (step_commands(page, s) for s in STEPS)
    assert "kreplica expand" in apply_step and "--controller-settle" not in apply_step
    # the safe starts on, as a CI job has them (tests/conftest.py turns them off)
    off = ("KREPLICA_CONTROLLER_SETTLE", "KREPLICA_ALLOW_UNDER_REPLICATED")
    env = {k: v for k, v in os.environ.items() if k not in off}
    env.update(
        # kreplica and `python` from this interpreter's environment, as `pip install` gives
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        TMPDIR=str(tmp_path),  # the sandbox's state: this test's, whatever its name
        NO_COLOR="1",
    )
    work = tmp_path / "job"
    work.mkdir()

    def run(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", script],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )

    try:
        done = run(apply_step)
    finally:
        stopped = run(stop_step)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr}"
    assert stopped.returncode == 0, stopped.stderr
    print(done.stdout[-1500:])
    for plan in ("expand.json", "shrink.json"):
        assert f"{plan}: all 6 partition(s) as planned, nothing in flight" in done.stdout
    assert "became the active controller" not in done.stderr
    assert not (tmp_path / f"kreplica-sandbox-{os.getuid()}" / "ci").exists()  # down, gone
