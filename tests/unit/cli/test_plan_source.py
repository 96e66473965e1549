"""A command on a plan file given no cluster source takes the one the plan's journal recorded
(so the `kreplica apply PLAN.json --resume` an interrupted apply prints works as written); a
journal that records none is one line naming it and what to pass. The resumes themselves, on
real clusters: tests/integration/test_resume.py."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from kreplica.cli.config import resolve_source
from kreplica.errors import ExitCode
from kreplica.executor.journal import Journal
from tests.unit.cli.conftest import run_cli


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _plan(folder: Path, source: dict[str, str] | None) -> Path:
    """A plan with an interrupted apply's journal (a start and a submit, no finish)."""
    plan = folder / "p.json"
    rows = [{"topic": "t", "partition": 0, "replicas": [1, 2]}]
    plan.write_text(json.dumps({"version": 1, "partitions": rows}))
    journal = Journal(folder / "p.journal.jsonl")
    start: dict[str, Any] = {
        "event": "start",
        "plan": str(plan),
        "cluster_id": "c",
        "resume": False,
    }
    if source is not None:
        start["source"] = source
    journal.append(start)
    journal.append({"event": "submit", "topic": "t", "partition": 0, "after": [1, 2]})
    return plan


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No config file (so no default cluster) and no KREPLICA_* source variable."""
    return {
        "KREPLICA_CONFIG": str(tmp_path / "absent.toml"),
        "KREPLICA_CLUSTER": "",
        "KREPLICA_SNAPSHOT": "",
        "KREPLICA_ZOOKEEPER": "",
        "KREPLICA_BOOTSTRAP_SERVER": "",
        "KREPLICA_COMMAND_CONFIG": "",
        "NO_COLOR": "1",
    }


@pytest.mark.parametrize("command", ["apply --resume", "verify", "status", "cancel", "elect"])
def test_the_journal_s_source_is_the_one_used(
    command: str, tmp_path: Path, env: dict[str, str]
) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    plan = _plan(tmp_path, {"bootstrap_server": address})
    verb, *flags = command.split()
    result = run_cli([verb, str(plan), *flags, "--timeout", "300"], env)
    # it went to the journal's address (nothing listens there: refused at once, exit 3)
    assert result.code == ExitCode.SOURCE, result.stderr
    assert address in result.stderr
    error = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1
    assert f"cluster: bootstrap {address} (from the journal {tmp_path / 'p.journal.jsonl'})" in (
        result.stderr
    )


def test_a_source_given_wins_over_the_journal_s(tmp_path: Path, env: dict[str, str]) -> None:
    recorded, given = (f"127.0.0.1:{_closed_port()}" for _ in range(2))
    plan = _plan(tmp_path, {"bootstrap_server": recorded})
    result = run_cli(["verify", str(plan), "--bootstrap-server", given, "--timeout", "300"], env)
    assert result.code == ExitCode.SOURCE
    assert given in result.stderr and recorded not in result.stderr


def test_a_journal_without_a_source_is_one_line_saying_what_to_pass(
    tmp_path: Path, env: dict[str, str]
) -> None:
    plan = _plan(tmp_path, None)
    result = run_cli(["apply", str(plan), "--resume"], env)
    assert result.code == ExitCode.USAGE
    assert result.stderr.strip().splitlines() == [
        f"error: no cluster source given, and {tmp_path / 'p.journal.jsonl'} does not record one "
        "(written by an older kreplica); pass --bootstrap-server HOST:PORT, --zookeeper "
        "HOST:PORT or --cluster NAME"
    ]


def test_resume_without_a_journal_or_a_source_says_there_is_nothing_to_resume(
    tmp_path: Path, env: dict[str, str]
) -> None:
    plan = _plan(tmp_path, None)
    (tmp_path / "p.journal.jsonl").unlink()
    result = run_cli(["apply", str(plan), "--resume"], env)
    assert result.code == ExitCode.USAGE
    assert result.stderr.strip().splitlines() == [
        f"error: --resume: no journal at {tmp_path / 'p.journal.jsonl'}, so nothing to resume; "
        "apply without --resume"
    ]


def test_the_record_names_a_cluster_entry_and_never_holds_client_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = 'org.apache.kafka.common.security.plain.PlainLoginModule required password="s3";'
    props = tmp_path / "client.properties"
    props.write_text(f"security.protocol=SASL_SSL\nsasl.jaas.config={secret}\n")
    config = tmp_path / "clusters.toml"
    config.write_text(
        '[clusters.prod]\nbootstrap_server = "kafka:9092"\n'
        '[clusters.prod.client]\n"sasl.password" = "s3"\n'
    )
    env = {"KREPLICA_CONFIG": str(config)}
    by_name = resolve_source(cluster="prod", env=env)
    assert by_name.record() == {"cluster": "prod"}
    monkeypatch.chdir(tmp_path)  # a relative --command-config is recorded as an absolute path
    by_flags = resolve_source(
        bootstrap_server="kafka:9092", zookeeper="zk:2181", command_config=props.name, env={}
    )
    assert by_flags.record() == {
        "bootstrap_server": "kafka:9092",
        "zookeeper": "zk:2181",
        "command_config": str(props),
    }
    assert "s3" not in json.dumps([by_name.record(), by_flags.record()])


def test_a_journal_naming_a_cluster_entry_uses_that_entry(
    tmp_path: Path, env: dict[str, str]
) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    config = tmp_path / "clusters.toml"
    config.write_text(f'[clusters.prod]\nbootstrap_server = "{address}"\n')
    plan = _plan(tmp_path, {"cluster": "prod"})
    result = run_cli(["apply", str(plan), "--resume"], {**env, "KREPLICA_CONFIG": str(config)})
    assert result.code == ExitCode.SOURCE, result.stderr
    assert f"cluster: bootstrap {address} (from cluster 'prod' in {config})" in result.stderr
    assert f"check `bootstrap_server` of cluster 'prod' in {config}" in result.stderr


def test_a_resume_submits_the_way_the_interrupted_apply_did(tmp_path: Path) -> None:
    from kreplica.cli.applying import _via
    from kreplica.cli.options import Options

    plan = _plan(tmp_path, {"zookeeper": "zk:2181"})
    Journal(tmp_path / "p.journal.jsonl").append(
        {"event": "start", "plan": str(plan), "cluster_id": "c", "resume": True, "todo": 1,
         "waiting": 0, "create": 0, "dir_moves": 0, "via": "zookeeper"}
    )  # fmt: skip
    assert _via(Options(resume=True), plan) == "zookeeper"  # as the journal says
    assert _via(Options(resume=True, via="kafka"), plan) == "kafka"  # --via wins
    assert _via(Options(), plan) == "kafka"  # a new apply: the default
