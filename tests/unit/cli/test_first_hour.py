"""What a new user meets in the first hour: --out never overwrites a plan silently, explain on
an empty cluster says so, help texts list only what a command uses, errors name where a value
came from (the flag, the variable, the --cluster entry)."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from kreplica.cli import output
from kreplica.errors import ExitCode
from kreplica.executor.journal import Journal
from tests.unit.cli.conftest import run_cli

EXPAND = ["expand", "-t", "orders", "--rf", "4", "--dry-run"]


def _files(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir())


def test_out_refuses_to_overwrite_plan_files_unless_force_out(
    tmp_path: Path, example: Path
) -> None:
    out = tmp_path / "orders-rf4.json"
    args = [*EXPAND, "--snapshot", str(example), "--out", str(out)]
    assert run_cli(args).code == 0
    written = {p: p.read_text() for p in tmp_path.iterdir()}
    assert _files(tmp_path) == [
        "orders-rf4.json",
        "orders-rf4.kreplica.json",
        "orders-rf4.rollback.json",
        "orders-rf4.rollback.kreplica.json",
    ]
    for p in written:
        p.write_text("{}")  # an older plan under the same name

    again = run_cli(args)
    assert again.code == ExitCode.USAGE
    lines = again.stderr.splitlines()
    assert len(lines) == 1 and "pass --force-out to overwrite" in lines[0], again.stderr
    for p in written:
        assert str(p) in lines[0]
        assert p.read_text() == "{}", "a refused --out must leave the old files alone"

    forced = run_cli([*args, "--force-out"])
    assert forced.code == 0, forced.stderr
    assert {p: p.read_text() for p in tmp_path.iterdir()} == written


def test_out_refuses_when_only_one_sibling_exists(tmp_path: Path, example: Path) -> None:
    out = tmp_path / "plan.json"
    (tmp_path / "plan.rollback.json").write_text("{}")
    result = run_cli([*EXPAND, "--snapshot", str(example), "--out", str(out), "--output", "json"])
    assert result.code == ExitCode.USAGE
    envelope = json.loads(result.stdout)
    assert (
        envelope["status"] == "error" and "plan.rollback.json" in envelope["errors"][0]["message"]
    )
    assert not out.exists()


def test_force_out_keeps_a_journal_of_an_unfinished_apply(tmp_path: Path, example: Path) -> None:
    out = tmp_path / "plan.json"
    args = [*EXPAND, "--snapshot", str(example), "--out", str(out)]
    assert run_cli(args).code == 0
    journal = Journal(tmp_path / "plan.journal.jsonl")
    journal.append({"event": "start", "plan": str(out)})
    result = run_cli([*args, "--force-out"])
    assert result.code == ExitCode.USAGE
    assert "did not finish" in result.stderr and "--resume" in result.stderr
    assert journal.exists()
    journal.append({"event": "finish"})
    assert run_cli([*args, "--force-out"]).code == 0
    assert not journal.exists(), "a finished apply's journal goes with the plan it belonged to"


def test_explain_on_an_empty_cluster_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"kreplica_snapshot": 1, "brokers": [{"id": 1}], "topics": []}))
    table = run_cli(["explain", "--snapshot", str(empty)])
    assert table.code == 0
    assert table.stdout.startswith("nothing to explain: the cluster (snapshot ")
    assert "has no topics" in table.stdout
    data = run_cli(["explain", "--snapshot", str(empty), "--output", "json"]).json()["data"]
    assert data["topics"] == [] and "has no topics" in data["message"]
    markdown = run_cli(["explain", "--snapshot", str(empty), "--output", "markdown"])
    assert "has no topics" in markdown.stdout


def _help(*command: str) -> str:
    result = run_cli([*command, "--help"], env={"COLUMNS": "100"})
    assert result.code == 0
    return result.stdout


def test_help_lists_only_what_the_command_uses() -> None:
    assert "--brokers" not in _help("shrink") and "--exclude-brokers" not in _help("shrink")
    assert "--brokers" in _help("expand")
    listed = re.compile(r"^\s+--force\s", re.MULTILINE)
    assert not listed.search(_help("add-partitions"))
    assert listed.search(_help("set-rf"))
    assert "--force-out" in _help("expand") and "--force-out" in _help("add-partitions")
    assert "5 when a" in " ".join(_help("check").split())


def test_sandbox_help_has_no_typer_placeholders_or_cut_summaries() -> None:
    # (typer's test runner renders help 80 columns wide: the summaries fit a small terminal)
    for command in ("up", "status", "down", "stop-broker", "start-broker", "kafka"):
        options = [line for line in _help("sandbox", command).splitlines() if "  --" in line]
        for line in options:  # metavars as in the other commands: --name NAME, --brokers N
            assert "<str>" not in line and "<int" not in line and "<float" not in line, line
            assert "<table|json>" not in line and "<zk|kraft>" not in line, line
    summaries = _help("sandbox").split("Commands:")[-1]
    summaries += "\n".join(
        line
        for line in _help().split("Commands:")[-1].splitlines()
        if line.split()[:1] in (["sandbox"], ["cancel"], ["elect"], ["verify"], ["throttles"])
    )
    assert "..." not in summaries, summaries


def test_snapshot_help_says_the_file_is_json_whatever_output_says() -> None:
    assert "A snapshot is JSON whatever --output says" in " ".join(_help("snapshot").split())


def test_bad_output_names_the_variable_only_when_it_came_from_there(example: Path) -> None:
    args = ["explain", "--snapshot", str(example)]
    flag = run_cli([*args, "--output", "yaml"])
    assert flag.code == ExitCode.USAGE and "KREPLICA_OUTPUT" not in flag.stderr
    assert "'yaml' is not one of" in flag.stderr
    env = run_cli(args, env={"KREPLICA_OUTPUT": "yaml"})
    assert env.code == ExitCode.USAGE and "KREPLICA_OUTPUT" in env.stderr


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(("key", "flag"), [("zookeeper", "--zookeeper"), ("bootstrap_server", "")])
def test_errors_name_the_cluster_entry_not_a_flag_never_given(
    tmp_path: Path, key: str, flag: str
) -> None:
    config = tmp_path / "clusters.toml"
    config.write_text(f'[clusters.prod]\n{key} = "127.0.0.1:{_closed_port()}"\n')
    result = run_cli(["explain", "--cluster", "prod"], env={"KREPLICA_CONFIG": str(config)})
    assert result.code == ExitCode.SOURCE
    line = result.stderr.strip()
    assert f"check `{key}` of cluster 'prod' in {config}" in line, line
    assert "--zookeeper" not in line and "--bootstrap-server" not in line


def test_errors_name_the_variable_the_source_came_from() -> None:
    address = f"127.0.0.1:{_closed_port()}"
    result = run_cli(["explain"], env={"KREPLICA_BOOTSTRAP_SERVER": address})
    assert result.code == ExitCode.SOURCE
    assert "check KREPLICA_BOOTSTRAP_SERVER and" in result.stderr


def test_flag_names_are_reset_between_runs(example: Path, tmp_path: Path) -> None:
    # a run's state ends with it: nothing of it is seen after it (nor by the next run)
    config = tmp_path / "kreplica.toml"
    config.write_text(f'[clusters.prod]\nsnapshot = "{example}"\n')
    run_cli(["explain", "--cluster", "prod"], env={"KREPLICA_CONFIG": str(config)})
    assert output.state().flag_names == {}
