"""Each command reads and parses its plan file once: the executor takes the plan loaded (one
parse, the CLI's or kreplica.api's) and names the files beside it in one place
(planfile.plan_siblings). Counted with a wrapper around the read."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import kreplica
from kreplica.executor import facade, planfile
from kreplica.executor.options import ApplyOptions
from tests.unit.cli.conftest import run_cli
from tests.unit.executor.test_apply_loop import START, TARGET
from tests.unit.executor.test_facade import LeaderlessCluster


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """File name -> how often planfile read it."""
    counted: Counter[str] = Counter()
    read = planfile.read_user_file

    def counting(path: Path, *args: Any, **kwargs: Any) -> str:
        counted[Path(path).name] += 1
        return read(path, *args, **kwargs)

    monkeypatch.setattr(planfile, "read_user_file", counting)
    return counted


def _write_plan(tmp_path: Path) -> Path:
    path = tmp_path / "plan.json"
    partitions = [
        {"topic": t, "partition": p, "replicas": list(r)} for (t, p), r in sorted(TARGET.items())
    ]
    path.write_text(json.dumps({"version": 1, "partitions": partitions}))
    return path


def test_the_library_reads_the_plan_once_per_command(tmp_path: Path, reads: Counter[str]) -> None:
    path = _write_plan(tmp_path)
    connection = facade.Connection(LeaderlessCluster(START, polls=1))  # type: ignore[arg-type]
    options = ApplyOptions(poll_interval_s=0, elect_leaders=True)
    result = kreplica.apply(connection, path, options)
    assert sorted(result.moved) == sorted(TARGET) and result.election is not None
    assert reads == {"plan.json": 1}  # the apply and the election after it: one read
    for command in (kreplica.resume, kreplica.verify, kreplica.cancel):
        reads.clear()
        command(connection, path)
        assert reads == {"plan.json": 1}, command.__name__


def test_the_cli_reads_the_plan_once_per_command(
    tmp_path: Path, reads: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write_plan(tmp_path)
    cluster = LeaderlessCluster(START, polls=1)

    @contextmanager
    def connect(**_: Any) -> Iterator[facade.Connection]:
        yield facade.Connection(cluster)  # type: ignore[arg-type]

    monkeypatch.setattr(facade, "connect", connect)
    monkeypatch.chdir(tmp_path)
    env = {"KREPLICA_POLL_INTERVAL": "0", "KREPLICA_STATE_DIR": str(tmp_path / "state")}
    source = ["--bootstrap-server", "127.0.0.1:1"]
    commands = [
        ["apply", str(path), *source],
        ["apply", str(path), *source, "--resume"],
        ["verify", str(path), *source],
        ["status", str(path), *source, "--interval", "0"],
        ["elect", str(path), *source],
        ["cancel", str(path), *source],
    ]
    for args in commands:
        reads.clear()
        run = run_cli(args, env)
        assert run.code == 0, (args, run.stderr)
        assert reads == {"plan.json": 1}, args
