"""The apply's events as types: what it writes to the journal (Record) and what it shows as
progress (Shown), one TypedDict per kind (kreplica.executor.journal.EventKind).

A few kinds are both written and shown as they are (the window's, the pace's, wave-done,
leftover-throttles, elect, throttle-confirmed); `throttle-set`, `finish` and
`throttle-restored` are written with one shape (what the journal needs to restore and resume)
and shown with another (what a person reads). Reading a journal gives plain dicts (a file may
hold anything: journal.fold checks what it uses).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, NotRequired, TypedDict

# -- written and shown -------------------------------------------------------------------------


class WindowWait(TypedDict):
    event: Literal["window-wait"]
    wave: int
    reason: str
    seconds: float
    until: str  # ISO time, UTC


class WindowOpen(TypedDict):
    event: Literal["window-open"]
    wave: int


class PaceStart(TypedDict):
    event: Literal["pace-start"]
    rate: int  # bytes/s, the floor
    ceiling: int
    baseline_p99_ms: float | None
    p99_limit_ms: float | None
    out_of_isr: int | None  # partitions outside the plan out of the ISR
    canary: str | None  # the canary topic


class Pace(TypedDict):
    event: Literal["pace"]
    rate: int
    previous: int
    reason: str
    canary_p99_ms: float | None
    canary_waiting_ms: float | None
    p99_limit_ms: float | None
    out_of_isr: int | None
    copy_bps: int | None


class WaveDone(TypedDict):
    event: Literal["wave-done"]
    wave: int
    partitions: int


class LeftoverThrottles(TypedDict):
    event: Literal["leftover-throttles"]
    when: Literal["start", "end"]
    configs: list[dict[str, str]]  # {kind, name, config, value}


class ThrottleConfirmed(TypedDict):
    """Every broker kreplica wrote a rate to reports it (kreplica.executor.throttle_confirm):
    the throttle is in effect. Before the first wave ("moves"), before moves between log dirs
    ("dirs"), and after a --pace auto change ("pace", which does not wait for it)."""

    event: Literal["throttle-confirmed"]
    what: Literal["moves", "dirs", "pace"]
    brokers: list[int]
    seconds: float  # from the last write to the answer that showed every rate
    rounds: int  # DescribeConfigs rounds it took
    down: NotRequired[list[int]]  # not asked: down (a broker reads its configs when it starts)


class WriteRates(TypedDict):
    """The write rates of the moving partitions apply counted (kreplica.executor.writerate):
    from the plan document, measured before starting, or both; `status` reads them back."""

    event: Literal["write-rates"]
    source: str  # where they come from: "plan", "journal" (a resume), "measured", joined by " and "
    measured: str  # when and over how long, in words
    partitions: list[dict[str, Any]]  # {topic, partition, bytes_in_per_s}, known rates only
    unknown: list[str]  # "topic-p" of the moving partitions without a rate (not checked)
    bytes_in_per_s: float  # all of them together
    throttle: int | None  # the throttle they were checked against (None: none set)
    busiest: NotRequired[dict[str, Any]]  # {broker, side, wave, bytes_in_per_s}: the most load
    copy_s: NotRequired[float]  # the copy at the throttle, counting the writes meanwhile


class Elect(TypedDict):
    event: Literal["elect"]
    elected: list[str]  # "topic-p"
    failed: dict[str, str]  # "topic-p" -> why it kept its leader


# -- written -----------------------------------------------------------------------------------


class Start(TypedDict):
    event: Literal["start"]
    plan: str
    cluster_id: str | None
    resume: bool
    todo: int
    waiting: int
    create: int
    dir_moves: int
    via: str
    source: NotRequired[dict[str, str]]  # how the cluster was reached, for a resume
    elect_leaders: NotRequired[bool]


class ThrottleSetRecord(TypedDict):
    event: Literal["throttle-set"]
    kind: str  # "topic" or "broker"
    name: str
    previous: Mapping[str, str | None]
    values: Mapping[str, str]


class ThrottlePending(TypedDict):
    event: Literal["throttle-pending"]
    kind: str
    name: str
    previous: Mapping[str, str | None]
    values: Mapping[str, str]
    reason: str


class ThrottleRestoredRecord(TypedDict):
    event: Literal["throttle-restored"]
    configs: int
    via: dict[str, str]  # broker -> the way a down broker's configs went


class Submit(TypedDict):
    event: Literal["submit"]
    wave: int
    topic: str
    partition: int
    before: list[int]
    after: list[int]


class Complete(TypedDict):
    event: Literal["complete"]
    topic: str
    partition: int
    while_down: NotRequired[bool]  # finished while no kreplica ran


class DirSubmit(TypedDict):
    event: Literal["dir-submit"]
    wave: int
    topic: str
    partition: int
    broker: int
    to: str


class DirComplete(TypedDict):
    event: Literal["dir-complete"]
    topic: str
    partition: int
    broker: int


class Create(TypedDict):
    event: Literal["create"]
    topic: str
    partitions: list[int]


class Cancel(TypedDict):
    event: Literal["cancel"]
    partitions: list[str]  # "topic-p", "topic-p@broker" for a dir move
    forced: NotRequired[list[dict[str, Any]]]  # what `cancel --force` overrode


class FinishRecord(TypedDict):
    event: Literal["finish"]
    moved: NotRequired[int]
    created: NotRequired[int]
    seconds: NotRequired[float]
    already_done: NotRequired[int]  # found done, nothing to do


class Error(TypedDict):
    event: Literal["error"]
    message: str
    code: str


# -- shown -------------------------------------------------------------------------------------


class RateMeasuring(TypedDict):
    """Measuring the moving partitions' write rates before starting: so far, of how long."""

    event: Literal["rate-measuring"]
    waited_s: float
    window_s: float
    partitions: int


class Warning(TypedDict):
    event: Literal["warning"]
    message: str


class Note(TypedDict):
    event: Literal["note"]
    message: str


class NothingToDo(TypedDict):
    event: Literal["nothing-to-do"]
    done: int


class ResumeWait(TypedDict):
    event: Literal["resume-wait"]
    partitions: list[str]


class WaveStart(TypedDict):
    event: Literal["wave-start"]
    wave: int
    partitions: list[str]


class Progress(TypedDict):
    event: Literal["progress"]
    wave: int
    done: int
    total: int
    bytes_copied: int | None
    bytes_total: int | None
    elapsed_s: float
    # bytes/s over a sliding window, never above the throttle of the receiving brokers, and
    # the ETA from it (kreplica.executor.copyrate); None: not measured yet
    rate_bytes_per_s: NotRequired[float | None]
    eta_s: NotRequired[float | None]
    # bytes/s written meanwhile to the partitions still copying, once per new replica not in
    # sync (the ETA counts the copy at rate - writes); only when their write rates are known
    write_bytes_per_s: NotRequired[float]


class Stall(TypedDict):
    event: Literal["stall"]
    seconds: float
    partitions: list[str]
    brokers: list[int]  # receiving brokers
    down: list[int]  # of those, the ones down
    hint: str


class PartitionDone(TypedDict):
    event: Literal["partition-done"]
    partition: str


class ThrottleSetShown(TypedDict):
    event: Literal["throttle-set"]
    rate: int | None
    topics: int
    brokers: int


class DirThrottleSet(TypedDict):
    event: Literal["dir-throttle-set"]
    rate: int
    brokers: int


class ThrottleRestoredShown(TypedDict):
    event: Literal["throttle-restored"]
    configs: int
    via: dict[str, str]
    pending: dict[str, str]  # "kind name" -> why it stays for now


class Created(TypedDict):
    event: Literal["created"]
    topic: str
    partitions: int


class FinishShown(TypedDict):
    event: Literal["finish"]
    moved: int
    created: int


# the kinds both journalled and shown
_Both = (
    WindowWait
    | WindowOpen
    | PaceStart
    | Pace
    | WaveDone
    | LeftoverThrottles
    | Elect
    | ThrottleConfirmed
    | WriteRates
)
Record = (
    _Both
    | Start
    | ThrottleSetRecord
    | ThrottlePending
    | ThrottleRestoredRecord
    | Submit
    | Complete
    | DirSubmit
    | DirComplete
    | Create
    | Cancel
    | FinishRecord
    | Error
)
Shown = (
    _Both
    | RateMeasuring
    | Warning
    | Note
    | NothingToDo
    | ResumeWait
    | WaveStart
    | Progress
    | Stall
    | PartitionDone
    | ThrottleSetShown
    | DirThrottleSet
    | ThrottleRestoredShown
    | Created
    | FinishShown
)
# what an apply, a cancel or a restore calls with each event it shows
Emit = Callable[[Shown], None]
