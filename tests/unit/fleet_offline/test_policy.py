"""The fleet policy file (TOML): rules by topic regex, per-cluster drain and exemptions."""

from __future__ import annotations

from pathlib import Path

import pytest

from kreplica.errors import InputError, UsageError
from kreplica.fleet.policy import Policy, load_policy, policy_from_dict, with_overrides

GOOD = """
[[rule]]
topics = "__.*"
rf = 3

[[rule]]
topics = ".*"
rf = 3
min_insync = 2
racks = 3
max_partitions_per_broker = 4000

[clusters.prod-eu]
drain = [6]
exempt = ["audit-.*"]
"""


def test_first_matching_rule_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(GOOD)
    policy = load_policy(path)
    assert policy.target("__consumer_offsets").min_insync is None
    assert policy.target("orders").racks == 3
    assert policy.cluster("prod-eu").drain == frozenset({6})
    assert policy.cluster("prod-eu").is_exempt("audit-log")
    assert not policy.cluster("other").is_exempt("audit-log")
    over = with_overrides(policy, rf=4, min_insync=None)
    assert over.target("__consumer_offsets").rf == 4
    assert over.target("orders").min_insync == 2
    assert policy_from_dict(over.to_dict()) == over


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[rule]]\ntopics = '('\nrf = 3\n", "rule[0].topics is not a valid regex"),
        ("[[rule]]\ntopics = '.*'\nrf = 0\n", "rule[0].rf must be a whole number >= 1"),
        ("[[rule]]\nrf = 3\n", "rule[0].topics is missing"),
        ("[[rule]]\ntopics = '.*'\nreplicas = 3\n", "rule[0].replicas is not a rule key"),
        ("[[rule]]\ntopics = '.*'\nrf = 2\nmin_insync = 3\n", "asks min_insync 3 above rf 2"),
        ("[clusters.a]\ndrain = ['x']\n", "clusters.a.drain must be a list of broker ids"),
        ("rf = 3\n", "'rf' is not a policy key"),
        ("[[rule]\n", "is not valid TOML"),
    ],
)
def test_bad_policy_is_one_line_input_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_policy(path)
    assert message in err.value.message
    assert "\n" not in err.value.message


def test_yaml_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("rule: []\n")
    with pytest.raises(InputError, match="write it as TOML"):
        load_policy(path)


def test_missing_policy_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not found"):
        load_policy(tmp_path / "nope.toml")


def test_empty_policy() -> None:
    assert Policy().empty
    assert not Policy(rf=3).empty


def test_the_docs_policy_file_ships_and_loads() -> None:
    """docs/fleet.md shows examples/policy.toml verbatim, and it loads."""
    repo = Path(__file__).resolve().parents[3]
    shipped = (repo / "examples" / "policy.toml").read_text()
    assert f"```toml\n{shipped}```" in (repo / "docs" / "fleet.md").read_text()
    policy = load_policy(str(repo / "examples" / "policy.toml"))
    assert policy.target("orders").racks == 3
    assert policy.cluster("synth-0003", None).drain == {4}
