"""`kreplica sandbox kafka TOOL ...`, `stop-broker` and `start-broker`: the pure parts (which
tool, which arguments reach it) and the refusals that need no cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kreplica.cli.app import app
from kreplica.errors import ExitCode, UsageError
from kreplica.sandbox import TOOLS, find_tool, tool_arguments
from kreplica.sandbox.tools import names_target
from kreplica.sources.admin import fenced_brokers

BOOT = "127.0.0.1:9001,127.0.0.1:9002"


@pytest.fixture(autouse=True)
def _private_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KREPLICA_SANDBOX_DIR", str(tmp_path / "sandboxes"))


def _cli(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    return result.exit_code, result.stderr


@pytest.mark.parametrize(
    "spelling", ["kafka-topics", "kafka-topics.sh", "topics", "topics.sh", " kafka-topics "]
)
def test_tool_spellings(spelling: str) -> None:
    assert find_tool(spelling).name == "kafka-topics"


def test_the_four_runbook_tools_are_known() -> None:
    for name in (
        "kafka-reassign-partitions",
        "kafka-topics",
        "kafka-configs",
        "kafka-leader-election",
    ):
        assert find_tool(name).name == name


def test_unknown_tool_lists_the_known_ones() -> None:
    with pytest.raises(UsageError) as caught:
        find_tool("kafka-topic")
    message = str(caught.value)
    assert message.startswith("unknown Kafka tool 'kafka-topic': the sandbox runs ")
    assert all(name in message for name in TOOLS)
    assert "\n" not in message


def test_bootstrap_is_added_first_for_option_style_tools() -> None:
    tool = find_tool("kafka-topics")
    assert tool_arguments(tool, ["--describe", "--topic", "t"], BOOT) == [
        "--bootstrap-server",
        BOOT,
        "--describe",
        "--topic",
        "t",
    ]
    assert tool_arguments(tool, [], BOOT) == ["--bootstrap-server", BOOT]


@pytest.mark.parametrize(
    "given",
    [
        ["--bootstrap-server", "h:1"],
        ["--bootstrap-server=h:1"],
        ["--bootstrap-controller", "h:2"],
        ["--zookeeper", "h:2181"],
    ],
)
def test_a_cluster_the_user_names_is_left_alone(given: list[str]) -> None:
    args = ["--list", *given]
    tool = find_tool("kafka-topics")
    assert names_target(tool, args)
    assert tool_arguments(tool, args, BOOT) == args


def test_broker_list_names_the_cluster_only_where_it_is_the_old_bootstrap_option() -> None:
    producer = find_tool("kafka-console-producer")
    args = ["--broker-list", "h:1", "--topic", "t"]
    assert tool_arguments(producer, args, BOOT) == args
    # kafka-reassign-partitions --broker-list is a list of broker ids
    reassign = find_tool("kafka-reassign-partitions")
    args = ["--generate", "--broker-list", "1,2,3", "--topics-to-move-json-file", "t.json"]
    assert tool_arguments(reassign, args, BOOT) == ["--bootstrap-server", BOOT, *args]


def test_an_option_value_that_merely_starts_like_one_is_not_a_target() -> None:
    tool = find_tool("kafka-topics")
    assert not names_target(tool, ["--bootstrap-servers", "x"])
    assert not names_target(tool, ["--topic", "--zookeeper-like"])


def test_producer_perf_test_gets_the_bootstrap_as_a_property_where_it_has_no_option() -> None:
    tool = find_tool("kafka-producer-perf-test")
    args = ["--topic", "t", "--num-records", "10"]
    # 4.3's ProducerPerformance takes --bootstrap-server; 3.9's only `--producer-props`
    assert tool_arguments(tool, args, BOOT) == ["--bootstrap-server", BOOT, *args]
    old = tool_arguments(tool, args, BOOT, has_bootstrap_option=False)
    assert old == ["--producer-props", f"bootstrap.servers={BOOT}", *args]
    # a property list of the user's own: the bootstrap joins it (a second list would replace it)
    own = ["--producer-props", "acks=1", "--topic", "t"]
    assert tool_arguments(tool, own, BOOT, has_bootstrap_option=False) == [
        "--producer-props",
        f"bootstrap.servers={BOOT}",
        "acks=1",
        "--topic",
        "t",
    ]
    named = ["--producer-props", "bootstrap.servers=h:1", "--topic", "t"]
    assert names_target(tool, named)
    assert tool_arguments(tool, named, BOOT, has_bootstrap_option=False) == named
    # elsewhere a bootstrap.servers= word is a value like any other
    assert not names_target(find_tool("kafka-topics"), ["--config", "bootstrap.servers=h:1"])


def test_sub_command_tools_get_the_bootstrap_after_the_sub_command() -> None:
    tool = find_tool("kafka-cluster")
    assert tool_arguments(tool, ["cluster-id"], BOOT) == [
        "cluster-id",
        "--bootstrap-server",
        BOOT,
    ]
    assert tool_arguments(tool, ["unregister", "--id", "3"], BOOT) == [
        "unregister",
        "--bootstrap-server",
        BOOT,
        "--id",
        "3",
    ]
    assert tool_arguments(tool, ["--help"], BOOT) == ["--help"]  # the tool's own usage


def test_metadata_quorum_takes_the_bootstrap_before_its_sub_command() -> None:
    args = tool_arguments(find_tool("kafka-metadata-quorum"), ["describe", "--status"], BOOT)
    assert args == ["--bootstrap-server", BOOT, "describe", "--status"]


def test_cli_unknown_tool_is_a_usage_error_before_any_sandbox_lookup() -> None:
    code, err = _cli(["sandbox", "kafka", "--name", "nothing", "kafka-nope", "--list"])
    assert code == ExitCode.USAGE
    assert err.startswith("error: unknown Kafka tool 'kafka-nope': the sandbox runs ")
    assert err.count("\n") == 1


def test_cli_tool_against_a_sandbox_that_is_not_running() -> None:
    code, err = _cli(["sandbox", "kafka", "--name", "nothing", "kafka-topics", "--list"])
    assert code == ExitCode.SOURCE
    assert err == (
        "error: no sandbox named 'nothing' is running: start one with "
        "`kreplica sandbox up --name nothing`\n"
    )


@pytest.mark.parametrize("command", ["stop-broker", "start-broker"])
def test_cli_broker_commands_need_a_running_sandbox(command: str) -> None:
    code, err = _cli(["sandbox", command, "2", "--name", "nothing"])
    assert code == ExitCode.SOURCE
    assert "no sandbox named 'nothing' is running" in err
    assert err.count("\n") == 1


def test_fenced_brokers_are_dead_with_their_rack_and_address() -> None:
    # The shape of kafka-python's describe_cluster() answer (DescribeCluster v2, KIP-1073).
    described = {
        "cluster_id": "x",
        "controller_id": 1,
        "brokers": [
            {"broker_id": 1, "host": "h1", "port": 9092, "rack": "a", "is_fenced": False},
            {"broker_id": 6, "host": "h6", "port": 9097, "rack": "c", "is_fenced": True},
            {"broker_id": 7, "host": "h7", "port": 9098, "rack": None, "is_fenced": True},
        ],
    }
    dead = fenced_brokers(described)
    assert [(b.id, b.rack, b.host, b.port, b.alive) for b in dead] == [
        (6, "c", "h6", 9097, False),
        (7, None, "h7", 9098, False),
    ]


def test_older_answers_without_the_fenced_flag_have_no_fenced_brokers() -> None:
    described = {"brokers": [{"broker_id": 1, "host": "h1", "port": 9092, "rack": "a"}]}
    assert fenced_brokers(described) == []
