"""kreplica's command line (typer). `main()` is the `kreplica` console script.

Importing this package is cheap: the typer app is built on first use, and the commands import
the planner, renderers and cluster sources only when they run.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: runs one command and exits with its code."""
    import sys

    from kreplica.cli.app import run

    sys.exit(run(argv))
