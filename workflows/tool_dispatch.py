"""How the run loop runs one tool call: which kind of durable step a tool asks for.

Deterministic workflow code. In order: a run's MCP tool is an ``mcp_call_tool`` activity
(``workflows/mcp_tools.py``); a sub-agent (``Agent.as_tool``) is a child run
(``workflows/children.py``); ``Tool(local=True)`` is a local activity; every other tool is an
ordinary activity on the task queue.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.tool_invocation import ToolInvocationInput, ToolInvocationOutput, call_tool, call_tool_local
    from core.spec import AgentSpec
    from core.tools import ToolSpec
    from workflows.children import run_sub_agent
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
    if spec.local:
        return await call_tool_local(request)
    return await call_tool(request)
