"""The one place kreplica builds rich Consoles, so colour and width rules live together."""

from __future__ import annotations

import os
import sys
from typing import IO

from rich.console import Console
from rich.theme import Theme

PIPE_WIDTH = 120

THEME = Theme(
    {
        "added": "bold green",
        "removed": "bold red",
        "leader.changed": "bold yellow",
        "warning": "yellow",
        "error": "bold red",
        "info": "dim",
        "muted": "dim",
        "title": "bold",
    }
)


def make_console(
    file: IO[str] | None = None,
    *,
    no_color: bool = False,
    width: int | None = None,
    force_terminal: bool | None = None,
) -> Console:
    """A console for `file` (stdout by default). Colour only on a terminal, never with
    --no-color or NO_COLOR; a fixed width keeps output stable when it is piped or tested."""
    no_color = no_color or bool(os.environ.get("NO_COLOR"))
    if width is None and not os.environ.get("COLUMNS") and not (file or sys.stdout).isatty():
        width = PIPE_WIDTH  # a log file or pager has room; rich would assume 80
    return Console(
        file=file,
        theme=THEME,
        no_color=no_color,
        color_system=None if no_color else "auto",
        highlight=False,
        emoji=False,
        width=width,
        soft_wrap=False,
        force_terminal=force_terminal,
    )
