"""`kreplica fleet audit` and `plan` on a standalone Spark master beside `local[2]` (a manual
check: prints what it compared, exits 1 on a difference).

.venv/bin/python bench/check_fleet_standalone.py [--clusters 4] [--partitions 2000]

A master and one worker are started from pyspark's own `sbin/spark-daemon.sh` on 127.0.0.1
(free ports, logs and pid files in a temporary folder, the worker in its own working
directory), a synthetic fleet is audited and planned by the CLI once with `--master
spark://127.0.0.1:PORT` and once with `--master local[2]`, and the results are compared:
findings per cluster and code, and every plan file byte for byte. The daemons are stopped at
the end (also on errors). Two JVMs and a driver's: about a minute on a quiet 2-core machine,
which is why this is not in the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyspark

from kreplica.fleet.synth import write_fleet

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _daemon(env: dict[str, str], action: str, cls: str, *args: str) -> None:
    script = Path(pyspark.__file__).parent / "sbin" / "spark-daemon.sh"
    subprocess.run(["bash", str(script), action, cls, "1", *args], env=env, check=True,
                   capture_output=True)  # fmt: skip


def _wait_port(port: int, deadline_s: float) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"nothing answers on 127.0.0.1:{port} after {deadline_s:.0f} s")


def _cli(*args: str) -> tuple[int, float]:
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kreplica", "fleet", *args],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode not in (0, 9):
        sys.stderr.write(done.stderr)
    return done.returncode, time.perf_counter() - t


def _findings(out: Path) -> dict[str, dict[str, int]]:
    doc = json.loads((out / "audit-summary.json").read_text())
    return {c["cluster_id"]: c["by_code"] for c in doc["clusters"]}


def _plans(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted((out / "plans").rglob("*"))
            if p.is_file()}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clusters", type=int, default=4)
    parser.add_argument("--partitions", type=int, default=2000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kreplica-standalone-"))
    port, ui = _free_port(), _free_port()
    env = {
        **os.environ,
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "SPARK_LOG_DIR": str(work / "logs"),
        "SPARK_PID_DIR": str(work / "pids"),
        "SPARK_IDENT_STRING": f"kreplica-check-{os.getpid()}",
        "PYSPARK_PYTHON": sys.executable,
    }
    master = f"spark://127.0.0.1:{port}"
    (work / "worker").mkdir()
    write_fleet(work / "fleet", args.clusters, args.partitions, seed=3)
    started: list[str] = []
    try:
        _daemon(env, "start", MASTER, "--host", "127.0.0.1", "--port", str(port),
                "--webui-port", str(ui))  # fmt: skip
        started.append(MASTER)
        _wait_port(port, 120)
        worker_ui = str(_free_port())
        _daemon(env, "start", WORKER, "--host", "127.0.0.1", "--cores", "2", "--memory", "1g",
                "--work-dir", str(work / "worker"), "--webui-port", worker_ui, master)  # fmt: skip
        started.append(WORKER)
        time.sleep(5)  # the worker registers with the master
        results = {}
        for name, url in (("standalone", master), ("local[2]", "local[2]")):
            audit = work / f"audit-{name}"
            plan = work / f"plan-{name}"
            code_a, secs_a = _cli("audit", "--input", str(work / "fleet"), "--out", str(audit),
                                  "--rf", "3", "--min-insync", "2", "--master", url)  # fmt: skip
            code_p, secs_p = _cli("plan", "--input", str(work / "fleet"), "--out", str(plan),
                                  "--rf", "3", "--master", url)  # fmt: skip
            results[name] = (_findings(audit), _plans(plan))
            print(f"{name:>10}: audit exit {code_a} in {secs_a:.1f} s, plan exit {code_p} in "
                  f"{secs_p:.1f} s, {len(results[name][1])} plan files")  # fmt: skip
        same_findings = results["standalone"][0] == results["local[2]"][0]
        same_plans = results["standalone"][1] == results["local[2]"][1]
        print(f"findings per cluster and code identical: {same_findings}; "
              f"plan files identical byte for byte: {same_plans}")  # fmt: skip
        return 0 if same_findings and same_plans and results["local[2]"][1] else 1
    finally:
        for cls in reversed(started):
            _daemon(env, "stop", cls)


if __name__ == "__main__":
    sys.exit(main())
