"""`--traffic-from prometheus://HOST:PORT` bad input (issue 34 item 7): an unreachable
Prometheus, something else answering, a bad range, options that do not go together: one line,
an exit code from the enum, nothing written. A query with no series needs a real Prometheus:
tests/integration/test_traffic_prometheus.py."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import ExitCode
from kreplica.sandbox.procs import free_ports
from tests.unit.cli.conftest import EXAMPLE


@pytest.fixture
def closed_port() -> str:
    """A loopback address nothing listens on."""
    return f"prometheus://127.0.0.1:{free_ports(1)[0]}"


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and "Traceback" not in stderr
    return lines[0]


def test_an_unreachable_prometheus_is_a_source_error(cli: Any, closed_port: str) -> None:
    run = cli(["traffic", "--snapshot", str(EXAMPLE), "--traffic-from", closed_port])
    assert run.code == ExitCode.SOURCE
    line = _one_line(run.stderr)
    assert f"cannot reach Prometheus at {closed_port}" in line
    assert "check --traffic-from" in line


def test_nothing_is_written_when_prometheus_cannot_be_read(
    cli: Any, closed_port: str, tmp_path: Path
) -> None:
    out = tmp_path / "snap.json"
    run = cli(
        ["snapshot", "--snapshot", str(EXAMPLE), "--traffic-from", closed_port, "-o", str(out)]
    )
    assert run.code == ExitCode.SOURCE
    _one_line(run.stderr)
    assert not out.exists()


class _WebPage(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html>a dashboard</html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:  # stderr is the command's
        pass


@pytest.fixture
def not_prometheus() -> Iterator[str]:
    """A web server that is not Prometheus (every path: an HTML page)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _WebPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"prometheus://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_that_is_not_prometheus_is_named(cli: Any, not_prometheus: str) -> None:
    run = cli(["traffic", "--snapshot", str(EXAMPLE), "--traffic-from", not_prometheus])
    assert run.code == ExitCode.SOURCE
    line = _one_line(run.stderr)
    assert f"{not_prometheus} answered /api/v1/targets with something other than" in line


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--traffic-range", "7x"], "--traffic-range '7x' is not a duration"),
        (["--traffic-range", "0d"], "--traffic-range '0d' is empty"),
    ],
)
def test_a_bad_range_is_refused_before_prometheus_is_asked(
    cli: Any, closed_port: str, args: list[str], says: str
) -> None:
    run = cli(["traffic", "--snapshot", str(EXAMPLE), "--traffic-from", closed_port, *args])
    assert run.code == ExitCode.USAGE
    assert says in _one_line(run.stderr)  # not "cannot reach": it never asked


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["traffic", "--traffic-range", "7d"], "give --traffic-from prometheus://HOST:PORT"),
        (["traffic", "--traffic-from", "http://h:9090"], "is not a Prometheus address"),
        (["snapshot", "--traffic", "5", "--traffic-from", "prometheus://h:1"], "not both"),
        (
            ["rebalance", "--by", "count", "--traffic-from", "prometheus://h:1"],
            "--traffic-from gives rates to --by traffic, not --by count",
        ),
    ],
)
def test_options_that_do_not_go_together(cli: Any, args: list[str], says: str) -> None:
    run = cli([*args, "--snapshot", str(EXAMPLE)])
    assert run.code == ExitCode.USAGE
    assert says in _one_line(run.stderr)


def test_rebalance_by_traffic_reads_its_rates_from_prometheus(cli: Any, closed_port: str) -> None:
    run = cli(
        ["rebalance", "--by", "traffic", "--snapshot", str(EXAMPLE), "--traffic-from", closed_port]
    )
    assert run.code == ExitCode.SOURCE  # it went to Prometheus for them, not to the file
    assert "cannot reach Prometheus" in _one_line(run.stderr)


def test_a_window_and_prometheus_together_are_refused_before_reading(
    cli: Any, closed_port: str
) -> None:
    """Two sources of rates: a usage error, before Prometheus (closed here) is asked."""
    run = cli(
        ["rebalance", "--by", "traffic", "--snapshot", str(EXAMPLE), "--traffic-from",
         closed_port, "--traffic-window", "10", "--dry-run"]
    )  # fmt: skip
    assert run.code == ExitCode.USAGE
    line = _one_line(run.stderr)
    assert "--traffic-window" in line and "--traffic-from" in line
