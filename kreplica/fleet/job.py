"""The fleet job's entry point: the one place a SparkSession is built.

`kreplica fleet audit|plan` call `run_audit` / `run_plan` with a session from `build_session`;
on a Spark cluster, submit this file itself (the executors need kreplica installed, and use the
driver's Python):

    JOB=$(python -c 'import kreplica.fleet.job as j; print(j.__file__)')
    spark-submit --master spark://HOST:7077 "$JOB" audit --input s3a://bucket/snaps/ --out ./audit
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kreplica.cachedir import cache_dir, java_build
from kreplica.errors import ExitCode, KreplicaError, UsageError
from kreplica.fleet.adapter import PlanSettings
from kreplica.fleet.outfiles import OutFiles
from kreplica.fleet.policy import Policy, load_policy, with_overrides
from kreplica.fleet.preflight import OutDir, check_master, check_out, local_input_bytes

DEFAULT_MASTER = "local[*]"
WORST_CHARTED = 5
# A fleet this small (about 50,000 partitions of snapshots) is done before the JVM's optimising
# compiler pays off: a local session for it compiles with C1 only, collects with the serial
# collector and runs Spark's stages interpreted (no whole-stage code generation). A 150-
# partition audit's JVM time was halved (session start 7.8 -> 4.2 s of CPU, its first audit
# 18.0 -> 9.1 s; bench_fleet); big fleets keep the defaults (C2 for their long stages).
SMALL_INPUT_BYTES = 16 << 20
SMALL_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
Progress = Callable[[str], None]


class SparkUnavailable(KreplicaError):
    """Spark cannot start here (no pyspark, no Java): one line naming what to install."""

    exit_code = ExitCode.SOURCE
    code = "spark-unavailable"


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n%ex
"""


def _log_config() -> str:
    path = Path(tempfile.gettempdir()) / "kreplica-fleet-log4j2.properties"
    if not path.exists() or path.read_text(encoding="utf-8") != _LOG4J:
        path.write_text(_LOG4J, encoding="utf-8")
    return str(path)


def session_settings(
    master: str | None, conf: dict[str, str] | None = None, input_bytes: int | None = None
) -> dict[str, str]:
    """The session's configuration (see `build_session`); `conf` wins over it."""
    local = (master or "").startswith("local")
    small = local and input_bytes is not None and input_bytes < SMALL_INPUT_BYTES
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2" if small else "8",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{_log_config()}",
        **(conf or {}),
    }
    if local and "spark.driver.memory" not in settings:
        # local mode: driver and executors share this one JVM (Spark's default is 1g)
        settings["spark.driver.memory"] = os.environ.get("KREPLICA_SPARK_MEMORY", "2g")
    if local:
        # one job per action: adaptive execution runs each shuffle as a job of its own (16
        # jobs for a tiny audit, 4 without; on one machine the waits between them are what
        # it costs: 1.7 s of the 1M-partition audit's 8 outside parsing)
        settings.setdefault("spark.sql.adaptive.enabled", "false")
    if small:
        # prepended by Spark to extraJavaOptions (the log configuration above)
        settings.setdefault("spark.driver.defaultJavaOptions", SMALL_JVM)
        settings.setdefault("spark.sql.codegen.wholeStage", "false")
    return settings


def class_archive(java: str, spark_home: str, cache: Path | None = None) -> tuple[str, str | None]:
    """Class-data sharing for a small fleet's JVM: the JVM options, and the file to promote
    once this JVM has exited (None when there is nothing to promote). Spark's JVM loads ~15,000
    classes before its first query; mapped from an archive they cost about a third less of
    the JVM's CPU (a 150-partition audit: 17 -> 11 s). The first run writes the archive at
    exit (`-XX:ArchiveClassesAtExit`, under a name of its own, ~190 MB, 20-30 s at exit);
    `promote_archive` renames it once the JVM has exited cleanly and a JVM maps it, as a JVM
    maps a truncated archive to its death. Keyed by the Java binary and Spark's jars: the JVM
    also checks them itself and runs without an archive that does not fit (its warning
    silenced). KREPLICA_SPARK_CDS=0: off."""
    if os.environ.get("KREPLICA_SPARK_CDS", "1") == "0":
        return "", None
    jars = Path(spark_home) / "jars"
    try:
        listing = sorted((f.name, f.stat().st_size) for f in jars.iterdir())
        key = f"{java_build(java)}|{jars}|{listing}"
        folder = cache or cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return "", None
    final = folder / f"spark-classes-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"
    if final.is_file():
        return f"-XX:SharedArchiveFile={final} -Xlog:cds=off -Xlog:cds+dynamic=off", None
    if not os.access(folder, os.W_OK):
        return "", None
    part = f"{final}.part-{os.getpid()}"
    return f"-XX:ArchiveClassesAtExit={part} -Xlog:cds=off -Xlog:cds+dynamic=off", part


def archive_maps(java: str, archive: str) -> bool:
    """A JVM starts with `archive` mapped (or, not its own, set aside): no crash. A truncated
    archive (a full disk while the JVM wrote it) kills every JVM that maps it."""
    quiet = ["-Xlog:cds=off", "-Xlog:cds+dynamic=off", "-XX:ErrorFile=/dev/null"]
    try:
        done = subprocess.run(
            [java, f"-XX:SharedArchiveFile={archive}", *quiet, "-version"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def promote_archive(
    proc: Any, part: str, valid: Callable[[str], bool], timeout: float = 120.0
) -> bool:
    """At exit: end Spark's JVM (`proc`, its gateway process), wait for it to write the class
    archive, and move the archive into place only if the JVM exited cleanly and `valid` (a
    JVM maps it) says so."""
    final = part.rsplit(".part-", 1)[0]
    with contextlib.suppress(Exception):  # a cache: never fail the run for it
        if proc.stdin is not None:
            proc.stdin.close()  # the gateway exits when its stdin closes
        proc.wait(timeout=timeout)
        if proc.returncode == 0 and os.path.getsize(part) > 0 and valid(part):
            os.replace(part, final)
            return True
    with contextlib.suppress(OSError):
        os.remove(part)
    return False


def _stop_and_promote(spark: Any, part: str) -> None:
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    with contextlib.suppress(Exception):  # exiting anyway
        spark.stop()
    if proc is not None:
        promote_archive(proc, part, lambda archive: archive_maps(str(_java()), archive))
    else:
        with contextlib.suppress(OSError):
            os.remove(part)


def build_session(
    master: str | None = DEFAULT_MASTER,
    *,
    app_name: str = "kreplica-fleet",
    conf: dict[str, str] | None = None,
    input_bytes: int | None = None,
) -> Any:
    """A SparkSession (quiet logs, no UI unless asked); `master` None keeps spark-submit's
    --master (local[*] when there is none). `input_bytes`: the snapshots' size when known
    (`preflight.local_input_bytes`); a small fleet on a local master gets a JVM tuned for a
    short run (SMALL_INPUT_BYTES). Raises SparkUnavailable with what to install when pyspark
    or Java is missing, or Spark does not start."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise SparkUnavailable(
            "the fleet commands need PySpark: pip install 'kreplica[fleet]'"
        ) from None
    if _java() is None:
        raise SparkUnavailable(
            "Spark needs Java 17 or newer and none was found: install a JDK or JRE "
            "(e.g. `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME"
        )
    # The executors run the driver's Python (the one kreplica is installed in).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings = session_settings(master, conf, input_bytes)
    part = None
    import pyspark

    fresh = pyspark.SparkContext._active_spark_context is None  # else getOrCreate reuses it
    if (
        fresh
        and settings.get("spark.driver.defaultJavaOptions") == SMALL_JVM
        and "spark.driver.defaultJavaOptions" not in (conf or {})  # the caller's JVM: as given
    ):
        home = os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)
        options, part = class_archive(str(_java()), home)
        if options:
            settings["spark.driver.defaultJavaOptions"] = f"{SMALL_JVM} {options}"
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = f"with --master {master}" if master is not None else "(spark-submit's master)"
        if "Java gateway" in first:  # the JVM died before talking: Java itself, or its options
            raise SparkUnavailable(
                f"Spark did not start {where} ({first}); check the master URL, and that "
                "Java 17 or newer runs (JAVA_HOME)"
            ) from None
        raise SparkUnavailable(f"Spark did not start {where}: {first}") from None
    spark.sparkContext.setLogLevel("ERROR")
    if part is not None:
        atexit.register(_stop_and_promote, spark, part)
    return spark


def load_fleet_policy(policy_file: str | None, *, rf: int | None, min_insync: int | None) -> Policy:
    for flag, value in (("--rf", rf), ("--min-insync", min_insync)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} {value}: use 1 or more")
    base = load_policy(policy_file) if policy_file else Policy()
    return with_overrides(base, rf=rf, min_insync=min_insync)


def preflight(master: str | None, out: str) -> OutDir:
    """What can be checked before Spark starts: the master answers, --out can be written."""
    check_master(master)
    return check_out(out)


def _out(spark: Any, out: str | OutDir) -> OutFiles:
    return OutFiles(spark, out if isinstance(out, OutDir) else check_out(out))


def shortfalls(doc: dict[str, Any]) -> list[dict[str, str]]:
    """What a run could not do, as envelope errors: each snapshot skipped, and (a plan) each
    cluster the planner refused. Any of them makes the run partial (exit 9)."""
    found = [{"code": "skipped", "message": s["error"]} for s in doc["skipped"]]
    if doc.get("kreplica_fleet_plan"):
        found += [
            {"code": "refused", "message": f"{c['cluster_id']}: {c['error']}"}
            for c in doc["clusters"]
            if c["status"] == "error"
        ]
    return found


def partial_message(doc: dict[str, Any]) -> str:
    """The one line a partial run ends with (exit 9)."""
    skipped = doc["skipped"]
    refused = [c for c in doc.get("clusters", []) if c.get("status") == "error"]
    parts = []
    if skipped:
        more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
        parts.append(f"{len(skipped)} snapshot(s) skipped ({skipped[0]['error']}{more})")
    if refused and doc.get("kreplica_fleet_plan"):
        first = refused[0]
        more = f" and {len(refused) - 1} more" if len(refused) > 1 else ""
        parts.append(
            f"{len(refused)} cluster(s) refused by the planner ({first['cluster_id']}: "
            f"{first['error']}{more})"
        )
    return (
        f"{'; '.join(parts)}; the other clusters' results are written (the summary names each one)"
    )


def _quiet(_: str) -> None:
    pass


def run_audit(
    spark: Any,
    input_path: str,
    out: str | OutDir,
    policy: Policy,
    *,
    worst: int = WORST_CHARTED,
    layouts: bool = True,
    progress: Progress = _quiet,
) -> dict[str, Any]:
    """Audit every snapshot under `input_path`; write findings, summaries and charts to `out`.
    Returns the summary document (what audit-summary.json holds)."""
    from kreplica.fleet import pipeline

    return pipeline.audit(
        spark,
        input_path,
        _out(spark, out),
        policy,
        worst=worst,
        layouts=layouts,
        progress=progress,
    )


def run_plan(
    spark: Any,
    input_path: str,
    out: str | OutDir,
    policy: Policy,
    *,
    settings: PlanSettings = PlanSettings(),
    progress: Progress = _quiet,
) -> dict[str, Any]:
    """Plan every cluster under `input_path`; write OUT/plans/<cluster>/ and the fleet plan
    summary. Returns the summary document (what plan-summary.json holds)."""
    from kreplica.fleet import pipeline

    if policy.empty:
        raise UsageError(
            "nothing to plan: give --rf N or a --policy file with rf (or racks) targets"
        )
    return pipeline.plan(
        spark, input_path, _out(spark, out), policy, settings=settings, progress=progress
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kreplica-fleet-job", description="kreplica fleet audit/plan as a Spark job"
    )
    parser.add_argument("command", choices=("audit", "plan"))
    parser.add_argument("--input", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--policy")
    parser.add_argument("--rf", type=int)
    parser.add_argument("--min-insync", type=int)
    parser.add_argument("--master", help="default: spark-submit's --master, else local[*]")
    parser.add_argument("--worst", type=int, default=WORST_CHARTED)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--skip-in-flight", action="store_true")
    parser.add_argument("--replace-dead", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """`spark-submit job.py audit|plan --input ... --out ...` (no typer needed)."""
    args = _parser().parse_args(argv)
    try:
        policy = load_fleet_policy(args.policy, rf=args.rf, min_insync=args.min_insync)
        out = preflight(args.master, args.out)
        spark = build_session(args.master, input_bytes=local_input_bytes(args.input))
        started = time.monotonic()

        def say(text: str) -> None:
            sys.stderr.write(f"[{time.monotonic() - started:7.1f}s] {text}\n")

        if args.command == "audit":
            doc = run_audit(spark, args.input, out, policy, worst=args.worst, progress=say)
        else:
            doc = run_plan(
                spark,
                args.input,
                out,
                policy,
                settings=PlanSettings(
                    force=args.force,
                    skip_in_flight=args.skip_in_flight,
                    replace_dead=args.replace_dead,
                ),
                progress=say,
            )
        sys.stdout.write(doc["markdown"])
        if shortfalls(doc):
            sys.stderr.write(f"error: {partial_message(doc)}\n")
            return int(ExitCode.PARTIAL)
        return 0
    except KreplicaError as exc:
        sys.stderr.write(f"error: {exc.message}\n")
        return int(exc.exit_code)


if __name__ == "__main__":
    sys.exit(main())
