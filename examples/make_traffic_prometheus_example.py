"""Write examples/traffic-prometheus.json: a snapshot whose rates were read from Prometheus
(`kreplica snapshot --traffic-from prometheus://... --traffic-range 5m`), of a real 3-broker
KRaft sandbox started with --metrics (the JMX exporter on each broker, a Prometheus scraping
them every 3 s) under the load of examples/make_traffic_example.py for a minute, read half a
minute after the producers stopped: the range's peak, not the quiet last minute. Needs Java 17+,
Maven and Prometheus (Debian's package: `python -m kreplica.sandbox fetch`); takes about two
minutes. Prints the live `kreplica traffic` table too (docs/traffic.md shows it).

    .venv/bin/python examples/make_traffic_prometheus_example.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from kreplica.testing import create_topics, paced_producer, running_cluster

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_traffic_example import RATES, TOPICS, start_readers  # noqa: E402 (the same load)

BUSY_S, QUIET_S, RANGE = 60, 30, "5m"


def main() -> None:
    with running_cluster(
        backend="sandbox", mode="kraft", name="traffic-prometheus-example", metrics=True
    ) as info:
        bootstrap = info.bootstrap_servers
        create_topics(bootstrap, TOPICS)
        with ExitStack() as stack:
            start_readers(stack, bootstrap)
            with paced_producer(bootstrap, RATES):
                time.sleep(BUSY_S)
            time.sleep(QUIET_S)
        where = ["--traffic-from", f"prometheus://{info.prometheus}", "--traffic-range", RANGE]
        topics = [arg for topic in TOPICS for arg in ("--topic", topic.name)]
        kreplica = [sys.executable, "-m", "kreplica"]
        env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
        out = HERE / "traffic-prometheus.json"
        live = ["traffic", "--bootstrap-server", bootstrap, *where, *topics]
        print("$ kreplica " + " ".join(live), flush=True)
        subprocess.run([*kreplica, *live], check=True, env=env)
        subprocess.run(
            [
                *kreplica,
                "snapshot",
                "--bootstrap-server",
                bootstrap,
                *where,
                *topics,
                "-o",
                str(out),
            ],
            check=True,
        )


if __name__ == "__main__":
    main()
