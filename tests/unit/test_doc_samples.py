"""The README's and docs/' sample sessions are real output: every `$ kreplica ...` line of a
```console block that reads a shipped snapshot file (`--snapshot examples/...`) is run as
written, in a folder where `examples/` is the repository's, at the docs' width (100 columns, no
colour), and what it prints (stdout and stderr, as a terminal shows them) must be the lines
below it. A sample may leave lines out with a line `...` (any number of lines); its exit code
is 0 unless its last line says `exit N` or a `$ echo $?` after it shows one. A JSON envelope
(`--output json`, printed on one line) is shown indented, and may leave keys out (a key `...`
says so): it must be part of the printed one, and the other lines must be printed too. Samples
of live clusters, the sandbox and Spark are not run here: they need a cluster or a Spark session
(tests/integration and tests/fleet run those commands on their own data)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.support.cli import kreplica_env

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# to a fence at the start of a line (a markdown sample holds indented ```sh blocks)
_BLOCK = re.compile(r"^```console\n(.*?)^```$", re.S | re.M)
_EXIT = re.compile(r"exit (\d+)")


def _trimmed(lines: Sequence[str]) -> list[str]:
    out = [line.rstrip() for line in lines]
    while out and not out[-1]:
        out.pop()
    return out


def samples(page: Path) -> Iterator[tuple[str, list[str], int]]:
    """(command, the lines shown under it, its exit code) for each `$ ` line of the page's
    console blocks. The exit code is a last line `exit N`, or what a `$ echo $?` right after
    the command shows; 0 otherwise."""
    for block in _BLOCK.findall(page.read_text(encoding="utf-8")):
        runs: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                runs.append((line[2:], []))
            elif runs:
                runs[-1][1].append(line)
        for i, (command, shown) in enumerate(runs):
            if command == "echo $?":
                continue
            shown = _trimmed(shown)
            code = 0
            if shown and (last := _EXIT.fullmatch(shown[-1])):
                code, shown = int(last.group(1)), _trimmed(shown[:-1])
            elif i + 1 < len(runs) and runs[i + 1][0] == "echo $?":
                code = int(_trimmed(runs[i + 1][1])[0])
            yield command, shown, code


def offline(command: str) -> bool:
    return command.startswith("kreplica ") and "--snapshot examples/" in command


CASES = [
    pytest.param(command, shown, code, id=f"{page.name}:{command[9:70]}")
    for page in PAGES
    for command, shown, code in samples(page)
    if offline(command)
]


def matches(shown: Sequence[str], printed: Sequence[str]) -> bool:
    """`printed` line for line, where a `...` line of `shown` stands for any lines."""
    if not shown:
        return not printed
    if shown[0] == "...":
        return any(matches(shown[1:], printed[i:]) for i in range(len(printed) + 1))
    return bool(printed) and printed[0] == shown[0] and matches(shown[1:], printed[1:])


def part_of(shown: object, printed: object) -> bool:
    """`shown` is `printed` with keys left out (and a key "..." saying so)."""
    if isinstance(shown, dict) and isinstance(printed, dict):
        return all(
            k == "..." or (k in printed and part_of(v, printed[k])) for k, v in shown.items()
        )
    if isinstance(shown, list) and isinstance(printed, list):
        return len(shown) == len(printed) and all(map(part_of, shown, printed))
    return shown == printed


def json_apart(lines: Sequence[str]) -> tuple[object, list[str]]:
    """(the JSON document in `lines`, the other lines): indented from a line `{` to a line `}`,
    or on one line."""
    if "{" in lines:
        start = lines.index("{")
        end = lines.index("}", start)
        text, rest = "\n".join(lines[start : end + 1]), [*lines[:start], *lines[end + 1 :]]
    else:
        start = next(i for i, line in enumerate(lines) if line.startswith("{"))
        text, rest = lines[start], [*lines[:start], *lines[start + 1 :]]
    return json.loads(text), rest


def test_every_page_has_its_samples_found() -> None:
    assert len(CASES) >= 15, [c.id for c in CASES]


@pytest.mark.parametrize(("command", "shown", "code"), CASES)
def test_the_sample_is_what_the_command_prints(
    command: str, shown: list[str], code: int, tmp_path: Path
) -> None:
    (tmp_path / "examples").symlink_to(REPO / "examples")
    # `kreplica` is this checkout's, whatever PATH holds; pipes (`| grep`) run as written
    script = f'kreplica() {{ "{sys.executable}" -m kreplica "$@"; }}\n{command}'
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", script],
        cwd=tmp_path,
        env=kreplica_env({"TERM": "dumb"}, columns=100),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        check=False,
    )
    printed = _trimmed(proc.stdout.splitlines())
    assert proc.returncode == code, proc.stdout
    if "--output json" in command:
        (shown_doc, shown_rest), (printed_doc, printed_rest) = (
            json_apart(shown),
            json_apart(printed),
        )
        assert part_of(shown_doc, printed_doc), f"shown: {shown_doc}\nprinted: {printed_doc}"
        assert sorted(shown_rest) == sorted(printed_rest)  # stdout and stderr, in either order
        return
    assert matches(shown, printed), "\n".join(["the page shows:", *shown, "it prints:", *printed])
