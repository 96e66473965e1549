"""The journal's event kinds (kreplica.executor.journal.EventKind) are the kinds the code
writes: every `"event": "..."` literal in the package is one of them, and each of them is
written somewhere (a kind nobody writes is a false claim)."""

from __future__ import annotations

import re
from pathlib import Path

from kreplica.executor.journal import EVENT_KINDS

PACKAGE = Path(__file__).resolve().parents[3] / "kreplica"
WRITTEN = re.compile(r'"event":\s*"([a-z-]+)"')


def test_the_event_kinds_are_the_ones_written() -> None:
    written: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for kind in WRITTEN.findall(path.read_text(encoding="utf-8")):
            written.setdefault(kind, str(path.relative_to(PACKAGE)))
    unknown = {k: where for k, where in written.items() if k not in EVENT_KINDS}
    assert not unknown, f"add these kinds to journal.EventKind: {unknown}"
    assert sorted(set(EVENT_KINDS) - set(written)) == []


def test_each_kind_has_its_type() -> None:
    """kreplica.executor.events: a TypedDict per kind (what is written, what is shown), whose
    `event` is that kind; mypy checks every event the apply builds against them."""
    from typing import get_args, get_type_hints

    from kreplica.executor import events

    typed: set[str] = set()
    for union in (events.Record, events.Shown):
        for cls in get_args(union):
            (kind,) = get_args(get_type_hints(cls)["event"])
            typed.add(kind)
    assert sorted(typed) == sorted(EVENT_KINDS)
