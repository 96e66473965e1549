"""Library errors name options in the library's words (`rf`, `skip_in_flight`); the command
lines say them as flags from one table (kreplica.errors.FLAGS, flag_words)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kreplica.errors import FLAGS, PlanInfeasible, flag_words
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from kreplica.planner import PlanOptions, TopicRequest, make_plan

REPO = Path(__file__).resolve().parents[2]
# the library: everything but the command lines (cli, the fleet job, the sandbox's) and the
# test plugin
COMMAND_LINES = {"cli", "fleet", "sandbox"}
LIBRARY = sorted(
    path
    for path in (REPO / "kreplica").rglob("*.py")
    if path.relative_to(REPO / "kreplica").parts[0] not in COMMAND_LINES
    and path.name != "testing.py"
)
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]*")
# Kafka's tools' own, not kreplica's: kafka-reassign-partitions', and the flag Kafka's own
# rack-aware placement error names (kreplica.kafka reproduces that error as Kafka words it)
KAFKA_TOOL_FLAGS = {"--verify", "--execute", "--disable-rack-aware"}


def _raised_text(path: Path) -> list[tuple[int, str]]:
    """The string literals in each `raise` statement (and in what builds the error)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Raise) and node.exc is not None:
            text = " ".join(
                part.value
                for part in ast.walk(node.exc)
                if isinstance(part, ast.Constant) and isinstance(part.value, str)
            )
            found.append((node.lineno, text))
    return found


def test_library_errors_name_no_command_line_flag() -> None:
    flagged = [
        f"{path.relative_to(REPO)}:{line}: {flags}"
        for path in LIBRARY
        for line, text in _raised_text(path)
        if (flags := set(FLAG.findall(text)) - KAFKA_TOOL_FLAGS)
    ]
    assert not flagged, "\n".join(flagged)


def test_flag_words_says_options_as_flags_and_leaves_the_rest() -> None:
    message = "give `rf` too, or pass `skip_in_flight`; run `kreplica elect p.json` or `status`"
    assert flag_words(message) == (
        "give --rf too, or pass --skip-in-flight; run `kreplica elect p.json` or `status`"
    )
    where = {"zookeeper": "`zookeeper` of cluster 'prod' in clusters.toml"}
    assert flag_words("check `zookeeper` and `bootstrap_server`", where) == (
        "check `zookeeper` of cluster 'prod' in clusters.toml and --bootstrap-server"
    )
    assert all(flag.startswith("--") for flag in FLAGS.values())


def test_a_planner_refusal_in_the_library_s_words_and_the_cli_s() -> None:
    topic = Topic("t", (Partition("t", 0, (1, 2), leader=1),), configs={"min.insync.replicas": "2"})
    snap = ClusterSnapshot(brokers=tuple(Broker(b) for b in (1, 2, 3)), topics=(topic,))
    with pytest.raises(PlanInfeasible) as refused:
        make_plan(snap, [TopicRequest("t", rf=1)], PlanOptions())
    assert refused.value.message.endswith("or pass `force`")
    assert flag_words(refused.value.message).endswith("or pass --force")
