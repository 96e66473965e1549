"""The note on what apply could not check before starting (the controller's age) is the same
on every apply to a cluster: shown on the first, remembered in the state folder. Against a
real cluster: tests/integration/test_oncall.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KREPLICA_STATE_DIR", str(tmp_path / "state"))


def test_the_controller_age_note_is_shown_once_per_cluster() -> None:
    from kreplica.cli.applying import notes_once_per_cluster

    shown: list[dict[str, Any]] = []
    note = {"event": "note", "message": "not checked before starting: the controller's age: x"}
    other = {"event": "note", "message": "3 partition(s) outside the plan are under-replicated"}
    for cluster in ("a", "a", "b", None, None):
        sink = notes_once_per_cluster(shown.append, cluster)
        sink(note)
        sink(other)
    said = [e["message"] for e in shown]
    once = note["message"] + " (shown once per cluster)"
    # a and b once each; without a cluster id there is nothing to remember it by
    assert (
        said
        == [once, other["message"], other["message"], once, other["message"]]
        + [
            note["message"],
            other["message"],
        ]
        * 2
    )
