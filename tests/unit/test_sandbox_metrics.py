"""`sandbox up --metrics`'s parts that need no cluster: where Prometheus comes from and what a
machine that cannot get it is told, the scrape config, the agent's flag. The sandbox with its
agent and Prometheus running: tests/integration/test_traffic_prometheus.py."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from kreplica.sandbox import SandboxError, metrics


def test_a_machine_without_apt_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KREPLICA_CACHE", str(tmp_path / "cache"))  # nothing unpacked there
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no prometheus, apt-get nor dpkg
    monkeypatch.delenv("KREPLICA_PROMETHEUS", raising=False)
    with pytest.raises(SandboxError) as caught:
        metrics.prometheus_binary()
    message = str(caught.value)
    assert "apt-get and dpkg cannot fetch it" in message
    assert "put `prometheus` on PATH, or set KREPLICA_PROMETHEUS" in message
    # the test command's fetch names each missing tool, the agent's Maven too
    agent = f"JMX exporter agent {metrics.JMX_EXPORTER_VERSION}"
    missing = {name: why for name, path, why in metrics.fetch_each() if path is None}
    assert set(missing) == {agent, "Prometheus"}
    assert "Maven (mvn) is not on PATH" in (missing[agent] or "")


def test_a_given_binary_wins_and_a_wrong_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = tmp_path / "prometheus"
    binary.write_text("#!/bin/sh\n")
    monkeypatch.setenv("KREPLICA_PROMETHEUS", str(binary))
    with pytest.raises(SandboxError, match="is not an executable file"):
        metrics.prometheus_binary()
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    assert metrics.prometheus_binary() == str(binary)


def test_prometheus_scrapes_each_broker_labelled_with_its_id() -> None:
    config = metrics.prometheus_config({2: 4002, 1: 4001})
    assert f"scrape_interval: {metrics.SCRAPE_INTERVAL_S}s" in config
    first, second = config.index("127.0.0.1:4001"), config.index("127.0.0.1:4002")
    assert first < second
    assert "labels: {broker: '1'}" in config[first:second]


def test_the_agent_listens_on_loopback_with_the_rules_file(tmp_path: Path) -> None:
    rules = tmp_path / "jmx-exporter.yml"
    flag = metrics.agent_flag("/cache/agent.jar", 4001, rules)
    assert flag == f"-javaagent:/cache/agent.jar=127.0.0.1:4001:{rules}"


def test_the_rules_give_the_names_the_source_reads() -> None:
    from kreplica.sources import prometheus

    # the rules lowercase names made as kafka_<domain>_<type>_<name>: LogEndOffset of
    # kafka.log:type=Log becomes kafka_log_log_logendoffset; BytesInPerSec's count, ..._total
    assert "lowercaseOutputName: true" in metrics.RULES
    assert "name: kafka_$1_$2_$3_total" in metrics.RULES
    assert "name: kafka_$1_$2_$3\n" in metrics.RULES
    assert '"kafka.log:type=Log,*"' in metrics.RULES
    assert '"kafka.server:type=BrokerTopicMetrics,*"' in metrics.RULES
    for name in (prometheus.LOG_END, prometheus.LOG_START, prometheus.LOG_SIZE):
        assert name.startswith("kafka_log_log_")
    assert prometheus.BYTES_IN == "kafka_server_brokertopicmetrics_bytesin_total"
