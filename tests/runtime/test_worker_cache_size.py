"""The worker's workflow cache size, which bounds a worker's memory: a default sized for many parked
runs, an environment override, and a clear error for a bad value."""

from __future__ import annotations

import pytest

from runtime.worker import DEFAULT_MAX_CACHED_WORKFLOWS, MAX_CACHED_WORKFLOWS_ENV, max_cached_workflows


def test_default_and_override(monkeypatch):
    monkeypatch.delenv(MAX_CACHED_WORKFLOWS_ENV, raising=False)
    assert max_cached_workflows() == DEFAULT_MAX_CACHED_WORKFLOWS == 500
    monkeypatch.setenv(MAX_CACHED_WORKFLOWS_ENV, " 2000 ")
    assert max_cached_workflows() == 2000
    monkeypatch.setenv(MAX_CACHED_WORKFLOWS_ENV, "0")
    assert max_cached_workflows() == 0


@pytest.mark.parametrize("bad", ["-1", "many", "1.5"])
def test_a_bad_value_is_refused_with_the_variable_named(monkeypatch, bad):
    monkeypatch.setenv(MAX_CACHED_WORKFLOWS_ENV, bad)
    with pytest.raises(ValueError, match=rf"AGENT_MAX_CACHED_WORKFLOWS='{bad}': .*; allowed: a whole number >= 0\."):
        max_cached_workflows()
