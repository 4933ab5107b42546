"""How the run loop runs one tool call: which activity kind a tool's spec asks for.

Deterministic workflow code. ``Tool(local=True)`` runs as a local activity; every other tool as
an ordinary activity on the task queue.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.tool_invocation import ToolInvocationInput, ToolInvocationOutput, call_tool, call_tool_local
    from core.tools import ToolSpec


async def run_tool_call(spec: ToolSpec, request: ToolInvocationInput) -> ToolInvocationOutput:
    """Run ``request`` the way ``spec`` asks: a local activity for ``spec.local``, else an activity."""
    if spec.local:
        return await call_tool_local(request)
    return await call_tool(request)
