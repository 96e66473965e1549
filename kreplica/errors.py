"""Every error kreplica raises, and the one exit-code enum the CLI maps them to.

The library raises; only the CLI turns an error into an exit code and a one-line message.
Each message names the problem and what to do about it.
"""

from __future__ import annotations

from enum import IntEnum, unique


@unique
class ExitCode(IntEnum):
    """Process exit codes. Stable: scripts depend on them (listed in the README)."""

    OK = 0
    ERROR = 1  # unexpected failure (a bug: rerun with --debug and report it)
    USAGE = 2  # bad command line or bad input file
    SOURCE = 3  # cannot read the cluster (unreachable, auth, missing topic, bad snapshot)
    INFEASIBLE = 4  # the request cannot be met (RF above eligible brokers, fewer partitions, ...)
    STALE_PLAN = 5  # the plan was made for another cluster or the cluster drifted since
    IN_PROGRESS = 6  # a reassignment is already in flight
    VERIFY_FAILED = 7  # verification after apply, or `check` found error-level problems
    NOT_IMPLEMENTED = 8  # the command exists but this part is not built yet
    PARTIAL = 9  # a fleet run finished without part of its input (named in its summary)
    UNSAFE_CANCEL = 10  # cancel refused: partitions would fall under min.insync.replicas
    UNSETTLED = 11  # apply refused: mid-migration to KRaft, new controller, under-replicated
    INTERRUPTED = 130  # Ctrl-C


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
