"""A sandbox's metrics (`kreplica sandbox up --metrics`): Prometheus's JMX exporter java agent
on each broker, with rules that give the names of the exporter's Kafka example
(`kafka_log_log_logendoffset{topic,partition}`, `kafka_server_brokertopicmetrics_bytesin_total
{topic}`, ...), and a Prometheus server on loopback scraping them.

Nothing is committed or installed system-wide: Maven resolves the agent jar from Maven Central
into kreplica's cache folder, and Prometheus is the binary of Debian's `prometheus` package,
downloaded with `apt-get download` and unpacked with `dpkg -x` into the same cache (no root),
unless one is given ($KREPLICA_PROMETHEUS) or on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from kreplica.cachedir import cache_dir
from kreplica.sandbox.jars import SandboxError

JMX_EXPORTER_VERSION = "1.0.1"  # io.prometheus.jmx:jmx_prometheus_javaagent on Maven Central
AGENT_ARTIFACT = f"io.prometheus.jmx:jmx_prometheus_javaagent:{JMX_EXPORTER_VERSION}"
SCRAPE_INTERVAL_S = 3  # a sandbox's rates over 4 scrapes take 12 s to show

# The generic rules of the JMX exporter's Kafka example (example_configs/kafka-2_0_0.yml),
# which make the names operators' dashboards use. Only the MBeans rates and sizes come from
# are read: the exporter walks every included MBean on each scrape, and a laptop sandbox's
# request histograms would cost more CPU than the brokers.
RULES = """\
lowercaseOutputName: true
includeObjectNames:
  - "kafka.log:type=Log,*"
  - "kafka.server:type=BrokerTopicMetrics,*"
  - "kafka.server:type=ReplicaManager,*"
  - "kafka.controller:type=KafkaController,*"
rules:
  # per-second counters with 0-2 key/value pairs: kafka_server_brokertopicmetrics_bytesin_total
  - pattern: kafka.(\\w+)<type=(.+), name=(.+)PerSec\\w*, (.+)=(.+), (.+)=(.+)><>Count
    name: kafka_$1_$2_$3_total
    type: COUNTER
    labels:
      "$4": "$5"
      "$6": "$7"
  - pattern: kafka.(\\w+)<type=(.+), name=(.+)PerSec\\w*, (.+)=(.+)><>Count
    name: kafka_$1_$2_$3_total
    type: COUNTER
    labels:
      "$4": "$5"
  - pattern: kafka.(\\w+)<type=(.+), name=(.+)PerSec\\w*><>Count
    name: kafka_$1_$2_$3_total
    type: COUNTER
  # gauges with 0-2 key/value pairs: kafka_log_log_logendoffset{topic,partition}
  - pattern: kafka.(\\w+)<type=(.+), name=(.+), (.+)=(.+), (.+)=(.+)><>Value
    name: kafka_$1_$2_$3
    type: GAUGE
    labels:
      "$4": "$5"
      "$6": "$7"
  - pattern: kafka.(\\w+)<type=(.+), name=(.+), (.+)=(.+)><>Value
    name: kafka_$1_$2_$3
    type: GAUGE
    labels:
      "$4": "$5"
  - pattern: kafka.(\\w+)<type=(.+), name=(.+)><>Value
    name: kafka_$1_$2_$3
    type: GAUGE
"""


@dataclass(frozen=True)
class MetricsTools:
    agent_jar: str
    prometheus: str


def _metrics_cache() -> Path:
    return cache_dir() / "metrics"


def fetch_agent(*, quiet: bool = True) -> str:
    """The JMX exporter agent jar, copied by Maven from Maven Central into the cache once."""
    folder = _metrics_cache()
    jar = folder / f"jmx_prometheus_javaagent-{JMX_EXPORTER_VERSION}.jar"
    if jar.is_file():
        return str(jar)
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SandboxError(
            "Maven (mvn) is not on PATH: install Maven (e.g. `apt-get install maven`) so the "
            f"sandbox can fetch the JMX exporter agent ({AGENT_ARTIFACT}) from Maven Central"
        )
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [mvn, "-B", "-Dstyle.color=never", *(["-q"] if quiet else [])]
    cmd += ["dependency:copy", f"-Dartifact={AGENT_ARTIFACT}", f"-DoutputDirectory={folder}"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=folder)
    if done.returncode != 0 or not jar.is_file():
        raise SandboxError(
            f"Maven could not fetch {AGENT_ARTIFACT} from Maven Central (exit "
            f"{done.returncode}); check that Maven Central is reachable (rerun with `python -m "
            "kreplica.sandbox fetch --verbose`)"
        )
    return str(jar)


def prometheus_binary() -> str:
    """$KREPLICA_PROMETHEUS, else `prometheus` on PATH, else Debian's package unpacked into the
    cache (fetched the first time)."""
    given = os.environ.get("KREPLICA_PROMETHEUS")
    if given:
        if not os.access(given, os.X_OK):
            raise SandboxError(
                f"KREPLICA_PROMETHEUS={given} is not an executable file: point it at a "
                "Prometheus 2.x binary, or unset it"
            )
        return given
    on_path = shutil.which("prometheus")
    if on_path is not None:
        return on_path
    unpacked = _metrics_cache() / "prometheus-deb" / "usr" / "bin" / "prometheus"
    if os.access(unpacked, os.X_OK):
        return str(unpacked)
    return _unpack_debian_package(unpacked)


def _unpack_debian_package(binary: Path) -> str:
    missing = [tool for tool in ("apt-get", "dpkg") if shutil.which(tool) is None]
    if missing:
        raise SandboxError(
            f"Prometheus is not installed and {' and '.join(missing)} cannot fetch it (not a "
            "Debian-like system): install Prometheus 2.x and put `prometheus` on PATH, or set "
            "KREPLICA_PROMETHEUS to its binary"
        )
    target = binary.parents[2]
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        got = _apt_download(tmp)
        if got.returncode != 0 and os.geteuid() == 0:  # a fresh machine: no package lists yet
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True, check=False)
            got = _apt_download(tmp)
        debs = sorted(Path(tmp).glob("prometheus_*.deb"))
        if got.returncode != 0 or not debs:
            last = (got.stderr.strip().splitlines() or ["no output"])[-1]
            raise SandboxError(
                f"`apt-get download prometheus` failed ({last}): run `apt-get update` (the "
                "package lists may be missing), or install Prometheus 2.x and put `prometheus` "
                "on PATH"
            )
        unpacked = Path(tmp) / "x"
        done = subprocess.run(["dpkg", "-x", str(debs[0]), str(unpacked)], capture_output=True)
        if done.returncode != 0 or not (unpacked / "usr" / "bin" / "prometheus").is_file():
            raise SandboxError(f"`dpkg -x {debs[0].name}` gave no usr/bin/prometheus")
        shutil.rmtree(target, ignore_errors=True)
        unpacked.rename(target)
    return str(binary)


def _apt_download(folder: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["apt-get", "download", "prometheus"], cwd=folder, capture_output=True, text=True
    )


def fetch_each() -> list[tuple[str, str | None, str | None]]:
    """Each tool `up --metrics` needs, fetched where this machine can: (name, its path or None,
    why it is missing or None); one missing does not stop the other being fetched."""
    out: list[tuple[str, str | None, str | None]] = []
    for name, get in (
        (f"JMX exporter agent {JMX_EXPORTER_VERSION}", fetch_agent),
        ("Prometheus", prometheus_binary),
    ):
        try:
            out.append((name, get(), None))
        except SandboxError as exc:
            out.append((name, None, str(exc)))
    return out


def fetch(*, quiet: bool = True) -> MetricsTools:
    return MetricsTools(fetch_agent(quiet=quiet), prometheus_binary())


def agent_flag(agent_jar: str, port: int, rules: Path) -> str:
    return f"-javaagent:{agent_jar}=127.0.0.1:{port}:{rules}"


def prometheus_config(targets: dict[int, int]) -> str:
    """Scrape each broker's exporter (broker id: port), labelled with the broker's id."""
    lines = [
        "global:",
        f"  scrape_interval: {SCRAPE_INTERVAL_S}s",
        f"  scrape_timeout: {SCRAPE_INTERVAL_S}s",
        "scrape_configs:",
        "  - job_name: kafka",
        "    static_configs:",
    ]
    for broker, port in sorted(targets.items()):
        lines += [
            f"      - targets: ['127.0.0.1:{port}']",
            f"        labels: {{broker: '{broker}'}}",
        ]
    return "\n".join(lines) + "\n"


def prometheus_command(binary: str, state_dir: Path, port: int) -> list[str]:
    return [
        binary,
        f"--config.file={state_dir / 'prometheus.yml'}",
        f"--storage.tsdb.path={state_dir / 'prometheus-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--storage.tsdb.retention.time=2d",
        "--log.level=warn",
    ]


def scraped_targets(port: int) -> tuple[int, int]:
    """(targets scraped successfully, targets) of the Prometheus at `port`; (0, 0) while it
    does not answer."""
    url = f"http://127.0.0.1:{port}/api/v1/targets?state=active"
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            targets = json.load(answer)["data"]["activeTargets"]
    except (OSError, ValueError, KeyError, TypeError):
        return 0, 0
    return sum(t.get("health") == "up" for t in targets), len(targets)


def wait_scraped(port: int, brokers: int, deadline: float) -> bool:
    """True once Prometheus has scraped every broker's exporter; False at the deadline."""
    while time.monotonic() < deadline:
        if scraped_targets(port) == (brokers, brokers):
            return True
        time.sleep(0.5)
    return False
