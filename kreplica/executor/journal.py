"""The apply journal: an append-only JSON-lines record of what an apply did, for `--resume`.

`PLAN.json` has its journal beside it, `PLAN.journal.jsonl` (planfile.journal_path). Each line
is one event, a JSON object written and fsynced before `Journal.append` returns (and, when the
append created the file, its directory too). The journal adds two keys in front of the caller's:

* `seq`: 1, 2, 3, ... across every run that wrote to the file (a resume continues the count);
* `ts`: UTC time, `2026-11-23T10:00:00.123Z`, from the caller's `ts` when given, else from the
  journal's clock (injectable, so tests are deterministic).

Event types and their keys (keys not listed are kept and ignored by `state`):

* `start`: an apply (or a resume) begins. `plan` (path), `plan_fingerprint` (or `fingerprint`),
  `cluster_id`, `resume` (bool); optional `source` (how the cluster was reached, without
  secrets: {"bootstrap_server", "zookeeper", "command_config"} or {"cluster": NAME}; what a
  resume without a source reconnects to) and `elect_leaders` (true: a preferred leader election
  follows the moves, on resume too); anything else the apply loop wants (counts, backend).
* `throttle-set`: written BEFORE the configs of one resource are set. `kind` ("topic" or
  "broker"), `name` (topic name or broker id as a string), `values` {config: value set},
  `previous` {config: value before, or null/absent when it was not set}. When the same config is
  set again before a restore (a resume, a new rate), the first previous value is the one kept.
* `throttle-confirmed`: every live broker kreplica wrote a rate to reports it (the throttle is
  in effect). `what` ("moves": before the first wave; "dirs": before moves between log dirs;
  "pace": after a --pace auto change), `brokers` [ids], `seconds`, `rounds`, optional `down`.
* `submit`: written BEFORE a partition's reassignment is submitted. `topic`, `partition`,
  `after` (target replicas of this submission; with replica-at-a-time, of this step), optional
  `before`, `wave`.
* `complete`: a partition reached the target of its last submission and left the in-flight
  list. `topic`, `partition`, optional `replicas`.
* `wave-done`: `wave` (number), optional `partitions` (count).
* `create`: new partitions are being created. `topic`, `partitions` [ids].
* `throttle-restored`: the throttles kreplica set were restored. Optional `configs` (count),
  `via` {broker id: "ZooKeeper /config/brokers/4" or "the KRaft controller at HOST:PORT"} for
  brokers that were down; everything recorded by earlier `throttle-set` events counts as
  restored, except what `throttle-pending` events right after it name.
* `throttle-pending`: a restore could not write this resource (its broker is down and no other
  way was open): the same keys as `throttle-set` plus `reason`; it counts as set until the next
  `throttle-restored`.
* `cancel`: the plan's moves were cancelled. Optional `partitions` ["topic-p", ...] or
  [{"topic", "partition"}]; `forced` [{partition, original, kept, min_insync_replicas, down}]
  when `cancel --force` overrode the guard for those partitions.
* `finish`: the apply ended with every partition as planned.
* `elect`: the preferred leader election after the moves (asked for by `elect_leaders`).
  `elected` ["topic-p", ...], `failed` {"topic-p": why}.
* `error`: the apply stopped on an error. `message`, optional `code`.

Reading tolerates a damaged last line (a crash in the middle of a write: it is ignored, and the
next append cuts it off) but refuses a damaged line anywhere else with an InputError naming the
file and line. `state` folds the events into a `JournalState`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from kreplica.errors import InputError, ReassignmentInProgress, UsageError

if TYPE_CHECKING:
    from kreplica.executor.events import Record

Key = tuple[str, int]
Resource = tuple[str, str]

# Every kind of event an apply journals or shows as progress (the `event` key). The journal's
# own are listed in the module doc; the rest (warning, progress, stall, wave-start, pace, ...)
# go to the progress display only, or are journalled as notes for `status` to read.
EventKind = Literal[
    "cancel",
    "complete",
    "create",
    "created",
    "dir-complete",
    "dir-submit",
    "dir-throttle-set",
    "elect",
    "error",
    "finish",
    "leftover-throttles",
    "note",
    "nothing-to-do",
    "pace",
    "pace-start",
    "rate-measuring",
    "partition-done",
    "progress",
    "resume-wait",
    "stall",
    "start",
    "submit",
    "throttle-confirmed",
    "throttle-pending",
    "throttle-restored",
    "throttle-set",
    "warning",
    "wave-done",
    "wave-start",
    "window-open",
    "window-wait",
    "write-rates",
]
EVENT_KINDS: tuple[EventKind, ...] = get_args(EventKind)


def format_ts(moment: datetime) -> str:
    """UTC, milliseconds, with a Z: 2026-11-23T10:00:00.123Z (a naive time is taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass
class JournalState:
    """What a journal says happened (see the module docs for the events)."""

    started: bool = False
    plan: str | None = None  # from the first start
    plan_fingerprint: str | None = None  # from the first start that has one
    cluster_id: str | None = None  # from the first start that has one
    source: dict[str, str] | None = None  # from the last start that has one
    via: str | None = None  # the submitter of the last start that names one
    elect_leaders: bool = False  # a start asked for an election after the moves
    starts: int = 0  # 1 + the number of resumes
    submitted: dict[Key, tuple[int, ...]] = field(default_factory=dict)  # last target submitted
    completed: dict[Key, tuple[int, ...] | None] = field(default_factory=dict)  # replicas if told
    waves_done: list[int] = field(default_factory=list)
    created: dict[str, list[int]] = field(default_factory=dict)
    # throttles kreplica set and has not restored: what was there before, and what it set
    throttles_previous: dict[Resource, dict[str, str | None]] = field(default_factory=dict)
    throttles_set: dict[Resource, dict[str, str]] = field(default_factory=dict)
    throttles_restored: bool = False  # a restore came after the last throttle-set
    # of those, the ones a restore could not write (broker down): resource -> why
    throttles_pending: dict[Resource, str] = field(default_factory=dict)
    cancelled: bool = False  # a cancel came after the last start
    cancelled_at: str | None = None  # its time (`ts`)
    cancelled_partitions: list[Key] = field(default_factory=list)
    finished: bool = False  # a finish came after the last start
    finished_at: str | None = None  # its time (`ts`)
    errors: list[str] = field(default_factory=list)  # messages of error events after last start
    last_seq: int = 0
    _last_submit: dict[Key, int] = field(default_factory=dict, repr=False)
    _last_complete: dict[Key, int] = field(default_factory=dict, repr=False)

    @property
    def pending(self) -> list[Key]:
        """Partitions submitted and not completed since: maybe in flight still (ask the cluster)."""
        return sorted(
            k for k, seq in self._last_submit.items() if self._last_complete.get(k, 0) < seq
        )

    @property
    def has_throttles(self) -> bool:
        return bool(self.throttles_set)


def _key(topic: Any, partition: Any) -> Key:
    return (str(topic), int(partition))


def _text_key(text: str) -> Key:
    topic, _, partition = text.rpartition("-")
    return (topic, int(partition))


def _ts(event: dict[str, Any]) -> str | None:
    ts = event.get("ts")
    return ts if isinstance(ts, str) else None


def fold(events: list[dict[str, Any]]) -> JournalState:
    """The state after `events` (as `Journal.read` returns them); unknown events are skipped."""
    state = JournalState()
    for event in events:
        kind = event.get("event")
        seq = int(event.get("seq", state.last_seq + 1))
        state.last_seq = seq
        if kind == "start":
            state.started = True
            state.starts += 1
            state.cancelled = state.finished = False
            state.cancelled_at = state.finished_at = None
            state.cancelled_partitions = []
            state.errors = []
            if state.plan is None and event.get("plan") is not None:
                state.plan = str(event["plan"])
            fingerprint = event.get("plan_fingerprint", event.get("fingerprint"))
            if state.plan_fingerprint is None and fingerprint is not None:
                state.plan_fingerprint = str(fingerprint)
            if state.cluster_id is None and event.get("cluster_id") is not None:
                state.cluster_id = str(event["cluster_id"])
            source = event.get("source")
            if isinstance(source, dict) and source:
                state.source = {str(k): str(v) for k, v in source.items() if v is not None}
            state.elect_leaders = state.elect_leaders or bool(event.get("elect_leaders"))
            if event.get("via") is not None:
                state.via = str(event["via"])
        elif kind in ("throttle-set", "throttle-pending"):
            resource = (str(event["kind"]), str(event["name"]))
            values = event.get("values") or {}
            previous = event.get("previous") or {}
            known_previous = state.throttles_previous.setdefault(resource, {})
            known_set = state.throttles_set.setdefault(resource, {})
            for config, value in values.items():
                if config not in known_set:  # first time since the last restore: keep previous
                    old = previous.get(config)
                    known_previous[config] = None if old is None else str(old)
                known_set[config] = str(value)
            state.throttles_restored = False
            if kind == "throttle-pending":
                state.throttles_pending[resource] = str(event.get("reason", ""))
        elif kind == "throttle-restored":
            state.throttles_previous = {}
            state.throttles_set = {}
            state.throttles_pending = {}
            state.throttles_restored = True
        elif kind == "submit":
            key = _key(event["topic"], event["partition"])
            state.submitted[key] = tuple(int(b) for b in event.get("after") or ())
            state._last_submit[key] = seq
        elif kind == "complete":
            key = _key(event["topic"], event["partition"])
            replicas = event.get("replicas")
            state.completed[key] = None if replicas is None else tuple(int(b) for b in replicas)
            state._last_complete[key] = seq
        elif kind == "wave-done":
            state.waves_done.append(int(event["wave"]))
        elif kind == "create":
            state.created.setdefault(str(event["topic"]), []).extend(
                int(p) for p in event.get("partitions") or ()
            )
        elif kind == "cancel":
            state.cancelled = True
            state.cancelled_at = _ts(event)
            for item in event.get("partitions") or ():
                if isinstance(item, str):
                    state.cancelled_partitions.append(_text_key(item))
                else:
                    state.cancelled_partitions.append(_key(item["topic"], item["partition"]))
        elif kind == "finish":
            state.finished = True
            state.finished_at = _ts(event)
        elif kind == "error":
            state.errors.append(str(event.get("message", "")))
    return state


class Journal:
    """One plan's journal file. Nothing is created until the first `append`."""

    def __init__(self, path: Path, *, clock: Callable[[], datetime] | None = None) -> None:
        self.path = Path(path)
        self.clock = clock or _utc_now
        self.dropped_tail = False  # the last read ignored a damaged last line
        self._last_seq: int | None = None
        self._size: int | None = None  # file size after our last read or write

    # -- reading ---------------------------------------------------------------------------

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> list[dict[str, Any]]:
        """Every event in order; [] when there is no journal. See the module docs on damage."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            self._last_seq, self._size, self.dropped_tail = 0, 0, False
            return []
        except OSError as exc:
            raise UsageError(f"cannot read journal {str(self.path)!r} ({exc.strerror})") from None
        events, good, dropped = self._parse(data)
        self.dropped_tail = dropped
        self._last_seq = events[-1]["seq"] if events else 0
        clean = good == len(data) and (not data or data.endswith(b"\n"))
        self._size = len(data) if clean else None  # None: the next append repairs the tail
        return events

    def state(self) -> JournalState:
        return fold(self.read())

    def _parse(self, data: bytes) -> tuple[list[dict[str, Any]], int, bool]:
        """(events, byte length of the good part, whether a damaged last line was dropped)."""
        lines = data.split(b"\n")
        # the last element is b"" when the file ends with a newline; else it is a partial line
        last_nonblank = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
        events: list[dict[str, Any]] = []
        offset = good = 0
        previous_seq = 0
        for number, line in enumerate(lines, start=1):
            end = offset + len(line) + (1 if number < len(lines) else 0)
            if not line.strip():
                offset = end
                continue
            problem, event = self._check_line(line, previous_seq)
            if problem is not None:
                if number - 1 == last_nonblank:
                    return events, offset, True
                raise InputError(
                    f"journal {str(self.path)!r} line {number} is damaged ({problem}); keep the "
                    "file for the record, check the cluster with kreplica verify, and move the "
                    "journal away before applying again"
                )
            assert event is not None
            if number == len(lines):  # complete JSON without its newline: keep it, add one later
                end = offset + len(line)
            events.append(event)
            previous_seq = event["seq"]
            offset = good = end
        return events, good, False

    @staticmethod
    def _check_line(line: bytes, previous_seq: int) -> tuple[str | None, dict[str, Any] | None]:
        try:
            event = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return f"not JSON: {exc.__class__.__name__}", None
        if not isinstance(event, dict):
            return "not a JSON object", None
        seq = event.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool):
            return "no sequence number", None
        if not isinstance(event.get("event"), str):
            return "no event type", None
        if seq <= previous_seq:
            return f"sequence number {seq} after {previous_seq}; two applies wrote to it?", None
        return None, event

    # -- writing ---------------------------------------------------------------------------

    def append(self, entry: Record) -> dict[str, Any]:
        """Write one event (fsynced) and return it as written, with `seq` and `ts`."""
        event: Mapping[str, Any] = entry
        kind = event.get("event")
        if not isinstance(kind, str) or not kind:
            raise ValueError(f"a journal event needs an 'event' type: {dict(event)!r}")
        self._sync_with_file()
        assert self._last_seq is not None
        raw_ts = event.get("ts")
        ts = format_ts(raw_ts) if isinstance(raw_ts, datetime) else raw_ts
        record: dict[str, Any] = {
            "seq": self._last_seq + 1,
            "ts": ts if ts is not None else format_ts(self.clock()),
            "event": kind,
        }
        record.update((k, v) for k, v in event.items() if k not in record)
        line = (json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n").encode()
        created = not self.path.exists()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                _fsync_dir(self.path.parent)
        except OSError as exc:
            raise UsageError(
                f"cannot write journal {str(self.path)!r} ({exc.strerror}); nothing more was "
                "submitted; free the disk or fix permissions, then continue with `resume`"
            ) from None
        self._last_seq = record["seq"]
        self._size = (self._size or 0) + len(line)
        return record

    def _sync_with_file(self) -> None:
        """Learn the last seq (once, or when another writer grew the file) and cut a damaged
        last line off, so it does not become a damaged middle line."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            self._last_seq, self._size = 0, 0
            return
        if self._last_seq is not None and self._size is not None and size == self._size:
            return
        data = self.path.read_bytes()
        events, good, dropped = self._parse(data)
        self._last_seq = events[-1]["seq"] if events else 0
        if dropped or good < len(data) or (data and not data.endswith(b"\n")):
            with open(self.path, "r+b") as handle:
                handle.truncate(good)
                if good and data[good - 1 : good] != b"\n":
                    handle.seek(good)
                    handle.write(b"\n")
                    good += 1
                handle.flush()
                os.fsync(handle.fileno())
        self._size = good

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold an exclusive lock on `PLAN.journal.jsonl.lock` for one apply, cancel or resume.

        A second holder gets ReassignmentInProgress at once. Where file locks do not exist
        (not POSIX), this does nothing.
        """
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            yield
            return
        lock_path = self.path.with_name(self.path.name + ".lock")
        while True:
            fd = os.open(lock_path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise ReassignmentInProgress(
                    f"another kreplica holds {str(lock_path)!r}: an apply or cancel of this plan "
                    "is running; wait for it or stop it first"
                ) from None
            # The holder before us removes the file as it lets go: a lock taken on a file no
            # longer at this path guards nothing, so take it again on the one there now.
            try:
                same = os.stat(lock_path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        try:
            yield
        finally:
            # removed while still held, so no lock file is left behind (refused or not)
            with suppress(OSError):
                lock_path.unlink()
            os.close(fd)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows cannot open folders
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse
        pass
    finally:
        os.close(fd)
