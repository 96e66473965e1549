"""kreplica against secured clusters: SASL_SSL (SCRAM-SHA-512) with TLS from a throwaway CA and an
authorizer with ACLs, in ZooKeeper mode (Kafka 3.9) and KRaft (Kafka 4.x) (conftest
`zk_secured` / `kraft_secured`: users admin, a super user, and readonly, which may Describe and
DescribeConfigs only).

- the sources' contract (test_sources_contract.py's assertions) once more, through
  --command-config files, as admin and as readonly;
- a small plan applied, verified, cancelled and its throttles cleared as admin, with the CLI
  in subprocesses, through --command-config and through a named cluster;
- readonly: reading commands work, every writing command stops before changing anything with
  one line naming the missing permission (Kafka's error name and the ACL to grant);
- a wrong password, an untrusted certificate and a hostname mismatch: one clear line each,
  well within the timeout;
- no secret of the sandbox in any stream or file these commands produced (--debug included).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kreplica import sandbox
from kreplica.cli.config import load_properties
from kreplica.sandbox import SandboxInfo
from kreplica.sources import AssignmentSource, open_source
from kreplica.testing import TopicSpec, create_topics
from tests.integration.test_sources_contract import (  # the same assertions, run again here
    test_all_topics_and_selection,
    test_brokers_racks_and_identity,
    test_configs_are_topic_overrides,
    test_kafka_placed_replicas_rack_aware_and_balanced,
    test_leaders_and_isr_on_a_healthy_cluster,
    test_repeatable,
    test_topic_shapes_as_created,
    test_unknown_topic,
)
from tests.support.cli import run_kreplica
from tests.support.groups import per_mode, uses

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

__all__ = [
    "test_all_topics_and_selection",
    "test_brokers_racks_and_identity",
    "test_configs_are_topic_overrides",
    "test_kafka_placed_replicas_rack_aware_and_balanced",
    "test_leaders_and_isr_on_a_healthy_cluster",
    "test_repeatable",
    "test_topic_shapes_as_created",
    "test_unknown_topic",
]

MODES = ["zk", "kraft"]
ROOT = Path(__file__).resolve().parents[2]

# Every stream and folder the secured-cluster commands produced, for the secret grep at the end.
PRODUCED: list[tuple[str, str]] = []
FOLDERS: list[Path] = []
INPUTS: set[Path] = set()  # client configs the tests wrote themselves (they hold a password)


def _secured(request: pytest.FixtureRequest, mode: str) -> SandboxInfo:
    info: SandboxInfo = request.getfixturevalue(f"{mode}_secured")
    FOLDERS.append(Path(info.state_dir))
    return info


@pytest.fixture(
    params=[
        pytest.param(f"{m}-{u}", marks=uses(f"{m}_secured"))
        for m in MODES
        for u in ("admin", "readonly")
    ]
)
def opened(request: pytest.FixtureRequest) -> Iterator[tuple[AssignmentSource, SandboxInfo, str]]:
    """The AdminClient source logged in as admin or readonly (see test_sources_contract)."""
    mode, user = request.param.split("-")
    info = _secured(request, mode)
    config = load_properties(info.client_configs[user])
    source = open_source(bootstrap_server=info.bootstrap_servers, client_config=config)
    try:
        yield source, info, "admin"
    finally:
        source.close()


def kreplica(
    *args: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The runner, keeping what each command printed for the secret-leak check at the end."""
    extra = {"KREPLICA_POLL_INTERVAL": "0.3", **(env or {})}
    done = run_kreplica(*args, cwd=cwd, env=extra, timeout=timeout)
    PRODUCED.append((f"kreplica {' '.join(args)} (stdout)", done.stdout))
    PRODUCED.append((f"kreplica {' '.join(args)} (stderr)", done.stderr))
    return done


def _work(tmp_path: Path) -> Path:
    FOLDERS.append(tmp_path)
    return tmp_path


def _as(info: SandboxInfo, user: str) -> list[str]:
    return ["--bootstrap-server", info.bootstrap_servers, "--command-config",
            info.client_configs[user]]  # fmt: skip


def _throttles(info: SandboxInfo, topic: str) -> dict[str, str]:
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        ConfigResource,
        ConfigSource,
        ResourceType,
    )

    admin = AdminClient(
        {"bootstrap.servers": info.bootstrap_servers, **sandbox.client_config(info.name)}
    )
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    return {
        k: e.value
        for k, e in entries.items()
        if "throttled.replicas" in k and e.source != ConfigSource.DEFAULT_CONFIG.value and e.value
    }


def _replicas(info: SandboxInfo, topic: str) -> dict[int, list[int]]:
    config = load_properties(info.client_configs["admin"])
    with open_source(bootstrap_server=info.bootstrap_servers, client_config=config) as source:
        partitions = source.snapshot([topic]).topics[0].partitions
    return {p.partition: list(p.replicas) for p in partitions}


@pytest.mark.parametrize("mode", per_mode("secured"))
def test_admin_plans_applies_verifies_and_cancels(
    request: pytest.FixtureRequest, tmp_path: Path, mode: str
) -> None:
    info = _secured(request, mode)
    work = _work(tmp_path)
    topic = f"sec-apply-{mode}"
    create_topics(
        info.bootstrap_servers,
        [TopicSpec(topic, assignment={0: [1], 1: [2], 2: [3]})],
        client_config=sandbox.client_config(info.name),
    )
    snap = kreplica("snapshot", *_as(info, "admin"), "--out", "snap.json", cwd=work)
    assert snap.returncode == 0, snap.stderr
    assert json.loads((work / "snap.json").read_text())["cluster_id"] == info.cluster_id
    plan = kreplica(
        "expand", "--topic", topic, "--rf", "2", *_as(info, "admin"), "--dry-run",
        "--out", "plan.json", cwd=work,
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    # A named cluster whose command_config is the admin file
    (work / "clusters.toml").write_text(
        f'[clusters.secured]\nbootstrap_server = "{info.bootstrap_servers}"\n'
        f'command_config = "{info.client_configs["admin"]}"\n'
    )
    named = {"KREPLICA_CONFIG": str(work / "clusters.toml")}
    applied = kreplica(
        "apply", "plan.json", "--cluster", "secured", "--throttle", "10MB/s", "--debug",
        cwd=work, env=named,
    )  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    planned = json.loads((work / "plan.json").read_text())["partitions"]
    assert _replicas(info, topic) == {p["partition"]: p["replicas"] for p in planned}
    assert _throttles(info, topic) == {}  # restored after the apply
    verified = kreplica("verify", "plan.json", *_as(info, "readonly"), cwd=work)
    assert verified.returncode == 0, verified.stderr
    cancel = kreplica("cancel", "plan.json", "--cluster", "secured", cwd=work, env=named)
    assert cancel.returncode == 0, cancel.stderr
    assert "nothing of this plan was in flight" in cancel.stdout
    listed = kreplica("throttles", "--clear", *_as(info, "admin"), "--output", "json", cwd=work)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["data"]["throttles"] == []


@pytest.mark.parametrize("mode", per_mode("secured"))
def test_readonly_reads_and_every_write_is_refused_before_anything_changes(
    request: pytest.FixtureRequest, tmp_path: Path, mode: str
) -> None:
    info = _secured(request, mode)
    work = _work(tmp_path)
    topic = f"sec-readonly-{mode}"
    admin_settings = sandbox.client_config(info.name)
    create_topics(
        info.bootstrap_servers,
        [TopicSpec(topic, assignment={0: [1, 2], 1: [2, 3]})],
        client_config=admin_settings,
    )
    ro = _as(info, "readonly")
    for args in (
        ["snapshot", *ro, "--out", "snap.json"],
        ["expand", "--topic", topic, "--rf", "3", *ro, "--dry-run", "--out", "plan.json"],
        ["check", "plan.json", *ro, "--output", "json"],
        ["throttles", *ro],
    ):
        done = kreplica(*args, cwd=work)
        assert done.returncode == 0, (args, done.stderr)
    before = _replicas(info, topic)
    # a throttle set by someone else, for throttles --clear --all to (not) remove
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": info.bootstrap_servers, **admin_settings})
    entry = ConfigEntry(
        "leader.replication.throttled.replicas",
        "0:1",
        incremental_operation=AlterConfigOpType.SET,
    )
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)

    refusals = {
        "apply": ["apply", "plan.json", *ro, "--throttle", "10MB/s"],
        "expand --yes": ["expand", "--topic", topic, "--rf", "3", *ro, "--yes"],
        "cancel": ["cancel", "plan.json", *ro],
        "elect": ["elect", "--topic", topic, *ro],
        "throttles --clear --all": ["throttles", "--clear", "--all", *ro],
        "apply --debug --output json": ["apply", "plan.json", *ro, "--debug", "--output", "json"],
    }
    for what, args in refusals.items():
        done = kreplica(*args, cwd=work)
        assert done.returncode == 3, (what, done.stdout, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(lines) == 1, (what, done.stderr)
        line = lines[0]
        assert "User:readonly may not" in line, (what, line)
        assert "AUTHORIZATION_FAILED" in line and "kafka-acls --add" in line, (what, line)
        assert "nothing was changed" in line, (what, line)
        if "--debug" not in args:
            assert done.stderr.strip() == line, (what, done.stderr)
    assert _replicas(info, topic) == before
    assert _throttles(info, topic) == {"leader.replication.throttled.replicas": "0:1"}
    assert not (work / "plan.journal.jsonl").exists()  # not even the journal was started

    # readonly granted what a throttled apply needs, not what the --pace auto canary needs:
    # refused before anything is written, naming the canary's topic
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
    )

    def acl(kind: Any, name: str, operation: Any, cls: Any = AclBinding) -> Any:
        return cls(kind, name, ResourcePatternType.LITERAL, "User:readonly", "*", operation,
                   AclPermissionType.ALLOW)  # fmt: skip

    grants = [
        acl(ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER),
        acl(ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER_CONFIGS),
        acl(ResourceType.TOPIC, topic, AclOperation.ALTER_CONFIGS),
    ]
    for future in admin.create_acls(grants).values():
        future.result(timeout=30)
    try:
        paced = ["apply", "plan.json", *ro, "--pace", "auto", "--throttle-min", "1MB/s",
                 "--throttle-max", "2MB/s"]  # fmt: skip
        done = kreplica(*paced, cwd=work)
        assert done.returncode == 3, done.stderr
        line = done.stderr.strip()
        assert len(line.splitlines()) == 1 and "User:readonly may not Create" in line, line
        assert "kreplica-canary" in line and "--operation Create --cluster" in line, line
        assert _replicas(info, topic) == before
        assert not (work / "plan.journal.jsonl").exists()
        assert "kreplica-canary" not in admin.list_topics(timeout=30).topics
    finally:
        filters = [acl(b.restype, b.name, b.operation, AclBindingFilter) for b in grants]
        for future in admin.delete_acls(filters).values():
            future.result(timeout=30)


@pytest.mark.parametrize("mode", per_mode("secured"))
def test_connection_failures_are_one_clear_line_within_the_timeout(
    request: pytest.FixtureRequest, tmp_path: Path, mode: str
) -> None:
    info = _secured(request, mode)
    work = _work(tmp_path)
    admin_file = Path(info.client_configs["admin"])
    props = admin_file.read_text()
    wrong = work / "wrong-password.properties"
    wrong.write_text(
        "".join(
            "sasl.password=not-the-password\n" if line.startswith("sasl.password=") else line
            for line in props.splitlines(keepends=True)
        )
    )
    untrusted = work / "untrusted.properties"
    INPUTS.update({wrong, untrusted})
    untrusted.write_text(
        "".join(line for line in props.splitlines(keepends=True) if "ssl.ca.location" not in line)
    )
    first_port = info.bootstrap_servers.split(",")[0].rsplit(":", 1)[1]
    cases = {
        "wrong password": (
            ["--bootstrap-server", info.bootstrap_servers, "--command-config", str(wrong)],
            "authentication failed",
        ),
        "untrusted certificate": (
            ["--bootstrap-server", info.bootstrap_servers, "--command-config", str(untrusted)],
            "certificate is not trusted",
        ),
        "hostname mismatch": (
            ["--bootstrap-server", f"localhost:{first_port}", "--command-config", str(admin_file)],
            "hostname mismatch",
        ),
    }
    for what, (target, expected) in cases.items():
        # Refused at once, not after the timeout: waiting 300 s would hit the 90 s run limit.
        done = kreplica("snapshot", *target, "--timeout", "300", cwd=work, timeout=90)
        assert done.returncode == 3, (what, done.stderr)
        assert done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), (what, done.stderr)
        assert expected in lines[0].lower(), (what, lines[0])
        debug = kreplica("snapshot", *target, "--timeout", "10", "--debug", cwd=work, timeout=60)
        assert debug.returncode == 3


def test_sandbox_status_gives_client_configs_as_data(zk_secured: SandboxInfo) -> None:
    done = kreplica("sandbox", "status", "--name", zk_secured.name, "--output", "json", cwd=ROOT)
    data = json.loads(done.stdout)["data"]
    assert data["security"] == "sasl_ssl"
    assert set(data["client_configs"]) == {"admin", "readonly"}
    for path in data["client_configs"].values():
        assert Path(path).is_file() and Path(path).parent.parent == Path(zk_secured.state_dir)
        assert os.stat(path).st_mode & 0o077 == 0  # readable by its owner only
    table = kreplica("sandbox", "status", "--name", zk_secured.name, cwd=ROOT)
    assert "readonly.properties" in table.stdout


# on the secured clusters' worker, after the tests above (they are one xdist group)
@uses("zk_secured", "kraft_secured")
def test_no_secret_in_any_output_file_or_log() -> None:
    """Runs last: every stream the tests above captured, every file in their work folders, and
    the sandboxes' logs hold none of the sandboxes' passwords."""
    if not PRODUCED:
        pytest.skip("no secured-cluster command ran in this session")
    names = {Path(folder).name for folder in FOLDERS if (Path(folder) / "state.json").exists()}
    secrets = {s for name in names for s in sandbox.secrets(name)}
    assert secrets, "the secured sandboxes have secrets to look for"
    texts = list(PRODUCED)
    for folder in FOLDERS:
        is_sandbox = (folder / "state.json").exists()
        for path in folder.rglob("*"):
            if not path.is_file():
                continue
            if is_sandbox and (path.suffix != ".log"):
                continue  # the sandbox's own config and key files hold the secrets by design
            if path in INPUTS:
                continue
            texts.append((str(path), path.read_text(errors="replace")))
    checked = sum(1 for _, text in texts if text)
    leaks = [(where, s[:6] + "...") for where, text in texts for s in secrets if s in text]
    assert not leaks, leaks
    assert checked > 20
