"""Unattended safety without a JVM: `--master` and `--out` are checked before Spark starts
(one line, the documented exit code, pyspark never imported), `--out` URIs are normalised,
and `fleet collect` reports missing and duplicate clusters with its exit codes."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kreplica.errors import ExitCode, UsageError
from kreplica.fleet.preflight import (
    DONE_MARKER,
    MasterUnreachable,
    check_master,
    check_out,
    hadoop_uri,
    local_path,
)
from kreplica.fleet.report import plan_markdown
from tests.unit.cli.conftest import run_cli

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "cluster.json"
HEAVY = ("pyspark", "py4j", "pandas", "pyarrow")

# The real CLI in a fresh interpreter: its exit code, stderr, and whether Spark was loaded.
CLI = """
import json, sys
from kreplica.cli import main
code = 0
try:
    main({argv!r})
except SystemExit as exc:
    code = exc.code
loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r}))
print(json.dumps({{"code": code, "loaded": loaded}}))
"""


def run_fresh(argv: list[str], cwd: Path) -> tuple[int, list[str], str]:
    proc = subprocess.run(
        [sys.executable, "-c", CLI.format(argv=argv, heavy=HEAVY)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return result["code"], result["loaded"], proc.stderr


def _unwritable(tmp_path: Path) -> Path:
    if os.geteuid() == 0:  # root writes anywhere a mode allows nothing; /sys refuses even root
        if not Path("/sys").is_dir():
            pytest.skip("no /sys to refuse root a folder")
        return Path("/sys/kreplica-test-out")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    return locked / "out"


@pytest.mark.parametrize("command", ["audit", "plan"])
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("file", "is a file; give a folder"),
        ("under-file", "a file; give a folder"),
        ("unwritable", "cannot be written"),
    ],
)
def test_bad_out_is_one_line_exit_2_before_spark(
    command: str, case: str, expected: str, tmp_path: Path
) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    out = {
        "file": blocker,
        "under-file": blocker / "deeper" / "out",
        "unwritable": _unwritable(tmp_path),
    }[case]
    code, loaded, stderr = run_fresh(
        ["fleet", command, "--input", str(tmp_path), "--out", str(out), "--rf", "3"], tmp_path
    )
    assert code == ExitCode.USAGE
    assert loaded == []
    assert stderr.splitlines() == [stderr.splitlines()[0]]
    assert stderr.startswith(f"error: --out '{out}'") and expected in stderr
    if case == "under-file":
        assert f"under '{blocker}'" in stderr


@pytest.mark.parametrize(
    ("master", "code", "says"),
    [
        ("spark://127.0.0.1:1", ExitCode.SOURCE, "no Spark master answers (127.0.0.1:1: "),
        ("foo", ExitCode.USAGE, "is not a Spark master URL"),
        ("spark://nohost", ExitCode.USAGE, "give spark://HOST:PORT"),
        ("local[x]", ExitCode.USAGE, "is not a Spark master URL"),
    ],
)
def test_bad_master_fails_before_spark_naming_the_master(
    master: str, code: int, says: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    got, loaded, stderr = run_fresh(
        ["fleet", "audit", "--input", str(tmp_path), "--out", str(out), "--master", master],
        tmp_path,
    )
    assert (got, loaded) == (code, [])
    assert len(stderr.splitlines()) == 1
    assert master in stderr and says in stderr
    assert "Java" not in stderr and "JAVA_HOME" not in stderr
    assert not out.exists()  # the master is checked first: nothing created for a bad one


def test_master_that_listens_passes_and_local_forms_pass() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        check_master(f"spark://127.0.0.1:{port}")
        # a standby first (HA masters): one that answers is enough
        check_master(f"spark://127.0.0.1:1,127.0.0.1:{port}")
    with pytest.raises(MasterUnreachable, match=f"127.0.0.1:{port}: "):
        check_master(f"spark://127.0.0.1:{port}", timeout_s=2)
    for master in (None, "local", "local[*]", "local[2]", "local[4,3]", "yarn",
                   "local-cluster[2,1,1024]", "k8s://https://10.0.0.1:6443"):  # fmt: skip
        check_master(master)
    with pytest.raises(UsageError, match="k8s://https://HOST:PORT"):
        check_master("k8s://")


def test_local_path_keeps_file_uris_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert local_path("file:///srv/fleet out") == Path("/srv/fleet out")
    assert local_path("file:///srv/a%20b") == Path("/srv/a%20b")  # as Hadoop's Path takes it
    assert local_path("file:/srv/x") == Path("/srv/x")
    assert local_path("file://localhost/srv/x") == Path("/srv/x")
    assert local_path("rel/dir") == tmp_path / "rel" / "dir"
    assert local_path("hdfs://nn:8020/fleet") is None
    assert local_path("s3a://bucket/fleet") is None
    with pytest.raises(UsageError, match="not host 'other'"):
        local_path("file://other/srv/x")


def test_check_out_uri_creates_the_folder_and_drops_a_stale_marker(tmp_path: Path) -> None:
    target = tmp_path / "run"
    target.mkdir()
    (target / DONE_MARKER).write_text("{}")
    out = check_out(target.as_uri())
    assert out.local == target and out.uri == target.as_uri()
    assert not (target / DONE_MARKER).exists()
    assert [p.name for p in target.iterdir()] == []  # the probe is gone too
    remote = check_out("hdfs://nn:8020/fleet/audit/")
    assert (remote.local, remote.uri) == (None, "hdfs://nn:8020/fleet/audit")


def test_cli_file_uri_out_is_not_under_the_working_directory(tmp_path: Path) -> None:
    """typer's Path made file:///x into ./file:/x; the pre-flight creates the real folder."""
    work = tmp_path / "work"
    work.mkdir()
    target = tmp_path / "elsewhere" / "audit"
    code, loaded, _ = run_fresh(
        ["fleet", "audit", "--input", str(tmp_path), "--out", target.as_uri(),
         "--master", "spark://127.0.0.1:1"],
        work,
    )  # fmt: skip
    assert (code, loaded) == (ExitCode.SOURCE, [])  # stopped at the master, after --out
    assert list(work.iterdir()) == []


def test_cli_file_uri_out_is_checked(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    code, _, stderr = run_fresh(
        ["fleet", "plan", "--input", str(tmp_path), "--out", f"{blocker.as_uri()}/x",
         "--rf", "3"],
        tmp_path,
    )  # fmt: skip
    assert code == ExitCode.USAGE and "a file; give a folder" in stderr


def _plan_doc(added: int, bound: int) -> dict[str, object]:
    totals = dict.fromkeys(
        ("replicas_removed", "lower_bound_replicas_removed", "existing_replicas_moved",
         "partitions_changed", "partitions_created", "bytes_to_move", "bytes_lower_bound",
         "with_changes", "errors", "skipped"),
        0,
    )  # fmt: skip
    totals.update(clusters=1, replicas_added=added, lower_bound_replicas_added=bound)
    return {"totals": totals, "clusters": [], "skipped": []}


def test_plan_summary_compares_with_the_lower_bound() -> None:
    assert "adds 7 replicas = lower bound 7;" in plan_markdown(_plan_doc(7, 7))
    assert "adds 9 replicas > lower bound 7 (+2);" in plan_markdown(_plan_doc(9, 7))
    assert "removes 0 replicas" not in plan_markdown(_plan_doc(9, 7))


# fleet collect, with snapshot-file clusters (no Kafka needed for these paths)


def _config(tmp_path: Path, entries: dict[str, Path]) -> dict[str, str]:
    config = tmp_path / "clusters.toml"
    config.write_text(
        "".join(f'[clusters.{name}]\nsnapshot = "{path}"\n\n' for name, path in entries.items())
    )
    return {"KREPLICA_CONFIG": str(config)}


def test_collect_with_a_cluster_missing_is_exit_9_others_written(tmp_path: Path) -> None:
    env = _config(tmp_path, {"good": EXAMPLE, "gone": tmp_path / "missing.json"})
    out = tmp_path / "snaps"
    result = run_cli(["fleet", "collect", "--out", str(out), "--output", "json"], env=env)
    assert result.code == ExitCode.PARTIAL
    doc = result.json()
    assert doc["status"] == "partial"
    assert [e["message"].split(":")[0] for e in doc["errors"]] == ["gone"]
    rows = {r["name"]: r for r in doc["data"]["clusters"]}
    assert rows["good"]["ok"] and not rows["gone"]["ok"]
    assert result.stderr.splitlines()[-1].startswith(
        "error: 1 of 2 cluster(s) could not be read (gone; first: "
    )
    cluster_file = Path(rows["good"]["file"])
    assert cluster_file.parent == out and cluster_file.exists()
    marker = json.loads((out / DONE_MARKER).read_text())
    assert (marker["status"], marker["clusters"], marker["skipped"]) == ("partial", 1, ["gone"])


def test_collect_all_read_is_exit_0_with_marker(tmp_path: Path) -> None:
    env = _config(tmp_path, {"good": EXAMPLE})
    result = run_cli(["fleet", "collect", "--out", str(tmp_path / "s")], env=env)
    assert result.code == 0, result.stderr
    assert json.loads((tmp_path / "s" / DONE_MARKER).read_text())["status"] == "ok"


def test_collect_same_source_twice_is_exit_2_before_reading(tmp_path: Path) -> None:
    env = _config(tmp_path, {"a": EXAMPLE, "b": EXAMPLE.parent / "." / EXAMPLE.name})
    out = tmp_path / "snaps"
    result = run_cli(["fleet", "collect", "--out", str(out)], env=env)
    assert result.code == ExitCode.USAGE
    assert len(result.stderr.splitlines()) == 1
    assert "clusters 'a' and 'b'" in result.stderr and "read the same cluster" in result.stderr
    assert not out.exists()


def test_collect_same_cluster_from_two_files_is_written_once_exit_2(tmp_path: Path) -> None:
    copy = tmp_path / "copy.json"
    shutil.copy(EXAMPLE, copy)
    env = _config(tmp_path, {"a": EXAMPLE, "b": copy})
    out = tmp_path / "snaps"
    result = run_cli(["fleet", "collect", "--out", str(out), "--workers", "1"], env=env)
    assert result.code == ExitCode.USAGE
    assert result.stderr.splitlines()[-1].startswith("error: clusters 'a' and 'b' are the same")
    assert len([p for p in out.iterdir() if p.suffix == ".json"]) == 1


def test_collect_out_under_a_file_is_one_line_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    env = _config(tmp_path, {"good": EXAMPLE})
    result = run_cli(["fleet", "collect", "--out", str(blocker / "x")], env=env)
    assert result.code == ExitCode.USAGE
    assert result.stderr.splitlines() == [
        f"error: --out '{blocker / 'x'}' is under '{blocker}', a file; give a folder"
    ]


def test_spark_submit_entry_point_checks_first_too(tmp_path: Path) -> None:
    """`spark-submit job.py ...` (kreplica.fleet.job.main): the same pre-flight, no Spark."""
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    script = (
        "import json, sys\n"
        "from kreplica.fleet.job import main\n"
        f"code = main(['plan', '--input', {str(tmp_path)!r}, '--out', {str(blocker)!r},"
        " '--rf', '3', '--master', 'local[2]'])\n"
        f"loaded = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))\n"
        "print(json.dumps([code, loaded]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert json.loads(proc.stdout) == [ExitCode.USAGE, []]
    assert proc.stderr == f"error: --out '{blocker}' is a file; give a folder\n"


def test_a_small_local_fleet_gets_a_jvm_for_a_short_run(tmp_path: Path) -> None:
    from kreplica.fleet.job import SMALL_INPUT_BYTES, SMALL_JVM, session_settings
    from kreplica.fleet.preflight import local_input_bytes

    (tmp_path / "a.json").write_text("x" * 100)
    (tmp_path / "b.json").write_text("y" * 20)
    (tmp_path / "notes.txt").write_text("z" * 1000)
    assert local_input_bytes(str(tmp_path)) == 120  # a folder: its *.json files
    assert local_input_bytes(str(tmp_path / "a*.json")) == 100
    assert local_input_bytes(tmp_path.as_uri()) == 120
    assert local_input_bytes(str(tmp_path / "none-*.json")) is None
    assert local_input_bytes("s3a://bucket/snaps/") is None
    small = session_settings("local[2]", input_bytes=120)
    assert small["spark.driver.defaultJavaOptions"] == SMALL_JVM
    assert small["spark.sql.codegen.wholeStage"] == "false"
    assert small["spark.sql.adaptive.enabled"] == "false"  # one job per action
    assert small["spark.sql.shuffle.partitions"] == "2"
    mine = session_settings("local[2]", {"spark.sql.shuffle.partitions": "5"}, input_bytes=120)
    assert mine["spark.sql.shuffle.partitions"] == "5"  # the caller's conf wins
    for master, size in (("local[2]", SMALL_INPUT_BYTES), ("local[2]", None),
                         ("spark://h:7077", 120), (None, 120)):  # fmt: skip
        big = session_settings(master, input_bytes=size)
        assert "spark.driver.defaultJavaOptions" not in big
        local = (master or "").startswith("local")
        # adaptive execution: off on one machine, Spark's default on a cluster
        assert big.get("spark.sql.adaptive.enabled") == ("false" if local else None)
        assert big["spark.sql.shuffle.partitions"] == "8"


class _Gateway:
    """Stands for the JVM's gateway process: exits with `code`, having written `body`."""

    def __init__(self, part: Path, code: int, body: bytes) -> None:
        self.part, self.code, self.body = part, code, body
        self.stdin = None
        self.returncode: int | None = None

    def wait(self, timeout: float) -> int:
        self.part.write_bytes(self.body)
        self.returncode = self.code
        return self.code


def test_the_class_archive_is_written_once_and_used_only_when_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kreplica.fleet.job import class_archive, promote_archive

    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    (home / "jars" / "a.jar").write_bytes(b"x")
    java = shutil.which("java") or sys.executable  # any file: only its path and mtime count
    cache = tmp_path / "cache"
    options, part = class_archive(java, str(home), cache)
    assert part is not None and f"-XX:ArchiveClassesAtExit={part}" in options
    # a JVM that died mid-write leaves nothing a later JVM would map
    assert not promote_archive(_Gateway(Path(part), 1, b"half"), part, lambda _: True)
    assert list(cache.iterdir()) == []
    # a clean exit, but an archive no JVM can map (a full disk): not kept either
    assert not promote_archive(_Gateway(Path(part), 0, b"cut"), part, lambda _: False)
    assert list(cache.iterdir()) == []
    options, part = class_archive(java, str(home), cache)
    assert part is not None
    assert promote_archive(_Gateway(Path(part), 0, b"whole"), part, lambda _: True)
    options, again = class_archive(java, str(home), cache)
    final = part.rsplit(".part-", 1)[0]
    assert again is None and options.startswith(f"-XX:SharedArchiveFile={final} ")
    # other jars (Spark upgraded): another archive, written afresh
    (home / "jars" / "b.jar").write_bytes(b"y")
    options, part = class_archive(java, str(home), cache)
    assert part is not None and not part.startswith(final)
    monkeypatch.setenv("KREPLICA_SPARK_CDS", "0")
    assert class_archive(java, str(home), cache) == ("", None)


def test_the_uri_spark_is_given_for_a_local_folder_is_not_percent_encoded() -> None:
    """Hadoop's Path quotes a space or a % itself; `Path.as_uri()` would make them part of
    the name (file:///a%20b is folder `a%20b` to Hadoop)."""
    assert hadoop_uri(Path("/srv/fleet out/50%")) == "file:///srv/fleet out/50%"
    assert local_path(hadoop_uri(Path("/srv/fleet out/50%"))) == Path("/srv/fleet out/50%")
