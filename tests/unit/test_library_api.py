"""The library's front door (kreplica/__init__.py, kreplica/api.py, docs/library.md): every
name in `__all__` resolves, `import kreplica` loads nothing else, and the offline example of
docs/library.md prints what the page says and writes the bytes the CLI's --out writes."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kreplica

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "library.md"
EXAMPLE = REPO / "examples" / "cluster.json"


def _blocks(kind: str) -> list[str]:
    """The page's fenced blocks whose info string is `kind` ("" for plain text), in order."""
    blocks: list[tuple[str, list[str]]] = []
    inside = False
    for line in DOC.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("```"):
            if not inside:
                blocks.append((line[3:].strip(), []))
            inside = not inside
        elif inside:
            blocks[-1][1].append(line)
    return ["".join(body) for info, body in blocks if info == kind]


def test_every_public_name_resolves() -> None:
    assert "plan" in kreplica.__all__ and "apply" in kreplica.__all__
    for name in kreplica.__all__:
        assert getattr(kreplica, name) is not None, name
    with pytest.raises(AttributeError):
        _ = kreplica.no_such_name  # type: ignore[attr-defined]


def test_importing_kreplica_loads_nothing_else() -> None:
    code = "import sys, kreplica; print(sorted(m for m in sys.modules if m.startswith('kreplica')))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.stdout.strip() == "['kreplica']"


def test_the_offline_example_prints_what_the_page_says_and_writes_the_cli_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = _blocks("python")[0]
    expected = _blocks("")[0]  # the "prints" block right after it
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "cluster.json").write_bytes(EXAMPLE.read_bytes())
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(DOC), "exec"), {})
    assert printed.getvalue() == expected
    (tmp_path / "cli").mkdir()
    from kreplica.cli.app import run

    argv = ["expand", "--snapshot", "examples/cluster.json", "--topic", "orders", "--rf", "4"]
    assert run([*argv, "--dry-run", "--out", "cli/orders-rf4.json", "--output", "json"]) == 0
    for name in ("orders-rf4.json", "orders-rf4.rollback.json", "orders-rf4.kreplica.json"):
        assert (tmp_path / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name


def test_write_plan_refuses_to_overwrite_unless_asked(tmp_path: Path) -> None:
    from kreplica.errors import UsageError

    snapshot = kreplica.read_cluster(snapshot=EXAMPLE)
    plan = kreplica.plan(snapshot, [kreplica.TopicRequest("orders", rf=4)])
    target = tmp_path / "p.json"
    kreplica.write_plan(plan, snapshot, target)
    with pytest.raises(UsageError, match="overwrite=True"):
        kreplica.write_plan(plan, snapshot, target)
    assert kreplica.write_plan(plan, snapshot, target, overwrite=True)["reassignment"] == target
