"""Which Worker Deployment Version a worker is (runtime/deployment.py): both a name and a build id,
or neither; one without the other is a clear error at start, from any of the three ways to give them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion

from core.settings import ConfigurationError
from core.spec import AgentSpec
from runtime.deployment import deployment_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def no_deployment_env(monkeypatch):
    monkeypatch.delenv("AGENT_DEPLOYMENT_NAME", raising=False)
    monkeypatch.delenv("AGENT_BUILD_ID", raising=False)


def test_neither_is_an_unversioned_worker():
    assert deployment_config() is None


def test_both_make_a_pinned_version_from_arguments_or_settings(monkeypatch):
    config = deployment_config("agent", "v1")
    assert config.version == WorkerDeploymentVersion("agent", "v1")
    assert config.use_worker_versioning
    assert config.default_versioning_behavior == VersioningBehavior.PINNED
    monkeypatch.setenv("AGENT_DEPLOYMENT_NAME", "billing")
    monkeypatch.setenv("AGENT_BUILD_ID", "2026-12-04.1")
    assert deployment_config().version == WorkerDeploymentVersion("billing", "2026-12-04.1")
    assert deployment_config(build_id="v9").version == WorkerDeploymentVersion("billing", "v9")  # argument wins


@pytest.mark.parametrize(
    ("name", "build", "env", "message"),
    [
        ("agent", None, {}, "a deployment name was given without a build id"),
        (None, "v1", {}, "a build id was given without a deployment name"),
        (None, None, {"AGENT_BUILD_ID": "v1"}, "a build id was given without a deployment name"),
        ("a.b", "v1", {}, "has a '.'"),
        ("agent", " ", {}, "without a build id"),
    ],
)
def test_one_without_the_other_is_refused_naming_both(monkeypatch, name, build, env, message):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigurationError, match=message) as refused:
        deployment_config(name, build)
    if "'.'" not in message:
        assert "--deployment-name, AGENT_DEPLOYMENT_NAME" in str(refused.value)


def test_worker_py_refuses_a_name_without_a_build_id_before_it_connects():
    done = subprocess.run(
        [sys.executable, "worker.py", "--deployment-name", "agent"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "TEMPORAL_ADDRESS": "127.0.0.1:9"},  # nothing listens there
    )
    assert done.returncode == 1
    assert "worker: Worker versioning needs both" in done.stderr
    assert "Traceback" not in done.stderr


def test_upgrade_at_turn_boundary_round_trips_and_stays_out_of_specs_without_it():
    spec = AgentSpec(model="m", upgrade_at_turn_boundary=True)
    assert AgentSpec.from_dict(spec.to_dict()).upgrade_at_turn_boundary is True
    assert "upgrade_at_turn_boundary" not in AgentSpec(model="m").to_dict()
    with pytest.raises(TypeError, match="upgrade_at_turn_boundary must be True or False"):
        AgentSpec(model="m", upgrade_at_turn_boundary="yes")
