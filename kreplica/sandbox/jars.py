"""Kafka/ZooKeeper jars: resolved by Maven from Maven Central, never committed.

The poms beside this file pin the versions. Maven keeps the jars in its own repository
(`~/.m2`); we cache only the resolved classpath string, one file per Kafka version, under
`$KREPLICA_CACHE` (default `~/.cache/kreplica`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from kreplica.cachedir import cache_dir
from kreplica.errors import SourceError, UsageError

# The versions the sandbox and the test fixtures use unless told otherwise.
DEFAULT_ZK_VERSION = "3.9.2"  # the last line with ZooKeeper mode (removed in 4.0)
DEFAULT_KRAFT_VERSION = "4.3.1"

# log4j2 version shipped in each 4.x tarball (Kafka's gradle/dependencies.gradle); 4.x POMs
# declare no logging backend, so we add the one the tarball would have.
_LOG4J_FOR_KAFKA4 = {"4.0": "2.24.3", "4.1": "2.24.3", "4.2": "2.25.1", "4.3": "2.25.3"}
_LOG4J_FALLBACK = "2.25.3"

_POM_DIR = Path(__file__).resolve().parent


class SandboxError(SourceError):
    """The sandbox cannot start or stop (missing Java/Maven, a broker died, a timeout)."""

    code = "sandbox"


def default_version(mode: str) -> str:
    return DEFAULT_ZK_VERSION if mode == "zk" else DEFAULT_KRAFT_VERSION


def major(kafka_version: str) -> int:
    head = kafka_version.split(".", 1)[0]
    if not head.isdigit():
        raise UsageError(
            f"Kafka version {kafka_version!r} is not a version number: use e.g. 3.9.2 or 4.3.1"
        )
    return int(head)


def check_version(mode: str, kafka_version: str) -> None:
    parts = kafka_version.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise UsageError(
            f"Kafka version {kafka_version!r} is not MAJOR.MINOR.PATCH: use e.g. 3.9.2 or 4.3.1"
        )
    if mode == "zk" and major(kafka_version) >= 4:
        raise UsageError(
            f"Kafka {kafka_version} has no ZooKeeper mode (removed in 4.0): "
            "use --mode kraft, or a 3.x version such as 3.9.2 with --mode zk"
        )
    if major(kafka_version) < 3:
        raise UsageError(f"Kafka {kafka_version} is not supported by the sandbox: use 3.x or 4.x")


def _maven_properties(kafka_version: str) -> list[str]:
    props = [f"-Dkafka.version={kafka_version}"]
    if major(kafka_version) >= 4:
        minor = ".".join(kafka_version.split(".")[:2])
        props.append(f"-Dlog4j.version={_LOG4J_FOR_KAFKA4.get(minor, _LOG4J_FALLBACK)}")
    return props


def pom_for(kafka_version: str) -> Path:
    return _POM_DIR / ("kafka4.xml" if major(kafka_version) >= 4 else "kafka3.xml")


def _classpath_file(kafka_version: str) -> Path:
    # Keyed by the pom's content too: a pom that gains a jar (kafka-tools) must not be served
    # the classpath cached before it did.
    pom_hash = hashlib.sha256(pom_for(kafka_version).read_bytes()).hexdigest()[:10]
    return cache_dir() / "classpath" / f"kafka-{kafka_version}-{pom_hash}.txt"


def _missing(classpath: str) -> bool:
    return not classpath or any(not os.path.exists(p) for p in classpath.split(os.pathsep))


def fetch(kafka_version: str, *, quiet: bool = True) -> str:
    """Resolve the jars for `kafka_version` (downloading them once) and return the classpath."""
    cached = _classpath_file(kafka_version)
    if cached.exists():
        classpath = cached.read_text().strip()
        if not _missing(classpath):
            return classpath
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SandboxError(
            "Maven (mvn) is not on PATH: install Maven (e.g. `apt-get install maven`) so the "
            "sandbox can fetch the Kafka jars from Maven Central"
        )
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp")
    cmd = [
        mvn,
        "-B",
        "-Dstyle.color=never",
        *(["-q"] if quiet else []),
        "-f",
        str(pom_for(kafka_version)),
        "dependency:build-classpath",
        "-DincludeScope=runtime",  # never "compile": that drops most of the broker
        f"-Dmdep.outputFile={tmp}",
        *_maven_properties(kafka_version),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not tmp.exists():
        raise SandboxError(
            f"Maven could not resolve Kafka {kafka_version} from Maven Central "
            f"({_first_maven_error(done.stdout + done.stderr)}); check that the version exists "
            "and Maven Central is reachable (rerun with `python -m kreplica.sandbox fetch "
            f"{kafka_version} --verbose`)"
        )
    classpath = tmp.read_text().strip()
    tmp.replace(cached)
    return classpath


def java_binary() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(os.path.join(java_home, "bin", "java"), os.X_OK):
        return os.path.join(java_home, "bin", "java")
    java = shutil.which("java")
    if java is None:
        raise SandboxError(
            "Java is not on PATH: install a JDK 17+ (e.g. `apt-get install "
            "openjdk-17-jre-headless`) or set JAVA_HOME"
        )
    return java


def _first_maven_error(output: str) -> str:
    for line in output.splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", line).strip()
        if line.startswith("[ERROR]") and len(line) > len("[ERROR] "):
            return line.removeprefix("[ERROR] ")[:300]
    return "no error message"
