"""Unattended runs on Spark: empty and half-written snapshots are named and make the run exit
9 (the rest is written), `--out` may be a file:// URI (or any Hadoop URI: its writer is
tested on file:), and the success marker is written last and removed by a run that fails.

A tiny fleet (2 clusters, 40 partitions) keeps the Spark work small; the CLI runs in-process
and reuses the session's JVM."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import ExitCode, UsageError
from kreplica.fleet.outfiles import OutFiles
from kreplica.fleet.preflight import DONE_MARKER, OutDir, hadoop_uri
from tests.unit.cli.conftest import run_cli

pytestmark = pytest.mark.integration  # a JVM: not in the fast `-m "not integration"` loop
REPO = Path(__file__).resolve().parents[2]
HALF = "half-written.json"


@pytest.fixture(scope="module")
def tiny_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 synthetic clusters, a 0-byte file, a snapshot cut off half-way and a symbolic link
    to a file that is gone (Spark and Hadoop's listing both drop it without a word), in a
    folder whose name holds a space (every message names files as written, not %20)."""
    from kreplica.fleet.synth import write_fleet

    folder = tmp_path_factory.mktemp("tiny fleet")
    write_fleet(folder, 2, 40, seed=5)
    (folder / "empty.json").write_bytes(b"")
    # as docs/fleet.md makes it: head -c 400 examples/cluster.json > fleet/half-written.json
    (folder / HALF).write_bytes((REPO / "examples" / "cluster.json").read_bytes()[:400])
    (folder / "gone.json").symlink_to(folder / "deleted.json")
    return folder


def _skipped_files(doc: dict[str, Any]) -> list[str]:
    return sorted(Path(s["file"]).name for s in doc["skipped"])


def test_audit_names_empty_and_half_written_exit_9(
    spark: Any, tiny_fleet: Path, tmp_path: Path
) -> None:
    out = tmp_path / "audit"
    result = run_cli(
        ["fleet", "audit", "--input", str(tiny_fleet), "--out", out.as_uri(), "--worst", "1"]
    )
    assert result.code == ExitCode.PARTIAL, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: 3 snapshot(s) skipped (")
    assert "read 5 snapshot(s): 2 cluster(s), 3 skipped" in result.stderr
    assert f"skipped: {tiny_fleet / 'empty.json'}: empty file (0 bytes)" in result.stderr
    half_line = f"skipped: {tiny_fleet / HALF} is not valid JSON (line 21, column 4: "
    assert half_line in result.stderr
    # the line docs/fleet.md shows (paths shortened there) is the one printed
    shown = half_line.replace(str(tiny_fleet), "fleet")
    assert shown in (REPO / "docs" / "fleet.md").read_text()
    assert f"skipped: {tiny_fleet / 'gone.json'}: cannot be read" in result.stderr
    assert "### Skipped (3)" in result.stdout
    doc = json.loads((out / "audit-summary.json").read_text())
    assert _skipped_files(doc) == ["empty.json", "gone.json", HALF]
    assert doc["totals"]["clusters"] == 2 and doc["totals"]["skipped"] == 3
    # the URI's own folder, not ./file:/... under the working directory
    assert doc["findings"] == str(out / "findings")
    assert (out / "findings" / "_SUCCESS").is_file()
    assert not Path("file:").exists()
    marker = json.loads((out / DONE_MARKER).read_text())
    assert marker["kreplica_fleet"] == "audit" and marker["status"] == "partial"
    assert (marker["clusters"], marker["skipped"]) == (2, 3)
    # written last: nothing in the run is newer than the marker
    newest = max(p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file())
    assert (out / DONE_MARKER).stat().st_mtime_ns == newest


def test_findings_land_in_an_out_folder_whose_name_needs_quoting(
    spark: Any, tmp_path: Path
) -> None:
    """Spark's Parquet writer and Python's files share the folder: a %-encoded URI handed to
    Hadoop would be another folder (`audit%20out%2050%25`) beside the summary's."""
    out = tmp_path / "audit out 50%"
    example = REPO / "examples" / "cluster.json"  # 3 findings
    result = run_cli(["fleet", "audit", "--input", str(example), "--out", str(out),
                      "--worst", "0", "--output", "json"])  # fmt: skip
    assert result.code == ExitCode.OK, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]
    findings = Path(result.json()["data"]["findings"])
    assert findings == out / "findings" and (findings / "_SUCCESS").is_file()
    assert len(spark.read.parquet(hadoop_uri(findings)).collect()) == 3
    assert (out / DONE_MARKER).is_file()


def test_plan_json_envelope_is_partial_and_plans_land(
    spark: Any, tiny_fleet: Path, tmp_path: Path
) -> None:
    out = tmp_path / "plan"
    result = run_cli(
        ["fleet", "plan", "--input", str(tiny_fleet / "*.json"), "--out", str(out), "--rf", "3",
         "--force", "--replace-dead", "--output", "json"]
    )  # fmt: skip
    assert result.code == ExitCode.PARTIAL, result.stderr
    envelope = result.json()
    assert envelope["status"] == "partial"
    assert [e["code"] for e in envelope["errors"]] == ["skipped"] * 3
    assert _skipped_files(envelope["data"]) == ["empty.json", "gone.json", HALF]
    planned = [r for r in envelope["data"]["clusters"] if r["status"] == "ok"]
    assert planned, envelope["data"]["clusters"]
    for row in planned:
        if row["files"]:
            assert (Path(row["files"]) / "reassignment.json").is_file()
    marker = json.loads((out / DONE_MARKER).read_text())
    assert marker["kreplica_fleet"] == "plan" and marker["status"] == "partial"
    totals = envelope["data"]["totals"]
    summary = (out / "plan-summary.md").read_text()
    added, bound = totals["replicas_added"], totals["lower_bound_replicas_added"]
    relation = "=" if added == bound else ">"
    assert f"adds {added} replicas {relation} lower bound {bound}" in summary


def test_a_failed_run_leaves_no_success_marker(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "again"
    out.mkdir()
    (out / DONE_MARKER).write_text('{"status": "ok"}')  # a previous run's
    empty = tmp_path / "only-empty"
    empty.mkdir()
    (empty / "a.json").write_bytes(b"")
    result = run_cli(["fleet", "audit", "--input", str(empty), "--out", str(out)])
    assert result.code == ExitCode.USAGE
    assert result.stderr.splitlines()[-1] == (
        f"error: --input '{empty}': every snapshot file is empty, e.g. {empty / 'a.json'}"
    )
    assert not (out / DONE_MARKER).exists()


def test_hadoop_writer_on_a_file_uri(spark: Any, tmp_path: Path) -> None:
    """The writer used for hdfs:// and s3a://, driven through Hadoop's FileSystem on file:."""
    target = tmp_path / "remote"
    files = OutFiles(spark, OutDir(uri=target.as_uri(), local=None))
    files.write_text("plans/c1/plan.json", '{"a": 1}\n')
    files.write_bytes("charts/c1.png", b"\x89PNG\x00\x01")
    files.mark_done("plan", {"clusters": 1, "skipped": 0, "status": "ok"})
    assert (target / "plans" / "c1" / "plan.json").read_text() == '{"a": 1}\n'
    assert (target / "charts" / "c1.png").read_bytes() == b"\x89PNG\x00\x01"
    assert json.loads((target / DONE_MARKER).read_text())["status"] == "ok"
    assert files.shown("plans") == f"{target.as_uri()}/plans"


def test_hadoop_writer_without_the_file_system_is_one_line(spark: Any) -> None:
    with pytest.raises(UsageError) as caught:
        OutFiles(spark, OutDir(uri="nosuchfs://bucket/fleet", local=None))
    message = caught.value.message
    assert "\n" not in message and "nosuchfs://bucket/fleet" in message
    assert "nosuchfs" in message.split("(", 1)[1] and "Hadoop jars" in message


def _two_broker_snapshot(path: Path) -> None:
    """A cluster of two brokers: RF 3 cannot be planned there (the planner refuses it)."""
    doc = {
        "kreplica_snapshot": 1,
        "cluster_id": "too-small",
        "brokers": [{"id": 1, "rack": None, "alive": True}, {"id": 2, "rack": None, "alive": True}],
        "topics": [{"name": "t", "partitions": [{"partition": 0, "replicas": [1]}]}],
    }
    path.write_text(json.dumps(doc))


def test_plan_exits_9_naming_a_refused_cluster_and_tasks_write_the_plans(
    spark: Any, tiny_fleet: Path, tmp_path: Path
) -> None:
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    for good in sorted(tiny_fleet.glob("synth-*.json")):
        (fleet / good.name).write_bytes(good.read_bytes())
    _two_broker_snapshot(fleet / "small.json")
    out = tmp_path / "plan"
    result = run_cli(
        ["fleet", "plan", "--input", str(fleet), "--out", str(out), "--rf", "3", "--output",
         "json"]
    )  # fmt: skip
    assert result.code == ExitCode.PARTIAL, result.stderr
    envelope = result.json()
    assert envelope["status"] == "partial"
    [refused] = envelope["errors"]
    assert refused["code"] == "refused" and refused["message"].startswith("too-small: ")
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, errors
    # what to do, in the line cron mails, not only in the summary
    assert "1 cluster(s) refused by the planner (too-small: topic " in errors[0]
    assert "RF 3 needs 3 eligible brokers, 2 are eligible" in errors[0]
    rows = {r["cluster_id"]: r for r in envelope["data"]["clusters"]}
    assert rows["too-small"]["files"] is None and not (out / "plans" / "too-small").exists()
    planned = [r for r in rows.values() if r["status"] == "ok"]
    assert len(planned) == 2 and all(r["files"] for r in planned)
    marker = json.loads((out / DONE_MARKER).read_text())
    assert (marker["status"], marker["errors"]) == ("partial", 1)

    # the same plans through the Hadoop writer (how an hdfs:// or s3a:// --out is written,
    # by the driver): byte for byte what the tasks wrote into the local folder
    from kreplica.fleet.job import load_fleet_policy, run_plan

    remote = tmp_path / "remote"
    run_plan(spark, str(fleet), OutDir(uri=remote.as_uri(), local=None),
             load_fleet_policy(None, rf=3, min_insync=None))  # fmt: skip
    local_files = sorted(p.relative_to(out) for p in (out / "plans").rglob("*.json"))
    assert local_files == sorted(p.relative_to(remote) for p in (remote / "plans").rglob("*.json"))
    assert len(local_files) == 4  # reassignment.json and plan.json of the two planned clusters
    for rel in local_files:
        assert (remote / rel).read_bytes() == (out / rel).read_bytes()


def test_plan_a_second_file_for_a_cluster_is_skipped_and_the_first_ones_plan_kept(
    spark: Any, tiny_fleet: Path, tmp_path: Path
) -> None:
    """Every file is planned in its own task; the plan kept for a cluster is its first
    file's (by name), the later file's is dropped, and a stale plan folder is replaced."""
    from kreplica.fleet.job import load_fleet_policy, run_plan
    from kreplica.fleet.plantask import STAGING, plan_text
    from kreplica.fleet.policy import Policy

    fleet = tmp_path / "fleet"
    fleet.mkdir()
    first = tiny_fleet / "synth-0000.json"
    (fleet / first.name).write_bytes(first.read_bytes())
    again = json.loads(first.read_text())
    again["topics"] = again["topics"][1:]  # another plan, if it were kept
    (fleet / "zz-again.json").write_text(json.dumps(again))
    out = tmp_path / "out"
    (out / "plans" / "synth-0000").mkdir(parents=True)
    (out / "plans" / "synth-0000" / "new_partitions.json").write_text("[]\n")  # stale
    doc = run_plan(spark, str(fleet), str(out), load_fleet_policy(None, rf=3, min_insync=None))
    assert [r["cluster_id"] for r in doc["clusters"]] == ["synth-0000"]
    [skipped] = doc["skipped"]
    assert (
        skipped["file"].endswith("zz-again.json")
        and "cluster synth-0000 again" in (skipped["error"])
    )
    expected = plan_text(str(first), first.read_text(), Policy(rf=3))
    folder = out / "plans" / "synth-0000"
    assert sorted(p.name for p in folder.iterdir()) == ["plan.json", "reassignment.json"]
    assert (folder / "reassignment.json").read_text() == expected["reassignment"]
    assert not (out / STAGING).exists()


def test_plan_rows_reaching_the_driver_carry_no_plan_text(
    spark: Any, tiny_fleet: Path, tmp_path: Path
) -> None:
    """With a local --out the tasks write the plan files; the driver gets numbers only."""
    from kreplica.fleet.adapter import PLAN_FILES, PlanSettings
    from kreplica.fleet.frames import read_texts
    from kreplica.fleet.job import load_fleet_policy
    from kreplica.fleet.pipeline import plan_frame
    from kreplica.fleet.plantask import staged_folder

    policy = load_fleet_policy(None, rf=3, min_insync=None)
    texts = read_texts(spark, str(tiny_fleet / "synth-*.json"))
    rows = plan_frame(texts, policy, PlanSettings(), write_to=str(tmp_path)).collect()
    assert len(rows) == 2 and all(r["has_plan"] and r["skip"] is None for r in rows)
    for row in rows:
        assert all(row[column] is None for column, _ in PLAN_FILES)
        folder = tmp_path / staged_folder(row["file"])
        assert json.loads((folder / "plan.json").read_text())["cluster_id"] == row["cluster_id"]
        assert (folder / "reassignment.json").is_file()


def test_plans_on_a_hadoop_uri_are_written_by_the_executors(
    spark: Any, fleet_dir: Path, tmp_path: Path
) -> None:
    """--out on a Hadoop URI (here file: through Hadoop's FileSystem, as hdfs:// and s3a://
    go): Spark's text writer writes the plan files, byte for byte what a local --out gets,
    and the rows the driver collects carry no plan text."""
    from kreplica.fleet.adapter import PLAN_FILES, PlanSettings
    from kreplica.fleet.job import load_fleet_policy, run_plan
    from kreplica.fleet.pipeline import _write_plans, plan_frame
    from kreplica.fleet.plantask import STAGING

    policy = load_fleet_policy(None, rf=3, min_insync=None)
    local, remote = tmp_path / "local", tmp_path / "remote"
    run_plan(spark, str(fleet_dir), str(local), policy)
    run_plan(spark, str(fleet_dir), OutDir(uri=remote.as_uri(), local=None), policy)

    def files(root: Path) -> list[Path]:
        # not the .crc files Hadoop's checksummed local file system keeps beside each file
        return sorted(
            p.relative_to(root)
            for p in (root / "plans").rglob("*")
            if p.is_file() and not p.name.startswith(".")
        )

    assert len(files(local)) >= 6 and files(remote) == files(local)
    for name in files(local):
        assert (remote / name).read_bytes() == (local / name).read_bytes(), name
    assert not (remote / STAGING).exists()
    # what reaches the driver: the summary numbers only
    out = OutFiles(spark, OutDir(uri=(tmp_path / "rows").as_uri(), local=None))
    texts = spark.read.text(str(fleet_dir / "synth-000[01].json"), wholetext=True)
    frame = plan_frame(
        texts.selectExpr("input_file_name() AS file", "value AS text"), policy, PlanSettings()
    )
    rows = _write_plans(frame, out)
    assert len(rows) == 2 and all(r["has_plan"] for r in rows)
    assert not {column for column, _ in PLAN_FILES} & set(rows[0].asDict())
