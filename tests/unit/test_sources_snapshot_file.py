"""The snapshot-file source selects topics exactly as the live sources do (kreplica.sources.
assemble.select_topics): the fake every unit test uses must not be kinder or stricter."""

from __future__ import annotations

from pathlib import Path

import pytest

from kreplica.errors import UnknownTopicError
from kreplica.sources import open_source

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster.json"


def test_repeated_names_give_one_topic_each() -> None:
    source = open_source(snapshot=EXAMPLE)
    selected = source.snapshot(["payments", "orders", "payments"])
    assert [t.name for t in selected.topics] == ["orders", "payments"]
    assert selected.topic("orders") == source.snapshot().topic("orders")


def test_one_name_is_a_topic_not_its_letters() -> None:
    source = open_source(snapshot=EXAMPLE)
    assert source.snapshot("orders") == source.snapshot(["orders"])  # type: ignore[arg-type]


def test_unknown_topic_is_named() -> None:
    with pytest.raises(UnknownTopicError, match="'no-such-topic'"):
        open_source(snapshot=EXAMPLE).snapshot(["orders", "no-such-topic"])
