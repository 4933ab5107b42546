"""Tracing and metrics on the real dev server, so an operator can follow one run across processes.

One run with a confirmation, traced through ``AgentPlugin(tracing=True)`` into OpenTelemetry's
in-memory exporter, forms one trace: the workflow span above the run's span, hook points above
their hooks, the decision under the confirmation hook, model and tool call spans above the
interceptor's activity spans, with the ``agent.*`` attributes. Also with a worker that keeps no
workflow in cache, so every workflow task replays the run from the start: no span twice. Tracing
off makes no span and the same history; each history replays with tracing on and off. The
Prometheus endpoint serves Temporal's SDK metrics.
"""

from __future__ import annotations

import socket
import uuid
from collections import Counter

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider, create_tracer_provider
from temporalio.worker import Replayer

from agent import Agent, ChatMessage
from agent.dev.processes import start_worker
from hooks import FunctionHook
from runtime.plugin import AgentPlugin
from tests import tools as t
from tests.support.hitl_helpers import ask_all, call, calls, hitl_agent, start, wait_pending
from tests.tools import TEST_TOOLS
from worker import create_worker
from workflows.agent_workflow import AgentWorkflow

CONFIRMATION_HOOK = "hooks.human_in_the_loop.hooks.ConfirmationHook"


@pytest.fixture(scope="module")
def exporter() -> InMemorySpanExporter:
    """The process's replay-safe tracer provider (set once per process), exporting to memory."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, ReplaySafeTracerProvider):
        provider = create_tracer_provider()
        trace.set_tracer_provider(provider)
    assert isinstance(trace.get_tracer_provider(), ReplaySafeTracerProvider)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return memory


@pytest.fixture(scope="module")
async def traced_client(stack, scripted, exporter) -> Client:
    return await Client.connect(
        stack.temporal.address, namespace=stack.temporal.namespace, plugins=[AgentPlugin(tracing=True)]
    )


async def confirmed_run(client: Client, queue: str, scripted, model: str, run_id: str, **worker_options):
    """add(1, 2) asked for, confirmed by ann, then a text reply; returns the handle."""
    scripted.script(model, [calls(call("add", a=1, b=2)), {"text": "3"}])
    async with create_worker(client, tools=TEST_TOOLS, task_queue=queue, **worker_options):
        handle = await start(hitl_agent(model), client, queue, run_id)
        (pending,) = await wait_pending(handle)
        await handle.confirm(pending.tool_call_id, approver="ann")
        result = await handle.result()
    assert result.exit_reason == "text" and result.tool_call_counts["add"] == 1
    return handle


def run_spans(exporter: InMemorySpanExporter, run_id: str) -> list[ReadableSpan]:
    """Every exported span of the run's trace (found from its workflow span)."""
    spans = exporter.get_finished_spans()
    (workflow_span,) = [
        s for s in spans if s.name == "RunWorkflow:AgentWorkflow" and s.attributes.get("temporalWorkflowID") == run_id
    ]
    return [s for s in spans if s.context.trace_id == workflow_span.context.trace_id]


def one(spans: list[ReadableSpan], name: str, **attributes) -> ReadableSpan:
    found = [s for s in spans if s.name == name and all(s.attributes.get(k) == v for k, v in attributes.items())]
    assert len(found) == 1, (name, attributes, [(s.name, dict(s.attributes)) for s in spans])
    return found[0]


def parent(spans: list[ReadableSpan], span: ReadableSpan) -> ReadableSpan:
    (found,) = [s for s in spans if s.context.span_id == span.parent.span_id]
    return found


def child(spans: list[ReadableSpan], span: ReadableSpan, name: str) -> ReadableSpan:
    (found,) = [
        s for s in spans if s.parent is not None and s.parent.span_id == span.context.span_id and s.name == name
    ]
    return found


@pytest.mark.parametrize("cache", ["cached", "replays_every_task"])
async def test_a_confirmed_run_is_one_trace_in_the_expected_shape(
    traced_client, exporter, scripted, model, run_id, cache
):
    options = {"max_cached_workflows": 0} if cache == "replays_every_task" else {}
    await confirmed_run(traced_client, f"tracing-{uuid.uuid4().hex[:8]}", scripted, model, run_id, **options)
    spans = run_spans(exporter, run_id)

    # Replay-safe: with no cache every task replays the run, yet each span is exported once.
    assert len({s.context.span_id for s in spans}) == len(spans)
    # Every span of the run loop is in this one trace.
    tagged = [s for s in exporter.get_finished_spans() if s.attributes.get("agent.run_id") == run_id]
    assert tagged and all(s.context.trace_id == spans[0].context.trace_id for s in tagged)

    workflow_span = one(spans, "RunWorkflow:AgentWorkflow")
    run = one(spans, "invoke_agent", **{"agent.run_id": run_id})
    assert parent(spans, run) is workflow_span

    before_tool = one(spans, "hook_point before_tool", **{"agent.step": 0, "agent.hook_point": "before_tool"})
    assert parent(spans, before_tool) is run
    hook = one(spans, "hook ConfirmationHook", **{"agent.hook": CONFIRMATION_HOOK, "agent.run_id": run_id})
    assert parent(spans, hook) is before_tool
    decision = one(spans, "decision add")
    assert parent(spans, decision) is hook
    assert decision.attributes["agent.decision"] == "confirm"
    assert decision.attributes["agent.approver"] == "ann"
    assert decision.attributes["agent.tool"] == "add"
    assert decision.attributes["agent.decision_via"] == "update"
    assert decision.attributes["agent.run_id"] == run_id

    for step in (0, 1):
        chat = one(spans, f"chat {model}", **{"agent.step": step, "gen_ai.request.model": model})
        assert parent(spans, chat) is run
        activity = child(spans, child(spans, chat, "StartActivity:chat_completion"), "RunActivity:chat_completion")
        assert activity.attributes["temporalWorkflowID"] == run_id

    tool = one(spans, "execute_tool add", **{"agent.tool": "add", "agent.step": 0})
    assert parent(spans, tool) is run
    assert tool.attributes["agent.decision"] == "confirm" and tool.attributes["agent.approver"] == "ann"
    assert tool.attributes["agent.tool_call_id"] == decision.attributes["agent.tool_call_id"]
    child(spans, child(spans, tool, "StartActivity:invoke_tool"), "RunActivity:invoke_tool")

    # No hook, no span: this agent has hooks at before_tool only.
    assert not [s for s in spans if s.name.startswith("hook_point ") and s is not before_tool]
    # The run's own spans, by name, exactly once each (twice for the two model calls).
    names = Counter(s.name for s in tagged)
    assert names == Counter(
        {
            "invoke_agent": 1,
            f"chat {model}": 2,
            "hook_point before_tool": 1,
            "hook ConfirmationHook": 1,
            "decision add": 1,
            "execute_tool add": 1,
        }
    )


async def test_reject_and_modify_decisions_are_spans_with_their_approver(
    traced_client, exporter, scripted, model, run_id
):
    scripted.script(model, [calls(call("add", a=1, b=1), call("echo", text="hi")), {"text": "done"}])
    queue = f"tracing-{uuid.uuid4().hex[:8]}"
    # Hooks after the confirmation (before_tool and after_tool) see its records: no decision of theirs.
    agent = Agent(
        model=model,
        tools=[t.add, t.echo],
        hooks={"before_tool": [ask_all(), t.trace_before_tool], "after_tool": [t.trace_after_tool]},
        state_schema={"trace": {"type": list}},
    )
    async with create_worker(traced_client, tools=TEST_TOOLS, task_queue=queue):
        handle = await start(agent, traced_client, queue, run_id)
        add, echo = await wait_pending(handle, count=2)
        await handle.modify(add.tool_call_id, new_tool_params={"a": 20, "b": 22}, approver="bob")
        await handle.reject(echo.tool_call_id, feedback="no echo", approver="cyd")
        assert (await handle.result()).tool_call_counts["add"] == 1
    spans = run_spans(exporter, run_id)
    hook = one(spans, "hook ConfirmationHook")
    modified, rejected = one(spans, "decision add"), one(spans, "decision echo")
    assert parent(spans, modified) is hook and parent(spans, rejected) is hook
    assert (modified.attributes["agent.decision"], modified.attributes["agent.approver"]) == ("modify", "bob")
    assert (rejected.attributes["agent.decision"], rejected.attributes["agent.approver"]) == ("reject", "cyd")
    tool = one(spans, "execute_tool add")
    assert (tool.attributes["agent.decision"], tool.attributes["agent.approver"]) == ("modify", "bob")
    assert not [s for s in spans if s.name == "execute_tool echo"]  # a rejected call does not run
    assert len([s for s in spans if s.name.startswith("decision ")]) == 2
    assert one(spans, "hook trace_after_tool").attributes["agent.hook_point"] == "after_tool"


async def test_a_failing_hook_has_an_error_span_and_the_run_fails(traced_client, exporter, scripted, model, run_id):
    scripted.script(model, [{"text": "never reached"}])
    queue = f"tracing-{uuid.uuid4().hex[:8]}"
    agent = Agent(model=model, tools=[t.echo], hooks={"before_llm": [FunctionHook(t.raise_value_error)]})
    async with create_worker(traced_client, tools=TEST_TOOLS, task_queue=queue):
        handle = await agent.start(traced_client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=queue)
        with pytest.raises(WorkflowFailureError):
            await handle.result()
    spans = run_spans(exporter, run_id)
    hook = one(spans, "hook raise_value_error", **{"agent.hook": "tests.tools.raise_value_error"})
    assert hook.status.status_code == StatusCode.ERROR and "boom from a hook" in hook.status.description
    assert [e.name for e in hook.events] == ["exception"]
    point = parent(spans, hook)
    assert point.name == "hook_point before_llm" and point.status.status_code == StatusCode.ERROR
    assert "Hook tests.tools.raise_value_error failed at before_llm (step 0)" in point.status.description


async def test_a_run_that_continues_as_new_stays_one_trace(traced_client, exporter, scripted, model, run_id):
    steps = 16  # continue_as_new_after_events=100 (the minimum) continues about every 8 steps
    scripted.script(model, [*[calls(call("echo", text=f"e{i}")) for i in range(steps)], {"text": "done"}])
    queue = f"tracing-{uuid.uuid4().hex[:8]}"
    agent = Agent(model=model, tools=[t.echo], continue_as_new_after_events=100, max_agent_steps=50)
    async with create_worker(traced_client, tools=TEST_TOOLS, task_queue=queue):
        handle = await agent.start(traced_client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=queue)
        result = await handle.result()
    assert result.continuations >= 1
    runs = sorted(
        (
            s
            for s in exporter.get_finished_spans()
            if s.name == "invoke_agent" and s.attributes["agent.run_id"] == run_id
        ),
        key=lambda s: s.attributes["agent.continuations"],
    )
    assert [s.attributes["agent.continuations"] for s in runs] == list(range(result.continuations + 1))
    assert len({s.context.trace_id for s in runs}) == 1
    spans = [s for s in exporter.get_finished_spans() if s.context.trace_id == runs[0].context.trace_id]
    for previous, current in zip(runs, runs[1:], strict=False):
        # The next run's workflow span is a child of the run that continued as new.
        assert parent(spans, parent(spans, current)) is previous
    tools = [s for s in spans if s.name == "execute_tool echo" and s.attributes["agent.run_id"] == run_id]
    assert sorted(s.attributes["agent.step"] for s in tools) == list(range(steps))


async def test_tracing_off_makes_no_span_and_the_same_history(client, traced_client, exporter, scripted, model, stack):
    """The session client's AgentPlugin follows the environment (no OTEL_*: off)."""
    off_id, on_id = f"run-off-{uuid.uuid4().hex[:8]}", f"run-on-{uuid.uuid4().hex[:8]}"
    off = await confirmed_run(client, f"untraced-{uuid.uuid4().hex[:8]}", scripted, model, off_id)
    on = await confirmed_run(traced_client, f"tracing-{uuid.uuid4().hex[:8]}", scripted, model + "-on", on_id)

    spans = exporter.get_finished_spans()
    assert not [
        s for s in spans if off_id in (s.attributes.get("agent.run_id"), s.attributes.get("temporalWorkflowID"))
    ]
    assert [s for s in spans if s.attributes.get("agent.run_id") == on_id]  # the check can fail

    off_history = await off.workflow.fetch_history()
    on_history = await on.workflow.fetch_history()
    assert [e.event_type for e in off_history.events] == [e.event_type for e in on_history.events]

    # Each history replays with tracing on and off (tracing emits no command); replay exports nothing.
    before = len(exporter.get_finished_spans())
    for tracing in (False, True):
        replayer = Replayer(workflows=[AgentWorkflow], plugins=[AgentPlugin(tracing=tracing)])
        for history in (off_history, on_history):
            assert (await replayer.replay_workflow(history)).replay_failure is None
    assert len(exporter.get_finished_spans()) == before


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_prometheus_endpoint_serves_sdk_metrics(stack, scripted, model, run_id):
    bind = f"127.0.0.1:{free_port()}"
    metered = await Client.connect(
        stack.temporal.address,
        namespace=stack.temporal.namespace,
        plugins=[AgentPlugin(tracing=False, prometheus_bind=bind)],
    )
    scripted.script(model, [{"text": "hello"}])
    queue = f"metrics-{uuid.uuid4().hex[:8]}"
    async with create_worker(metered, tools=TEST_TOOLS, task_queue=queue):
        handle = await start(hitl_agent(model), metered, queue, run_id)
        assert (await handle.result()).exit_reason == "text"
        async with httpx.AsyncClient() as http:
            body = (await http.get(f"http://{bind}/metrics")).text
    assert "temporal_workflow_completed" in body
    assert "temporal_activity_execution_latency" in body
    assert f'task_queue="{queue}"' in body


@pytest.mark.slow
async def test_python_worker_py_follows_the_otel_and_prometheus_environment(client, scripted, model, run_id, tmp_path):
    """``python worker.py`` with ``OTEL_TRACES_EXPORTER=console`` prints the run's spans, and with
    ``AGENT_PROMETHEUS_BIND`` serves the SDK's metrics."""
    bind = f"127.0.0.1:{free_port()}"
    queue = f"otel-env-{uuid.uuid4().hex[:8]}"
    env = {
        "AGENT_PROMETHEUS_BIND": bind,
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_SERVICE_NAME": "agent-worker-under-test",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    scripted.script(model, [calls(call("add", a=2, b=3)), {"text": "5"}])
    log = tmp_path / "worker.log"
    process = start_worker(log, "tests.tools.TEST_TOOLS", queue, env=env)
    try:
        agent = Agent(model=model, tools=[t.add])
        handle = await agent.start(client, [ChatMessage.from_user("go")], run_id=run_id, task_queue=queue)
        assert (await handle.result()).exit_reason == "text"
        async with httpx.AsyncClient() as http:
            body = (await http.get(f"http://{bind}/metrics")).text
    finally:
        process.stop(timeout=15)  # SIGTERM: the worker stops and the span processor flushes
    assert f'task_queue="{queue}"' in body and "temporal_workflow_completed" in body

    printed = log.read_text()
    assert '"service.name": "agent-worker-under-test"' in printed
    for name in ("invoke_agent", f"chat {model}", "execute_tool add", "RunActivity:invoke_tool"):
        assert f'"name": "{name}"' in printed, name
    assert f'"agent.run_id": "{run_id}"' in printed
