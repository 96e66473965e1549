"""Rendered output at a fixed width with no colour, compared with tests/golden/*.txt.

Regenerate after an intended change with `UPDATE_GOLDEN=1 .venv/bin/python -m pytest
tests/unit/cli/test_golden.py` and review the diff like code.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kreplica.model import Broker, ClusterSnapshot, Finding, Partition, PartitionChange, Plan, Topic
from kreplica.render.console import make_console
from kreplica.render.diff import plan_view
from kreplica.render.markdown import plan_markdown
from tests.unit.cli.conftest import EXAMPLE, GOLDEN, REPO, run_cli

UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
WIDTH = "100"


def _normalise(text: str) -> str:
    # Table cells are padded with spaces; trailing blanks carry no meaning.
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    text = _normalise(text)
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} missing; run with UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, (
        f"output differs from {path}; if the change is intended (e.g. the planner now places "
        "replicas differently) rerun with UPDATE_GOLDEN=1 and review the diff"
    )


# The snapshot path appears in the header: relative to the checkout (as in the README), so the
# output is the same wherever the checkout is (a long absolute path would wrap the header).
SNAP = ["--snapshot", "examples/cluster.json"]
CASES = [
    ("expand_orders_rf4.txt", ["expand", *SNAP, "-t", "orders", "--rf", "4", "--dry-run"]),
    (
        "expand_orders_rf4.md",
        ["expand", *SNAP, "-t", "orders", "--rf", "4", "--dry-run", "--output", "markdown"],
    ),
    ("explain_clicks_payments.txt", ["explain", *SNAP, "-t", "clicks", "-t", "payments"]),
]


@pytest.mark.parametrize(("name", "args"), CASES)
def test_command_output_matches_golden(
    name: str, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    result = run_cli(args, env={"COLUMNS": WIDTH})
    assert result.code == 0, result.stderr
    assert result.stderr == ""
    assert_golden(name, result.stdout)


def test_golden_output_from_a_deep_path_in_a_bare_environment(tmp_path: Path) -> None:
    """The goldens hold in a checkout at a long path (a CI runner's /home/runner/work/...),
    with a bare environment: no terminal, C locale, a HOME and XDG config of its own (holding a
    default cluster that must not be consulted), run as a real process."""
    deep = tmp_path / ("checkout-of-kreplica-" * 3) / "a-fairly-long-folder-name" / "kreplica"
    assert len(str(deep)) > 60
    (deep / "examples").mkdir(parents=True)
    shutil.copy(EXAMPLE, deep / "examples" / "cluster.json")
    config = deep / "home" / ".config" / "kreplica"
    config.mkdir(parents=True)
    (config / "clusters.toml").write_text(
        'default = "elsewhere"\n[clusters.elsewhere]\nbootstrap_server = "127.0.0.1:1"\n'
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(deep / "home"),
        "LANG": "C",
        "LC_ALL": "C",
        "COLUMNS": WIDTH,
    }
    for name, args in CASES:
        proc = subprocess.run(
            [sys.executable, "-m", "kreplica", *args],
            cwd=deep,
            env=env,
            capture_output=True,
            text=True,
            encoding="utf-8",
            check=False,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        assert _normalise(proc.stdout) == (GOLDEN / name).read_text(encoding="utf-8"), name


# A hand-built plan exercises every mark without depending on the planner's choices.
RACKS = {1: "rack-a", 2: "rack-b", 3: "rack-c", 4: "rack-a", 5: "rack-b"}
HAND_SNAPSHOT = ClusterSnapshot(
    brokers=tuple(Broker(b, RACKS[b]) for b in sorted(RACKS)),
    topics=(
        Topic(
            "events",
            tuple(Partition("events", p, (1 + p % 5, 1 + (p + 1) % 5)) for p in range(10)),
        ),
    ),
    cluster_id="hand-made",
)
HAND_PLAN = Plan(
    cluster_id="hand-made",
    snapshot_fingerprint=HAND_SNAPSHOT.fingerprint(),
    strategy="balanced",
    changes=(
        PartitionChange("events", 0, (1, 2), (1, 2, 3)),  # replica added
        PartitionChange("events", 1, (2, 3), (2,)),  # replica removed
        PartitionChange("events", 5, (1, 2), (4, 2)),  # leader moved to another broker
        PartitionChange("events", 6, (2, 3), (3, 2)),  # leader swap, same replicas
        PartitionChange("events", 10, None, (5, 1)),  # new partition
        PartitionChange("events", 11, None, (1, 2)),  # new partition
    ),
    report={
        "strategy": "balanced",
        "replicas_added": 6,
        "replicas_removed": 2,
        "lower_bound_replicas_added": 5,
        "lower_bound_replicas_removed": 1,
        "existing_replicas_moved": 1,
        "bytes_to_move": 3 * 1024**3,
        "bytes_lower_bound": 2 * 1024**3,
        "cross_rack_bytes": 1024**3,
        "leaders_changed": 2,
        "rack_violations_before": 1,
        "rack_violations_after": 0,
        "broker_replicas_before": {1: 4, 2: 4, 3: 4, 4: 4, 5: 4},
        "broker_replicas_peak": {1: 6, 2: 5, 3: 5, 4: 5, 5: 5},
        "broker_replicas_after": {1: 6, 2: 4, 3: 4, 4: 5, 5: 5},
        "broker_leaders_before": {1: 2, 2: 2, 3: 2, 4: 2, 5: 2},
        "broker_leaders_after": {1: 3, 2: 1, 3: 3, 4: 3, 5: 2},
        "broker_bytes_in": {1: 1024**3, 2: 0, 3: 1024**3, 4: 1024**3, 5: 0},
        "broker_bytes_out": {1: 2 * 1024**3, 2: 1024**3, 3: 0, 4: 0, 5: 0},
        "partitions_changed": 4,
        "partitions_created": 2,
        "cluster_spread_before": 0,
        "cluster_spread_after": 2,
    },
    findings=(
        Finding("warning", "min-isr", "RF 1 <= min.insync.replicas=1", "events", 1),
        Finding("info", "imbalance", "topic 'events': spread 2 after this plan", "events"),
    ),
)


def _render(limit: int, width: int = 100) -> str:
    buffer = io.StringIO()
    console = make_console(buffer, no_color=True, width=width)
    console.print(
        plan_view(HAND_PLAN, HAND_SNAPSHOT, title="hand-made plan", source="test", limit=limit)
    )
    return buffer.getvalue()


def test_hand_plan_shows_every_mark() -> None:
    assert_golden("hand_plan.txt", _render(limit=0))


def test_hand_plan_marks_are_visible_without_colour() -> None:
    text = _render(limit=0)
    assert "+3(c)" in text  # added replica
    assert "-3(c)" in text  # removed replica, on the before side
    assert "LEADER 1→4" in text and "LEADER 2→3" in text
    assert "(new)" in text and "new partition" in text
    assert "(3 partitions unchanged)" in text  # 2-4 collapse into one row
    assert "adds 6 replicas (lower bound 5)" in text


def test_limit_cuts_rows_and_says_how_many() -> None:
    text = _render(limit=2)
    assert "… 4 more changed partitions (--limit 0 shows all)" in text
    assert "LEADER" not in text


def test_hand_plan_markdown() -> None:
    text = plan_markdown(
        HAND_PLAN, HAND_SNAPSHOT, title="hand-made plan", source="test", runbook=[], limit=0
    )
    assert_golden("hand_plan.md", text)


def test_colour_appears_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    buffer = io.StringIO()
    console = make_console(buffer, width=100, force_terminal=True)
    console.print(plan_view(HAND_PLAN, HAND_SNAPSHOT, title="t", source="s"))
    assert "\x1b[" in buffer.getvalue()
    buffer = io.StringIO()
    console = make_console(buffer, no_color=True, width=100, force_terminal=True)
    console.print(plan_view(HAND_PLAN, HAND_SNAPSHOT, title="t", source="s"))
    assert "\x1b[3" not in buffer.getvalue()  # no colour codes (bold may remain)


def test_goldens_exist_for_every_case() -> None:
    assert sorted(p.name for p in Path(GOLDEN).iterdir()) == sorted(
        [
            "expand_orders_rf4.md",
            "expand_orders_rf4.txt",
            "explain_clicks_payments.txt",
            "hand_plan.md",
            "hand_plan.txt",
        ]
    )
