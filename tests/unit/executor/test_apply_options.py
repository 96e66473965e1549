"""ApplyOptions refuses what the command line refuses, with the same one-line error in the
library's words (the CLI says it with flags: kreplica.errors.flag_words)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

import kreplica
from kreplica.errors import ExitCode, UsageError, flag_words
from kreplica.executor.window import parse_window
from tests.unit.cli.conftest import run_cli

REFUSED: list[tuple[dict[str, Any], str]] = [
    ({"pace": True}, "`pace` needs `throttle` (the rate it starts at) and `throttle_max`"),
    ({"pace": True, "throttle": 1000}, "`pace` needs `throttle`"),
    (
        {"pace": True, "throttle": 2000, "throttle_max": 1000},
        "`throttle` 2000 is above `throttle_max` 1000",
    ),
    ({"pace": True, "throttle": 1, "throttle_max": 2, "pace_interval_s": 0}, "`pace_interval_s` 0"),
    ({"throttle_max": 1000}, "`throttle_max` goes with `pace`"),
    ({"throttle": 0}, "`throttle` 0: give more than 0"),
    ({"max_partitions": 0}, "`max_partitions` 0: give 1 or more"),
    ({"max_per_broker": -1}, "`max_per_broker` -1: give 1 or more"),
    ({"order": "random"}, "`order` 'random': use plan, largest or smallest"),
    ({"on_drift": "ignore"}, "`on_drift` 'ignore': use fail or skip"),
    ({"controller_settle_s": -1.0}, "`controller_settle_s` -1: give seconds >= 0"),
    ({"stall_timeout_s": 0.0}, "`stall_timeout_s` 0: give a number of seconds > 0"),
    ({"max_bytes_per_hour": 0}, "`max_bytes_per_hour` 0: give more than 0"),
    ({"window_floor": True}, "`window_tz` and `window_floor` go with `window`"),
    ({"window": parse_window("01:00-05:00"), "window_floor": True}, "`window_floor` drops"),
    ({"rate_window_s": 3.0}, "`rate_window_s` 3: give 0 (no measurement) or 5 seconds or more"),
    ({"rate_window_s": -1.0}, "`rate_window_s` -1: give 0"),
]


@pytest.mark.parametrize(("options", "words"), REFUSED, ids=[str(o) for o, _ in REFUSED])
def test_the_library_refuses_what_the_cli_refuses(options: dict[str, Any], words: str) -> None:
    with pytest.raises(UsageError) as refused:
        kreplica.ApplyOptions(**options)
    assert refused.value.message.startswith(words)
    assert "\n" not in refused.value.message and "--" not in refused.value.message


def test_pace_without_a_throttle_is_refused_before_any_cluster_is_touched() -> None:
    # it used to run unthrottled: the check lived only in the CLI
    with pytest.raises(UsageError, match="`pace` needs `throttle`"):
        kreplica.ApplyOptions(pace=True, throttle_max=50_000_000)


def test_replace_checks_again() -> None:
    options = kreplica.ApplyOptions(throttle=1000, throttle_max=2000, pace=True)
    with pytest.raises(UsageError, match="`pace` needs"):
        dataclasses.replace(options, throttle=None)


def test_accepted_options_stay_as_given() -> None:
    options = kreplica.ApplyOptions(
        throttle=1000, throttle_max=2000, pace=True, max_partitions=1, controller_settle_s=0
    )
    assert (options.throttle, options.throttle_max, options.pace) == (1000, 2000, True)


def test_the_cli_says_the_same_refusal_with_its_flags() -> None:
    with pytest.raises(UsageError) as refused:
        kreplica.ApplyOptions(max_partitions=0)
    assert flag_words(refused.value.message) == "--max-partitions 0: give 1 or more"


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--max-partitions", "0"], "error: --max-partitions 0: give 1 or more"),
        (["--order", "random"], "error: --order 'random': use plan, largest or smallest"),
        (
            ["--rate-window", "2"],
            "error: --rate-window 2: give 0 (no measurement) or 5 seconds or more (a shorter "
            "window is too short to measure a rate)",
        ),
        (
            ["--pace", "auto", "--throttle-min", "2MB/s", "--throttle-max", "1MB/s"],
            "error: --throttle-min 2000000 is above --throttle-max 1000000; give a floor at or "
            "below the ceiling",
        ),
    ],
)
def test_the_cli_refuses_with_the_library_s_line_in_flags(
    tmp_path: Path, flags: list[str], line: str
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"version": 1, "partitions": []}')
    run = run_cli(["apply", str(plan), "--bootstrap-server", "127.0.0.1:1", *flags])
    assert run.code == ExitCode.USAGE
    assert run.stderr.strip().splitlines() == [line]


def test_pace_without_its_rates_is_the_same_refusal_in_both(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"version": 1, "partitions": []}')
    run = run_cli(["apply", str(plan), "--bootstrap-server", "127.0.0.1:1", "--pace", "auto"])
    assert run.code == ExitCode.USAGE
    assert run.stderr.strip() == (
        "error: --pace auto needs --throttle-min (the rate it starts at) and --throttle-max"
    )
    with pytest.raises(UsageError) as refused:
        kreplica.ApplyOptions(pace=True)
    assert (
        flag_words(refused.value.message, {"throttle": "--throttle-min"}) == run.stderr.strip()[7:]
    )
