"""How the run loop runs one tool call: which kind of durable step a tool asks for.

Deterministic workflow code. In order: a run's MCP tool is an ``mcp_call_tool`` activity
(``workflows/mcp_tools.py``); a sub-agent (``Agent.as_tool``) is a child run
(``workflows/children.py``); ``Tool(local=True)`` is a local activity; every other tool is an
ordinary activity on the task queue. A worker that lacks the called tool fails the run at once
(``ToolNotServed``, naming every tool the run can use) rather than answering the model with an
error it cannot act on: the fix is a deployment's, not the model's.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.tool_invocation import ToolInvocationInput, ToolInvocationOutput, call_tool, call_tool_local
    from core.messages import ChatMessage, ToolCall
    from core.spec import AgentSpec
    from core.tools import ToolSpec
    from core.wire import TOOL_NOT_SERVED
    from workflows.children import run_sub_agent
    from workflows.failures import EXIT_TEXT
    from workflows.mcp_tools import RunMCPTools


async def run_tool_call(
    agent: AgentSpec, spec: ToolSpec, request: ToolInvocationInput, mcp: RunMCPTools
) -> ToolInvocationOutput:
    """Run ``request`` the way its tool asks.

    :param agent: The calling run's spec (its ``sub_agents`` say which tools are agents).
    :param spec: The called tool's spec (``spec.local`` asks for a local activity).
    :param request: The call, as the run loop built it.
    :param mcp: The run's MCP tools, listed when it started.
    """
    if mcp.serves(spec.name):
        return await mcp.call(request)
    sub_agent = agent.sub_agents.get(spec.name)
    if sub_agent is not None:
        return await run_sub_agent(request, sub_agent)
    try:
        if spec.local:
            return await call_tool_local(request)
        return await call_tool(request)
    except ActivityError as err:
        cause = err.cause
        if isinstance(cause, ApplicationError) and cause.type == TOOL_NOT_SERVED:
            served = cause.details[1] if len(cause.details) > 1 else []
            raise ApplicationError(
                not_served_message(agent, spec.name, served, mcp), type=TOOL_NOT_SERVED, non_retryable=True
            ) from err
        raise


def not_served_message(agent: AgentSpec, tool_name: str, served: list[str], mcp: RunMCPTools) -> str:
    """Why a run fails when a worker of its queue lacks one of its tools, and what is available.

    :param served: The function tools the worker that took the call serves.
    """
    available = [*served]
    available += [f"{name} (MCP server `{source.server}`)" for name, source in mcp.sources.items()]
    available += [f"{name} (sub-agent)" for name in agent.sub_agents]
    return (
        f"Tool '{tool_name}' is not served by the worker of task queue '{workflow.info().task_queue}' that took "
        f"the call, so the run cannot go on. Available: {', '.join(available) or 'no tools'}. Serve it from every "
        "worker of the queue: `agent dev --agent mymodule:agent` or `python worker.py --tools mymodule:TOOLS`."
    )


def refusal(agent: AgentSpec, call: ToolCall) -> ChatMessage | None:
    """The error result for a call the run cannot make (an unknown tool, arguments that are not a
    JSON object), which the model sees; None when the call can run."""
    if agent.tool_spec(call.tool_name) is None:
        available = ", ".join(t.name for t in agent.tool_specs)
        return ChatMessage.from_tool(
            f"Unknown tool '{call.tool_name}'. Available tools: {available}.", origin=call, error=True
        )
    if call.extra and "invalid_arguments" in call.extra:
        return ChatMessage.from_tool(
            f"The arguments for '{call.tool_name}' are not a valid JSON object: "
            f"{call.extra['invalid_arguments']!r}. Call the tool again with valid JSON arguments.",
            origin=call,
            error=True,
        )
    return None


def exit_condition_tool(agent: AgentSpec, calls: list[ToolCall], tool_messages: list[ChatMessage]) -> str | None:
    """The exit-condition tool that ran without error; an errored one cancels the exit (as Haystack)."""
    if agent.exit_conditions == [EXIT_TEXT]:
        return None
    errored = {m.tool_call_result.origin.tool_name for m in tool_messages if m.tool_call_result.error}
    first = None
    for call in calls:
        if call.tool_name not in agent.exit_conditions:
            continue
        if call.tool_name in errored:
            return None
        first = first or call.tool_name
    return first
