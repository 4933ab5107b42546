"""A run's input names its stores and notifiers; the worker writes and sends only where its
operator allowed (core/side_effects.py): issue 29's rows 5 (file-system roots), 6 (S3 buckets),
7 (webhooks, and their secret by reference) and 8 (payload claims), each refused with nothing
written, fetched or sent, the run failing within seconds with the value and the setting named;
and the same kinds of store and notifier still working where allowed.

The session's worker runs in this process; each test sets the limits it needs with
``worker_environment`` (the session allows the temporary directory and ``TOOL_RESULTS_BUCKET``).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
import logging
import time
import uuid
from pathlib import Path

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.aws.s3driver import S3StorageDriver
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import ExternalStorage, StorageDriverClaim

from agent import Agent, ChatMessage
from agent.dev.ports import free_port
from agent.run_problems import health_lines
from core.converter import Boto3StorageDriverClient
from core.payloads import AgentRunInput, AgentRunResult
from core.s3 import s3_client
from core.wire import WORKFLOW_TYPE
from hooks.audit import AuditHook, FileSystemAuditStore, S3AuditStore
from hooks.human_in_the_loop import AlwaysAskPolicy, ConfirmationHook, DurableConfirmationStrategy, WebhookNotifier
from hooks.tool_result_offloading import (
    FileSystemToolResultStore,
    OffloadOverChars,
    S3ToolResultStore,
    ToolResultOffloadHook,
)
from tests import tools as t
from tests.support.hitl_helpers import call, calls, hitl_agent, start, wait_pending
from tests.support.polling import eventually
from tests.support.side_effects import WEBHOOK_SECRET_ENV, worker_environment
from tests.support.webhook_receiver import TEST_SECRET, WebhookReceiver

#: A refused run must fail at its first workflow task, not after retries.
FAILS_WITHIN_SECONDS = 10


def offloading(model: str, store) -> Agent:
    return Agent(
        model=model,
        tools=[t.big_text],
        hooks={"after_tool": [ToolResultOffloadHook(store, {"*": OffloadOverChars(10)})]},
    )


def auditing(model: str, store) -> Agent:
    audit = AuditHook(store)
    return Agent(model=model, tools=[t.add], hooks={"before_tool": [audit], "after_tool": [audit]})


def script_big_text(scripted, model: str) -> None:
    scripted.script(model, [calls(call("big_text", id="c1", size=500)), {"text": "done"}])


async def refused(handle) -> str:
    """The run's failure message, which must come within :data:`FAILS_WITHIN_SECONDS`."""
    started = time.monotonic()
    with pytest.raises(WorkflowFailureError) as caught:
        await asyncio.wait_for(handle.result(), timeout=FAILS_WITHIN_SECONDS)
    assert time.monotonic() - started < FAILS_WITHIN_SECONDS
    return str(caught.value.cause)


def tree(path: Path) -> list[Path]:
    return sorted(path.rglob("*")) if path.exists() else []


# -- row 5: file-system roots ------------------------------------------------------------------


@pytest.fixture
def roots(tmp_path: Path):
    """An allowed root and, beside it, a directory a run must not reach."""
    allowed, elsewhere = tmp_path / "allowed", tmp_path / "elsewhere"
    allowed.mkdir()
    with worker_environment(AGENT_FILE_ROOTS=str(allowed)):
        yield allowed, elsewhere


@pytest.mark.parametrize("kind", ["offload store", "audit store"])
async def test_a_file_store_outside_the_roots_fails_the_run_and_writes_nothing(
    client, worker, scripted, model, run_id, roots, kind
):
    allowed, elsewhere = roots
    target = elsewhere / "planted"
    if kind == "offload store":
        script_big_text(scripted, model)
        agent = offloading(model, FileSystemToolResultStore(target))
    else:
        scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
        agent = auditing(model, FileSystemAuditStore(target))
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    message = await refused(handle)
    assert str(target) in message and "AGENT_FILE_ROOTS" in message
    assert not elsewhere.exists() and tree(allowed) == []


async def test_a_hook_context_store_outside_the_roots_fails_the_run_before_any_step(
    client, worker, scripted, model, run_id, roots
):
    allowed, elsewhere = roots
    script_big_text(scripted, model)
    agent = offloading(model, FileSystemToolResultStore(allowed))
    planted = FileSystemToolResultStore(elsewhere / "from-context").to_dict()
    handle = await agent.start(
        client,
        [ChatMessage.from_user("go")],
        run_id=run_id,
        task_queue=worker,
        hook_context={"tool_result_store": planted},
    )
    message = await refused(handle)
    assert "warm_up" in message and str(elsewhere / "from-context") in message and "AGENT_FILE_ROOTS" in message
    assert not elsewhere.exists() and tree(allowed) == []
    assert scripted.requests(model) == []  # refused before the first model call


async def test_a_client_chosen_run_id_and_a_symlink_cannot_leave_the_root(client, worker, scripted, model, roots):
    allowed, elsewhere = roots
    elsewhere.mkdir()
    (allowed / "link").symlink_to(elsewhere, target_is_directory=True)
    # a run id that tries to climb: encoded into one directory name under the root
    climbing = f"../../escape-{uuid.uuid4().hex[:6]}"
    scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
    handle = await auditing(model, FileSystemAuditStore(allowed)).start(
        client, [ChatMessage.from_user("go")], run_id=climbing, task_queue=worker
    )
    await handle.result()
    written = [p for p in tree(allowed) if p.is_file()]
    assert written and all(p.resolve().is_relative_to(allowed) for p in written)
    assert tree(elsewhere) == [] and not (allowed.parent.parent / climbing.removeprefix("../../")).exists()

    # a root that is a symlink out of the allowed directory: allowed by name, refused where it writes
    scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
    handle = await auditing(model, FileSystemAuditStore(allowed / "link")).start(
        client, [ChatMessage.from_user("go")], run_id=f"run-{uuid.uuid4().hex[:8]}", task_queue=worker
    )
    message = await refused(handle)
    assert f"'{allowed / 'link'}' (which leads to '{elsewhere}')" in message and "AGENT_FILE_ROOTS" in message
    assert tree(elsewhere) == []


# -- row 6: S3 buckets -------------------------------------------------------------------------


def keys(bucket: str, prefix: str) -> list[str]:
    listed = s3_client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return [item["Key"] for item in listed.get("Contents", [])]


@pytest.mark.parametrize("kind", ["offload store", "audit store"])
async def test_a_store_in_an_unlisted_bucket_fails_the_run_and_writes_nothing(
    client, worker, scripted, model, run_id, stack, kind
):
    bucket, prefix = stack.payloads_bucket, f"planted-{uuid.uuid4().hex[:6]}"
    if kind == "offload store":
        script_big_text(scripted, model)
        agent = offloading(model, S3ToolResultStore(bucket, prefix=prefix))
    else:
        scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
        agent = auditing(model, S3AuditStore(bucket, prefix=prefix))
    handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=worker)
    message = await refused(handle)
    assert f"bucket '{bucket}'" in message and "AGENT_S3_BUCKETS" in message
    assert await asyncio.to_thread(keys, bucket, prefix) == []


# -- legitimate runs: each kind of store where allowed --------------------------------------------


async def test_stores_write_where_the_operator_allowed(client, worker, scripted, model, run_id, roots, stack):
    allowed, _ = roots
    audit_bucket = f"audit-{uuid.uuid4().hex[:8]}"
    await asyncio.to_thread(s3_client().create_bucket, Bucket=audit_bucket)
    offload = ToolResultOffloadHook(FileSystemToolResultStore(allowed / "results"), {"*": OffloadOverChars(10)})
    s3_offload = ToolResultOffloadHook(S3ToolResultStore(stack.tool_results_bucket), {"*": OffloadOverChars(10)})
    audits = [AuditHook(FileSystemAuditStore(allowed / "audit")), AuditHook(S3AuditStore(audit_bucket))]
    scripted.script(model, [calls(call("big_text", id="c1", size=500)), {"text": "done"}])
    for index, hook in enumerate((offload, s3_offload)):
        agent = Agent(model=model, tools=[t.big_text], hooks={"before_tool": audits, "after_tool": [*audits, hook]})
        with worker_environment(AGENT_FILE_ROOTS=str(allowed), AGENT_S3_BUCKETS=audit_bucket):
            if index:
                scripted.script(model, [calls(call("big_text", id="c1", size=500)), {"text": "done"}])
            result = await agent.start(
                client, [ChatMessage.from_user("go")], run_id=f"{run_id}-{index}", task_queue=worker
            )
            assert (await result.result()).last_message.text == "done"
    assert [p.name for p in tree(allowed / "results") if p.is_file()] == ["c1.txt"]
    assert len([p for p in tree(allowed / "audit") if p.is_file()]) == 2
    assert len(await asyncio.to_thread(keys, audit_bucket, "audit/")) == 2
    assert await asyncio.to_thread(keys, stack.tool_results_bucket, f"tool-results/{run_id}-1/")


# -- row 7: webhooks and their secret ------------------------------------------------------------


def notifying(model: str, url: str, **notifier) -> Agent:
    notifier.setdefault("secret_env", WEBHOOK_SECRET_ENV)
    strategy = DurableConfirmationStrategy(AlwaysAskPolicy(), notifier=WebhookNotifier(url, **notifier))
    return hitl_agent(model, ConfirmationHook({"*": strategy}))


@pytest.fixture
def receiver():
    server = WebhookReceiver()
    yield server
    server.close()


async def test_a_webhook_outside_the_allowed_urls_fails_the_run_and_nothing_is_sent(
    client, worker, scripted, model, run_id, receiver
):
    # the allowed prefix is a string prefix of the URL asked for, on another host: not a match
    host_port = receiver.url.split("//", 1)[1].split("/", 1)[0]
    asked = receiver.url.replace(host_port, f"localhost:{host_port.rsplit(':', 1)[1]}")
    with worker_environment(AGENT_WEBHOOK_URLS="http://localhost", **{WEBHOOK_SECRET_ENV: TEST_SECRET}):
        scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
        handle = await start(notifying(model, asked), client, worker, run_id)
        message = await refused(handle)
    assert f"URL '{asked}'" in message and "AGENT_WEBHOOK_URLS" in message
    assert receiver.attempts == 0


def test_a_literal_secret_cannot_travel_in_a_run():
    notifier = WebhookNotifier("https://hooks.example.com/agent", TEST_SECRET)
    with pytest.raises(ValueError, match=r"secret_env='NAME'"):
        notifying("m", "https://hooks.example.com/agent", secret=TEST_SECRET, secret_env=None)
    assert "whsec" not in repr(notifier)


async def test_a_hand_written_input_with_a_literal_secret_fails_the_run(client, worker, scripted, model, run_id):
    url = "https://hooks.example.com/agent"
    spec = json.dumps(notifying(model, url).to_dict())
    literal = json.loads(spec.replace(f'"secret_env": "{WEBHOOK_SECRET_ENV}"', f'"secret": "{TEST_SECRET}"'))
    assert literal != json.loads(spec)
    with worker_environment(AGENT_WEBHOOK_URLS=url):
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            AgentRunInput(agent=literal, messages=[ChatMessage.from_user("go")]),
            id=run_id,
            task_queue=worker,
            result_type=AgentRunResult,
        )
        message = await refused(handle)
    assert "carries a literal secret" in message and "secret_env='NAME'" in message
    assert scripted.requests(model) == []


def strings_in(value) -> list[str]:
    """Every string in a JSON tree, with each base64 string also decoded (payload data)."""
    if isinstance(value, dict):
        return [s for item in value.values() for s in strings_in(item)]
    if isinstance(value, list):
        return [s for item in value for s in strings_in(item)]
    if not isinstance(value, str):
        return []
    found = [value]
    try:
        found.append(base64.b64decode(value, validate=True).decode("utf-8", "replace"))
    except ValueError:
        pass
    return found


async def test_the_signing_secret_is_read_on_the_worker_and_is_nowhere_in_the_history(
    client, worker, scripted, model, run_id, receiver
):
    secret_part = TEST_SECRET.removeprefix("whsec_")
    with worker_environment(AGENT_WEBHOOK_URLS=receiver.url, **{WEBHOOK_SECRET_ENV: TEST_SECRET}):
        scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
        handle = await start(notifying(model, receiver.url), client, worker, run_id)
        (pending,) = await wait_pending(handle)
        await eventually(lambda: receiver.events("approval_requested"), message="no approval_requested")
        await handle.confirm(pending.tool_call_id, approver="ann")
        await handle.result()
    assert [e["type"] for e in receiver.events()] == ["approval_requested", "approval_decided"]  # signed, verified
    assert not receiver.refused
    history = json.loads((await handle.workflow.fetch_history()).to_json())
    everything = strings_in(history)
    assert any(WEBHOOK_SECRET_ENV in s for s in everything)  # the reference is there ...
    assert not any(TEST_SECRET in s or secret_part in s for s in everything)  # ... the secret is not
    description = await handle.workflow.describe()
    assert not any(secret_part in str(value) for value in (await description.memo()).values())


async def test_a_missing_secret_variable_is_a_clear_error_and_nothing_is_sent(
    client, worker, scripted, model, run_id, receiver
):
    with worker_environment(AGENT_WEBHOOK_URLS=receiver.url, **{WEBHOOK_SECRET_ENV: None}):
        scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
        handle = await start(notifying(model, receiver.url), client, worker, run_id)
        await wait_pending(handle)

        async def failure() -> str | None:
            for event in (await handle.workflow.fetch_history()).events:
                if event.HasField("activity_task_failed_event_attributes"):
                    return event.activity_task_failed_event_attributes.failure.message
            return None

        message = await eventually(failure, timeout=FAILS_WITHIN_SECONDS, message="the notification did not fail")
        await handle.workflow.terminate("test over")
    assert WEBHOOK_SECRET_ENV in message and "not set on this worker" in message
    assert receiver.attempts == 0


@pytest.mark.slow  # the finished run waits its 10 s grace for the undeliverable event
async def test_an_unreachable_webhook_reads_well_and_does_not_hold_the_finished_run(
    client, worker, scripted, model, run_id, caplog
):
    closed = f"http://127.0.0.1:{_closed_port()}/hooks"
    with worker_environment(AGENT_WEBHOOK_URLS=closed, **{WEBHOOK_SECRET_ENV: TEST_SECRET}):
        scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
        handle = await start(notifying(model, closed), client, worker, run_id)
        (pending,) = await wait_pending(handle)

        async def status_line():  # what `agent status` prints about it
            lines = health_lines(run_id, await handle.health())
            return next((line for line in lines if "deliver_approval_event is being retried" in line), None)

        message = await eventually(status_line, timeout=20, message="the notification was not retried")
        approved = time.monotonic()
        await handle.confirm(pending.tool_call_id, approver="ann")
        result = await asyncio.wait_for(handle.result(), timeout=30)
        held = time.monotonic() - approved
    assert "All connection attempts failed" in message and closed in message
    assert "exceeds size limit" not in message
    assert result.last_message.text == "3" and held < 15, f"the finished run waited {held:.1f} s for its notification"
    lines = [r for r in caplog.records if "not delivered to" in r.getMessage()]
    assert lines and all(r.exc_info is None and "\n" not in r.getMessage() for r in lines)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and r.exc_info] == []
    print(f"unreachable webhook: {message}; the run ended {held:.1f} s after the approval")


def _closed_port() -> int:
    return free_port()  # free now, and nothing listens on it


# -- row 8: payload claims -----------------------------------------------------------------------


class ForgingDriver(S3StorageDriver):
    """A client's driver that stores nothing and hands the server a hand-written claim instead."""

    def __init__(self, claim: dict[str, str]) -> None:
        super().__init__(client=Boto3StorageDriverClient(), bucket="unused")
        self.claim = claim

    async def store(self, context, payloads):
        return [StorageDriverClaim(claim_data=dict(self.claim)) for _ in payloads]


async def start_with_claim(stack, worker: str, run_id: str, claim: dict[str, str]):
    """Start ``AgentWorkflow`` from a client whose only payload is a reference with ``claim``."""
    storage = ExternalStorage(drivers=[ForgingDriver(claim)], payload_size_threshold=1)
    forger = await Client.connect(
        stack.temporal.address,
        namespace=stack.temporal.namespace,
        data_converter=dataclasses.replace(pydantic_data_converter, external_storage=storage),
    )
    return await forger.start_workflow(WORKFLOW_TYPE, {"agent": {}}, id=run_id, task_queue=worker)


async def workflow_task_failure(client, run_id: str) -> str:
    """The first failed workflow task's failure, all of it (messages, causes, stack traces)."""

    async def failed() -> str | None:
        async for event in client.get_workflow_handle(run_id).fetch_history_events():
            if event.HasField("workflow_task_failed_event_attributes"):
                return str(event.workflow_task_failed_event_attributes.failure)
        return None

    return await eventually(failed, timeout=FAILS_WITHIN_SECONDS, message="no workflow task failed")


def stored_payload(text: str) -> bytes:
    return Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(text).encode()).SerializeToString()


async def test_a_claim_on_another_bucket_is_refused_and_never_fetched(client, worker, stack, run_id):
    other = f"other-tenant-{uuid.uuid4().hex[:6]}"
    content = stored_payload("another tenant's data")
    digest = hashlib.sha256(content).hexdigest()
    key = f"v0/ns/{stack.temporal.namespace}/d/sha256/{digest}"
    await asyncio.to_thread(s3_client().create_bucket, Bucket=other)
    await asyncio.to_thread(s3_client().put_object, Bucket=other, Key=key, Body=content)
    claim = {"bucket": other, "key": key, "hash_algorithm": "sha256", "hash_value": digest}
    await start_with_claim(stack, worker, run_id, claim)
    try:
        failure = await workflow_task_failure(client, run_id)
    finally:
        await client.get_workflow_handle(run_id).terminate("test over")
    assert f"s3://{other}/{key}" in failure and "payloads bucket" in failure and "refused" in failure
    assert f"GET /{other}/" not in stack.s3.log_file.read_text()  # the worker never asked S3 for it


async def test_a_claim_outside_the_namespace_or_not_a_payload_key_is_refused(client, worker, stack, run_id):
    bucket = stack.payloads_bucket
    digest = hashlib.sha256(b"x").hexdigest()
    claim = {
        "bucket": bucket,
        "key": f"conversations/{run_id}/segment-1",
        "hash_algorithm": "sha256",
        "hash_value": digest,
    }
    await start_with_claim(stack, worker, run_id, claim)
    try:
        failure = await workflow_task_failure(client, run_id)
    finally:
        await client.get_workflow_handle(run_id).terminate("test over")
    assert f"v0/ns/{stack.temporal.namespace}/" in failure and "TEMPORAL_NAMESPACE" in failure
    assert f"GET /{bucket}/conversations/{run_id}/" not in stack.s3.log_file.read_text()


async def test_a_hash_mismatch_does_not_tell_the_real_hash(client, worker, stack, run_id):
    content = stored_payload("what the object really holds")
    real = hashlib.sha256(content).hexdigest()
    claimed = hashlib.sha256(b"something else").hexdigest()
    key = f"v0/ns/{stack.temporal.namespace}/d/sha256/{claimed}"
    await asyncio.to_thread(s3_client().put_object, Bucket=stack.payloads_bucket, Key=key, Body=content)
    claim = {"bucket": stack.payloads_bucket, "key": key, "hash_algorithm": "sha256", "hash_value": claimed}
    await start_with_claim(stack, worker, run_id, claim)
    try:
        failure = await workflow_task_failure(client, run_id)
    finally:
        await client.get_workflow_handle(run_id).terminate("test over")
    assert "does not match the content hash" in failure
    assert real not in failure
