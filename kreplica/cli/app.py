"""The kreplica command line: parse, call the library, render, map errors to exit codes.

Thin on purpose: planning lives in kreplica.planner, rendering in kreplica.render, reading a
cluster in kreplica.sources. Heavy or optional modules are imported inside the commands so that
`kreplica --help` stays fast and loads no Kafka client.
"""

# No `from __future__ import annotations`: typer reads these annotations at runtime.

import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from typer.core import TyperGroup

from kreplica.cli import output

try:  # typer >= 0.2x vendors click; older releases use the click package
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_exceptions  # type: ignore[no-redef]
from kreplica.cli.options import OUTPUT, PLAN, SOURCE, Options, shared
from kreplica.errors import ExitCode, KreplicaError


class KreplicaGroup(TyperGroup):
    """Runs a command and maps every outcome to one exit code, a one-line message on stderr,
    and (with --output json) one error envelope on stdout."""

    def main(  # type: ignore[override]
        self,
        args: Optional[Sequence[str]] = None,  # noqa: UP045
        prog_name: Optional[str] = None,  # noqa: UP045
        complete_var: Optional[str] = None,  # noqa: UP045
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        output.reset_state(argv, dict(os.environ))
        code = self._run(argv, prog_name or "kreplica", complete_var, **extra)
        if not standalone_mode:
            return code
        sys.exit(code)

    def _run(self, argv: list[str], prog_name: str, complete_var: str | None, **extra: Any) -> int:
        try:
            result = super().main(
                args=argv,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
            return result if isinstance(result, int) else 0
        except KreplicaError as exc:
            return output.report_kreplica_error(exc)
        except click_exceptions.NoArgsIsHelpError as exc:
            typer.echo(exc.ctx.get_help() if exc.ctx else "")
            return int(ExitCode.USAGE)
        except click_exceptions.UsageError as exc:
            message = output.one_line(exc.format_message()).rstrip(".")
            if exc.ctx:
                message += f" (see `{exc.ctx.command_path} --help`)"
            return output.report_error(exc, ExitCode.USAGE, code_name="usage", message=message)
        except click_exceptions.ClickException as exc:
            return output.report_error(
                exc, ExitCode.USAGE, code_name="usage", message=exc.format_message()
            )
        except (KeyboardInterrupt, typer.Abort):
            sys.stderr.write("\ninterrupted\n")
            return int(ExitCode.INTERRUPTED)
        except BrokenPipeError:
            # `kreplica ... | head`: the reader left. Point stdout at /dev/null so the flush at
            # exit does not raise again, and leave without a traceback.
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            except (OSError, ValueError):  # not a real file descriptor (e.g. under a test runner)
                pass
            return int(ExitCode.ERROR)
        except Exception as exc:  # the last line of defence: no traceback for users
            message = f"unexpected {type(exc).__name__}: {exc}; rerun with --debug and report it"
            return output.report_error(exc, ExitCode.ERROR, code_name="internal", message=message)


app = typer.Typer(
    cls=KreplicaGroup,
    name="kreplica",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: `kreplica --help` must not pay for importing rich
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


def _version_callback(value: bool) -> None:
    if value:
        from kreplica import __version__

        typer.echo(f"kreplica {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Show the version."
        ),
    ] = False,
) -> None:
    """Minimal, rack-safe, Kafka-exact replica plans: change RF, add partitions, repair racks.

    Plans are shown as a diff. --dry-run changes nothing; --out PLAN.json writes Kafka's
    reassignment JSON (plus its rollback) for kafka-reassign-partitions.

    Exit codes: 0 ok, 1 bug, 2 usage, 3 source, 4 infeasible, 5 stale plan, 6 reassignment in
    progress, 7 check/verify failed, 8 not built yet, 130 interrupted.
    """


def _begin(opts: Options, command: str) -> None:
    state = output.STATE
    state.command = command
    state.output = opts.output.value
    state.debug = state.debug or opts.debug
    state.no_color = state.no_color or opts.no_color


def _topic_option(help_text: str) -> Any:
    """`--topic/-t NAME`, repeatable: spelled the same way by every command that takes it."""
    return typer.Option("--topic", "-t", metavar="NAME", help=help_text, show_default=False)


TopicsOpt = Annotated[list[str], _topic_option("Topic to change (repeatable).")]
RfOpt = Annotated[
    int, typer.Option("--rf", metavar="N", help="Target replication factor (absolute).")
]


@app.command()
@shared(SOURCE, PLAN, OUTPUT)
def expand(*, topic: TopicsOpt, rf: RfOpt, opts: Options) -> None:
    """Raise RF; no existing replica moves.

    Adds replicas on the least-loaded eligible brokers, on racks the partition does not use
    yet. Existing replicas keep their order, so every leader stays where it is.
    """
    from kreplica.cli import commands

    _begin(opts, "expand")
    commands.rf_change(opts, topics=topic, rf=rf, direction="expand")


@app.command()
@shared(SOURCE, PLAN, OUTPUT)
def shrink(*, topic: TopicsOpt, rf: RfOpt, opts: Options) -> None:
    """Lower RF; no data moves.

    Drops out-of-sync replicas first, then replicas on the most loaded brokers, keeping racks
    spread and the leader in place where possible.
    """
    from kreplica.cli import commands

    _begin(opts, "shrink")
    commands.rf_change(opts, topics=topic, rf=rf, direction="shrink")


@app.command("set-rf")
@shared(SOURCE, PLAN, OUTPUT)
def set_rf(*, topic: TopicsOpt, rf: RfOpt, opts: Options) -> None:
    """Set RF, up or down (expand or shrink)."""
    from kreplica.cli import commands

    _begin(opts, "set-rf")
    commands.rf_change(opts, topics=topic, rf=rf, direction="any")


@app.command("add-partitions")
@shared(SOURCE, PLAN, OUTPUT)
def add_partitions(
    *,
    topic: TopicsOpt,
    partitions: Annotated[
        int,
        typer.Option("--partitions", "-p", metavar="N", help="Target partition count (absolute)."),
    ],
    opts: Options,
) -> None:
    """Add partitions; existing ones are untouched.

    Keyed producers will map keys to different partitions afterwards; Kafka cannot remove
    partitions again.
    """
    from kreplica.cli import commands

    _begin(opts, "add-partitions")
    commands.plan_topics(
        opts, topics=topic, regex=None, rf=None, partitions=partitions, fix_racks=False
    )


@app.command("plan")
@shared(SOURCE, PLAN, OUTPUT)
def plan_cmd(
    *,
    topic: Annotated[
        Optional[list[str]],  # noqa: UP045
        _topic_option("Topic to change (repeatable)."),
    ] = None,
    topics: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--topics", metavar="REGEX", help="All topics whose whole name matches REGEX."
        ),
    ] = None,
    rf: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--rf", metavar="N", help="Target replication factor (absolute)."),
    ] = None,
    partitions: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--partitions", "-p", metavar="N", help="Target partition count (absolute)."),
    ] = None,
    fix_racks: Annotated[
        bool, typer.Option("--fix-racks", help="Move replicas so each partition spans racks.")
    ] = False,
    opts: Options,
) -> None:
    """RF, partitions and rack repair in one plan.

    For one or more topics (--topic repeatable, or --topics REGEX matching whole names).
    """
    from kreplica.cli import commands

    _begin(opts, "plan")
    commands.plan_topics(
        opts, topics=topic or [], regex=topics, rf=rf, partitions=partitions, fix_racks=fix_racks
    )


@app.command()
@shared(SOURCE, OUTPUT)
def explain(
    *,
    topic: Annotated[
        Optional[list[str]],  # noqa: UP045
        _topic_option("Topic to explain (repeatable; default: all topics)."),
    ] = None,
    opts: Options,
) -> None:
    """How topics' replicas are laid out.

    Whether the layout is Kafka's default (and with which start index and shift), partitions
    added later, replicas and leaders per broker, and rack diversity.
    """
    from kreplica.cli import commands

    _begin(opts, "explain")
    commands.explain(opts, topics=topic or [])


@app.command()
@shared(SOURCE, OUTPUT)
def check(
    *,
    plan_file: Annotated[
        Path,
        typer.Argument(
            metavar="PLAN.json", help="A reassignment JSON or a kreplica plan document."
        ),
    ],
    opts: Options,
) -> None:
    """Check a reassignment JSON against the cluster.

    Unknown brokers or partitions, duplicate brokers, RF mismatches, rack violations, RF at or
    below min.insync.replicas, leader skew. Exit code 7 when anything is an error.
    """
    from kreplica.cli import commands

    _begin(opts, "check")
    commands.check(opts, plan_file)


@app.command()
@shared(SOURCE, OUTPUT)
def snapshot(
    *,
    out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--out", "-o", metavar="FILE", help="Write here (default: stdout)."),
    ] = None,
    topic: Annotated[
        Optional[list[str]],  # noqa: UP045
        _topic_option("Only these topics (repeatable; default: all)."),
    ] = None,
    opts: Options,
) -> None:
    """Save brokers and assignments to a file.

    Works with any source; the file is what --snapshot FILE reads (see README: snapshot format).
    """
    from kreplica.cli import commands

    _begin(opts, "snapshot")
    commands.snapshot(opts, out=out, topics=topic or [])


def _mount_sandbox() -> None:
    """`kreplica sandbox ...` lives in its own module; the CLI works without it."""
    if importlib.util.find_spec("kreplica.cli.sandbox_cmd") is None:
        return
    from kreplica.cli.sandbox_cmd import sandbox_app

    app.add_typer(sandbox_app, name="sandbox")


_mount_sandbox()


def run(argv: Optional[Sequence[str]] = None) -> int:  # noqa: UP045
    """Run the CLI and return its exit code (what `main()` exits with)."""
    command = typer.main.get_command(app)
    code = command.main(args=argv, prog_name="kreplica", standalone_mode=False)
    return int(code or 0)
