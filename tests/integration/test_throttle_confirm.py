"""`kreplica apply --throttle` submits its first wave only once every throttled broker reports the
rate it set, on the session clusters (a topic of its own per mode).

ZooKeeper mode: the write goes to ZooKeeper and each broker applies it when it processes the
change notification; KRaft: each broker applies the config record from the metadata log. In
both, a broker answers DescribeConfigs for its own BROKER resource from what it has applied.
The journal shows `throttle-confirmed` (every broker kreplica wrote a rate to, by id) after the
`throttle-set` records and before the first `submit`; the progress says so; the move completes
and the topic's throttles are gone afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kreplica.sandbox import SandboxInfo
from kreplica.testing import TopicSpec, create_topics
from tests.integration.test_apply import Kafka, Operator, _ok, _plan
from tests.support.groups import per_mode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(params=per_mode("cluster"))
def info(request: pytest.FixtureRequest) -> SandboxInfo:
    fixture = "zk_cluster" if request.param == "zk" else "kraft_cluster"
    result: SandboxInfo = request.getfixturevalue(fixture)
    return result


def test_the_first_wave_is_submitted_after_every_broker_reports_the_throttle(
    info: SandboxInfo, tmp_path: Path
) -> None:
    topic = f"confirmed-{info.mode}"
    create_topics(info.bootstrap_servers, [TopicSpec(topic, assignment={0: [1], 1: [2]})])
    op = Operator(info, tmp_path)
    kafka = Kafka(info)
    try:
        _ok(op.run("expand", "-t", topic, "--rf", "2", "--dry-run", "--out", "p.json", *op.source))
        plan = _plan(tmp_path / "p.json")
        applied = _ok(op.run("apply", "p.json", "--throttle", "20MB/s", *op.source))
        events = op.journal("p.json")
        kinds = [e["event"] for e in events]
        assert "throttle-confirmed" in kinds, kinds
        confirmed = events[kinds.index("throttle-confirmed")]
        rated = {
            int(e["name"])
            for e in events[: kinds.index("throttle-confirmed")]
            if e["event"] == "throttle-set" and e["kind"] == "broker"
        }
        moving = {b for replicas in plan.values() for b in replicas}
        assert rated == moving, (rated, plan)  # the rate went to every broker of the moves
        assert confirmed["what"] == "moves" and set(confirmed["brokers"]) == rated
        assert confirmed["rounds"] >= 1
        last_set = max(i for i, k in enumerate(kinds) if k == "throttle-set")
        assert last_set < kinds.index("throttle-confirmed") < kinds.index("submit")
        assert "throttle in effect: broker(s)" in applied.stdout + applied.stderr
        assert kinds[-1] == "finish"
        assert kafka.throttles([topic]) == {}
        print(
            f"{info.mode}: throttle confirmed on brokers {confirmed['brokers']} after "
            f"{confirmed['seconds']} s in {confirmed['rounds']} round(s)"
        )
    finally:
        kafka.close()


def _set_rates(kafka: Kafka, broker: str, value: str | None) -> None:
    """The leader and follower rates of `broker` set (None: removed), waited until it reports
    them."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    entries = [ConfigEntry(k, value or "", incremental_operation=op) for k in RATES]
    resource = ConfigResource(ResourceType.BROKER, broker, incremental_configs=entries)
    for future in kafka.admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)
    want = dict.fromkeys(RATES, value) if value is not None else {}
    kafka.wait(
        f"broker {broker} reports rates {value}",
        lambda: kafka.throttles([]).get(f"broker {broker}", {}) == want,
    )


RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def test_a_broker_reporting_the_rate_already_gets_one_less_first_and_keeps_its_own(
    info: SandboxInfo, tmp_path: Path
) -> None:
    """Broker 1 has the operator's own rate, the one the apply asks for: reporting it proves
    nothing (a change may be on its way), so it gets one byte/s less first, then the rate; the
    operator's rate is still there afterwards."""
    topic = f"confirmed-same-{info.mode}"
    rate = "20000000"
    create_topics(info.bootstrap_servers, [TopicSpec(topic, assignment={0: [1], 1: [2]})])
    op = Operator(info, tmp_path)
    kafka = Kafka(info)
    try:
        _set_rates(kafka, "1", rate)
        _ok(op.run("expand", "-t", topic, "--rf", "2", "--dry-run", "--out", "p.json", *op.source))
        _ok(op.run("apply", "p.json", "--throttle", rate, *op.source))
        events = op.journal("p.json")
        on_1 = [
            e for e in events if e["event"] == "throttle-set" and e["kind"] == "broker"
            and e["name"] == "1"
        ]  # fmt: skip
        assert [e["values"][RATES[0]] for e in on_1] == [str(int(rate) - 1), rate]
        assert on_1[0]["previous"] == dict.fromkeys(RATES, rate)
        kinds = [e["event"] for e in events]
        assert kinds.count("throttle-confirmed") == 1
        last_set = max(i for i, k in enumerate(kinds) if k == "throttle-set")
        assert last_set < kinds.index("throttle-confirmed") < kinds.index("submit")
        assert kinds[-1] == "finish"
        # the operator's rate is back (and reported: the restore waited for it), nothing else
        assert kafka.throttles([topic]) == {"broker 1": dict.fromkeys(RATES, rate)}
    finally:
        try:
            _set_rates(kafka, "1", None)
        finally:
            kafka.close()
