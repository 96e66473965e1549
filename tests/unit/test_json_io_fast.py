"""JSON in and out at scale: orjson where it agrees with the standard library, the standard
library's behaviour everywhere else."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kreplica.cli import output
from kreplica.errors import InputError
from kreplica.sources.snapshot import _parse_partition, _plain_partition, parse_snapshot_text
from kreplica.userfiles import decode_json

DOC: dict[str, Any] = {
    "b": {2: "x", 10: "y", 1: "z"},
    "a": [{"topic": "é", "partition": 0, "replicas": (1, 2)}],
    "n": None,
    "t": True,
}


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_json_is_compact_for_a_pipe_and_indented_on_a_terminal() -> None:
    pipe, tty = io.StringIO(), Tty()
    output.emit_envelope(DOC, file=pipe)
    output.emit_envelope(DOC, file=tty)
    compact, pretty = pipe.getvalue(), tty.getvalue()
    assert compact.count("\n") == 1 and compact.endswith("}\n")
    assert ": " not in compact and ", " not in compact
    assert pretty.startswith('{\n  "command"')
    assert json.loads(compact) == json.loads(pretty)
    # keys sorted as text at every level, the same bytes every time
    assert compact.index('"1"') < compact.index('"10"') < compact.index('"2"')
    assert '"é"' in compact
    again = io.StringIO()
    output.emit_envelope(DOC, file=again)
    assert again.getvalue() == compact


@pytest.mark.parametrize("pretty", [True, False])
def test_the_standard_encoder_fallback_has_the_same_layout(pretty: bool) -> None:
    big = {**DOC, "big": 1 << 70}
    text = output.dumps(big, pretty=pretty)  # orjson refuses integers over 64 bits
    assert json.loads(text)["big"] == 1 << 70
    assert text.replace(f',"big":{1 << 70}', "").replace(
        f',\n  "big": {1 << 70}', ""
    ) == output.dumps(DOC, pretty=pretty)


def test_decode_json_keeps_the_standard_decoders_acceptance_and_messages() -> None:
    assert decode_json('{"a": NaN}', "x", fix="f")["a"] != 0  # orjson refuses NaN
    assert decode_json('["\\ud800"]', "x", fix="f") == ["\ud800"]
    with pytest.raises(InputError, match=r"x is not valid JSON \(line 2, column 1: .*\); f"):
        decode_json('{"a": 1,\n}', "x", fix="f")


ints = st.one_of(st.integers(-2, 12), st.booleans(), st.none(), st.just("3"), st.just(1.0))
lists = st.one_of(st.lists(ints, max_size=4), st.none(), st.just("x"), st.just([]))


@settings(deadline=None, max_examples=400)
@given(
    raw=st.fixed_dictionaries(
        {},
        optional={
            "partition": ints,
            "replicas": lists,
            "leader": ints,
            "isr": lists,
            "size_bytes": ints,
            "adding_replicas": lists,
            "removing_replicas": lists,
            "replica_dirs": st.one_of(st.none(), st.just(["/d"])),
            "other": ints,
        },
    )
)
def test_plain_partition_reads_what_the_checked_path_reads(raw: dict[str, Any]) -> None:
    try:
        want: object = _parse_partition(raw, "t", "snap", "p")
    except InputError as exc:
        want = exc
    got = _plain_partition(raw, "t", {})
    if got is None:
        return  # left to the checked path
    assert not isinstance(want, InputError), raw
    assert got == want
    if got.isr is not None and got.isr == got.replicas:
        assert got.isr is got.replicas


def test_equal_replica_lists_share_one_tuple() -> None:
    text = json.dumps(
        {
            "kreplica_snapshot": 1,
            "brokers": [{"id": 1}, {"id": 2}],
            "topics": [
                {"name": n, "partitions": [{"partition": 0, "replicas": [1, 2], "isr": [1, 2]}]}
                for n in ("a", "b")
            ],
        }
    )
    snap = parse_snapshot_text(text)
    a, b = (t.partitions[0] for t in snap.topics)
    assert a.replicas is b.replicas and a.isr is a.replicas
