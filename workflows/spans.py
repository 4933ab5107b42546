"""The run loop's OpenTelemetry spans: the run, each hook point, each hook, each model call,
each tool call and each confirmation decision (read from the confirmation records hooks leave on
the messages, ``core.tool_records``).

Workflow code, so replay-safe by construction: spans come from the process's
``ReplaySafeTracerProvider`` (``temporalio.contrib.opentelemetry.create_tracer_provider``), whose
span ids come from the workflow's seeded random and whose spans are not ended (so not exported)
while history is being replayed. A span is made only when the run is traced: the global provider
is replay-safe and the tracing interceptor (``runtime/telemetry.py``, added by ``AgentPlugin``) has
put a recording span around the workflow. Otherwise every helper returns one shared no-op context
manager, and without opentelemetry installed the module does nothing at all. Spans emit no
workflow commands, so tracing on or off leaves the history unchanged.

Attribute names (README "Tracing and metrics"): ``agent.run_id``, ``agent.step`` (the run's
``step_count`` when the span starts), ``agent.hook_point``, ``agent.hook``, ``agent.tool``,
``agent.tool_call_id``, ``agent.decision`` (``confirm``/``reject``/``modify``),
``agent.approver``, ``agent.decision_via``; model and tool call spans also carry OpenTelemetry's
GenAI names (``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.tool.name``,
``gen_ai.tool.call.id``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    contextmanager,
    nullcontext,
)
from typing import Any

from core.messages import ToolCall
from core.serialization import hook_import_path
from core.tool_records import CONFIRMATION_KEY, confirmation_records
from hooks.context import current_run_or_none
from hooks.protocol import BEFORE_TOOL, TASK_RETRYING_ERRORS

try:  # the [otel] extra; the base install runs untraced
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace import Status, StatusCode
    from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider
except ImportError:  # pragma: no cover - exercised by tests/runtime/test_tracing_config.py in a subprocess
    otel_trace = None
    ReplaySafeTracerProvider = None

TRACER_NAME = "durable-agent"

RUN_ID = "agent.run_id"
STEP = "agent.step"
HOOK_POINT = "agent.hook_point"
HOOK = "agent.hook"
TOOL = "agent.tool"
TOOL_CALL_ID = "agent.tool_call_id"
DECISION = "agent.decision"
APPROVER = "agent.approver"
DECISION_VIA = "agent.decision_via"

#: One reusable no-op (sync and async) for every span of an untraced run.
_NO_SPAN: Any = nullcontext()


def active() -> bool:
    """Whether the current workflow code is traced (see the module docstring)."""
    # The current span first: one ContextVar read answers for every untraced run.
    if otel_trace is None or not otel_trace.get_current_span().is_recording():
        return False
    return isinstance(otel_trace.get_tracer_provider(), ReplaySafeTracerProvider)


def _base(step: int | None = None) -> dict[str, Any]:
    run = current_run_or_none()
    if run is None:
        return {}
    return {RUN_ID: run.run_id, STEP: run.state.data.get("step_count", 0) if step is None else step}


def _span(name: str, attributes: dict[str, Any]) -> AbstractContextManager[Any]:
    return otel_trace.get_tracer(TRACER_NAME).start_as_current_span(name, attributes=attributes)


def run_span(run_id: str, model: str, continuations: int) -> AbstractContextManager[Any]:
    """The run's span (one per workflow run; a continue-as-new starts a child run under it)."""
    if not active():
        return _NO_SPAN
    attributes = {RUN_ID: run_id, "gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": model}
    attributes["agent.continuations"] = continuations
    return _span("invoke_agent", attributes)


def hook_point_span(point: str, hook_count: int) -> AbstractContextManager[Any]:
    """A hook point's span (``before_run``, ``before_llm``, ...), around its hooks; none for a
    point without hooks (it does nothing)."""
    if not hook_count or not active():
        return _NO_SPAN
    return _span(f"hook_point {point}", {**_base(), HOOK_POINT: point})


def hook_span(hook: Any, point: str) -> AbstractContextManager[Any]:
    """One hook's span, under its hook point's. A ``before_tool`` hook that decided confirmations
    gets one ``decision`` child span per decision it applied (found in the messages it rewrote)."""
    if not active():
        return _NO_SPAN
    return _hook_span(hook, point)


@contextmanager
def _hook_span(hook: Any, point: str) -> Iterator[Any]:
    run = current_run_or_none() if point == BEFORE_TOOL else None  # confirmations happen there
    if run is not None:
        # A confirmation hook replaces the last message (the calls) and appends after it; decisions
        # already there (another before_tool hook's) are not this hook's.
        first = max(len(run.state.data.get("messages") or []) - 1, 0)
        already = {r.get("tool_call_id") for r in confirmation_records((run.state.data.get("messages") or [])[first:])}
    name = hook_import_path(hook)
    attributes = {**_base(), HOOK_POINT: point, HOOK: name}
    tracer = otel_trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(
        f"hook {name.rsplit('.', 1)[-1]}", attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except TASK_RETRYING_ERRORS as err:
            # The workflow task fails and retries: recorded, the replay-safe span is not ended.
            span.record_exception(err)
            raise
        except Exception as err:
            # The hook's error fails the run (the run loop's hook_failure): the span ends, as an error.
            # (Recorded with record_exception, the replay-safe span would not end, so not export.)
            span.set_status(Status(StatusCode.ERROR, f"{type(err).__name__}: {err}"))
            span.add_event("exception", {"exception.type": type(err).__qualname__, "exception.message": str(err)})
            raise
        if run is not None:
            for record in confirmation_records((run.state.data.get("messages") or [])[first:]):
                if record.get("tool_call_id") in already:
                    continue
                # A decision is a moment, not a stretch of time: a child of the hook's span, ended at
                # once (the replay-safe span does not end, so does not export, during replay).
                attributes = {**_base(), **decision_attributes(record)}
                tracer.start_span(f"decision {record.get('tool_name')}", attributes=attributes).end()


def model_call_span(model: str) -> AbstractContextManager[Any]:
    """A model call's span; the interceptor's ``StartActivity``/``RunActivity`` spans nest under it."""
    if not active():
        return _NO_SPAN
    return _span(f"chat {model}", {**_base(), "gen_ai.operation.name": "chat", "gen_ai.request.model": model})


def tool_call_span(call: ToolCall, step: int) -> AbstractAsyncContextManager[Any]:
    """A tool call's span (``async with``), with the call's confirmation decision when it had one."""
    if not active():
        return _NO_SPAN
    attributes = {
        **_base(step),
        TOOL: call.tool_name,
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.tool_name,
    }
    if call.id:
        attributes[TOOL_CALL_ID] = attributes["gen_ai.tool.call.id"] = call.id
    record = (call.extra or {}).get(CONFIRMATION_KEY)
    if isinstance(record, dict):
        attributes.update(decision_attributes(record))
    return _async_span(f"execute_tool {call.tool_name}", attributes)


@asynccontextmanager
async def _async_span(name: str, attributes: dict[str, Any]) -> AsyncIterator[Any]:
    with _span(name, attributes) as span:
        yield span


def decision_attributes(record: dict[str, Any]) -> dict[str, Any]:
    """Span attributes of a confirmation's audit record (``DecisionRecord`` as JSON)."""
    attributes = {
        DECISION: record.get("action"),
        TOOL: record.get("tool_name"),
        TOOL_CALL_ID: record.get("tool_call_id"),
    }
    if record.get("approver"):
        attributes[APPROVER] = record["approver"]
    if record.get("via"):
        attributes[DECISION_VIA] = record["via"]
    return {key: value for key, value in attributes.items() if value is not None}
