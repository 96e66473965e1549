"""Bad input never produces a traceback: one `error: ...` line naming the problem and the fix,
and the exit code from kreplica.errors.ExitCode."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import ExitCode
from tests.unit.cli.conftest import EXAMPLE, run_cli

S = ["--snapshot", str(EXAMPLE)]
EXAMPLE_DATA: dict[str, Any] = json.loads(EXAMPLE.read_text())


def _snapshot_file(tmp: Path, mutate: Callable[[dict[str, Any]], Any]) -> str:
    data = json.loads(json.dumps(EXAMPLE_DATA))
    mutate(data)
    path = tmp / "snap.json"
    path.write_text(json.dumps(data))
    return str(path)


def _text_file(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)


def _orders(data: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in data["topics"] if t["name"] == "orders")


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        node: Any = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def _snap(mutate: Callable[[dict[str, Any]], Any]) -> Callable[[Path], list[str]]:
    return lambda tmp: [
        "expand",
        "--snapshot",
        _snapshot_file(tmp, mutate),
        "-t",
        "orders",
        "--rf",
        "4",
        "--dry-run",
    ]


def _args(*args: str) -> Callable[[Path], list[str]]:
    return lambda tmp: list(args)


def _check(plan: Any) -> Callable[[Path], list[str]]:
    def build(tmp: Path) -> list[str]:
        text = plan if isinstance(plan, str) else json.dumps(plan)
        return ["check", *S, _text_file(tmp, "plan.json", text)]

    return build


def _plan_document(**changes: Any) -> dict[str, Any]:
    """A real plan document for `orders` RF 4 from the example snapshot, then edited."""
    from kreplica.planner import PlanOptions, TopicRequest, make_plan
    from kreplica.planner.serialize import plan_document
    from kreplica.sources.snapshot import load_snapshot

    snap = load_snapshot(EXAMPLE)
    doc = plan_document(make_plan(snap, [TopicRequest("orders", rf=4)], PlanOptions()), snap)
    doc.update(changes)
    return doc


def _drifted_before() -> list[dict[str, Any]]:
    before = _plan_document()["before"]
    before[0] = {**before[0], "replicas": list(reversed(before[0]["replicas"]))}
    return before


def _cluster_config(text: str, *args: str) -> Callable[[Path], tuple[list[str], dict[str, str]]]:
    def build(tmp: Path) -> tuple[list[str], dict[str, str]]:
        config = _text_file(tmp, "clusters.toml", text)
        return list(args), {"KREPLICA_CONFIG": config}

    return build


EXPAND = ["expand", *S, "-t", "orders", "--dry-run"]

# (case id, argv builder, environment, exit code, words the message must contain)
CASES: list[tuple[str, Any, dict[str, str], ExitCode, str]] = [
    # --- the snapshot file ---
    (
        "missing-snapshot",
        _args("expand", "--snapshot", "/nope/x.json", "-t", "orders", "--rf", "4"),
        {},
        ExitCode.USAGE,
        "not found",
    ),
    (
        "snapshot-is-dir",
        lambda tmp: ["expand", "--snapshot", str(tmp), "-t", "o", "--rf", "4"],
        {},
        ExitCode.USAGE,
        "cannot read snapshot",
    ),
    (
        "malformed-json",
        lambda tmp: [
            "expand",
            "--snapshot",
            _text_file(tmp, "s.json", "{nope"),
            "-t",
            "o",
            "--rf",
            "4",
        ],
        {},
        ExitCode.USAGE,
        "not valid JSON",
    ),
    (
        "truncated-json",
        lambda tmp: [
            "expand",
            "--snapshot",
            _text_file(tmp, "s.json", EXAMPLE.read_text()[:500]),
            "-t",
            "o",
            "--rf",
            "4",
        ],
        {},
        ExitCode.USAGE,
        "not valid JSON",
    ),
    (
        "empty-file",
        lambda tmp: ["expand", "--snapshot", _text_file(tmp, "s.json", ""), "-t", "o", "--rf", "4"],
        {},
        ExitCode.USAGE,
        "not valid JSON",
    ),
    (
        "not-a-snapshot",
        lambda tmp: [
            "expand",
            "--snapshot",
            _text_file(tmp, "s.json", '{"version": 1, "partitions": []}'),
            "-t",
            "o",
            "--rf",
            "4",
        ],
        {},
        ExitCode.USAGE,
        "kreplica_snapshot",
    ),
    ("future-version", _snap(_set(["kreplica_snapshot"], 2)), {}, ExitCode.USAGE, "version 1"),
    (
        "replicas-not-list",
        _snap(lambda d: _orders(d)["partitions"][3].update(replicas="1,2")),
        {},
        ExitCode.USAGE,
        "topics[3].partitions[3].replicas",
    ),
    (
        "replica-not-int",
        _snap(lambda d: _orders(d)["partitions"][0].update(replicas=[1, "x"])),
        {},
        ExitCode.USAGE,
        "replicas[1]",
    ),
    (
        "duplicate-replica",
        _snap(lambda d: _orders(d)["partitions"][0].update(replicas=[1, 1, 2])),
        {},
        ExitCode.USAGE,
        "twice",
    ),
    (
        "broker-without-id",
        _snap(lambda d: d["brokers"][0].pop("id")),
        {},
        ExitCode.USAGE,
        "brokers[0].id",
    ),
    (
        "duplicate-topic",
        _snap(lambda d: d["topics"].append(_orders(d))),
        {},
        ExitCode.USAGE,
        "repeats topic",
    ),
    # --- the request ---
    (
        "unknown-topic",
        _args("expand", *S, "-t", "ordres", "--rf", "4", "--dry-run"),
        {},
        ExitCode.SOURCE,
        "does not exist",
    ),
    ("rf-zero", _args(*EXPAND, "--rf", "0"), {}, ExitCode.USAGE, "--rf 0"),
    ("rf-above-brokers", _args(*EXPAND, "--rf", "7"), {}, ExitCode.INFEASIBLE, "eligible brokers"),
    (
        "rf-above-eligible",
        _args(*EXPAND, "--rf", "4", "--exclude-brokers", "1-3"),
        {},
        ExitCode.INFEASIBLE,
        "excluded",
    ),
    ("expand-lowers", _args(*EXPAND, "--rf", "2"), {}, ExitCode.USAGE, "kreplica shrink"),
    (
        "shrink-raises",
        _args("shrink", *S, "-t", "orders", "--rf", "5", "--dry-run"),
        {},
        ExitCode.USAGE,
        "kreplica expand",
    ),
    (
        "rf-at-min-insync",
        _args("shrink", *S, "-t", "orders", "--rf", "2", "--dry-run"),
        {},
        ExitCode.INFEASIBLE,
        "min.insync.replicas",
    ),
    (
        "fewer-partitions",
        _args("add-partitions", *S, "-t", "orders", "-p", "6", "--dry-run"),
        {},
        ExitCode.INFEASIBLE,
        "cannot remove partitions",
    ),
    (
        "partitions-zero",
        _args("plan", *S, "-t", "orders", "-p", "0", "--dry-run"),
        {},
        ExitCode.USAGE,
        "--partitions 0",
    ),
    (
        "unknown-strategy",
        _args(*EXPAND, "--rf", "4", "--strategy", "fastest"),
        {},
        ExitCode.USAGE,
        "strategy",
    ),
    (
        "broker-list-garbage",
        _args(*EXPAND, "--rf", "4", "--brokers", "1,two"),
        {},
        ExitCode.USAGE,
        "'two' is not a broker id",
    ),
    (
        "broker-range-backwards",
        _args(*EXPAND, "--rf", "4", "--brokers", "6-1"),
        {},
        ExitCode.USAGE,
        "backwards",
    ),
    (
        "unknown-broker",
        _args(*EXPAND, "--rf", "4", "--brokers", "1,2,3,99"),
        {},
        ExitCode.USAGE,
        "99",
    ),
    (
        "plan-nothing",
        _args("plan", *S, "-t", "orders", "--dry-run"),
        {},
        ExitCode.USAGE,
        "nothing to plan",
    ),
    (
        "plan-no-topic",
        _args("plan", *S, "--rf", "3", "--dry-run"),
        {},
        ExitCode.USAGE,
        "no topic given",
    ),
    (
        "bad-regex",
        _args("plan", *S, "--topics", "ord(ers", "--rf", "3"),
        {},
        ExitCode.USAGE,
        "not a valid regex",
    ),
    (
        "regex-matches-nothing",
        _args("plan", *S, "--topics", "zzz.*", "--rf", "3"),
        {},
        ExitCode.SOURCE,
        "matches no topic",
    ),
    # --- the command line itself (click/typer usage errors) ---
    ("rf-not-a-number", _args(*EXPAND, "--rf", "four"), {}, ExitCode.USAGE, "--rf"),
    ("misspelt-option", _args(*EXPAND, "--rff", "4"), {}, ExitCode.USAGE, "--rff"),
    ("missing-rf", _args(*EXPAND), {}, ExitCode.USAGE, "Missing option '--rf'"),
    ("misspelt-command", _args("expnd", *S), {}, ExitCode.USAGE, "expand"),
    (
        "bad-output-format",
        _args(*EXPAND, "--rf", "4", "--output", "yaml"),
        {},
        ExitCode.USAGE,
        "--output",
    ),
    ("negative-limit", _args(*EXPAND, "--rf", "4", "--limit", "-1"), {}, ExitCode.USAGE, "--limit"),
    # --- cluster sources ---
    (
        "no-source",
        _args("expand", "-t", "orders", "--rf", "4"),
        {"KREPLICA_CONFIG": "/nope/clusters.toml"},
        ExitCode.USAGE,
        "no cluster source",
    ),
    (
        "two-sources",
        _args("expand", *S, "--zookeeper", "zk:2181", "-t", "orders", "--rf", "4"),
        {},
        ExitCode.USAGE,
        "exactly one",
    ),
    (
        "cluster-and-flag",
        _args("expand", *S, "--cluster", "prod", "-t", "orders", "--rf", "4"),
        {},
        ExitCode.USAGE,
        "--cluster and --snapshot",
    ),
    (
        "two-env-sources",
        _args("expand", "-t", "orders", "--rf", "4"),
        {"KREPLICA_SNAPSHOT": str(EXAMPLE), "KREPLICA_ZOOKEEPER": "zk:2181"},
        ExitCode.USAGE,
        "KREPLICA_SNAPSHOT and KREPLICA_ZOOKEEPER",
    ),
    (
        "config-missing",
        _args("expand", "--cluster", "prod", "-t", "orders", "--rf", "4"),
        {"KREPLICA_CONFIG": "/nope/clusters.toml"},
        ExitCode.USAGE,
        "KREPLICA_CONFIG",
    ),
    (
        "config-not-toml",
        _cluster_config("[clusters.prod\n", "explain", "--cluster", "prod"),
        {},
        ExitCode.USAGE,
        "not valid TOML",
    ),
    (
        "config-unknown-cluster",
        _cluster_config('[clusters.prod]\nsnapshot = "x.json"\n', "explain", "--cluster", "stage"),
        {},
        ExitCode.USAGE,
        "clusters: prod",
    ),
    (
        "config-two-sources",
        _cluster_config(
            '[clusters.prod]\nsnapshot = "x.json"\nzookeeper = "zk:2181"\n',
            "explain",
            "--cluster",
            "prod",
        ),
        {},
        ExitCode.USAGE,
        "exactly one",
    ),
    (
        "config-unknown-key",
        _cluster_config('[clusters.prod]\nbootstrap = "k:9092"\n', "explain", "--cluster", "prod"),
        {},
        ExitCode.USAGE,
        "unknown key 'bootstrap'",
    ),
    (
        "command-config-missing",
        _args("explain", *S, "--command-config", "/nope/client.properties"),
        {},
        ExitCode.USAGE,
        "command config",
    ),
    (
        "command-config-bad-escape",
        lambda tmp: [
            "explain",
            *S,
            "--command-config",
            _text_file(tmp, "c.properties", "sasl.username=\\uZZZZ\n"),
        ],
        {},
        ExitCode.USAGE,
        "unicode escape",
    ),
    # --- plan files for `check` and --out ---
    ("check-missing-file", _args("check", *S, "/nope/plan.json"), {}, ExitCode.USAGE, "not found"),
    ("check-malformed", _check("{]"), {}, ExitCode.USAGE, "not valid JSON"),
    (
        "check-wrong-shape",
        _check({"version": 1, "partitions": {"topic": "orders"}}),
        {},
        ExitCode.USAGE,
        "partitions",
    ),
    (
        "check-unknown-partition",
        _check(
            {
                "version": 1,
                "partitions": [{"topic": "orders", "partition": 40, "replicas": [1, 2, 3]}],
            }
        ),
        {},
        ExitCode.VERIFY_FAILED,
        "orders-40",
    ),
    (
        "check-unknown-broker",
        _check(
            {
                "version": 1,
                "partitions": [{"topic": "orders", "partition": 0, "replicas": [3, 1, 9]}],
            }
        ),
        {},
        ExitCode.VERIFY_FAILED,
        "[9]",
    ),
    (
        "check-duplicate-broker",
        _check(
            {
                "version": 1,
                "partitions": [{"topic": "orders", "partition": 0, "replicas": [3, 1, 3]}],
            }
        ),
        {},
        ExitCode.VERIFY_FAILED,
        "orders-0",
    ),
    (
        "check-plan-for-another-cluster",
        _check(_plan_document(cluster_id="some-other-cluster")),
        {},
        ExitCode.STALE_PLAN,
        "made for cluster some-other-cluster",
    ),
    (
        "check-plan-drifted",
        _check(_plan_document(before=_drifted_before())),
        {},
        ExitCode.STALE_PLAN,
        "changed since this plan was made",
    ),
    (
        "out-dir-missing",
        _args(*EXPAND, "--rf", "4", "--out", "/nope/dir/plan.json"),
        {},
        ExitCode.USAGE,
        "does not exist",
    ),
    (
        "snapshot-out-dir-missing",
        _args("snapshot", *S, "-o", "/nope/dir/s.json"),
        {},
        ExitCode.USAGE,
        "does not exist",
    ),
]


@pytest.mark.parametrize(
    ("build", "env", "code", "words"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_bad_input_gives_one_line_and_exit_code(
    tmp_path: Path, build: Any, env: dict[str, str], code: ExitCode, words: str
) -> None:
    built = build(tmp_path)
    args, extra_env = built if isinstance(built, tuple) else (built, {})
    result = run_cli(args, env={**env, **extra_env})
    assert result.code == code, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert words in lines[0]
    assert "Traceback" not in result.stdout + result.stderr


def test_there_are_at_least_thirty_cases() -> None:
    assert len(CASES) >= 30
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", ["unknown-topic", "rf-above-brokers", "misspelt-option"])
def test_json_output_reports_errors_as_an_envelope(tmp_path: Path, case: str) -> None:
    _, build, env, code, _words = next(c for c in CASES if c[0] == case)
    result = run_cli([*build(tmp_path), "--output", "json"], env=env)
    assert result.code == code
    doc = result.json()
    assert doc["kreplica"] == 1
    assert doc["status"] == "error"
    assert doc["command"] == "expand"
    assert doc["data"] is None
    [error] = doc["errors"]
    assert error["code"] and error["message"] in result.stderr


def test_debug_shows_the_traceback() -> None:
    result = run_cli([*EXPAND, "--rf", "7", "--debug"])
    assert result.code == ExitCode.INFEASIBLE
    assert "Traceback" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("error: ")


def test_debug_from_environment() -> None:
    result = run_cli([*EXPAND, "--rf", "7"], env={"KREPLICA_DEBUG": "1"})
    assert "Traceback" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["expand", "-t", "ordres", "--rf", "4"],
        ["shrink", "-t", "ordres", "--rf", "1"],
        ["set-rf", "-t", "ordres", "--rf", "2"],
        ["add-partitions", "-t", "ordres", "-p", "40"],
    ],
)
def test_unknown_topic_hint_names_no_option_the_command_lacks(args: list[str]) -> None:
    result = run_cli([*args, "--snapshot", str(EXAMPLE), "--dry-run"])
    assert result.code == ExitCode.SOURCE
    assert "topic 'ordres' does not exist" in result.stderr
    assert "--topics" not in result.stderr  # only `plan` has --topics REGEX
    assert result.stderr.count("\n") == 1
