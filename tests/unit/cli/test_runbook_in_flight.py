"""The runbook printed beside a plan made while a reassignment is in flight (`--skip-in-flight`
left it out): Kafka's `kafka-reassign-partitions --execute` refuses to start a second
reassignment without `--additional` ("Cannot execute because there is an existing partition
assignment. Use --additional to override this and create a new partition assignment in
addition to the existing one."), so the printed apply line fails as pasted. Seen on the 3.9
ZooKeeper and 4.x KRaft sandboxes (tests/integration/test_degraded_plans.py, step 5).

kreplica/render/text.py runbook_commands adds --additional when the snapshot has a partition
being reassigned."""

from __future__ import annotations

from pathlib import Path

from tests.unit.cli.conftest import REPO, run_cli

DEGRADED = REPO / "examples" / "degraded.json"  # clicks-2 is being reassigned


def test_apply_line_has_additional_when_a_move_is_in_flight(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    args = ["expand", "--topic", "clicks", "--rf", "3", "--snapshot", str(DEGRADED)]
    run = run_cli([*args, "--replace-dead", "--skip-in-flight", "--dry-run", "--out", str(out)])
    assert run.code == 0, run.stderr
    assert "left out 1 partition(s) being reassigned (clicks-2)" in run.stdout
    (apply,) = [ln for ln in run.stdout.splitlines() if " --execute" in ln and "--cancel" not in ln]
    assert "--additional" in apply
