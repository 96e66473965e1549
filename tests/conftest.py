from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
VECTORS = SHARED / "reference" / "vectors"

# CI must not fail on a lucky draw: there the examples are derived from each test's name, so a
# run is repeatable; locally every run explores new examples.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def _no_user_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty config folder: the user's ~/.config/kreplica/clusters.toml never reaches a test."""
    return tmp_path_factory.mktemp("xdg-config")


@pytest.fixture(autouse=True)
def _deterministic_terminal(monkeypatch: pytest.MonkeyPatch, _no_user_config: Path) -> None:
    """Rendered output must not depend on the terminal the tests run in, the locale or the
    user's configuration."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(_no_user_config))
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("TERM", "dumb")
    for key in list(os.environ):
        if key.startswith("KREPLICA_") and key != "KREPLICA_CACHE":
            monkeypatch.delenv(key, raising=False)
