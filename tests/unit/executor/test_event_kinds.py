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
