"""Options shared by many commands, declared once and added to each command's signature.

`@shared(SOURCE, OUTPUT)` appends those options to the decorated command and hands their values
to it as one `opts: Options` argument, so the commands stay short and every command spells a
shared option the same way.
"""

# No `from __future__ import annotations`: typer reads these annotations at runtime.

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from kreplica.cli import output

try:  # typer >= 0.2x vendors click; older releases use the click package
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import get_current_context  # type: ignore[no-redef]

SOURCE_PANEL = "Cluster source"
PLAN_PANEL = "Planning"
APPLY_PANEL = "Applying"
OUTPUT_PANEL = "Output"


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


@dataclass
class Options:
    snapshot: str | None = None
    zookeeper: str | None = None
    bootstrap_server: str | None = None
    command_config: str | None = None
    cluster: str | None = None
    timeout: float | None = None  # None: the named cluster's, else 15
    output: OutputFormat = OutputFormat.table
    no_color: bool = False
    debug: bool = False
    strategy: str = "balanced"
    brokers: str | None = None
    exclude_brokers: str | None = None
    seed: int | None = None
    force: bool = False
    replace_dead: bool = False
    skip_in_flight: bool = False
    disk_headroom: str | None = None  # None: 10%; see common.parse_headroom
    no_sizes: bool = False
    log_dirs: str = "any"
    dry_run: bool = False
    out: Path | None = None
    force_out: bool = False
    yes: bool = False
    limit: int = 50
    throttle: str | None = None
    max_partitions: int | None = None
    max_per_broker: int | None = None
    order: str = "plan"
    replica_at_a_time: bool = False
    additional: bool = False
    on_drift: str = "fail"
    allow_under_min_isr: bool = False
    allow_under_replicated: bool = False
    controller_settle: float = 60.0
    rate_window: float = 10.0
    allow_under_write_rate: bool = False
    pace: str | None = None
    throttle_min: str | None = None
    throttle_max: str | None = None
    pace_interval: float = 10.0
    keep_canary: bool = False
    window: str | None = None
    window_tz: str | None = None
    window_floor: bool = False
    max_bytes_per_hour: str | None = None
    stall_timeout: float = 300.0
    resume: bool = False
    via: str | None = None  # None: kafka, or for --resume the way the journal records
    traffic_from: str | None = None  # prometheus://HOST:PORT: rates from metrics
    traffic_range: str | None = None  # None: sources.prometheus.DEFAULT_RANGE


def _param(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
    )


SOURCE = [
    _param(
        "snapshot",
        Annotated[
            str | None,
            typer.Option(
                "--snapshot",
                metavar="FILE",
                help="Read the cluster from a snapshot file (written by `kreplica snapshot`).",
                rich_help_panel=SOURCE_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "zookeeper",
        Annotated[
            str | None,
            typer.Option(
                "--zookeeper",
                metavar="HOST:PORT[/chroot]",
                help="Read assignments from ZooKeeper (ZooKeeper-mode clusters).",
                rich_help_panel=SOURCE_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "bootstrap_server",
        Annotated[
            str | None,
            typer.Option(
                "--bootstrap-server",
                metavar="HOST:PORT",
                help="Read the cluster through the Kafka AdminClient.",
                rich_help_panel=SOURCE_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "command_config",
        Annotated[
            str | None,
            typer.Option(
                "--command-config",
                metavar="FILE",
                help="Client properties (security.protocol, sasl.*, ssl.*), as for Kafka's tools.",
                rich_help_panel=SOURCE_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "cluster",
        Annotated[
            str | None,
            typer.Option(
                "--cluster",
                metavar="NAME",
                help="A named cluster from ~/.config/kreplica/clusters.toml (or KREPLICA_CONFIG).",
                rich_help_panel=SOURCE_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "timeout",
        Annotated[
            float | None,
            typer.Option(
                "--timeout",
                min=0.1,
                metavar="SECONDS",
                help="Give up on an unreachable cluster after this long (default: the named "
                "cluster's timeout_s, else 15).",
                rich_help_panel=SOURCE_PANEL,
            ),
        ],
        None,
    ),
]

# where the commands that read rates (traffic, snapshot, rebalance --by traffic) may read them
TRAFFIC_FROM = [
    _param(
        "traffic_from",
        Annotated[
            str | None,
            typer.Option(
                "--traffic-from",
                metavar="prometheus://HOST:PORT",
                help="Read partition rates from Prometheus (the JMX exporter's Kafka names) "
                "instead of measuring them through the brokers.",
                rich_help_panel=SOURCE_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "traffic_range",
        Annotated[
            str | None,
            typer.Option(
                "--traffic-range",
                metavar="DURATION",
                help="With --traffic-from: each partition's peak rate over this much history "
                "(e.g. 7d; default 5m).",
                rich_help_panel=SOURCE_PANEL,
            ),
        ],
        None,
    ),
]

OUTPUT = [
    _param(
        "output",
        Annotated[
            OutputFormat,
            typer.Option(
                "--output",
                metavar="table|json|markdown",
                help="table for people, json for scripts (one envelope), markdown for tickets.",
                envvar="KREPLICA_OUTPUT",
                rich_help_panel=OUTPUT_PANEL,
            ),
        ],
        OutputFormat.table,
    ),
    _param(
        "no_color",
        Annotated[
            bool,
            typer.Option(
                "--no-color", help="No colours (also: NO_COLOR=1).", rich_help_panel=OUTPUT_PANEL
            ),
        ],
        False,
    ),
    _param(
        "debug",
        Annotated[
            bool,
            typer.Option(
                "--debug",
                help="Show tracebacks (also: KREPLICA_DEBUG=1).",
                rich_help_panel=OUTPUT_PANEL,
            ),
        ],
        False,
    ),
]

PLAN = [
    _param(
        "strategy",
        Annotated[
            str,
            typer.Option(
                "--strategy",
                metavar="NAME",
                help="balanced: least-loaded, rack-diverse brokers; kafka: continue the topic's "
                "Kafka layout; append: extend along the id-sorted broker ring.",
                rich_help_panel=PLAN_PANEL,
            ),
        ],
        "balanced",
    ),
    _param(
        "brokers",
        Annotated[
            str | None,
            typer.Option(
                "--brokers",
                metavar="IDS",
                help="Only place new replicas on these brokers, e.g. 1,2,5-8.",
                rich_help_panel=PLAN_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "exclude_brokers",
        Annotated[
            str | None,
            typer.Option(
                "--exclude-brokers",
                metavar="IDS",
                help="Never place new replicas on these brokers.",
                rich_help_panel=PLAN_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "seed",
        Annotated[
            int | None,
            typer.Option(
                "--seed",
                metavar="N",
                help="Seed for tie-breaks; same seed, same plan.",
                rich_help_panel=PLAN_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "force",
        Annotated[
            bool,
            typer.Option(
                "--force",
                help="Allow a new RF at or below min.insync.replicas.",
                rich_help_panel=PLAN_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "replace_dead",
        Annotated[
            bool,
            typer.Option(
                "--replace-dead",
                help="In partitions the plan changes, replace replicas on dead brokers with live "
                "ones (same rack where possible) instead of refusing.",
                rich_help_panel=PLAN_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "skip_in_flight",
        Annotated[
            bool,
            typer.Option(
                "--skip-in-flight",
                help="Leave partitions that are being reassigned out of the plan instead of "
                "refusing (exit 6).",
                rich_help_panel=PLAN_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "disk_headroom",
        Annotated[
            str | None,
            typer.Option(
                "--disk-headroom",
                metavar="SIZE|PCT",
                help="Free space each log dir must keep after the bytes a plan sends to it: a "
                "percentage of the dir's disk (default 10%) or a size such as 50GiB. A plan "
                "that would cross it is refused (exit 4); without disk sizes it is unchecked.",
                rich_help_panel=PLAN_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "no_sizes",
        Annotated[
            bool,
            typer.Option(
                "--no-sizes",
                help="Do not read partition sizes and disk figures (DescribeLogDirs): faster "
                "on a large cluster, but the plan then says bytes: not read, breaks no ties by "
                "bytes and leaves --disk-headroom unchecked (apply checks it again).",
                rich_help_panel=PLAN_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "log_dirs",
        Annotated[
            str,
            typer.Option(
                "--log-dirs",
                metavar="MODE",
                help="any: the broker picks each new replica's log dir (Kafka's default); "
                "balanced: name the dir of its broker with the most usable bytes.",
                rich_help_panel=PLAN_PANEL,
            ),
        ],
        "any",
    ),
    _param(
        "dry_run",
        Annotated[
            bool,
            typer.Option(
                "--dry-run", help="Show the plan only; change nothing.", rich_help_panel=PLAN_PANEL
            ),
        ],
        False,
    ),
    _param(
        "out",
        Annotated[
            Path | None,
            typer.Option(
                "--out",
                metavar="PLAN.json",
                help="Write Kafka's reassignment JSON here, plus PLAN.rollback.json and "
                "PLAN.kreplica.json (cluster id, before-state, report) beside it; existing files "
                "are not overwritten (exit 2) without --force-out.",
                rich_help_panel=PLAN_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "force_out",
        Annotated[
            bool,
            typer.Option(
                "--force-out",
                help="Let --out overwrite existing plan files (a finished apply's journal "
                "beside them goes too).",
                rich_help_panel=PLAN_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "yes",
        Annotated[
            bool,
            typer.Option(
                "--yes", "-y", help="Do not ask for confirmation.", rich_help_panel=PLAN_PANEL
            ),
        ],
        False,
    ),
    _param(
        "limit",
        Annotated[
            int,
            typer.Option(
                "--limit",
                metavar="N",
                min=0,
                help="Show at most this many changed partitions in the table (0: all).",
                rich_help_panel=OUTPUT_PANEL,
            ),
        ],
        50,
    ),
]


APPLY = [
    _param(
        "throttle",
        Annotated[
            str | None,
            typer.Option(
                "--throttle",
                metavar="RATE",
                help="Replication throttle for the moving replicas, e.g. 50MB/s, 10MiB/s or bytes "
                "per second; restored when done.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "pace",
        Annotated[
            str | None,
            typer.Option(
                "--pace",
                metavar="auto",
                help="auto: the throttle follows the cluster's health between --throttle-min "
                "and --throttle-max (a canary producer's p99, the ISR, the copy rate).",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "throttle_min",
        Annotated[
            str | None,
            typer.Option(
                "--throttle-min",
                metavar="RATE",
                help="--pace auto: the floor, and the rate it starts at.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "throttle_max",
        Annotated[
            str | None,
            typer.Option(
                "--throttle-max",
                metavar="RATE",
                help="--pace auto: the ceiling.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "pace_interval",
        Annotated[
            float,
            typer.Option(
                "--pace-interval",
                metavar="SECONDS",
                help="--pace auto: seconds between two decisions.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        10.0,
    ),
    _param(
        "keep_canary",
        Annotated[
            bool,
            typer.Option(
                "--keep-canary",
                help="--pace auto: keep the canary topic (kreplica-canary) afterwards.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "window",
        Annotated[
            str | None,
            typer.Option(
                "--window",
                metavar="HH:MM-HH:MM",
                help="Start waves only inside this daily window (local time; may wrap past "
                "midnight; HH:MM:SS also taken); outside it apply waits.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "window_tz",
        Annotated[
            str | None,
            typer.Option(
                "--window-tz",
                metavar="ZONE",
                help="--window in this time zone (Europe/Paris, UTC) instead of local time.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "window_floor",
        Annotated[
            bool,
            typer.Option(
                "--window-floor",
                help="--pace auto: outside the window, moves in flight go on at the floor.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "max_bytes_per_hour",
        Annotated[
            str | None,
            typer.Option(
                "--max-bytes-per-hour",
                metavar="SIZE",
                help="Start no wave that would copy more than SIZE (e.g. 500GB) within an hour.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "max_partitions",
        Annotated[
            int | None,
            typer.Option(
                "--max-partitions",
                metavar="N",
                help="At most N partitions moving at once, cluster-wide (waves).",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "max_per_broker",
        Annotated[
            int | None,
            typer.Option(
                "--max-per-broker",
                metavar="N",
                help="At most N moving partitions per broker at once.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        None,
    ),
    _param(
        "order",
        Annotated[
            str,
            typer.Option(
                "--order",
                metavar="ORDER",
                help="Which moves go first: plan, largest or smallest.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        "plan",
    ),
    _param(
        "replica_at_a_time",
        Annotated[
            bool,
            typer.Option(
                "--replica-at-a-time",
                help="Change one replica per partition at a time (never more than RF+1 replicas).",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "additional",
        Annotated[
            bool,
            typer.Option(
                "--additional",
                help="Start even though other reassignments are in flight.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "on_drift",
        Annotated[
            str,
            typer.Option(
                "--on-drift",
                metavar="fail|skip",
                help="A partition changed since the plan: fail (exit 5) or skip it.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        "fail",
    ),
    _param(
        "allow_under_min_isr",
        Annotated[
            bool,
            typer.Option(
                "--allow-under-min-isr",
                help="Move partitions that have fewer in-sync replicas than min.insync.replicas.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "allow_under_replicated",
        Annotated[
            bool,
            typer.Option(
                "--allow-under-replicated",
                help="Start although partitions outside the plan are under-replicated.",
                envvar="KREPLICA_ALLOW_UNDER_REPLICATED",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "controller_settle",
        Annotated[
            float,
            typer.Option(
                "--controller-settle",
                metavar="SECONDS",
                help="Refuse to start within SECONDS of a controller change (ZooKeeper "
                "mode; a cluster's first start is no change once its partitions have leaders; "
                "0: no check).",
                envvar="KREPLICA_CONTROLLER_SETTLE",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        60.0,
    ),
    _param(
        "rate_window",
        Annotated[
            float,
            typer.Option(
                "--rate-window",
                metavar="SECONDS",
                help="With a throttle, measure the write rates of the moving partitions the "
                "plan has none for over SECONDS before starting (0: do not measure).",
                envvar="KREPLICA_RATE_WINDOW",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        10.0,
    ),
    _param(
        "allow_under_write_rate",
        Annotated[
            bool,
            typer.Option(
                "--allow-under-write-rate",
                help="Start although partitions are written faster than the throttle that "
                "carries their moves (which then finish only once the writes slow down).",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "stall_timeout",
        Annotated[
            float,
            typer.Option(
                "--stall-timeout",
                metavar="SECONDS",
                help="Seconds without copied bytes before a stall is reported.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        300.0,
    ),
    _param(
        "resume",
        Annotated[
            bool,
            typer.Option(
                "--resume",
                help="Continue an interrupted apply from its journal (PLAN.journal.jsonl).",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        False,
    ),
    _param(
        "via",
        Annotated[
            str | None,
            typer.Option(
                "--via",
                metavar="kafka|zookeeper",
                help="Submit through kafka (KIP-455, default) or zookeeper "
                "(/admin/reassign_partitions); --resume: as the interrupted apply did.",
                rich_help_panel=APPLY_PANEL,
            ),
        ],
        None,
    ),
]


def shared(
    *groups: list[inspect.Parameter], without: frozenset[str] = frozenset()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the given option groups to a command; it receives them as `opts: Options`. Options
    named in `without` are left out (the command has no use for them; they keep their default).
    The run state learns the command's name (`consumers simulate`) and output flags first, so
    an error in the command is reported in its format."""
    extra = [p for group in groups for p in group if p.name not in without]
    names = {p.name for p in extra}
    known = {f.name for f in fields(Options)}
    assert names <= known, names - known

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(command)
        own = [p for p in signature.parameters.values() if p.name != "opts"]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            opts = Options(**{k: kwargs.pop(k) for k in list(kwargs) if k in names})
            output.state().begin(
                _command_name(),
                output=opts.output.value,
                debug=opts.debug,
                no_color=opts.no_color,
            )
            return command(opts=opts, **kwargs)

        wrapper.__signature__ = signature.replace(parameters=own + extra)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {
            **{k: v for k, v in command.__annotations__.items() if k != "opts"},
            **{p.name: p.annotation for p in extra},
        }
        return wrapper

    return decorate


def _command_name() -> str:
    """The command's words below the program's name: `expand`, `consumers simulate`."""
    ctx = get_current_context(silent=True)
    if ctx is None:  # called outside a command line (a test): the name scanned from argv
        return output.state().command
    words = []
    while ctx.parent is not None:
        words.append(ctx.info_name or "")
        ctx = ctx.parent
    return " ".join(reversed(words))
