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
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from kreplica.cli import output

try:  # typer >= 0.2x vendors click; older releases use the click package
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_exceptions  # type: ignore[no-redef]
from kreplica.cli.options import APPLY, OUTPUT, PLAN, SOURCE, TRAFFIC_FROM, Options, shared
from kreplica.errors import ExitCode, KreplicaError, exit_codes_text


class _Interrupted(Exception):
    """Ctrl-C inside a command, carried past typer's main (which turns KeyboardInterrupt into a
    silent exit 130) to kreplica's handler."""


class KreplicaGroup(TyperGroup):
    """Runs a command and maps every outcome to one exit code, a one-line message on stderr,
    and (with --output json) one error envelope on stdout."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as exc:
            raise _Interrupted() from exc

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        with output.running(output.new_state(argv, os.environ)):
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
            if result == ExitCode.INTERRUPTED:  # typer's own Ctrl-C exit (while parsing)
                return output.report_interrupted()
            return result if isinstance(result, int) else 0
        except KreplicaError as exc:
            return output.report_kreplica_error(exc)
        except click_exceptions.NoArgsIsHelpError as exc:
            typer.echo(exc.ctx.get_help() if exc.ctx else "")
            return int(ExitCode.USAGE)
        except click_exceptions.UsageError as exc:
            message = _from_where(exc, argv, output.one_line(exc.format_message()).rstrip("."))
            if exc.ctx:
                message += f" (see `{exc.ctx.command_path} --help`)"
            return output.report_error(exc, ExitCode.USAGE, code_name="usage", message=message)
        except click_exceptions.ClickException as exc:
            return output.report_error(
                exc, ExitCode.USAGE, code_name="usage", message=exc.format_message()
            )
        except (_Interrupted, KeyboardInterrupt, typer.Abort):
            return output.report_interrupted()
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


def _from_where(exc: Any, argv: list[str], message: str) -> str:
    """A bad option value names the environment variable only when the value came from it
    (click names the variable whenever the option has one)."""
    import re

    param = getattr(exc, "param", None)
    opts = list(getattr(param, "opts", None) or []) + list(getattr(param, "secondary_opts", []))
    if any(a == o or a.startswith(o + "=") for a in argv for o in opts if o.startswith("-")):
        message = re.sub(r" \(env var: '[^']*'\)", "", message)
    return message.replace("Value error, ", "")


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


ROOT_HELP = f"""\
Minimal, rack-safe, Kafka-exact replica plans: change RF, add partitions, repair racks.

Plans are shown as a diff. --dry-run changes nothing; --out PLAN.json writes Kafka's
reassignment JSON (plus its rollback) for kafka-reassign-partitions.

Exit codes: {exit_codes_text()}.
"""


@app.callback(help=ROOT_HELP)
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Show the version."
        ),
    ] = False,
) -> None:
    """The options every command shares (the help is ROOT_HELP, from the exit-code enum)."""


def _topic_option(help_text: str) -> Any:
    """`--topic/-t NAME`, repeatable: spelled the same way by every command that takes it."""
    return typer.Option("--topic", "-t", metavar="NAME", help=help_text, show_default=False)


TopicsOpt = Annotated[list[str], _topic_option("Topic to change (repeatable).")]
RfOpt = Annotated[
    int, typer.Option("--rf", metavar="N", help="Target replication factor (absolute).")
]


@app.command()
@shared(SOURCE, PLAN, APPLY, OUTPUT)
def expand(*, topic: TopicsOpt, rf: RfOpt, opts: Options) -> None:
    """Raise RF; no existing replica moves.

    Adds replicas on the least-loaded eligible brokers, on racks the partition does not use
    yet. Existing replicas keep their order, so every leader stays where it is.
    """
    from kreplica.cli import commands

    commands.rf_change(opts, topics=topic, rf=rf, direction="expand")


@app.command()
@shared(SOURCE, PLAN, APPLY, OUTPUT, without=frozenset({"brokers", "exclude_brokers"}))
def shrink(*, topic: TopicsOpt, rf: RfOpt, opts: Options) -> None:
    """Lower RF; no data moves.

    Drops out-of-sync replicas first, then replicas on the most loaded brokers, keeping racks
    spread and the leader in place where possible.
    """
    from kreplica.cli import commands

    commands.rf_change(opts, topics=topic, rf=rf, direction="shrink")


@app.command("set-rf")
@shared(SOURCE, PLAN, APPLY, OUTPUT)
def set_rf(*, topic: TopicsOpt, rf: RfOpt, opts: Options) -> None:
    """Set RF, up or down (expand or shrink)."""
    from kreplica.cli import commands

    commands.rf_change(opts, topics=topic, rf=rf, direction="any")


@app.command("add-partitions")
@shared(SOURCE, PLAN, APPLY, OUTPUT, without=frozenset({"force"}))
def add_partitions(
    *,
    topic: TopicsOpt,
    partitions: Annotated[
        int,
        typer.Option("--partitions", "-p", metavar="N", help="Target partition count (absolute)."),
    ],
    keys_file: Annotated[
        Path | None,
        typer.Option(
            "--keys-file",
            metavar="FILE",
            help="Real keys, one per line: measure how many change partition.",
        ),
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option(
            "--sample",
            metavar="N",
            help="Measure on N keys read from the topic's newest records (--bootstrap-server).",
        ),
    ] = None,
    opts: Options,
) -> None:
    """Add partitions; existing ones are untouched.

    Keyed producers will map keys to different partitions afterwards (the plan shows the share,
    and the consumer groups' new assignment when read from --bootstrap-server); Kafka cannot
    remove partitions again.
    """
    from kreplica.cli import commands

    commands.plan_topics(
        opts,
        topics=topic,
        regex=None,
        rf=None,
        partitions=partitions,
        fix_racks=False,
        keys_file=keys_file,
        sample=sample,
    )


@app.command("plan")
@shared(SOURCE, PLAN, APPLY, OUTPUT)
def plan_cmd(
    *,
    topic: Annotated[
        list[str] | None,
        _topic_option("Topic to change (repeatable)."),
    ] = None,
    topics: Annotated[
        str | None,
        typer.Option(
            "--topics", metavar="REGEX", help="All topics whose whole name matches REGEX."
        ),
    ] = None,
    rf: Annotated[
        int | None,
        typer.Option("--rf", metavar="N", help="Target replication factor (absolute)."),
    ] = None,
    partitions: Annotated[
        int | None,
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

    commands.plan_topics(
        opts, topics=topic or [], regex=topics, rf=rf, partitions=partitions, fix_racks=fix_racks
    )


# Broker operations take their own --brokers (the brokers to drain / add), so they get the
# planning options without the topic commands' --strategy, --brokers, --force, --replace-dead.
# drain and the other broker plans balance bytes: they always read sizes
BROKER_PLAN = [
    p for p in PLAN if p.name not in ("strategy", "brokers", "force", "replace_dead", "no_sizes")
]
BrokerIdsOpt = Annotated[
    str, typer.Option("--brokers", metavar="IDS", help="Broker ids, e.g. 4,5.")
]
ByOpt = Annotated[
    str,
    typer.Option("--by", metavar="count|bytes", help="Even out replica counts or bytes."),
]


@app.command()
@shared(SOURCE, BROKER_PLAN, APPLY, OUTPUT)
def drain(
    *,
    brokers: BrokerIdsOpt,
    topic: Annotated[
        list[str] | None,
        _topic_option("Only this topic's replicas (repeatable; default: all topics)."),
    ] = None,
    topics: Annotated[
        str | None,
        typer.Option("--topics", metavar="REGEX", help="Only topics whose whole name matches."),
    ] = None,
    keep_rack_share: Annotated[
        bool,
        typer.Option(
            "--keep-rack-share",
            help="Keep each replica in its drained broker's rack where the rack has room "
            "(per-rack bytes stay), even when that loads the rack's brokers unevenly.",
        ),
    ] = False,
    opts: Options,
) -> None:
    """Move every replica off brokers (decommission): one move per replica.

    Destinations keep every partition's rack spread and leave replicas per staying broker as
    even as that allows (then each topic, then bytes); the drained partitions' preferred
    leaders are chosen so leaders end even. A preferred leader election runs after the apply.
    """
    from kreplica.cli import broker_cmd

    broker_cmd.drain(
        opts, brokers=brokers, topics=topic or [], regex=topics, keep_rack_share=keep_rack_share
    )


DIR_PLAN = [
    p for p in PLAN if p.name in ("disk_headroom", "dry_run", "out", "force_out", "yes", "limit")
]


@app.command("drain-dir")
@shared(SOURCE, DIR_PLAN, APPLY, OUTPUT)
def drain_dir(
    *,
    broker: Annotated[int, typer.Option("--broker", metavar="ID", help="The broker.")],
    dir_path: Annotated[
        str, typer.Option("--dir", metavar="PATH", help="The log dir to empty (as Kafka lists it).")
    ],
    opts: Options,
) -> None:
    """Empty one log dir of a JBOD broker into its other dirs (before removing a disk).

    Every replica in the dir moves once, largest first, to the broker's dir with the most usable
    bytes after the earlier moves that keeps --disk-headroom; replicas stay on their broker.
    """
    from kreplica.cli import dirs_cmd

    dirs_cmd.drain_dir(opts, broker=broker, path=dir_path)


@app.command("balance-dirs")
@shared(SOURCE, DIR_PLAN, APPLY, OUTPUT)
def balance_dirs(
    *,
    brokers: Annotated[
        str | None,
        typer.Option("--brokers", metavar="IDS", help="Only these brokers (default: all)."),
    ] = None,
    opts: Options,
) -> None:
    """Even out the log dirs within each JBOD broker with the fewest bytes moved.

    Each dir's target is its share of the broker's replica bytes by its total bytes; replicas
    move largest first, only from dirs above target to dirs below, never past a target.
    """
    from kreplica.cli import dirs_cmd

    dirs_cmd.balance_dirs(opts, brokers=brokers)


@app.command("add-brokers")
@shared(SOURCE, BROKER_PLAN, APPLY, OUTPUT)
def add_brokers(*, brokers: BrokerIdsOpt, by: ByOpt = "count", opts: Options) -> None:
    """Fill new brokers up to their share with the fewest moves.

    Replicas come from the most loaded brokers, small partitions first, never losing a rack;
    the report compares the moves with the new brokers' deficit.
    """
    from kreplica.cli import broker_cmd

    broker_cmd.add_brokers(opts, brokers=brokers, by=by)


@app.command()
@shared(SOURCE, BROKER_PLAN, APPLY, OUTPUT)
def replace(
    *,
    broker: Annotated[int, typer.Option("--broker", metavar="ID", help="Broker to replace.")],
    with_broker: Annotated[
        int, typer.Option("--with", metavar="ID", help="Broker taking its replicas.")
    ],
    opts: Options,
) -> None:
    """Give one broker's replicas to another, positions kept (a failed host)."""
    from kreplica.cli import broker_cmd

    broker_cmd.replace(opts, broker=broker, with_broker=with_broker)


@app.command()
@shared(SOURCE, BROKER_PLAN, TRAFFIC_FROM, APPLY, OUTPUT)
def rebalance(
    *,
    by: Annotated[
        str,
        typer.Option(
            "--by",
            metavar="count|bytes|traffic",
            help="Even out replica counts, bytes, or network in/out from measured rates (a "
            "snapshot taken with `snapshot --traffic`, or measured live over --traffic-window).",
        ),
    ] = "count",
    max_moves: Annotated[
        int | None,
        typer.Option("--max-moves", metavar="N", help="Move at most N replicas."),
    ] = None,
    max_bytes: Annotated[
        str | None,
        typer.Option("--max-bytes", metavar="SIZE", help="Copy at most SIZE, e.g. 50GB."),
    ] = None,
    traffic_window: Annotated[
        float | None,
        typer.Option(
            "--traffic-window",
            metavar="SECONDS",
            help="--by traffic on a live cluster: measure the rates over this window first (5 "
            "or more; default 60). (--window is the apply's daily window.)",
        ),
    ] = None,
    capacity: Annotated[
        Path | None,
        typer.Option(
            "--capacity",
            metavar="FILE",
            help='--by traffic on mixed hardware: per-broker network capacity, JSON {"ID": '
            '{"nw_in": B/s, "nw_out": B/s}} for every broker; balances utilisation, not bytes.',
        ),
    ] = None,
    opts: Options,
) -> None:
    """Even out replicas per topic and per broker, then leaders, with the fewest moves.

    Replica spread <= 1 per topic and cluster (or the most even bytes with --by bytes), within
    --max-moves / --max-bytes; then preferred leaders spread <= 1 by reordering replicas (no
    data moves), elected after the apply.
    """
    from kreplica.cli import broker_cmd

    broker_cmd.rebalance(
        opts,
        by=by,
        max_moves=max_moves,
        max_bytes=max_bytes,
        window_s=traffic_window,
        capacity=capacity,
    )


@app.command()
@shared(SOURCE, OUTPUT)
def explain(
    *,
    topic: Annotated[
        list[str] | None,
        _topic_option("Topic to explain (repeatable; default: all topics)."),
    ] = None,
    opts: Options,
) -> None:
    """How topics' replicas are laid out.

    Whether the layout is Kafka's default (and with which start index and shift), partitions
    added later, replicas and leaders per broker, and rack diversity.
    """
    from kreplica.cli import commands

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
    below min.insync.replicas, leader skew. Exit code 7 when anything is an error, 5 when a
    plan document was made for another cluster or its partitions changed since.
    """
    from kreplica.cli import commands

    commands.check(opts, plan_file)


@app.command()
@shared(SOURCE, TRAFFIC_FROM, OUTPUT)
def snapshot(
    *,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", metavar="FILE", help="Write here (default: stdout)."),
    ] = None,
    topic: Annotated[
        list[str] | None,
        _topic_option("Only these topics (repeatable; default: all)."),
    ] = None,
    traffic: Annotated[
        float | None,
        typer.Option(
            "--traffic",
            metavar="SECONDS",
            help="Also measure each partition's rate and fan-out over this window (5 or "
            "more; needs the brokers): what `traffic --snapshot` and `--by traffic` read.",
        ),
    ] = None,
    opts: Options,
) -> None:
    """Save brokers and assignments to a file.

    Works with any source; the file is what --snapshot FILE reads (format: docs/sources.md).
    A snapshot is JSON whatever --output says: without -o it goes to stdout as the file itself
    (table, markdown) or inside the envelope's data.snapshot (json); with -o, --output shapes
    the summary line.
    """
    from kreplica.cli import commands

    commands.snapshot(opts, out=out, topics=topic or [], traffic_s=traffic)


@app.command()
@shared(SOURCE, TRAFFIC_FROM, OUTPUT)
def traffic(
    *,
    window: Annotated[
        float,
        typer.Option(
            "--window",
            metavar="SECONDS",
            help="Read offsets this far apart (5 or more); ignored with --snapshot or "
            "--traffic-from.",
        ),
    ] = 60.0,
    capacity: Annotated[
        Path | None,
        typer.Option(
            "--capacity",
            metavar="FILE",
            help='Per-broker network capacity, JSON {"ID": {"nw_in": B/s, "nw_out": B/s}}: '
            "adds utilisation.",
        ),
    ] = None,
    topic: Annotated[
        list[str] | None,
        _topic_option("Only these topics (repeatable; default: all)."),
    ] = None,
    limit: Annotated[
        int, typer.Option("--limit", metavar="N", help="Partitions in the table (busiest first).")
    ] = 20,
    opts: Options,
) -> None:
    """Measure each partition's write rate and consumer fan-out, and each broker's network load.

    Two ListOffsets reads --window apart times bytes per offset (log size over offset span);
    fan-out: consumer groups whose committed offset advanced. Network in per broker: the rates
    of the partitions it holds; out: for those it leads, rate x (followers + fan-out). Needs
    --bootstrap-server, or a --snapshot taken with `snapshot --traffic`; or, from any source,
    --traffic-from prometheus://HOST:PORT: each partition's peak over --traffic-range. Read-only.
    """
    from kreplica.cli import traffic_cmd

    traffic_cmd.traffic(opts, window_s=window, capacity=capacity, topics=topic or [], limit=limit)


PlanFileArg = Annotated[
    Path,
    typer.Argument(
        metavar="PLAN.json",
        help="The plan --out wrote (PLAN.kreplica.json beside it is read too), or any "
        "kafka-reassign-partitions JSON.",
    ),
]


@app.command()
@shared(SOURCE, APPLY, OUTPUT)
def apply(*, plan_file: PlanFileArg, opts: Options) -> None:
    """Apply a plan safely and wait until it is done.

    Preflight (right cluster, no drift, nothing else in flight, targets alive, min ISR), then
    throttles for the moving replicas only, waves, progress, a journal for --resume, and the
    throttles put back when done.
    """
    from kreplica.cli import apply_cmd, applying

    apply_cmd.apply(opts, applying.plan_source(opts, plan_file), plan_file)


@app.command()
@shared(SOURCE, OUTPUT)
def verify(*, plan_file: PlanFileArg, opts: Options) -> None:
    """Check that a plan is done.

    Exit 0 only when every partition of the plan is as planned and none is moving.
    """
    from kreplica.cli import apply_cmd, applying

    apply_cmd.verify(opts, applying.plan_source(opts, plan_file), plan_file)


@app.command()
@shared(SOURCE, OUTPUT)
def status(
    *,
    plan_file: PlanFileArg,
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            metavar="SECONDS",
            help="Read replica sizes twice this far apart to measure the rate of moves the "
            "plan's journal did not see submitted (those are rated since their submit); 0: one "
            "read.",
        ),
    ] = 2.0,
    opts: Options,
) -> None:
    """Where each partition of a plan stands: done, moving or waiting, bytes, ETA and why.

    Read-only (safe while an apply runs, or none). One reason per partition not done:
    dest-broker-offline, dest-dir-offline, dest-dir-full, leader-offline, throttle-bound,
    tiered-topic, follower-lagging, not-submitted, unknown. Exit 0 whenever it could report,
    done or not (kreplica verify is the pass/fail check).
    """
    from kreplica.cli import applying, status_cmd

    status_cmd.status(opts, applying.plan_source(opts, plan_file), plan_file, interval=interval)


@app.command()
@shared(SOURCE, OUTPUT)
def cancel(
    *,
    plan_file: PlanFileArg,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Cancel even where a partition would keep fewer live in-sync replicas than "
            "its min.insync.replicas (recorded in the journal).",
        ),
    ] = False,
    rollback_finished: Annotated[
        bool,
        typer.Option(
            "--rollback-finished",
            help="Then apply PLAN.rollback.json (at the plan's throttle rate), so the "
            "partitions that had finished go back too (plans that change RF or partition "
            "counts only).",
        ),
    ] = False,
    opts: Options,
) -> None:
    """Stop a plan's moves in flight. They return to their old replicas; throttles are restored.

    Partitions whose move had finished stay as planned; the output counts them and names the
    rollback file that returns them (--rollback-finished applies it at once). Refused (exit
    10, nothing changed) when a partition would be left under its min.insync.replicas, e.g.
    an original replica's broker is down.
    """
    from kreplica.cli import apply_cmd, applying

    apply_cmd.cancel(
        opts,
        applying.plan_source(opts, plan_file),
        plan_file,
        force=force,
        rollback_finished=rollback_finished,
    )


@app.command()
@shared(SOURCE, OUTPUT)
def elect(
    *,
    plan_file: Annotated[
        Path | None,
        typer.Argument(metavar="[PLAN.json]", help="Elect for the partitions of this plan."),
    ] = None,
    topic: Annotated[
        list[str] | None,
        _topic_option("Elect for every partition of this topic (repeatable)."),
    ] = None,
    opts: Options,
) -> None:
    """Preferred leader election. Leadership goes back to each partition's first replica."""
    from kreplica.cli import apply_cmd, applying, common

    spec = common.source_spec(opts) if plan_file is None else applying.plan_source(opts, plan_file)
    apply_cmd.elect(opts, spec, plan_file, topic or [])


@app.command()
@shared(SOURCE, OUTPUT)
def throttles(
    *,
    clear: Annotated[
        bool, typer.Option("--clear", help="Remove throttles (with --all: every one).")
    ] = False,
    everything: Annotated[
        bool, typer.Option("--all", help="With --clear: every replication throttle.")
    ] = False,
    plan: Annotated[
        list[Path] | None,
        typer.Option(
            "--plan",
            metavar="PLAN.json",
            help="With --clear: the plans whose throttles to restore (default: the journals in "
            "this folder and kreplica's state folder).",
        ),
    ] = None,
    opts: Options,
) -> None:
    """List replication throttles (--clear removes them).

    --clear restores the throttles kreplica set and did not restore yet (it reads the plans'
    journals), putting back what was there before; --clear --all removes every one. Exit 9
    (partial) when a down broker's throttles could be neither read nor removed (it is named);
    0 only when every broker was seen.
    """
    from kreplica.cli import apply_cmd, common

    apply_cmd.throttles(
        opts, common.source_spec(opts), clear=clear, everything=everything, plans=plan or []
    )


@app.command("partition-for")
@shared(SOURCE, OUTPUT)
def partition_for(
    *,
    topic: Annotated[
        str | None,
        typer.Option("--topic", "-t", metavar="NAME", help="Topic (its partition count is read)."),
    ] = None,
    key: Annotated[
        list[str] | None,
        typer.Option("--key", "-k", metavar="KEY", help="Record key (repeatable)."),
    ] = None,
    key_hex: Annotated[
        bool, typer.Option("--key-hex", help="Keys are hex bytes (binary keys).")
    ] = False,
    keys_file: Annotated[
        Path | None,
        typer.Option("--keys-file", metavar="FILE", help="Keys, one per line."),
    ] = None,
    partitions: Annotated[
        int | None,
        typer.Option("--partitions", "-p", metavar="N", help="Partition count (offline)."),
    ] = None,
    after: Annotated[
        int | None,
        typer.Option("--after", metavar="N", help="Also the partition with N partitions."),
    ] = None,
    opts: Options,
) -> None:
    """The partition a keyed record goes to, as the Java producer picks it.

    toPositive(murmur2(key bytes)) % partitions: Kafka's default partitioner, and librdkafka's
    murmur2 / murmur2_random. --after N adds the partition after growing to N partitions.
    """
    from kreplica.cli import impact_cmd

    impact_cmd.partition_for(
        opts,
        topic=topic,
        keys=key or [],
        key_hex=key_hex,
        keys_file=keys_file,
        partitions=partitions,
        after=after,
    )


brokers_app = typer.Typer(
    name="brokers",
    help="Brokers kreplica remembers as drained (later plans leave them out): list, undrain.",
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
ClusterIdOpt = Annotated[
    str | None,
    typer.Option(
        "--cluster-id", metavar="ID", help="Only this cluster (as `up` or `explain` show it)."
    ),
]


@brokers_app.command("list")
@shared(OUTPUT)
def brokers_list(*, cluster_id: ClusterIdOpt = None, opts: Options) -> None:
    """Show the brokers remembered as drained, per cluster: an applied drain records them."""
    from kreplica.cli import broker_cmd

    broker_cmd.drained_list(opts, cluster_id=cluster_id)


@brokers_app.command("drained", hidden=True)
@shared(OUTPUT)
def brokers_drained(*, cluster_id: ClusterIdOpt = None, opts: Options) -> None:
    """Same as `kreplica brokers list`."""
    from kreplica.cli import broker_cmd

    broker_cmd.drained_list(opts, cluster_id=cluster_id)


@brokers_app.command("undrain")
@shared(OUTPUT)
def brokers_undrain(
    *,
    brokers: Annotated[str, typer.Argument(metavar="IDS", help="Broker ids, like 4 or 4,5.")],
    cluster_id: ClusterIdOpt = None,
    opts: Options,
) -> None:
    """Forget that brokers were drained: later plans may place replicas on them again."""
    from kreplica.cli import broker_cmd

    broker_cmd.undrain(opts, brokers=brokers, cluster_id=cluster_id)


app.add_typer(brokers_app, name="brokers")


def _mount_consumers() -> None:
    """`kreplica consumers ...`: its module imports typer only; clients load when it runs."""
    from kreplica.cli.impact_cmd import consumers_app

    app.add_typer(consumers_app, name="consumers")


_mount_consumers()


def _mount_sandbox() -> None:
    """`kreplica sandbox ...` lives in its own module; the CLI works without it."""
    if importlib.util.find_spec("kreplica.cli.sandbox_cmd") is None:
        return
    from kreplica.cli.sandbox_cmd import sandbox_app

    app.add_typer(sandbox_app, name="sandbox")  # its help's first sentence is the summary


_mount_sandbox()


def _mount_fleet() -> None:
    """`kreplica fleet ...`: the typer part only; Spark loads when audit or plan runs."""
    from kreplica.cli.fleet_cmd import fleet_app

    app.add_typer(fleet_app, name="fleet")


_mount_fleet()


def run(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (what `main()` exits with)."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = typer.main.get_command(_app_for(args))
    code = command.main(args=args, prog_name="kreplica", standalone_mode=False)
    return int(code or 0)


def _app_for(args: list[str]) -> typer.Typer:
    """The app with only the command (or group) `args` names, when it names one: typer
    builds every command's parameters from its signature before parsing (a fifth of a
    second of a 20,000-partition `expand`), and one command parses and helps the same
    alone. The whole app for anything else (--help, --version, a misspelt command)."""
    import copy

    if not args or args[0].startswith("-"):
        return app
    for info in app.registered_commands:
        callback = info.callback
        name = info.name or (callback and typer.main.get_command_name(callback.__name__))
        if name == args[0]:
            one = copy.copy(app)
            one.registered_commands, one.registered_groups = [info], []
            return one
    for group in app.registered_groups:
        if group.name == args[0]:
            one = copy.copy(app)
            one.registered_commands, one.registered_groups = [], [group]
            return one
    return app
