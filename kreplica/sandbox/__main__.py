"""`python -m kreplica.sandbox fetch [VERSION ...]`: resolve the sandbox's Kafka jars from Maven
Central ahead of time (scripts/test runs it, so tests never stall on a download), and what
`sandbox up --metrics` needs: the JMX exporter agent (Maven Central) and Prometheus (Debian's
package, unpacked into kreplica's cache)."""

from __future__ import annotations

import argparse
import sys

from kreplica.errors import KreplicaError
from kreplica.sandbox.jars import DEFAULT_KRAFT_VERSION, DEFAULT_ZK_VERSION, fetch, major


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kreplica.sandbox")
    sub = parser.add_subparsers(dest="command", required=True)
    fetch_cmd = sub.add_parser("fetch", help="download the Kafka jars the sandbox uses")
    fetch_cmd.add_argument(
        "versions",
        nargs="*",
        default=[DEFAULT_ZK_VERSION, DEFAULT_KRAFT_VERSION],
        help=f"Kafka versions (default: {DEFAULT_ZK_VERSION} {DEFAULT_KRAFT_VERSION})",
    )
    fetch_cmd.add_argument("--verbose", action="store_true", help="show Maven's output")
    fetch_cmd.add_argument(
        "--no-metrics",
        action="store_true",
        help="skip what `sandbox up --metrics` needs (the JMX exporter agent, Prometheus)",
    )
    args = parser.parse_args(argv)
    try:
        for version in args.versions:
            major(version)  # a clear message for a non-version argument
            classpath = fetch(version, quiet=not args.verbose)
            print(f"Kafka {version}: {len(classpath.split(':'))} jars ready")
    except KreplicaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    if not args.no_metrics:
        _fetch_metrics()
    return 0


def _fetch_metrics() -> None:
    """The sandbox's metrics tools where this machine can get them; where it cannot, what is
    missing (the tests that need them then skip, saying so), without failing the others."""
    from kreplica.sandbox import metrics

    for name, path, missing in metrics.fetch_each():
        print(f"{name}: {path}" if missing is None else f"{name}: missing, {missing}")


if __name__ == "__main__":
    sys.exit(main())
