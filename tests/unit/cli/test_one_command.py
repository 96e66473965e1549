"""kreplica.cli.app.run builds only the command its first argument names (typer introspects
every command's signature otherwise): help, parsing, errors and output are those of the
whole app, and anything that names no command gets the whole app."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest
import typer

import kreplica.cli.app as cli_app
from tests.unit.cli.conftest import EXAMPLE

CASES = [
    ["expand", "--help"],
    ["sandbox", "up", "--help"],
    ["consumers", "--help"],
    ["expand", "--bogus"],
    ["expand", "--rf", "x", "--snapshot", str(EXAMPLE), "-t", "orders"],
    ["expand", "--snapshot", str(EXAMPLE), "-t", "orders", "--rf", "3", "--dry-run"],
    ["plan", "--snapshot", str(EXAMPLE), "--topics", "o.*", "--rf", "3", "--output", "json"],
    ["explain", "--snapshot", str(EXAMPLE), "-t", "nope"],
]


def _run(app: Any, args: list[str]) -> tuple[Any, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        command = typer.main.get_command(app)
        code = command.main(args=list(args), prog_name="kreplica", standalone_mode=False)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a[:2]))
def test_one_command_alone_runs_as_the_whole_app(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    alone = cli_app._app_for(args)
    assert alone is not cli_app.app
    assert len(alone.registered_commands) + len(alone.registered_groups) == 1
    assert _run(alone, args) == _run(cli_app.app, args)


@pytest.mark.parametrize("args", [[], ["--help"], ["--version"], ["exapnd", "--rf", "3"]])
def test_anything_else_gets_the_whole_app(args: list[str]) -> None:
    assert cli_app._app_for(args) is cli_app.app
