"""One source for the exit codes: the enum (kreplica.errors.ExitCode, EXIT_CODES). `kreplica
--help` prints every code from it; the README's table lists exactly the enum's codes, in its
order, each row starting with the enum's words for it."""

from __future__ import annotations

import re
from pathlib import Path

from kreplica.errors import EXIT_CODES, ExitCode
from tests.unit.cli.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| (\d+) \| (.*) \|$")


def _readme_rows() -> list[tuple[int, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("## Exit codes\n", 1)[1].strip().split("\n\n", 1)[0]
    return [(int(m[1]), m[2]) for line in table.splitlines() if (m := ROW.match(line))]


def test_every_code_has_its_words() -> None:
    assert list(EXIT_CODES) == list(ExitCode)


def test_a_malformed_snapshot_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"kreplica_snapshot": 1, "brokers": "none"}')
    result = run_cli(["explain", "--snapshot", str(bad)])
    assert result.code == ExitCode.USAGE == 2, result.stderr


def test_readme_table_is_the_enum() -> None:
    rows = _readme_rows()
    assert [code for code, _ in rows] == [code.value for code in ExitCode]
    for code, meaning in rows:
        words = EXIT_CODES[ExitCode(code)]
        assert meaning.startswith(words), f"README row {code} should start with {words!r}"


def test_help_lists_every_code() -> None:
    result = run_cli(["--help"], env={"COLUMNS": "100"})
    assert result.code == 0
    listed = " ".join(result.stdout.split("Exit codes:", 1)[1].split())
    for code in ExitCode:
        assert f"{code.value} {EXIT_CODES[code]}" in listed
