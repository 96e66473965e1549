"""kreplica's command line (typer). `main()` is the `kreplica` console script.

Importing this package is cheap: the typer app is built on first use, and the commands import
the planner, renderers and cluster sources only when they run.
"""

from __future__ import annotations

from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: runs one command and exits with its code."""
    import sys

    try:
        from kreplica.cli.app import run

        code = run(argv)
    except KeyboardInterrupt:  # Ctrl-C before the command's own handler was in place
        import os

        from kreplica.cli import output

        args = list(sys.argv[1:] if argv is None else argv)
        with output.running(output.new_state(args, os.environ)):
            code = output.report_interrupted()
    sys.exit(code)
