"""Apply's preflight checks the disk guard again on fresh figures: refused with exit 4 and
nothing written when the bytes still to copy would cross the plan's headroom."""

from __future__ import annotations

from pathlib import Path

import pytest

from kreplica.errors import ExitCode, PlanInfeasible
from kreplica.executor.planfile import PlanFile
from kreplica.executor.preflight import preflight
from kreplica.model import Broker, ClusterSnapshot, LogDir, Partition, Topic

GIB = 2**30


def _snapshot(usable_gib: dict[int, tuple[int, int]] | None) -> ClusterSnapshot:
    def broker(b: int) -> Broker:
        if usable_gib is None:
            return Broker(b)
        a, c = usable_gib[b]
        return Broker(b, disks=(LogDir("/a", 100 * GIB, a * GIB), LogDir("/b", 100 * GIB, c * GIB)))

    part = Partition("t", 0, (1, 2), leader=1, size_bytes=30 * GIB)
    return ClusterSnapshot(
        brokers=tuple(broker(b) for b in (1, 2, 3)),
        topics=(Topic("t", (part,)),),
        cluster_id="c1",
    )


def _plan(report: dict[str, object] | None = None, dirs: dict | None = None) -> PlanFile:
    document = {"kreplica_plan": 1, "cluster_id": "c1", "report": report or {}}
    return PlanFile(
        Path("plan.json"), {("t", 0): (1, 2, 3)}, {("t", 0): (1, 2)}, {}, document, dirs or {}
    )


def test_fresh_figures_with_room_pass() -> None:
    result = preflight(_snapshot({1: (50, 50), 2: (50, 50), 3: (50, 50)}), _plan(), ())
    assert [m.key for m in result.todo] == [("t", 0)]
    assert result.disk_unchecked is None


def test_a_disk_that_filled_since_the_plan_is_refused() -> None:
    # broker 3 has 25 GiB usable in all; the default headroom keeps 20 GiB: 5 GiB < 30 GiB
    snap = _snapshot({1: (50, 50), 2: (50, 50), 3: (15, 10)})
    with pytest.raises(PlanInfeasible) as err:
        preflight(snap, _plan(), ())
    assert err.value.exit_code == ExitCode.INFEASIBLE
    text = str(err.value)
    assert "broker 3" in text and "checked again before applying" in text and "\n" not in text


def test_the_plans_own_headroom_is_used() -> None:
    snap = _snapshot({1: (50, 50), 2: (50, 50), 3: (30, 30)})  # 60 usable, 30 GiB arrive
    preflight(snap, _plan({"disk": {"headroom_percent": 10.0}}), ())  # keeps 20: fits
    with pytest.raises(PlanInfeasible):  # keeps 40: 20 left < 30
        preflight(snap, _plan({"disk": {"headroom_percent": 20.0, "headroom_bytes": None}}), ())


def test_a_named_dir_is_checked_on_its_own() -> None:
    snap = _snapshot({1: (50, 50), 2: (50, 50), 3: (35, 80)})  # /a: 35 - 10 kept < 30
    preflight(snap, _plan(dirs={("t", 0, 3): "/b"}), ())
    with pytest.raises(PlanInfeasible) as err:
        preflight(snap, _plan(dirs={("t", 0, 3): "/a"}), ())
    assert "dir /a" in str(err.value)


def test_without_figures_it_says_why_unchecked() -> None:
    result = preflight(_snapshot(None), _plan(), ())
    assert result.disk_unchecked == "the snapshot records no log dir sizes"
    checked = preflight(_snapshot({1: (50, 50), 2: (50, 50), 3: (50, 50)}), _plan(), ())
    assert checked.disk_unchecked is None
