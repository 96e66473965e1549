"""Every error kreplica raises, and the one exit-code enum the CLI maps them to.

The library raises; only the CLI turns an error into an exit code and a one-line message.
Each message names the problem and what to do about it, and an option in the library's own
words, in backticks: `rf`, `skip_in_flight`, `bootstrap_server` (the parameters of
kreplica.api, PlanOptions and ApplyOptions). FLAGS is the one table of what the command lines
(the CLI, the fleet job) call them; `flag_words` puts a message in their words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import IntEnum, unique

FLAGS = {
    # where the cluster is
    "snapshot": "--snapshot",
    "zookeeper": "--zookeeper",
    "bootstrap_server": "--bootstrap-server",
    "client_config": "--command-config",
    "cluster": "--cluster",
    # what to plan
    "rf": "--rf",
    "partitions": "--partitions",
    "brokers": "--brokers",
    "exclude_brokers": "--exclude-brokers",
    "old": "--broker",  # replace_plan's: the broker replaced
    "new": "--with",  # and the one taking its replicas
    "by": "--by",
    "max_moves": "--max-moves",
    "max_bytes": "--max-bytes",
    "strategy": "--strategy",
    "seed": "--seed",
    "force": "--force",
    "replace_dead": "--replace-dead",
    "skip_in_flight": "--skip-in-flight",
    "disk_headroom": "--disk-headroom",
    "count": "--sample",  # sample_keys': keys read from a topic
    "traffic_s": "--traffic",  # snapshot's: measure rates over this window
    "traffic_from": "--traffic-from",  # rates read from Prometheus
    "traffic_range": "--traffic-range",  # over this much history
    # how to apply
    "resume": "--resume",
    "throttle": "--throttle",
    "throttle_max": "--throttle-max",
    "pace": "--pace auto",
    "pace_interval_s": "--pace-interval",
    "max_partitions": "--max-partitions",
    "max_per_broker": "--max-per-broker",
    "order": "--order",
    "stall_timeout_s": "--stall-timeout",
    "via": "--via",
    "on_drift": "--on-drift",
    "additional": "--additional",
    "allow_under_min_isr": "--allow-under-min-isr",
    "allow_under_replicated": "--allow-under-replicated",
    "allow_under_write_rate": "--allow-under-write-rate",
    "rate_window_s": "--rate-window",
    "controller_settle_s": "--controller-settle",
    "window": "--window",
    "window_tz": "--window-tz",
    "window_floor": "--window-floor",
    "max_bytes_per_hour": "--max-bytes-per-hour",
}
_OPTION = re.compile(r"`([a-z_]+)`")


def flag_words(message: str, where: Mapping[str, str] | None = None) -> str:
    """`message` with each option in backticks said as a command line says it: `where`'s
    text for it when given (where the user really set it), else its flag (FLAGS); anything
    else in backticks is left as it is."""

    def swap(match: re.Match[str]) -> str:
        option = match.group(1)
        return (where or {}).get(option) or FLAGS.get(option) or match.group(0)

    return _OPTION.sub(swap, message)


@unique
class ExitCode(IntEnum):
    """Process exit codes. Stable: scripts depend on them. EXIT_CODES says each one's meaning
    in a few words: `kreplica --help` prints them, and the README's table starts each row
    with them (tests/unit/test_exit_codes.py)."""

    OK = 0  # also: nothing to change
    ERROR = 1  # a bug: rerun with --debug and report it
    USAGE = 2  # bad option, bad input file (a malformed snapshot, plan or config), two sources
    SOURCE = 3  # cannot read the cluster: unreachable, authentication, unknown topic
    # the request cannot be met (RF above eligible brokers, fewer partitions, ...; apply: a
    # throttle below the write rate of the partitions it carries)
    INFEASIBLE = 4
    STALE_PLAN = 5  # the plan was made for another cluster or the cluster drifted since
    IN_PROGRESS = 6  # a reassignment is already in flight
    VERIFY_FAILED = 7  # verification after apply, or `check` found error-level problems
    NOT_IMPLEMENTED = 8  # the command exists but this part is not built yet
    # finished without part of its input or of the cluster (named): a fleet run, `throttles`
    PARTIAL = 9
    UNSAFE_CANCEL = 10  # cancel refused: partitions would fall under min.insync.replicas
    # apply refused: mid-migration to KRaft, a controller changed since the cluster ran,
    # under-replicated; or stopped before a wave because a broker did not apply the throttle
    UNSETTLED = 11
    INTERRUPTED = 130  # Ctrl-C


EXIT_CODES: dict[ExitCode, str] = {
    ExitCode.OK: "ok",
    ExitCode.ERROR: "unexpected failure",
    ExitCode.USAGE: "usage",
    ExitCode.SOURCE: "cannot read the cluster",
    ExitCode.INFEASIBLE: "the request cannot be met",
    ExitCode.STALE_PLAN: "stale plan",
    ExitCode.IN_PROGRESS: "reassignment in progress",
    ExitCode.VERIFY_FAILED: "check or verify failed",
    ExitCode.NOT_IMPLEMENTED: "not built yet",
    ExitCode.PARTIAL: "partial",
    ExitCode.UNSAFE_CANCEL: "cancel refused",
    ExitCode.UNSETTLED: "apply refused to start",
    ExitCode.INTERRUPTED: "interrupted",
}


def exit_codes_text() -> str:
    """`0 ok, 1 unexpected failure, ...`: every exit code, in the enum's order."""
    return ", ".join(f"{code.value} {EXIT_CODES[code]}" for code in ExitCode)


class KreplicaError(Exception):
    """Base of all kreplica errors: a one-line, actionable message and an exit code."""

    exit_code: ExitCode = ExitCode.ERROR
    code: str = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(KreplicaError):
    exit_code = ExitCode.USAGE
    code = "usage"


class InputError(UsageError):
    """A file given by the user (snapshot, plan, config) is malformed."""

    code = "bad-input"


class SourceError(KreplicaError):
    exit_code = ExitCode.SOURCE
    code = "source"


class UnknownTopicError(SourceError):
    code = "unknown-topic"


class PlanInfeasible(KreplicaError):
    exit_code = ExitCode.INFEASIBLE
    code = "infeasible"


class ThrottleBelowWriteRate(PlanInfeasible):
    """Apply refused before writing anything: partitions of the plan are written faster than
    the throttle that would carry their moves (kreplica.executor.writerate), which then never
    finish."""

    code = "throttle-below-write-rate"


class StalePlan(KreplicaError):
    exit_code = ExitCode.STALE_PLAN
    code = "stale-plan"


class ReassignmentInProgress(KreplicaError):
    exit_code = ExitCode.IN_PROGRESS
    code = "reassignment-in-progress"


class VerificationFailed(KreplicaError):
    exit_code = ExitCode.VERIFY_FAILED
    code = "verification-failed"


class PartialResult(KreplicaError):
    """A fleet command finished and wrote its results, but skipped part of its input (an
    empty, unreadable or duplicate snapshot; a cluster collect could not read)."""

    exit_code = ExitCode.PARTIAL
    code = "partial"


class NotImplementedYet(KreplicaError):
    exit_code = ExitCode.NOT_IMPLEMENTED
    code = "not-implemented"


class UnsafeCancel(KreplicaError):
    """Cancelling now would leave partitions with too few live in-sync replicas."""

    exit_code = ExitCode.UNSAFE_CANCEL
    code = "unsafe-cancel"


class ClusterUnsettled(KreplicaError):
    """Apply refused to start: the cluster is mid-migration to KRaft, its controller changed a
    moment ago, or partitions outside the plan are under-replicated. Nothing was written."""

    exit_code = ExitCode.UNSETTLED
    code = "cluster-unsettled"


class ThrottleNotApplied(ClusterUnsettled):
    """Apply stopped before submitting: a broker did not report the throttle rate kreplica set
    within the wait (kreplica.executor.throttle_confirm); the throttles kreplica set come off
    unless moves of the plan are running."""

    code = "throttle-not-applied"
