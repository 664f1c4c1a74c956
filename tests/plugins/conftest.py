"""Fixtures for the plugin manager's tests: fake installed distributions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from plurm.plugins.manager import reset_plugin_manager

DATA = Path(__file__).parent / "data"


@pytest.fixture
def fake_dists(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put data/dists (good, broken and blocked entry points) on sys.path."""
    monkeypatch.syspath_prepend(str(DATA / "dists"))
    return DATA / "dists"


@pytest.fixture
def dup_dist(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(DATA / "dup"))
    return DATA / "dup"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in ("PLURM_DISABLE_PLUGIN_AUTOLOAD", "PLURM_BLOCKED_PLUGINS", "PLURM_TRACE_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    reset_plugin_manager()
    yield
    reset_plugin_manager()
