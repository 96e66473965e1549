"""The apply journal: fsynced JSON lines, crash-tolerant reading, and the state it records."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kreplica.errors import InputError, ReassignmentInProgress, UsageError
from kreplica.executor.journal import Journal, fold, format_ts
from kreplica.executor.planfile import journal_path
from kreplica.executor.throttles import LEADER_RATE, LEADER_REPLICAS, restore_plan

T0 = datetime(2026, 11, 23, 10, 0, 0, tzinfo=UTC)


def ticking() -> Callable[[], datetime]:
    now = [T0]

    def clock() -> datetime:
        now[0] += timedelta(seconds=1)
        return now[0]

    return clock


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    return Journal(tmp_path / "PLAN.journal.jsonl", clock=ticking())


def test_journal_path_beside_the_plan() -> None:
    assert journal_path(Path("/x/PLAN.json")) == Path("/x/PLAN.journal.jsonl")
    assert journal_path(Path("moves.json")) == Path("moves.journal.jsonl")
    assert journal_path(Path("/x/plan")) == Path("/x/plan.journal.jsonl")


def test_format_ts() -> None:
    assert format_ts(T0) == "2026-11-23T10:00:00.000Z"
    assert format_ts(datetime(2026, 1, 2, 3, 4, 5, 678900)) == "2026-01-02T03:04:05.678Z"
    east = datetime(2026, 1, 2, 5, 0, tzinfo=timezone(timedelta(hours=2)))
    assert format_ts(east) == "2026-01-02T03:00:00.000Z"


def test_append_writes_one_line_with_seq_and_ts(journal: Journal) -> None:
    assert not journal.exists() and journal.read() == []
    first = journal.append({"event": "start", "plan": "PLAN.json", "cluster_id": "abc"})
    journal.append({"event": "submit", "topic": "t", "partition": 0, "after": [1, 2]})
    journal.append({"event": "complete", "topic": "t", "partition": 0, "ts": "given"})
    assert first == {
        "seq": 1,
        "ts": "2026-11-23T10:00:01.000Z",
        "event": "start",
        "plan": "PLAN.json",
        "cluster_id": "abc",
    }
    lines = journal.path.read_text().splitlines()
    assert lines[0] == (
        '{"seq":1,"ts":"2026-11-23T10:00:01.000Z","event":"start","plan":"PLAN.json",'
        '"cluster_id":"abc"}'
    )
    assert [json.loads(x)["seq"] for x in lines] == [1, 2, 3]
    assert json.loads(lines[2])["ts"] == "given"
    assert journal.read() == [json.loads(x) for x in lines]


def test_a_new_journal_object_continues_the_sequence(journal: Journal) -> None:
    journal.append({"event": "start"})
    again = Journal(journal.path, clock=ticking())
    assert again.append({"event": "start", "resume": True})["seq"] == 2
    # and the first object notices the other writer
    assert journal.append({"event": "finish"})["seq"] == 3


def test_append_needs_an_event_type_and_json_values(journal: Journal) -> None:
    with pytest.raises(ValueError, match="event"):
        journal.append({"topic": "t"})
    with pytest.raises(TypeError):
        journal.append({"event": "submit", "after": {1, 2}})
    assert not journal.exists()  # nothing half-written


def test_append_fsyncs_file_and_new_directory(
    journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kreplica.executor.journal as module

    synced: list[int] = []
    real = module.os.fsync
    monkeypatch.setattr(module.os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    journal.append({"event": "start"})
    assert len(synced) == 2  # the file, then its folder (the file was new)
    journal.append({"event": "finish"})
    assert len(synced) == 3


def test_unwritable_journal_is_a_one_line_usage_error(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "missing" / "PLAN.journal.jsonl")
    with pytest.raises(UsageError) as caught:
        journal.append({"event": "start"})
    assert "PLAN.journal.jsonl" in str(caught.value) and "\n" not in str(caught.value)


# ------------------------------------------------------------------------------ crash damage


@pytest.mark.parametrize(
    "tail",
    [
        b'{"seq":3,"ts":"x","ev',
        b'{"seq":3,',
        b"\x00\x00\x00\x00",
        b'{"seq":3,"ts":"x"}\n',
        b"garbage\n",
    ],
)
def test_a_damaged_last_line_is_ignored_then_cut_off(journal: Journal, tail: bytes) -> None:
    journal.append({"event": "start"})
    journal.append({"event": "submit", "topic": "t", "partition": 0, "after": [1]})
    with journal.path.open("ab") as handle:
        handle.write(tail)
    fresh = Journal(journal.path, clock=ticking())
    assert [e["seq"] for e in fresh.read()] == [1, 2]
    assert fresh.dropped_tail
    assert fresh.append({"event": "complete", "topic": "t", "partition": 0})["seq"] == 3
    events = Journal(journal.path).read()
    assert [e["event"] for e in events] == ["start", "submit", "complete"]
    assert journal.path.read_bytes().endswith(b"}\n")


def test_a_complete_last_line_without_newline_is_kept(journal: Journal) -> None:
    journal.append({"event": "start"})
    data = journal.path.read_bytes()
    journal.path.write_bytes(data.rstrip(b"\n"))
    fresh = Journal(journal.path, clock=ticking())
    assert [e["event"] for e in fresh.read()] == ["start"]
    assert not fresh.dropped_tail
    fresh.append({"event": "finish"})
    assert [e["seq"] for e in Journal(journal.path).read()] == [1, 2]


def test_the_same_object_repairs_a_tail_it_has_read(journal: Journal) -> None:
    journal.append({"event": "start"})
    with journal.path.open("ab") as handle:
        handle.write(b'{"seq":2,"ev')
    journal.read()
    journal.append({"event": "finish"})
    assert [e["seq"] for e in Journal(journal.path).read()] == [1, 2]


@pytest.mark.parametrize(
    ("middle", "why"),
    [
        (b"not json", "not JSON"),
        (b"[1,2]", "not a JSON object"),
        (b'{"event":"submit"}', "no sequence number"),
        (b'{"seq":2}', "no event type"),
        (b'{"seq":1,"event":"submit"}', "sequence number 1 after 1"),
    ],
)
def test_a_damaged_middle_line_is_an_input_error_naming_file_and_line(
    journal: Journal, middle: bytes, why: str
) -> None:
    journal.append({"event": "start"})
    with journal.path.open("ab") as handle:
        handle.write(middle + b"\n")
    with journal.path.open("ab") as handle:
        handle.write(b'{"seq":9,"ts":"x","event":"finish"}\n')
    with pytest.raises(InputError) as caught:
        Journal(journal.path).read()
    message = str(caught.value)
    assert "PLAN.journal.jsonl" in message and "line 2" in message and why in message
    assert "\n" not in message


def test_blank_lines_are_skipped(journal: Journal) -> None:
    journal.append({"event": "start"})
    with journal.path.open("ab") as handle:
        handle.write(b"\n  \n")
    journal.append({"event": "finish"})
    assert [e["seq"] for e in Journal(journal.path).read()] == [1, 2]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(count=st.integers(1, 6), cut=st.integers(0, 10_000))
def test_a_crash_at_any_byte_loses_at_most_the_last_event(
    tmp_path: Path, count: int, cut: int
) -> None:
    path = tmp_path / f"crash-{count}-{cut}.journal.jsonl"
    path.unlink(missing_ok=True)
    journal = Journal(path, clock=ticking())
    for i in range(count):
        journal.append({"event": "submit", "topic": "t", "partition": i, "after": [i, i + 1]})
    data = path.read_bytes()
    cut %= len(data) + 1
    path.write_bytes(data[:cut])
    fresh = Journal(path, clock=ticking())
    events = fresh.read()
    whole_lines = data[:cut].count(b"\n")
    assert len(events) in (whole_lines, whole_lines + 1)
    assert [e["partition"] for e in events] == list(range(len(events)))
    fresh.append({"event": "finish"})
    again = Journal(path).read()
    assert [e["seq"] for e in again] == list(range(1, len(events) + 2))


# --------------------------------------------------------------------------------------- state


def test_state_of_a_run_with_throttles_waves_and_a_resume(journal: Journal) -> None:
    j = journal
    j.append({"event": "start", "plan": "PLAN.json", "plan_fingerprint": "f1", "cluster_id": "c"})
    j.append(
        {
            "event": "throttle-set",
            "kind": "topic",
            "name": "orders",
            "previous": {LEADER_REPLICAS: "9:9"},
            "values": {LEADER_REPLICAS: "0:1,9:9"},
        }
    )
    j.append(
        {
            "event": "throttle-set",
            "kind": "broker",
            "name": "1",
            "previous": {},
            "values": {LEADER_RATE: "100"},
        }
    )
    j.append({"event": "submit", "wave": 1, "topic": "orders", "partition": 0, "after": [1, 2]})
    j.append({"event": "submit", "wave": 1, "topic": "my-topic", "partition": 1, "after": [2]})
    j.append({"event": "complete", "topic": "orders", "partition": 0, "replicas": [1, 2]})
    # crash; resume with a new rate: the previous value read now is ours, the journal keeps 1st
    j.append({"event": "start", "plan": "PLAN.json", "plan_fingerprint": "f1", "resume": True})
    j.append(
        {
            "event": "throttle-set",
            "kind": "broker",
            "name": "1",
            "previous": {LEADER_RATE: "100"},
            "values": {LEADER_RATE: "200"},
        }
    )
    state = j.state()
    assert state.started and state.starts == 2
    assert (state.plan, state.plan_fingerprint, state.cluster_id) == ("PLAN.json", "f1", "c")
    assert state.submitted == {("orders", 0): (1, 2), ("my-topic", 1): (2,)}
    assert state.completed == {("orders", 0): (1, 2)}
    assert state.pending == [("my-topic", 1)]
    assert state.throttles_previous == {
        ("topic", "orders"): {LEADER_REPLICAS: "9:9"},
        ("broker", "1"): {LEADER_RATE: None},
    }
    assert state.throttles_set == {
        ("topic", "orders"): {LEADER_REPLICAS: "0:1,9:9"},
        ("broker", "1"): {LEADER_RATE: "200"},
    }
    assert not state.finished and not state.cancelled and state.has_throttles
    # the restore the state leads to puts back exactly what was there
    current = {
        ("topic", "orders"): {LEADER_REPLICAS: "0:1,9:9"},
        ("broker", "1"): {LEADER_RATE: "200"},
    }
    assert restore_plan(state.throttles_previous, current, state.throttles_set) == {
        ("topic", "orders"): {LEADER_REPLICAS: "9:9"},
        ("broker", "1"): {LEADER_RATE: None},
    }
    j.append({"event": "submit", "wave": 2, "topic": "my-topic", "partition": 1, "after": [2]})
    j.append({"event": "complete", "topic": "my-topic", "partition": 1})
    j.append({"event": "wave-done", "wave": 2, "partitions": 1})
    j.append({"event": "create", "topic": "orders", "partitions": [5, 6]})
    j.append({"event": "throttle-restored", "configs": 2})
    j.append({"event": "finish"})
    state = j.state()
    assert state.pending == [] and state.completed[("my-topic", 1)] is None
    assert state.waves_done == [2] and state.created == {"orders": [5, 6]}
    assert state.throttles_restored and not state.has_throttles
    assert state.finished and state.last_seq == 14


def test_state_cancel_error_and_a_new_start(journal: Journal) -> None:
    journal.append({"event": "start"})
    journal.append({"event": "error", "message": "broker 3 is down", "code": "stall"})
    journal.append(
        {"event": "cancel", "partitions": ["my-topic-1", {"topic": "b", "partition": 2}]}
    )
    state = journal.state()
    assert state.cancelled and state.errors == ["broker 3 is down"]
    assert state.cancelled_partitions == [("my-topic", 1), ("b", 2)]
    journal.append({"event": "start", "resume": True})
    state = journal.state()
    assert not state.cancelled and state.errors == [] and state.starts == 2


def test_fold_skips_unknown_events() -> None:
    events: list[dict[str, Any]] = [{"seq": 1, "event": "progress", "bytes": 5}]
    assert fold(events).last_seq == 1 and not fold(events).started


# ---------------------------------------------------------------------------------------- lock


def _try_lock(path: str, queue: Any) -> None:
    try:
        with Journal(Path(path)).lock():
            queue.put("locked")
    except ReassignmentInProgress as exc:
        queue.put(str(exc))


def test_lock_keeps_a_second_apply_out(journal: Journal) -> None:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    with journal.lock():
        proc = ctx.Process(target=_try_lock, args=(str(journal.path), queue))
        proc.start()
        proc.join(30)
        assert "another kreplica" in queue.get(timeout=5)
    proc = ctx.Process(target=_try_lock, args=(str(journal.path), queue))
    proc.start()
    proc.join(30)
    assert queue.get(timeout=5) == "locked"


def test_lock_file_is_gone_once_released_even_after_a_refusal(journal: Journal) -> None:
    lock_path = journal.path.with_name(journal.path.name + ".lock")
    with pytest.raises(RuntimeError), journal.lock():
        assert lock_path.exists()
        raise RuntimeError("refused")
    assert not lock_path.exists()
    with journal.lock():
        pass
    assert not lock_path.exists()
